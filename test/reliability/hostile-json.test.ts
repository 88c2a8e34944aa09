// Deep and wide JSON at every entry point of the local platform (queue, worker API, REST v2, OpenAI, the console,
// load-balanced through /lb/<id>/) and at a queue worker: nesting past MAX_JSON_DEPTH is a 400 where the body is
// parsed, the deepest accepted body goes the whole way, wide bodies are served, and a job no worker can be handed
// ends FAILED instead of cycling (issue 43, case 5).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/http/json.js";
import {
  eventually,
  type JobJson,
  lbReady,
  startTestPlatform,
  type TestPlatform,
} from "../platform/helpers.js";
import { type Flash, flash } from "../process.js";

const TIMEOUT = 120_000;
const DEEP_MESSAGE = `JSON nests deeper than ${MAX_JSON_DEPTH} levels, the limit`;

/** `levels` arrays, one inside the other, around a 1. */
const nested = (levels: number): string => `${"[".repeat(levels)}1${"]".repeat(levels)}`;
/** A job body whose input makes the whole body exactly `depth` levels deep. */
const jobBody = (depth: number): string => `{"input": ${nested(depth - 1)}}`;
/** A million numbers side by side: wide, two levels deep. */
const WIDE = `[${"0,".repeat(999_999)}0]`;

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({
    loadBalanced: [
      {
        id: "lb",
        file: "examples/load-balanced/handler.ts",
        workers: [1, 1],
        env: { MODEL_LOAD_MS: "0" },
      },
    ],
  });
  await lbReady(t, "lb");
}, TIMEOUT);
afterAll(() => t?.platform.close(), TIMEOUT);

interface Answer {
  status: number;
  text: string;
}

async function post(
  path: string,
  body: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const res = await fetch(`${t.platform.url}${path}`, {
    method: options.method ?? "POST",
    headers: {
      authorization: `Bearer ${t.platform.apiKey}`,
      "content-type": "application/json",
      ...options.headers,
    },
    body,
  });
  return { status: res.status, text: await res.text() };
}

const get = async (path: string): Promise<Answer> => {
  const res = await fetch(`${t.platform.url}${path}`, {
    headers: { authorization: `Bearer ${t.platform.apiKey}` },
  });
  return { status: res.status, text: await res.text() };
};

function expectTooDeep(answer: Answer): void {
  expect(answer.status, answer.text).toBe(400);
  expect(answer.text).toContain(DEEP_MESSAGE);
}

