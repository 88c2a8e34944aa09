// The load balancer's documented limits on the local platform (serverless/load-balancing/overview, "Timeouts and
// limits"): the payload limit on request and answer bodies, and the processing timeout per request. Real
// workers (test/fixtures/lb-workers.ts); the limits are made small here, their defaults are RunPod's.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startTestPlatform, type TestPlatform } from "./helpers.js";

const TIMEOUT = 120_000;
const dir = mkdtempSync(join(tmpdir(), "flash-lb-limits-"));
const held = join(dir, "gate");

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({
    lbPayloadLimitBytes: 1024,
    lbProcessingTimeoutMs: 1_000,
    loadBalanced: [
      { id: "limits", file: "test/fixtures/lb-workers.ts", workers: [1, 1], executionTimeoutMs: 60_000 },
    ],
  });
  await eventually(
    () => t.platform.lb.get("limits")!.workerList()[0]?.state === "ready",
    "the worker to be ready",
    60_000,
  );
}, TIMEOUT);
afterAll(async () => {
  writeFileSync(held, "");
  await t?.platform.close();
  rmSync(dir, { recursive: true, force: true });
}, TIMEOUT);

const call = (path: string, body?: unknown) =>
  fetch(`${t.platform.url}/lb/limits${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${t.platform.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe("load-balanced limits", { timeout: TIMEOUT }, () => {
  it("a request body over the payload limit is a 413 before any worker sees it", async () => {
    const res = await call("/hold", { gate: held, pad: "x".repeat(1_500) });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      error:
        "The request body is 2 KB, over the load balancer's 1 KB payload limit: use a network volume or send it in chunks",
    });
    expect(t.platform.lb.get("limits")!.workerList()[0]?.inFlight).toBe(0);
  });

  it("an answer over the payload limit is a 502 naming the worker; one under it goes through", async () => {
    const [worker] = t.platform.lb.get("limits")!.workerList();
    expect(((await (await call("/big?bytes=500")).json()) as { data: string }).data).toHaveLength(500);
    const res = await call("/big?bytes=5000");
    expect(res.status).toBe(502);
    expect(res.headers.get("x-runpod-worker-id")).toBe(worker!.id);
    expect(((await res.json()) as { error: string }).error).toMatch(
      new RegExp(
        `^Worker ${worker!.id}'s answer is over the load balancer's 1 KB payload limit \\(5 KB so far\\)`,
      ),
    );
  });

  it("a request still running at the processing timeout is a 504", async () => {
    const res = await call("/hold", { gate: held });
    expect(res.status).toBe(504);
    expect(await res.json()).toEqual({
      error: "Processing timeout on limits after 1.0s: the load balancer's limit per request",
    });
  });
});
