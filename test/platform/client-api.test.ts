// The client API with raw requests: bad inputs get clear JSON errors, plus the routes runpod-sdk lacks.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENDPOINT, eventually, type JobJson, startTestPlatform, type TestPlatform } from "./helpers.js";

let t: TestPlatform;
beforeEach(async () => {
  t = await startTestPlatform();
});
afterEach(async () => {
  await t.platform.close();
});

async function errorOf(response: Response): Promise<{ status: number; error: string; type: string | null }> {
  const type = response.headers.get("content-type");
  const body = (await response.json()) as { error: string };
  expect(typeof body.error).toBe("string");
  return { status: response.status, error: body.error, type };
}

describe("bad input gets a clear JSON error", () => {
  it("unknown endpoint → 404", async () => {
    const response = await fetch(`${t.base("nope")}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.platform.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ input: {} }),
    });
    const { status, error, type } = await errorOf(response);
    expect(status).toBe(404);
    expect(type).toMatch(/application\/json/);
    expect(error).toBe("Endpoint nope not found");
  });

  it("unknown job → 404 on status, status-sync, stream, cancel and retry", async () => {
    for (const [method, path] of [
      ["GET", "/status/missing-e1"],
      ["POST", "/status/missing-e1"],
      ["GET", "/status-sync/missing-e1?wait=1000"],
      ["GET", "/stream/missing-e1"],
      ["POST", "/cancel/missing-e1"],
      ["POST", "/retry/missing-e1"],
    ] as const) {
      const { status, error } = await errorOf(await t.client(path, { method }));
      expect(status, `${method} ${path}`).toBe(404);
      expect(error).toBe("Job missing-e1 not found");
    }
  });

  it("malformed JSON → 400", async () => {
    const response = await fetch(`${t.base()}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.platform.apiKey}`, "content-type": "application/json" },
      body: '{"input": {',
    });
    const { status, error } = await errorOf(response);
    expect(status).toBe(400);
    expect(error).toMatch(/^Malformed JSON body/);
  });

  it("a body sent without the JSON content type (curl -d's form type, or none) → 415 saying which header to send", async () => {
    const hint =
      "send the body as JSON with the header Content-Type: application/json (curl: -H 'Content-Type: application/json')";
    const post = (path: string, type?: string) =>
      fetch(`${t.platform.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.platform.apiKey}`, ...(type ? { "content-type": type } : {}) },
        // Bytes, so fetch adds no content type of its own.
        body: new TextEncoder().encode('{"input": {}}'),
      });
    for (const [path, type] of [
      ["/v2/nope/run", "application/x-www-form-urlencoded"],
      [`/v2/${ENDPOINT}/runsync`, undefined],
    ] as const) {
      const { status, error } = await errorOf(await post(path, type));
      expect(status, path).toBe(415);
      expect(error).toBe(`Unsupported Media Type${type ? ` ${type}` : ""}: ${hint}`);
    }
    const openai = await post(
      `/v2/${ENDPOINT}/openai/v1/chat/completions`,
      "application/x-www-form-urlencoded",
    );
    expect(openai.status).toBe(415);
    const body = (await openai.json()) as { error: { message: string; type: string } };
    expect(body.error).toMatchObject({
      type: "invalid_request_error",
      message: expect.stringContaining(hint),
    });
  });

  it("missing or null input → 400", async () => {
    for (const body of [{}, { webhook: "http://127.0.0.1:1/x" }, { input: null }]) {
      const { status, error } = await errorOf(await t.client("/run", { body }));
      expect(status).toBe(400);
      expect(error).toMatch(/input/);
    }
    const { status } = await errorOf(await t.client("/runsync", { body: { inputs: 1 } }));
    expect(status).toBe(400);
  });

  it("an empty body → 400, not a crash", async () => {
    const response = await fetch(`${t.base()}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.platform.apiKey}`, "content-type": "application/json" },
    });
    expect(response.status).toBe(400);
  });

  it("oversized body → 413 naming the limit (/run 10 MB, /runsync 20 MB)", async () => {
    const big = (mb: number) => JSON.stringify({ input: { blob: "x".repeat(mb * 1024 * 1024) } });
    const post = (path: string, body: string) =>
      fetch(`${t.base()}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.platform.apiKey}`, "content-type": "application/json" },
        body,
      });
    const run = await errorOf(await post("/run", big(11)));
    expect(run.status).toBe(413);
    expect(run.error).toContain("10 MB");
    const runsync = await errorOf(await post("/runsync?wait=1000", big(21)));
    expect(runsync.status).toBe(413);
    expect(runsync.error).toContain("20 MB");
    // 11 MB is within /runsync's limit: accepted, and the job waits in the queue.
    const accepted = await post("/runsync?wait=1000", big(11));
    expect(accepted.status).toBe(200);
    expect(((await accepted.json()) as JobJson).status).toBe("IN_QUEUE");
  });

  it("wrong or missing key → 401", async () => {
    for (const authorization of [
      undefined,
      "Bearer wrong",
      "wrong",
      "Basic abc",
      `Bearer  ${t.platform.apiKey}x`,
    ]) {
      const response = await fetch(`${t.base()}/health`, authorization ? { headers: { authorization } } : {});
      const { status, error } = await errorOf(response);
      expect(status, String(authorization)).toBe(401);
      expect(error).toMatch(/^Unauthorized/);
    }
    const endpoints = await fetch(`${t.platform.url}/v2/serverless`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(endpoints.status).toBe(401);
  });

  it("accepts the raw key too, as the platform's curl examples send it", async () => {
    const response = await fetch(`${t.base()}/health`, { headers: { authorization: t.platform.apiKey } });
    expect(response.status).toBe(200);
  });

  it("?wait= outside 1000–300000 → 400", async () => {
    for (const wait of ["999", "300001", "abc"]) {
      const { status, error } = await errorOf(
        await t.client(`/runsync?wait=${wait}`, { body: { input: 1 } }),
      );
      expect(status).toBe(400);
      expect(error).toContain("wait");
    }
  });

  it("unknown route → 404 JSON", async () => {
    const { status } = await errorOf(await t.client("/nothing-here"));
    expect(status).toBe(404);
  });
});

describe("routes beyond runpod-sdk", () => {
  it("cancel accepts curl's bare POST with a JSON content type and no body", async () => {
    const { id } = (await (await t.client("/run", { body: { input: 1 } })).json()) as JobJson;
    const response = await fetch(`${t.base()}/cancel/${id}`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.platform.apiKey}`, "content-type": "application/json" },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id, status: "CANCELLED" });
  });

  it("retry requeues a FAILED job under the same id; other states are refused", async () => {
    const { id } = (await (await t.client("/run", { body: { input: "x" } })).json()) as JobJson;
    const notYet = await t.client(`/retry/${id}`, { method: "POST" });
    expect(notYet.status).toBe(400);
    expect(((await notYet.json()) as { error: string }).error).toContain("only FAILED or TIMED_OUT");

    const worker = t.worker("w-retry");
    await worker.takeOne();
    await worker.done(id, { error: "first try failed" });
    expect(await (await t.client(`/status/${id}`)).json()).toMatchObject({
      status: "FAILED",
      error: "first try failed",
    });

    const retried = await t.client(`/retry/${id}`, { method: "POST" });
    expect(await retried.json()).toEqual({ id, status: "IN_QUEUE" });
    const again = await worker.takeOne();
    expect(again.id).toBe(id);
    await worker.done(id, { output: "second try" });
    const final = (await (await t.client(`/status/${id}`)).json()) as JobJson;
    expect(final).toMatchObject({ id, status: "COMPLETED", output: "second try" });
    expect(final.error).toBeUndefined();
    expect(await (await t.client("/health")).json()).toMatchObject({
      jobs: { retried: 1, completed: 1, failed: 1 },
    });
  });

  it("runsync returns the finished job with its timings", async () => {
    const worker = t.worker("w-runsync");
    const answer = t.client("/runsync", { body: { input: { a: 1 } } });
    const job = await worker.takeOne();
    await worker.done(job.id, { output: { b: 2 } });
    const body = (await (await answer).json()) as JobJson;
    expect(body).toMatchObject({ id: job.id, status: "COMPLETED", output: { b: 2 }, workerId: "w-runsync" });
    expect(body.id).toMatch(/^sync-/);
    expect(typeof body.delayTime).toBe("number");
    expect(typeof body.executionTime).toBe("number");
  });

  it("/stream hands out chunks since the last call; a plain job's output comes as one chunk", async () => {
    const { id } = (await (await t.client("/run", { body: { input: 1 } })).json()) as JobJson;
    const worker = t.worker("w-chunks");
    await worker.takeOne();
    await worker.stream(id, 1);
    await worker.stream(id, 2);
    expect(await (await t.client(`/stream/${id}`)).json()).toEqual({
      id,
      status: "IN_PROGRESS",
      stream: [{ output: 1 }, { output: 2 }],
    });
    await worker.stream(id, 3);
    await worker.done(id, { output: [] }, { isStream: true });
    expect(await (await t.client(`/stream/${id}`)).json()).toEqual({
      id,
      status: "COMPLETED",
      stream: [{ output: 3 }],
    });

    const plain = (await (await t.client("/run", { body: { input: 2 } })).json()) as JobJson;
    await worker.takeOne();
    await worker.done(plain.id, { output: "whole" });
    expect(await (await t.client(`/stream/${plain.id}`)).json()).toEqual({
      id: plain.id,
      status: "COMPLETED",
      stream: [{ output: "whole" }],
    });
  });

  it("/stream speaks Server-Sent Events when asked for text/event-stream", async () => {
    const { id } = (await (await t.client("/run", { body: { input: 1 } })).json()) as JobJson;
    const worker = t.worker("w-sse");
    await worker.takeOne();
    const response = await t.client(`/stream/${id}`, { headers: { accept: "text/event-stream" } });
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const text = response.text();
    await worker.stream(id, "a");
    await worker.stream(id, { b: 1 });
    await worker.done(id, { output: ["a", { b: 1 }] }, { isStream: true });
    const events = (await text)
      .split("\n\n")
      .filter((e) => e.length > 0 && !e.startsWith(":"))
      .map((e) => e.replace(/^: waiting\n/, ""));
    expect(events.slice(0, 2)).toEqual(['data: {"output":"a"}', 'data: {"output":{"b":1}}']);
    expect(events[2]).toMatch(/^event: status\ndata: /);
    expect(JSON.parse(events[2]!.split("data: ")[1]!)).toMatchObject({ id, status: "COMPLETED" });
  });

  it("progress updates show in /status while the job runs", async () => {
    const { id } = (await (await t.client("/run", { body: { input: 1 } })).json()) as JobJson;
    const worker = t.worker("w-progress");
    await worker.takeOne();
    await worker.done(id, { status: "IN_PROGRESS", output: { pct: 40 } });
    expect(await (await t.client(`/status/${id}`)).json()).toMatchObject({
      status: "IN_PROGRESS",
      output: { pct: 40 },
    });
    await worker.done(id, { output: "done" });
    // A progress update that arrives after the result changes nothing (runpod-python#250).
    expect((await worker.done(id, { status: "IN_PROGRESS", output: { pct: 90 } })).status).toBe(200);
    expect(await (await t.client(`/status/${id}`)).json()).toMatchObject({
      status: "COMPLETED",
      output: "done",
    });
  });

  it("a job that fails after a progress update is FAILED with its error and no output", async () => {
    const { id } = (await (await t.client("/run", { body: { input: 1 } })).json()) as JobJson;
    const worker = t.worker("w-progress-fail");
    await worker.takeOne();
    await worker.done(id, { status: "IN_PROGRESS", output: { pct: 60 } });
    await worker.done(id, { error: "boom" });
    const job = (await (await t.client(`/status/${id}`)).json()) as JobJson;
    expect(job).toMatchObject({ status: "FAILED", error: "boom" });
    expect(job).not.toHaveProperty("output");
  });

  it("finished jobs are forgotten when their retention ends", async () => {
    await t.platform.close();
    t = await startTestPlatform({ retention: { runMs: 3_600_000, syncMs: 3_600_000 } });
    const worker = t.worker("w-retention");
    const finish = async () => {
      const { id } = (await (await t.client("/run", { body: { input: 1 } })).json()) as JobJson;
      await worker.takeOne();
      await worker.done(id, { output: 1 });
      return id;
    };
    const kept = await finish();
    // A shorter retention applies to jobs that finish from now on: that one goes, the first one stays.
    t.platform.scheduler.jobs.retentionMs = { runMs: 300, syncMs: 300 };
    const short = await finish();
    await eventually(async () => (await t.client(`/status/${short}`)).status === 404, "the job to expire");
    t.platform.scheduler.sweep();
    expect(await (await t.client(`/status/${kept}`)).json()).toMatchObject({ id: kept, status: "COMPLETED" });
  });

  it("queued and running jobs are never forgotten, however short the retention", async () => {
    await t.platform.close();
    t = await startTestPlatform({
      retention: { runMs: 1, syncMs: 1 },
      endpoints: [{ id: ENDPOINT }, { id: "marker" }],
    });
    // A job on another endpoint that finishes after this point and is then forgotten: any retention clock
    // started for the job under test before it has run out too, so a sweep now would drop that job.
    const marker = t.worker("w-marker", "marker");
    const markerUrl = `${t.platform.url}/v2/marker`;
    const headers = { authorization: `Bearer ${t.platform.apiKey}`, "content-type": "application/json" };
    const outlived = async () => {
      const run = await fetch(`${markerUrl}/run`, { method: "POST", headers, body: '{"input":1}' });
      const { id } = (await run.json()) as JobJson;
      await marker.takeOne();
      await marker.done(id, { output: 1 });
      await eventually(
        async () => (await fetch(`${markerUrl}/status/${id}`, { headers })).status === 404,
        "the marker job to expire",
      );
      t.platform.scheduler.sweep();
    };
    const { id } = (await (await t.client("/run", { body: { input: 1 } })).json()) as JobJson;
    await outlived();
    expect(await (await t.client(`/status/${id}`)).json()).toMatchObject({ id, status: "IN_QUEUE" });
    await t.worker("w-kept").takeOne();
    await outlived();
    expect(await (await t.client(`/status/${id}`)).json()).toMatchObject({ id, status: "IN_PROGRESS" });
  });
});
