// The console in a real headless browser (Debian's chromium through playwright-core): the login form without
// the key, a job sent from the playground going IN_QUEUE → COMPLETED with its times, and a worker's logs.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { ROOT } from "../process.js";
import { attached, textMatches, visible } from "./wait.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const KEY = "console-browser-key";
const ARTIFACTS = join(ROOT, "test-artifacts");

/** The bits of the DOM these checks use (the test compiles without the DOM library). */
interface Rects {
  querySelector(selector: string): { getBoundingClientRect(): { left: number; right: number } } | null;
}
interface RangeLike {
  selectNodeContents(node: unknown): void;
  getBoundingClientRect(): { height: number };
}

let platform: Platform;
let browser: Browser;

beforeAll(async () => {
  // A missing browser is a failure, never a skip: scripts/test-deps.sh (npm test's pretest) installs it.
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The console's browser test needs Debian's chromium at ${CHROMIUM} (run \`bash scripts/test-deps.sh\` as root; ` +
        "set CHROMIUM_PATH to use another). playwright's own browser download does not work here.",
    );
  }
  if (!existsSync(join(ROOT, "dist/platform/console/page/main.js"))) {
    throw new Error("The console page is not built: run `npm run build` first.");
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  platform = await startPlatform({
    apiKey: KEY,
    logger: createLogger({ level: "SILENT", json: false }),
    // min 0: the first job waits in the queue while its worker cold-starts, so IN_QUEUE is seen.
    endpoints: [
      {
        id: "echo",
        name: "examples/echo/handler.ts",
        file: join(ROOT, "examples/echo/handler.ts"),
        cwd: ROOT,
        workers: [0, 1],
      },
      // flash dev sets this from loading the handler (openaiCompatible()); here the test says so.
      {
        id: "chat",
        file: join(ROOT, "examples/openai-compatible/handler.ts"),
        cwd: ROOT,
        workers: [1, 1],
        openaiCompatible: true,
      },
    ],
    loadBalanced: [
      // flash dev passes the routes it found loading the handler; here the test does (no test_input.json beside it).
      {
        id: "routes",
        file: join(ROOT, "test/fixtures/lb-routes.ts"),
        cwd: ROOT,
        workers: [1, 1],
        routes: [
          { method: "GET", path: "/hello/:name" },
          { method: "POST", path: "/sum" },
        ],
      },
      // Never called (no worker starts): here for the playground's first request from its test_input.json.
      {
        id: "lb-example",
        file: join(ROOT, "examples/load-balanced/handler.ts"),
        cwd: ROOT,
        workers: [0, 1],
      },
    ],
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await platform?.close();
});

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  return context.newPage();
}

describe("console in a browser", () => {
  it("shows only the login form without the key; the API answers 401 without it", async () => {
    const page = await newPage();
    const apiCalls: string[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname.startsWith("/console/api/")) apiCalls.push(request.url());
    });
    await page.goto(platform.url);
    await visible(page.locator("#login-form"));
    expect(await page.locator("#app").isHidden()).toBe(true);
    // No data reached the page: no endpoint, no job row, no API call made without a key.
    expect(await page.locator("[data-endpoint-id]").count()).toBe(0);
    expect(await page.locator("[data-job-id]").count()).toBe(0);
    expect(apiCalls).toEqual([]);
    // The browser's own /favicon.ico gets an icon, not a 404.
    const icon = await page.request.get(`${platform.url}/favicon.ico`);
    expect(icon.status()).toBe(200);
    expect(icon.headers()["content-type"]).toContain("image/svg+xml");
    const statuses = await page.evaluate(async () => {
      const codes: number[] = [];
      for (const path of [
        "/console/api/snapshot",
        "/console/api/endpoints",
        "/console/api/events",
        "/console/api/logs",
      ]) {
        codes.push((await fetch(path)).status);
      }
      codes.push((await fetch("/console/api/token", { method: "POST" })).status);
      return codes;
    });
    expect(statuses).toEqual([401, 401, 401, 401, 401]);

    await page.fill("#login-key", "not-the-key");
    await page.click("#login-form button[type=submit]");
    await textMatches(page.locator("#login-error"), /refused/);
    expect(await page.locator("#app").isHidden()).toBe(true);
    await page.close();
  });

  it("logs in, sends a job from the playground, follows it to COMPLETED and opens its worker's logs", async () => {
    const page = await newPage();
    const calls: { path: string; search: string; authorization?: string }[] = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname.startsWith("/console/api/") || url.pathname.startsWith("/v2/")) {
        const authorization = request.headers().authorization;
        calls.push({ path: url.pathname, search: url.search, ...(authorization ? { authorization } : {}) });
      }
    });
    await page.goto(platform.url);
    await page.fill("#login-key", KEY);
    await page.click("#login-form button[type=submit]");
    await visible(page.locator("#app"));
    await textMatches(page.locator("#connection"), /live/);
    await visible(page.locator('[data-endpoint-id="echo"]').first());
    // The endpoint's id and its file are two words on screen, not "echoexamples/…".
    const gap = await page
      .locator('[data-endpoint-id="echo"] header')
      .first()
      .evaluate((header: Rects) => {
        const name = header.querySelector(".endpoint-name")?.getBoundingClientRect();
        const id = header.querySelector("strong")?.getBoundingClientRect();
        return name && id ? name.left - id.right : -1;
      });
    expect(gap).toBeGreaterThanOrEqual(4);

    // Every status the playground shows for the job, in order, as the DOM changes.
    // (A string: the test compiles without the DOM library; this runs in the page.)
    await page.evaluate(`
      window.seen = [];
      new MutationObserver(() => {
        const text = document.querySelector("#pg-status")?.textContent;
        if (text && window.seen.at(-1) !== text) window.seen.push(text);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    `);

    await page.click('nav.tabs [data-tab="playground"]');
    await page.selectOption("#pg-endpoint", "echo");
    // A queue endpoint: its mode, and no route Method/Path fields (hidden, though their row is a flexbox).
    await visible(page.locator("#pg-mode"));
    expect(await page.locator("#pg-method").isHidden()).toBe(true);
    expect(await page.locator("#pg-path").isHidden()).toBe(true);
    await page.selectOption("#pg-mode", "run");
    await page.fill("#pg-body", JSON.stringify({ input: { name: "console", mock_delay: 1 } }, null, 2));
    await page.click("#pg-send");
    await textMatches(page.locator("#pg-status"), "COMPLETED", 30_000);
    const seen = (await page.evaluate("window.seen")) as string[];
    expect(seen[0]).toBe("IN_QUEUE");
    expect(seen).toContain("IN_PROGRESS");
    expect(seen.at(-1)).toBe("COMPLETED");
    const jobId = await page.locator(".live-job").getAttribute("data-job-id");
    expect(jobId).toMatch(/.+/);
    expect(await page.locator("#pg-output").textContent()).toContain('"name":"console"');

    await page.click('nav.tabs [data-tab="jobs"]');
    const row = page.locator(`tr[data-job-id="${jobId}"]`);
    await textMatches(row.locator(".status"), "COMPLETED");
    expect(await row.locator("td.delay").textContent()).toMatch(/^\d+(\.\d+)? (ms|s)$/);
    // The handler slept 1 s (mock_delay), so the execution time is at least that.
    expect(await row.locator("td.execution").textContent()).toMatch(/^1\.\d\d s$/);
    const workerId = (await row.locator("td button.link").textContent()) ?? "";
    expect(workerId).toMatch(/\S+/);
    // The job id keeps to one line (its start; the whole id is the cell's title).
    expect(await row.locator("td.job-id").getAttribute("title")).toBe(jobId);
    const lines = await row.locator("td.job-id").evaluate((td: unknown) => {
      // In the page: the text's height over its line height is the number of lines it takes.
      const page = globalThis as unknown as {
        document: { createRange(): RangeLike };
        getComputedStyle(node: unknown): { lineHeight: string; fontSize: string };
      };
      const range = page.document.createRange();
      range.selectNodeContents(td);
      const style = page.getComputedStyle(td);
      const line = Number.parseFloat(style.lineHeight) || 1.2 * Number.parseFloat(style.fontSize);
      return Math.round(range.getBoundingClientRect().height / line);
    });
    expect(lines).toBe(1);
    // On a short window the detail opens below the fold: the click scrolls it into view.
    await page.setViewportSize({ width: 1440, height: 360 });
    await page.evaluate("window.scrollTo(0, 0)");
    await row.click();
    await textMatches(page.locator(".detail pre").first(), /"mock_delay": 1/);
    await page.waitForFunction(
      () => {
        // In the page (a function, not a string: the console's CSP allows no eval).
        const page = globalThis as unknown as {
          scrollY: number;
          innerHeight: number;
          document: { querySelector(s: string): { getBoundingClientRect(): { top: number } } | null };
        };
        const top = page.document.querySelector(".detail")?.getBoundingClientRect().top ?? -1;
        return page.scrollY > 0 && top >= 0 && top < page.innerHeight;
      },
      undefined,
      { timeout: 10_000 },
    );
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, "console-jobs.png"), fullPage: true });

    // The worker in the sidebar opens its logs: the platform's lines about it and its own output.
    await page.click(`[data-endpoint-id="echo"] [data-worker-id="${workerId}"] button`);
    await visible(page.locator("#tab-logs"));
    await textMatches(page.locator("#log-lines"), new RegExp(`Worker:${workerId} \\| Delay Time`));
    await textMatches(page.locator("#log-lines"), /Execution Time/);
    await textMatches(page.locator("#log-lines"), new RegExp(`${jobId}`));
    await page.screenshot({ path: join(ARTIFACTS, "console-logs.png"), fullPage: true });

    await page.click('nav.tabs [data-tab="metrics"]');
    await attached(page.locator('.metrics[data-endpoint-id="echo"] svg.plot circle').first());
    await page.screenshot({ path: join(ARTIFACTS, "console-metrics.png"), fullPage: true });

    // Every JSON call carried the key as Bearer; the event streams carried a token and never the key.
    const streams = calls.filter((c) => c.path.endsWith("/events"));
    const rest = calls.filter((c) => !c.path.endsWith("/events"));
    expect(streams.map((c) => c.path)).toEqual(
      expect.arrayContaining(["/console/api/events", "/console/api/logs/events"]),
    );
    for (const call of streams) {
      expect(call.search).toMatch(/token=\d+\./);
      expect(call.search).not.toContain(KEY);
    }
    expect(rest.map((c) => c.path)).toEqual(
      expect.arrayContaining(["/console/api/token", "/v2/echo/run", `/console/api/jobs/${jobId}`]),
    );
    for (const call of rest) expect(call, call.path).toMatchObject({ authorization: `Bearer ${KEY}` });
    await page.close();
  });

  it("a file stored on the platform cannot read the console's key: it downloads, and a rendered copy runs no script", async () => {
    const page = await newPage();
    const leaks: string[] = [];
    page.context().on("request", (request) => {
      if (new URL(request.url()).pathname === "/leak") leaks.push(request.url());
    });
    await page.goto(platform.url);
    await page.fill("#login-key", KEY);
    await page.check("#login-remember");
    await page.click("#login-form button[type=submit]");
    await visible(page.locator("#app"));
    expect(await page.evaluate("JSON.stringify(localStorage)")).toContain(KEY);
    // What a hostile uploader stores: a page that sends whatever the origin's storage holds.
    const html =
      '<p id="shown">stored page</p><script>new Image().src = "/leak?k=" + encodeURIComponent(JSON.stringify(localStorage));</script>';
    const stored = await fetch(`${platform.url}/v2/echo/files`, {
      method: "POST",
      headers: { Authorization: KEY, "Content-Type": "text/html" },
      body: html,
    });
    const { url } = (await stored.json()) as { url: string };

    // Opened: the browser saves it (attachment) instead of rendering it on the console's origin.
    const downloaded = page.waitForEvent("download", { timeout: 15_000 });
    // Awaited below; a failure before that must not also surface as an unhandled rejection.
    downloaded.catch(() => undefined);
    await page.goto(url).catch(() => undefined);
    expect(leaks).toEqual([]);
    expect((await downloaded).suggestedFilename()).toBe(url.split("/").at(-1));

    // Rendered anyway (the attachment header dropped on the way): the CSP sandbox keeps its script from running.
    await page.route(url, async (route) => {
      const answer = await route.fetch();
      const headers = { ...answer.headers() };
      delete headers["content-disposition"];
      await route.fulfill({ response: answer, headers });
    });
    await page.goto(url);
    expect(await page.locator("#shown").textContent()).toBe("stored page");
    expect(leaks).toEqual([]);
    await page.close();
  });

  it("logs in from the #key= link flash dev prints, and chats with a chat-completion-compatible endpoint", async () => {
    const page = await newPage();
    await page.goto(`${platform.url}/#key=${encodeURIComponent(KEY)}`);
    await visible(page.locator("#app"));
    // The page drops the fragment at once, so the key is not left in the address bar or history.
    expect(page.url()).toBe(`${platform.url}/`);

    await page.click('nav.tabs [data-tab="playground"]');
    // A fresh browser: the body starts as the endpoint's test_input.json.
    await page.selectOption("#pg-endpoint", "echo");
    expect(JSON.parse(await page.inputValue("#pg-body"))).toEqual({
      input: { name: "flash", message: "hello" },
    });
    // The chat form is for chat-completion endpoints only.
    expect(await page.locator("#chat-form").isHidden()).toBe(true);
    await page.selectOption("#pg-endpoint", "chat");
    await visible(page.locator("#chat-form"));
    await page.fill("#chat-input", "hello from the console");
    await page.click("#chat-send");
    await textMatches(page.locator(".bubble.assistant").nth(0), /^assistanthello from the console$/, 30_000);
    // Without streaming: one JSON answer; the conversation carries on.
    await page.uncheck("#chat-stream");
    await page.fill("#chat-input", "and once more");
    await page.click("#chat-send");
    await textMatches(page.locator(".bubble.assistant").nth(1), /^assistantand once more$/, 30_000);
    expect(await page.locator(".bubble.user").count()).toBe(2);
    expect(await page.locator("#chat-form .error").textContent()).toBe("");
    await page.evaluate("window.scrollTo(0, 0)");
    await page.screenshot({ path: join(ARTIFACTS, "console-playground.png"), fullPage: true });
    await page.close();
  });

  it("calls a load-balanced endpoint's routes from the playground and shows its requests in Metrics", async () => {
    const page = await newPage();
    await page.goto(`${platform.url}/#key=${encodeURIComponent(KEY)}`);
    await visible(page.locator('[data-endpoint-id="routes"]'));
    await page.click('nav.tabs [data-tab="playground"]');
    // A fresh browser: a load-balanced endpoint's first request is the first of its test_input.json.
    await page.selectOption("#pg-endpoint", "lb-example");
    expect(await page.inputValue("#pg-method")).toBe("POST");
    expect(await page.inputValue("#pg-path")).toBe("/echo");
    expect(JSON.parse(await page.inputValue("#pg-body"))).toEqual({ prompt: "hello", n: 1 });
    await page.selectOption("#pg-endpoint", "routes");
    // A route call: method, path and body; no queue mode, no chat.
    await visible(page.locator("#pg-path"));
    // Without a test_input.json it starts at a declared route (its parameter named), never GET / (a 404).
    expect(await page.inputValue("#pg-method")).toBe("GET");
    expect(await page.inputValue("#pg-path")).toBe("/hello/name");
    expect(await page.locator("#pg-mode").isHidden()).toBe(true);
    expect(await page.locator("#chat-form").isHidden()).toBe(true);
    await page.selectOption("#pg-method", "POST");
    await page.fill("#pg-path", "/sum");
    await page.fill("#pg-body", JSON.stringify({ a: 2, b: 3 }));
    await page.click("#pg-send");
    await textMatches(page.locator("#pg-http-status"), /^200\b/, 60_000);
    expect(JSON.parse((await page.locator("#pg-response-body").textContent()) ?? "")).toEqual({ sum: 5 });
    // A body on a GET is refused before sending; an unknown route shows the worker's 404.
    await page.selectOption("#pg-method", "GET");
    await page.fill("#pg-path", "/nope");
    await page.click("#pg-send");
    await textMatches(page.locator("#pg-form .error[role=alert]"), /GET request sends no body/);
    await page.fill("#pg-body", "");
    await page.click("#pg-send");
    await textMatches(page.locator("#pg-http-status"), /^404\b/);
    await textMatches(page.locator("#pg-response-body"), /GET \/nope/);

    await page.click('nav.tabs [data-tab="metrics"]');
    const section = page.locator('.metrics[data-endpoint-id="routes"]');
    await textMatches(section.locator("header"), /200 ×\d+ · 404 ×1/);
    await textMatches(section.locator("table.lb-requests tbody tr").first(), /GET \/nope\s*404/);
    await textMatches(section.locator("table.lb-requests tbody"), /POST \/sum\s*200/);
    await attached(section.locator("svg.plot circle").first());
    await page.screenshot({ path: join(ARTIFACTS, "console-lb-metrics.png"), fullPage: true });
    await page.close();
  }, 90_000);

  it("keeps up with a few thousand jobs: the newest 1,000 kept, 50 rows a page", async () => {
    platform.createEndpoint({ id: "bulk" });
    const page = await newPage();
    await page.goto(`${platform.url}/#key=${encodeURIComponent(KEY)}`);
    await visible(page.locator('[data-endpoint-id="bulk"]'));
    const endpoint = platform.scheduler.endpoint("bulk");
    if (!endpoint) throw new Error("no bulk endpoint");
    // No worker: they all wait in the queue. They arrive faster than one delta carries (500 jobs), so the
    // page is told how many it missed and fetches a snapshot of the newest 1,000.
    for (let i = 0; i < 3_000; i++) platform.scheduler.submit(endpoint, { input: { i }, sync: false });
    await textMatches(page.locator('[data-endpoint-id="bulk"] .counts'), "3000 in queue");
    await textMatches(
      page.locator("#tab-jobs .toolbar"),
      /1000 jobs in this page \(newest 1000 kept\), 30\d\d on the platform/,
    );
    await textMatches(page.locator(".pager"), "1–50 of 1000");
    expect(await page.locator("#jobs-table tbody tr").count()).toBe(50);
    await page.click(".pager button:last-child");
    await textMatches(page.locator(".pager"), "51–100 of 1000");
    await page.selectOption("#tab-jobs select[aria-label=Status]", "COMPLETED");
    // The kept jobs are all queued: none COMPLETED among them.
    await textMatches(page.locator(".pager"), "no jobs");
    await textMatches(page.locator("#jobs-table tbody"), "No jobs");
    await page.close();
  });
});
