// Waiting on the page without @playwright/test: poll a locator until it shows what the test expects.
import type { Locator } from "playwright-core";

export async function visible(locator: Locator, timeoutMs = 10_000): Promise<void> {
  await locator.first().waitFor({ state: "visible", timeout: timeoutMs });
}

export async function attached(locator: Locator, timeoutMs = 10_000): Promise<void> {
  await locator.first().waitFor({ state: "attached", timeout: timeoutMs });
}

/** The locator's text once it contains the string or matches the pattern; fails with the last text seen. */
export async function textMatches(
  locator: Locator,
  expected: string | RegExp,
  timeoutMs = 10_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last: string | null = null;
  for (;;) {
    const text = await locator
      .first()
      .textContent({ timeout: Math.max(1, Math.min(1_000, deadline - Date.now())) })
      .catch(() => null);
    // The last text seen is kept for the failure message: a final call cut short by the deadline says nothing.
    if (text !== null) {
      last = text;
      if (typeof expected === "string" ? text.includes(expected) : expected.test(text)) return text;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `Expected ${String(locator)} to show ${String(expected)} within ${timeoutMs} ms; it showed ${JSON.stringify(last?.slice(0, 500) ?? null)}`,
  );
}