describe("deep JSON is a 400 where each entry point parses it", { timeout: TIMEOUT }, () => {
  it("queue: /run and /runsync refuse a body one level past the limit, and a million levels", async () => {
    expectTooDeep(await post("/v2/ep-test/run", jobBody(MAX_JSON_DEPTH + 1)));
    expectTooDeep(await post("/v2/ep-test/runsync", jobBody(MAX_JSON_DEPTH + 1)));
    expectTooDeep(await post("/v2/ep-test/run", jobBody(1_000_000)));
    expect(t.platform.scheduler.jobs.size).toBe(0);
  });

  it("the worker API: job-done and job-stream refuse a deep body", async () => {
    const worker = t.worker("deep-poster");
    const headers = { authorization: t.platform.apiKey, "content-type": "application/x-www-form-urlencoded" };
    const body = `{"output": ${nested(MAX_JSON_DEPTH)}}`;
    expectTooDeep(await post(`/v2/ep-test/job-done/${worker.id}/any?isStream=false`, body, { headers }));
    expectTooDeep(await post(`/v2/ep-test/job-stream/${worker.id}/any`, body, { headers }));
  });

  it("OpenAI: chat/completions refuses a deep body in OpenAI's error shape, at once", async () => {
    const answer = await post(
      "/v2/ep-test/openai/v1/chat/completions",
      `{"messages": ${nested(MAX_JSON_DEPTH)}}`,
    );
    expectTooDeep(answer);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { type: "invalid_request_error" } });
  });

  it("REST v2: a deep endpoint body is a 400 problem", async () => {
    const answer = await post("/v2/serverless", `{"name": "x", "env": ${nested(MAX_JSON_DEPTH)}}`);
    expectTooDeep(answer);
    expect(JSON.parse(answer.text)).toMatchObject({ title: "Bad Request", status: 400 });
  });

  it("the console's API: a deep settings body is a 400", async () => {
    expectTooDeep(
      await post("/console/api/settings", `{"retention": ${nested(MAX_JSON_DEPTH)}}`, { method: "PUT" }),
    );
  });

  it("load-balanced: the worker's route server refuses a deep body behind /lb/<id>/", async () => {
    expectTooDeep(await post("/lb/lb/echo", `{"a": ${nested(MAX_JSON_DEPTH)}}`));
    const echoed = await post("/lb/lb/echo", `{"a": ${nested(MAX_JSON_DEPTH - 1)}}`);
    expect(echoed.status, echoed.text).toBe(200);
    expect(echoed.text.replace(/\s/g, "")).toBe(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`);
  });
});

describe("the deepest and widest bodies accepted go the whole way", { timeout: TIMEOUT }, () => {
  it("a job exactly at the limit: queued, taken, done, shown by /status and the console", async () => {
    const submitted = await post("/v2/ep-test/run", jobBody(MAX_JSON_DEPTH));
    expect(submitted.status, submitted.text).toBe(200);
    const { id } = JSON.parse(submitted.text) as { id: string };
    const worker = t.worker("at-limit");
    const taken = await worker.takeOne();
    expect(taken.id).toBe(id);
    expect(JSON.stringify(taken.input)).toBe(nested(MAX_JSON_DEPTH - 1));
    expect((await worker.done(id, { output: taken.input })).status).toBe(200);
    const status = JSON.parse((await get(`/v2/ep-test/status/${id}`)).text) as JobJson;
    expect(status.status).toBe("COMPLETED");
    const detail = await get(`/console/api/jobs/${id}`);
    expect(detail.status, detail.text).toBe(200);
    expect(JSON.stringify((JSON.parse(detail.text) as { input: unknown }).input)).toBe(
      nested(MAX_JSON_DEPTH - 1),
    );
  });

  it("a million-element input: queued, taken, done; the console shows it", async () => {
    const submitted = await post("/v2/ep-test/run", `{"input": ${WIDE}}`);
    expect(submitted.status, submitted.text).toBe(200);
    const { id } = JSON.parse(submitted.text) as { id: string };
    const worker = t.worker("wide");
    const taken = await worker.takeOne();
    expect((taken.input as number[]).length).toBe(1_000_000);
    expect((await worker.done(id, { output: taken.input })).status).toBe(200);
    expect((await get(`/console/api/jobs/${id}`)).status).toBe(200);
  });

  it("a wide OpenAI body is answered once a worker completes its job", async () => {
    const answering = post("/v2/ep-test/openai/v1/chat/completions", `{"messages": ${WIDE}}`);
    const worker = t.worker("openai-wide");
    const taken = await worker.takeOne();
    const input = taken.input as { openai_route: string; openai_input: { messages: number[] } };
    expect(input.openai_input.messages).toHaveLength(1_000_000);
    await worker.done(taken.id, { output: { choices: [], count: input.openai_input.messages.length } });
    const answer = await answering;
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ choices: [], count: 1_000_000 });
  });

  it("a wide load-balanced body is echoed", async () => {
    const echoed = await post("/lb/lb/echo", `{"a": ${WIDE}}`);
    expect(echoed.status).toBe(200);
    expect((JSON.parse(echoed.text) as { a: number[] }).a).toHaveLength(1_000_000);
  });
});

describe("a job no worker can be handed ends FAILED", { timeout: TIMEOUT }, () => {
  it("its job-take answer cannot be written: FAILED at once with the reason, the take answers 204", async () => {
    // Only a caller inside the platform can queue such a job now: every parser refuses it.
    const endpoint = t.platform.scheduler.endpoint("ep-test")!;
    const job = t.platform.scheduler.submit(endpoint, { input: JSON.parse(nested(20_000)), sync: false });
    const take = await t.worker("unlucky").takeRaw();
    expect(take.status).toBe(204);
    const status = JSON.parse((await get(`/v2/ep-test/status/${job.id}`)).text) as JobJson;
    expect(status.status).toBe("FAILED");
    expect(status.error).toBe(
      "The job could not be written as JSON for its worker: Maximum call stack size exceeded",
    );
    // The console shows the job, naming the input it cannot write instead of answering 500.
    const detail = await get(`/console/api/jobs/${job.id}`);
    expect(detail.status, detail.text).toBe(200);
    expect(JSON.parse(detail.text)).toMatchObject({
      status: "FAILED",
      input: "(not shown: Maximum call stack size exceeded)",
    });
    expect(t.lines.some((l) => l.includes("could not be written as JSON") && l.includes("job failed"))).toBe(
      true,
    );
  });
});

describe("a queue worker handed a job deeper than it can write back", { timeout: TIMEOUT }, () => {
  let stand: Server | undefined;
  let worker: Flash | undefined;
  afterAll(async () => {
    worker?.child.kill("SIGKILL");
    await worker?.exited;
    await new Promise((resolve) => stand?.close(resolve));
  });

  it("fails that job with an error and runs the next one", async () => {
    // A stand-in platform (as RunPod could be) hands a 100,000-level job, then a plain one.
    const jobs = [`{"id": "deep", "input": {"x": ${nested(100_000)}}}`, `{"id": "plain", "input": {"x": 1}}`];
    const results = new Map<string, string>();
    stand = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString("utf8");
      });
      req.on("end", () => {
        const url = req.url ?? "";
        if (url.includes("/job-take/")) {
          const next = jobs.shift();
          if (next === undefined) return void setTimeout(() => res.writeHead(204).end(), 200);
          return void res.writeHead(200, { "content-type": "application/json" }).end(next);
        }
        const done = /\/job-done\/[^/]+\/([^?]+)/.exec(url);
        if (done) results.set(done[1]!, body);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => stand!.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(stand.address() as AddressInfo).port}/v2/EP`;
    worker = flash(["start", "examples/echo/handler.ts"], {
      RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$RUNPOD_POD_ID`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID`,
      RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID`,
      RUNPOD_POD_ID: "w",
      RUNPOD_AI_API_KEY: "K",
      RUNPOD_SKIP_FITNESS_CHECKS: "true",
    });
    await eventually(() => results.has("plain"), "the plain job's result", 60_000);
    expect(JSON.parse(results.get("deep")!)).toEqual({
      error: "Worker error while handling the job: Maximum call stack size exceeded",
    });
    expect(JSON.parse(results.get("plain")!)).toEqual({ output: { x: 1 } });
    expect(worker.child.exitCode).toBeNull();
  });
});
