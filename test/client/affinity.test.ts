// The endpoint client's worker affinity on the real local platform: routeAnswer() names the worker that answered,
// pin() sends the next calls there (soft or strict), and a strict pin to a worker that exited is a 404.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CircuitBreakers, EndpointClient, EndpointHttpError } from "../../src/client/index.js";
import { eventually, startTestPlatform, type TestPlatform } from "../platform/helpers.js";
import { captureLog, FAST_RETRY } from "./servers.js";

let t: TestPlatform;
const workers = () => t.platform.lb.get("pinned")!.workerList();
beforeAll(async () => {
  t = await startTestPlatform({
    loadBalanced: [{ id: "pinned", file: "test/fixtures/lb-workers.ts", workers: [2, 2] }],
  });
}, 90_000);
afterAll(async () => {
  await t.platform.close();
}, 90_000);

const client = () =>
  new EndpointClient({
    id: "pinned",
    baseUrl: t.platform.url,
    apiKey: t.platform.apiKey,
    logger: captureLog("WARN").log,
    retry: FAST_RETRY,
    breakers: new CircuitBreakers(),
    env: {},
  });

const twoReady = () =>
  eventually(() => workers().filter((w) => w.state === "ready").length === 2, "two ready workers", 60_000);

describe("worker affinity in the client", { timeout: 120_000 }, () => {
  it("routeAnswer() names the worker; pin() keeps the next calls on it", async () => {
    await twoReady();
    const first = await client().routeAnswer<{ worker: string }>("GET", "/who");
    expect(first.workerId).toBe(first.body.worker);
    const ids = workers().map((w) => w.id);
    expect(ids).toContain(first.workerId);
    // Unpinned, two idle workers take turns; pinned, every call goes to the same one.
    for (const mode of ["soft", "strict"] as const) {
      const pinned = client().pin(first.workerId!, mode);
      for (let i = 0; i < 3; i++) expect(await pinned.get("/who")).toEqual({ worker: first.workerId });
    }
    expect(() => client().pin("strict abc")).toThrow(
      'A worker id has no spaces and is not empty: got "strict abc"',
    );
  });

  it("a strict pin to a worker that exited is an EndpointHttpError 404 affinity_worker_gone; a soft one falls back", async () => {
    await twoReady();
    const [gone] = workers();
    const strict = client().pin(gone!.id, "strict");
    await expect(strict.post("/exit", {})).rejects.toMatchObject({ status: 502 });
    await eventually(() => !workers().some((w) => w.id === gone!.id), "the worker to be gone");
    const err = await strict.get("/who").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointHttpError);
    expect((err as EndpointHttpError).status).toBe(404);
    expect((err as Error).message).toContain("affinity_worker_gone");
    const other = await client().pin(gone!.id).routeAnswer<{ worker: string }>("GET", "/who");
    expect(other.workerId).not.toBe(gone!.id);
    expect(other.body.worker).toBe(other.workerId);
  });
});
