// The committed API report matches the public surface of the three entry points (what `npm run api:check` checks in CI).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script, without declarations.
import { apiReport, REPORT } from "../../scripts/api-report.mjs";

describe("API report", () => {
  const report = (apiReport as () => string)();

  it("is current: a change to the public surface comes with its reviewed report", () => {
    expect(report).toBe(readFileSync(REPORT as string, "utf8"));
  });

  it("covers the three entry points, and flash-worker/client only what users call", () => {
    const sections = report.split(/^## /m).slice(1);
    expect(sections.map((s) => s.split("\n")[0])).toEqual([
      "flash-worker",
      "flash-worker/client",
      "flash-worker/testing",
    ]);
    const client = sections[1]!;
    for (const name of [
      "EndpointClient",
      "endpoint",
      "pod",
      "isFlashError",
      "ExecutionTimeoutError",
      "resolveApiKey",
    ]) {
      expect(client).toMatch(new RegExp(`^(class|function|const|interface|type) ${name}\\b`, "m"));
    }
    for (const name of ["CONNECT_RETRY", "saveApiKey", "DEFAULT_BREAKERS", "readDeployments"]) {
      expect(client).not.toContain(name);
    }
  });
});
