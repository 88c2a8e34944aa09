// RunPod's documented limits on the local platform, with real worker processes: a /run job's result
// (10 MB) against a /runsync job's (20 MB), /stream answers of at most 1 MB, the execution-timeout
// bounds, and a TTL that ends a running job (docs/protocol.md §11).
import { afterEach, describe, expect, it } from "vitest";
import { FLASH } from "../process.js";
import { eventually, type JobJson, startTestPlatform, type TestPlatform } from "./helpers.js";

const TIMEOUT = 90_000;
const worker = (fixture: string) => [process.execPath, FLASH, "start", `test/fixtures/${fixture}`];

type Answer = JobJson & { stream?: { output: string }[] };

let t: TestPlatform | undefined;
afterEach(async () => {
  await t?.platform.close();
  t = undefined;
}, TIMEOUT);

/** One call on endpoint `id` of the platform under test; a POST when there is a body. */
async function call(id: string, path: string, body?: unknown): Promise<{ status: number; json: Answer }> {
  const res = await fetch(`${t!.base(id)}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${t!.platform.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Answer };
}

const start = async (id: string, fixture: string) => {
  t = await startTestPlatform({
    endpoints: [{ id, command: worker(fixture), cwd: process.cwd(), workers: [1, 1] }],
  });
};

describe("result size: /run 10 MB, /runsync 20 MB (serverless/workers/handler-functions)", () => {
  it(
    "a 12 MB result: COMPLETED for /runsync; FAILED for /run, naming the limit, never an empty success",
    async () => {
      await start("big", "big-output.ts");
      const sync = await call("big", "/runsync?wait=60000", { input: { mb: 12 } });
      expect(sync.json.status).toBe("COMPLETED");
      expect((sync.json.output as { text: string }).text.length).toBe(12 * 1024 * 1024);

      const { id } = (await call("big", "/run", { input: { mb: 12 } })).json;
      const failed = await eventually(async () => {
        const s = (await call("big", `/status/${id}`)).json;
        return s.status === "FAILED" ? s : undefined;
      }, "the /run job to fail");
      expect(failed.output).toBeUndefined();
      expect(failed.error).toMatch(
        /^Job result was not accepted: the platform refused the 12\.0 MB result with .*over the 10 MB limit of a \/run job's result \(\/runsync: 20 MB\)/,
      );
    },
    TIMEOUT,
  );
});

describe("/stream answers carry at most 1 MB of chunks (serverless/endpoints/operation-reference, /stream)", () => {
  it(
    "three 600 KB chunks come one per answer; the final status only with the last",
    async () => {
      await start("chunks", "chunks.ts");
      const { id } = (await call("chunks", "/run", { input: { count: 3, kb: 600 } })).json;
      // Every chunk posted and the job finished before the first read, so the paging alone splits them.
      await eventually(
        async () => (await call("chunks", `/status/${id}`)).json.status === "COMPLETED",
        "the job",
      );
      const pages: Answer[] = [];
      for (let i = 0; i < 3; i++) pages.push((await call("chunks", `/stream/${id}`)).json);
      expect(pages.map((p) => p.stream!.map((c) => c.output.slice(0, 2)))).toEqual([["0:"], ["1:"], ["2:"]]);
      expect(pages.map((p) => p.status)).toEqual(["IN_PROGRESS", "IN_PROGRESS", "COMPLETED"]);
    },
    TIMEOUT,
  );
});

describe("policy (serverless/endpoints/send-requests, Execution policies)", () => {
  it("executionTimeout outside 5 s – 7 days is refused with 400", async () => {
    t = await startTestPlatform();
    for (const executionTimeout of [4_999, 7 * 24 * 3_600_000 + 1]) {
      const res = await t.client("/run", { body: { input: {}, policy: { executionTimeout } } });
      expect(res.status, String(executionTimeout)).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain("executionTimeout");
    }
    const ok = await t.client("/run", { body: { input: {}, policy: { executionTimeout: 5_000 } } });
    expect(ok.status).toBe(200);
  });

  it(
    "a TTL that passes while the job runs ends it: its worker is told to stop, /status answers 404",
    async () => {
      await start("ttl", "big-output.ts");
      const { id } = (await call("ttl", "/run", { input: { waitMs: 60_000 }, policy: { ttl: 10_000 } })).json;
      await eventually(
        async () => (await call("ttl", `/status/${id}`)).json.status === "IN_PROGRESS",
        "the job to run",
      );
      await eventually(async () => (await call("ttl", `/status/${id}`)).status === 404, "the TTL", 30_000);
      expect(t!.lines.join("\n")).toContain("Job expired while running: its TTL of 10000 ms passed; deleted");
      await eventually(
        () => t!.lines.some((l) => l.includes(`${id} | Job stopped.`)),
        "the worker to stop it",
      );
    },
    TIMEOUT,
  );
});
