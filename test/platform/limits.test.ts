// RunPod's documented limits on the local platform, with real worker processes: a /run job's result
// (10 MB) against a /runsync job's (20 MB), /stream answers of at most 1 MB, the execution-timeout
// bounds, and a TTL that ends a running job (docs/protocol.md §11).
import { afterEach, describe, expect, it } from "vitest";
import { type LocalS3, startS3 } from "../files/s3rver.js";
import { FLASH, flashRun } from "../process.js";
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

const start = async (id: string, fixture: string, env: Record<string, string> = {}) => {
  t = await startTestPlatform({
    endpoints: [{ id, command: worker(fixture), cwd: process.cwd(), workers: [1, 1], env }],
  });
};

/** The job once it is final, polled through /status. */
const final = (endpoint: string, id: string) =>
  eventually(async () => {
    const s = (await call(endpoint, `/status/${id}`)).json;
    return ["COMPLETED", "FAILED"].includes(s.status) ? s : undefined;
  }, `job ${id} to finish`);

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
      expect(failed.error).toContain(
        "Return less, or upload the output (upload()) and return its URL; handler(fn, { offloadOutput: true }) does that for you when a bucket is configured",
      );
    },
    TIMEOUT,
  );
});

describe("large outputs (docs/protocol.md §11.2)", () => {
  let s3: LocalS3 | undefined;
  afterEach(async () => {
    await s3?.close();
    s3 = undefined;
  });

  it(
    "offloadOutput with a bucket: a 12 MB /run output is uploaded and the job returns its URL",
    async () => {
      s3 = await startS3(["outputs"]);
      await start("off", "big-output.ts", {
        OFFLOAD: "1",
        BUCKET_ENDPOINT_URL: `${s3.url}/outputs`,
        BUCKET_ACCESS_KEY_ID: "S3RVER",
        BUCKET_SECRET_ACCESS_KEY: "S3RVER",
      });
      const { id } = (await call("off", "/run", { input: { mb: 12 } })).json;
      const done = await final("off", id);
      expect(done.status).toBe("COMPLETED");
      const output = done.output as { output_url: string; output_bytes: number };
      expect(Object.keys(output).sort()).toEqual(["output_bytes", "output_url"]);
      expect(output.output_url).toContain(`/outputs/${id}/output.json?`);
      const fetched = await fetch(output.output_url);
      expect(fetched.status).toBe(200);
      const text = await fetched.text();
      expect(Buffer.byteLength(text)).toBe(output.output_bytes);
      expect((JSON.parse(text) as { text: string }).text.length).toBe(12 * 1024 * 1024);
      expect(t!.lines.join("\n")).toContain(
        "Output of 12.0 MB uploaded to the bucket (offloadOutput); the job returns its URL.",
      );
    },
    TIMEOUT,
  );

  it(
    "offloadOutput without a bucket: FAILED, saying which variables to set",
    async () => {
      await start("nob", "big-output.ts", { OFFLOAD: "1" });
      const { id } = (await call("nob", "/run", { input: { mb: 12 } })).json;
      const done = await final("nob", id);
      expect(done.status).toBe("FAILED");
      expect(done.error).toBe(
        "Job output is 12.0 MB, over the platform's result limit (/run 10 MB, /runsync 20 MB), and offloadOutput has no bucket to upload it to: set BUCKET_ENDPOINT_URL (http(s)://host/bucket), BUCKET_ACCESS_KEY_ID and BUCKET_SECRET_ACCESS_KEY, or send s3Config with the request.",
      );
    },
    TIMEOUT,
  );

  it(
    "without offloadOutput, an output over 20 MB fails before it is sent, naming the limit and the way out",
    async () => {
      await start("huge", "big-output.ts");
      const sync = await call("huge", "/runsync?wait=60000", { input: { mb: 21 } });
      expect(sync.json.status).toBe("FAILED");
      expect(sync.json.output).toBeUndefined();
      expect(sync.json.error).toMatch(
        /^Job output is 21\.0 MB, over the platform's result limit \(\/run 10 MB, \/runsync 20 MB\)\. Return less, or upload the output/,
      );
      // Refused by the worker, not the platform: no 413 was ever answered.
      expect(t!.lines.join("\n")).not.toContain("refused the");
    },
    TIMEOUT,
  );
});

describe("large outputs in flash run: the body printed is the one the platform would get", () => {
  it(
    "offloaded with a bucket; over 20 MB without offloadOutput, exit 1 naming the limit",
    async () => {
      const s3 = await startS3(["outputs"]);
      try {
        const run = await flashRun(
          ["run", "test/fixtures/big-output.ts", "--test-input", '{"input":{"mb":11}}'],
          {
            OFFLOAD: "1",
            BUCKET_ENDPOINT_URL: `${s3.url}/outputs`,
            BUCKET_ACCESS_KEY_ID: "S3RVER",
            BUCKET_SECRET_ACCESS_KEY: "S3RVER",
          },
        );
        expect(run.code).toBe(0);
        const { output } = JSON.parse(run.stdout) as { output: { output_url: string; output_bytes: number } };
        expect(output.output_url).toContain("/outputs/local_test/output.json?");
        const text = await (await fetch(output.output_url)).text();
        expect(Buffer.byteLength(text)).toBe(output.output_bytes);
      } finally {
        await s3.close();
      }
      const huge = await flashRun([
        "run",
        "test/fixtures/big-output.ts",
        "--test-input",
        '{"input":{"mb":21}}',
      ]);
      expect(huge.code).toBe(1);
      expect(huge.stdout).toBe("");
      expect(huge.stderr).toContain(
        "Job output is 21.0 MB, over the platform's result limit (/run 10 MB, /runsync 20 MB).",
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
