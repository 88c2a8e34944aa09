// What flash dev learns from loading an app file: a model server's start timeout becomes its workers' start limit.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeApp } from "../../../../src/toolkit/dev/app.js";
import { ROOT } from "../../../process.js";

describe("describeApp", () => {
  it("gives a model server's start timeout, plus a minute for the worker's own start, as the start limit", async () => {
    const app = await describeApp(join(ROOT, "test/fixtures/model-server/endpoint.ts"));
    expect(app).toMatchObject({ loadBalanced: true, name: "llm-proxy", startLimitMs: 420_000 + 60_000 });
  });

  it("gives none for an app without a server", async () => {
    const app = await describeApp(join(ROOT, "examples/echo/handler.ts"));
    expect(app.startLimitMs).toBeUndefined();
  });
});
