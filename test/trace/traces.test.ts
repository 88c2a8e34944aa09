import { createServer } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { serializeArg } from "../../src/payload/base64.js";
import { RecordingPlatform } from "../conformance/recording-platform.js";
import { type LocalS3, startS3 } from "../files/s3rver.js";
import { modulesResolved } from "../modules.js";
import { flash, flashRun, freePort } from "../process.js";
import { OtlpReceiver, type ReceivedSpan, spanTree } from "./receiver.js";

/** Only the flush at exit can send spans: the batch's timer would wait a minute. */
const FLUSH_AT_EXIT_ONLY = { OTEL_BSP_SCHEDULE_DELAY: "60000" };

const SERVER = 2;
const CONSUMER = 5;

function only(
  spans: readonly ReceivedSpan[],
  test: (s: ReceivedSpan) => boolean,
  what: string,
): ReceivedSpan {
  const found = spans.filter(test);
  if (found.length !== 1) throw new Error(`expected one ${what}, got ${found.length}:\n${spanTree(spans)}`);
  return found[0] as ReceivedSpan;
}

const childOf = (spans: readonly ReceivedSpan[], parent: ReceivedSpan, name: string) =>
  only(spans, (s) => s.parentSpanId === parent.spanId && s.name === name, `${name} under ${parent.name}`);

describe("traces", () => {
  let receiver: OtlpReceiver;
  beforeEach(async () => {
    receiver = await new OtlpReceiver().start();
  });
  afterEach(async () => {
    await receiver.close();
  });

  describe("queue worker against the recording platform", () => {
    let platform: RecordingPlatform;
    let s3: LocalS3;
    beforeEach(async () => {
      platform = await new RecordingPlatform().start();
      s3 = await startS3(["results"]);
    });
    afterEach(async () => {
      await platform.close();
      await s3.close();
    });

    it("a job's span carries its ids and status, with the handler (and its own span) and the result post with its retry as children; sent before SIGTERM's exit", async () => {
      // The first job-done post fails with a 503: its retry is an event on the result post's span.
      let refused = false;
      platform.responders.push((r) => {
        if (r.route !== "done" || refused) return undefined;
        refused = true;
        return { status: 503, body: "{}" };
      });
      const worker = flash(["start", "test/trace/fixtures/traced.ts"], {
        ...platform.env("worker-7"),
        RUNPOD_ENDPOINT_ID: "ep-traced",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: "traced-worker",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=ml",
        RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS: "true",
        LOG_FORMAT: "json",
        // A real S3 server the handler uploads to: an "upload" span under the handler's.
        BUCKET_ENDPOINT_URL: `${s3.url}/results`,
        BUCKET_ACCESS_KEY_ID: "S3RVER",
        BUCKET_SECRET_ACCESS_KEY: "S3RVER",
        ...FLUSH_AT_EXIT_ONLY,
      });
      // A file the handler downloads: a "download" span under the handler's.
      const files = createServer((_req, res) => res.end("weights"));
      await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
      const { port } = files.address() as { port: number };
      platform.push({ id: "job-1", input: { download: `http://127.0.0.1:${port}/model.bin`, upload: true } });
      await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 2);
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe(0);
      files.closeAllConnections();
      files.close();

      // The worker has exited: whatever it sent has been received.
      const spans = receiver.spans;
      expect(receiver.posts.every((p) => p.path === "/v1/traces")).toBe(true);
      const job = only(spans, (s) => s.name === "job", "job span");
      expect(job.kind).toBe(CONSUMER);
      expect(job.attributes).toMatchObject({
        "flash.job.id": "job-1",
        "flash.worker.id": "worker-7",
        "flash.endpoint.id": "ep-traced",
        "flash.job.status": "COMPLETED",
      });
      expect(job.resource).toMatchObject({
        "service.name": "traced-worker",
        "deployment.environment": "test",
        team: "ml",
      });
      const handler = childOf(spans, job, "handler");
      const own = childOf(spans, handler, "load model");
      expect(own.attributes).toStrictEqual({ model: "tiny" });
      const fetched = childOf(spans, handler, "download");
      expect(fetched.attributes["url.full"]).toBe(`http://127.0.0.1:${port}/model.bin`);
      const uploaded = childOf(spans, handler, "upload");
      expect(uploaded.statusCode).not.toBe(2);
      const post = childOf(spans, job, "result post");
      // The first retry waits 1 s with equal jitter: between half of it and all of it.
      const retry = post.events.find((e) => e.name === "retry");
      expect(retry?.attributes).toMatchObject({ attempt: 1 });
      expect(retry?.attributes["wait.ms"]).toBeGreaterThanOrEqual(500);
      expect(retry?.attributes["wait.ms"]).toBeLessThanOrEqual(1000);
      for (const s of [handler, own, fetched, uploaded, post]) expect(s.traceId).toBe(job.traceId);
      console.log(`one job's trace, as received:\n${spanTree(spans)}`);

      // The job's JSON log lines, the handler's among them, carry its trace id.
      const records = worker.stdout
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const fromHandler = records.find((r) => r.message === "from the handler");
      expect(fromHandler).toMatchObject({ requestId: "job-1", traceId: job.traceId });
      expect(records.find((r) => r.requestId === "job-1" && r.message === "Started.")).toMatchObject({
        traceId: job.traceId,
      });
    });

    it("a generator job: each chunk's job-stream post is a span of the job", async () => {
      const worker = flash(["start", "test/trace/fixtures/streamed.ts"], {
        ...platform.env(),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        ...FLUSH_AT_EXIT_ONLY,
      });
      platform.push({ id: "job-stream", input: {} });
      await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe(0);
      const job = only(receiver.spans, (s) => s.name === "job", "job span");
      expect(platform.of("stream")).toHaveLength(2);
      const posts = receiver.spans.filter((s) => s.parentSpanId === job.spanId && s.name === "stream post");
      expect(posts).toHaveLength(2);
      childOf(receiver.spans, job, "handler");
      childOf(receiver.spans, job, "result post");
    });

    it("refresh_worker: the worker stops itself after the job, and the job's spans are sent before it exits", async () => {
      const worker = flash(["start", "test/trace/fixtures/traced.ts"], {
        ...platform.env(),
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
        ...FLUSH_AT_EXIT_ONLY,
      });
      platform.push({ id: "job-refresh", input: { refresh: true } });
      expect(await worker.exited).toBe(0);
      const job = only(receiver.spans, (s) => s.name === "job", "job span");
      expect(job.attributes["flash.job.id"]).toBe("job-refresh");
      expect(job.resource["service.name"]).toBe("flash-worker");
      childOf(receiver.spans, job, "handler");
      childOf(receiver.spans, job, "result post");
    });
  });

  it("flash dev: a runsync job's span reaches the receiver with its id, status and children", {
    timeout: 120_000,
  }, async () => {
    const port = await freePort();
    const dev = flash(
      ["dev", "test/trace/fixtures/traced.ts", "--port", String(port), "--api-key", "k9", "--workers", "1,1"],
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "dev-traced" },
    );
    try {
      const ready = await dev.waitForLine(/^Ready\. Try: curl/, 60_000);
      const runsync = /(http:\/\/\S+\/runsync)/.exec(ready)?.[1];
      expect(runsync, ready).toBeDefined();
      const answer = (await fetch(runsync as string, {
        method: "POST",
        headers: { Authorization: "Bearer k9", "Content-Type": "application/json" },
        body: JSON.stringify({ input: {} }),
      }).then((r) => r.json())) as { id: string; status: string };
      expect(answer.status).toBe("COMPLETED");
      await receiver.waitFor(
        (spans) => spans.some((s) => s.attributes["flash.job.id"] === answer.id),
        30_000,
      );
      const job = only(receiver.spans, (s) => s.attributes["flash.job.id"] === answer.id, "job span");
      expect(job).toMatchObject({
        name: "job",
        attributes: expect.objectContaining({ "flash.job.status": "COMPLETED" }),
        resource: expect.objectContaining({ "service.name": "dev-traced" }),
      });
      await receiver.waitFor((spans) =>
        spans.some((s) => s.parentSpanId === job.spanId && s.name === "result post"),
      );
      childOf(receiver.spans, childOf(receiver.spans, job, "handler"), "load model");
      console.log(`a flash dev job's trace:\n${spanTree(receiver.spans)}`);
    } finally {
      dev.child.kill("SIGINT");
      await dev.exited;
    }
  });

  it("flash run: the test job's spans are sent before the one-shot exits; OTEL_TRACES_SAMPLER=always_off sends none", async () => {
    const run = await flashRun(["run", "test/trace/fixtures/traced.ts", "--test-input", '{"input":{}}'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      ...FLUSH_AT_EXIT_ONLY,
    });
    expect(run.code).toBe(0);
    const job = only(receiver.spans, (s) => s.name === "job", "job span");
    expect(job.attributes).toMatchObject({ "flash.job.id": "local_test", "flash.job.status": "COMPLETED" });
    childOf(receiver.spans, childOf(receiver.spans, job, "handler"), "load model");

    const before = receiver.spans.length;
    const off = await flashRun(["run", "test/trace/fixtures/traced.ts", "--test-input", '{"input":{}}'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: "always_off",
      ...FLUSH_AT_EXIT_ONLY,
    });
    expect(off.code).toBe(0);
    // The process has exited: anything it was going to send has arrived.
    expect(receiver.spans.length).toBe(before);
  });

  it("remote functions: the pickled arguments' decode and the result's encode are spans of the handler", async () => {
    const request = {
      function_name: "add",
      execution_type: "function",
      args: [serializeArg(2), serializeArg(3)],
    };
    const run = await flashRun(
      ["run", "test/fixtures/remote/app.ts", "--test-input", JSON.stringify({ input: request })],
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...FLUSH_AT_EXIT_ONLY },
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ output: { success: true } });
    const job = only(receiver.spans, (s) => s.name === "job", "job span");
    const handler = childOf(receiver.spans, job, "handler");
    expect(childOf(receiver.spans, handler, "decode").attributes).toStrictEqual({ "flash.payload.args": 2 });
    childOf(receiver.spans, handler, "encode");
  });

  it("a load-balanced request continues the caller's traceparent: same trace, parent = the caller's span", async () => {
    const port = await freePort();
    const worker = flash(["start", "test/trace/fixtures/lb-traced.ts"], {
      PORT: String(port),
      FLASH_LB_HOST: "127.0.0.1",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      ...FLUSH_AT_EXIT_ONLY,
    });
    await worker.waitForLine(/Endpoint traced-api ready/);
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const answer = await fetch(`http://127.0.0.1:${port}/hello`, {
      headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    expect(await answer.json()).toStrictEqual({ text: "hello" });
    // A request without one starts its own trace.
    expect((await fetch(`http://127.0.0.1:${port}/hello`)).status).toBe(200);
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);

    const requests = receiver.spans.filter((s) => s.name === "GET /hello");
    expect(requests).toHaveLength(2);
    const continued = only(requests, (s) => s.traceId === traceId, "continued request span");
    expect(continued.parentSpanId).toBe(callerSpan);
    expect(continued.kind).toBe(SERVER);
    expect(continued.attributes).toMatchObject({
      "http.request.method": "GET",
      "http.route": "/hello",
      "http.response.status_code": 200,
    });
    childOf(receiver.spans, continued, "compose greeting");
    const fresh = only(requests, (s) => s.traceId !== traceId, "new request span");
    expect(fresh.parentSpanId).toBeUndefined();
  });

  it("without an OTLP endpoint variable no OpenTelemetry module is ever resolved; with one the SDK loads as one bundled module beside the API", async () => {
    const otel = (urls: string[]) => urls.filter((url) => url.includes("/node_modules/@opentelemetry/"));
    const sdk = (urls: string[]) =>
      urls.filter((url) => url.endsWith("/dist/trace/otel.js") || url.endsWith("/dist/trace/sdk.js"));
    const plain = modulesResolved("test/fixtures/json-logs.ts", {
      OTEL_SERVICE_NAME: "named-but-not-exported",
    });
    expect(plain.some((url) => url.endsWith("/dist/runtime/start.js"))).toBe(true);
    expect(otel(plain)).toStrictEqual([]);
    expect(sdk(plain)).toStrictEqual([]);
    // spawnSync holds this process, so the endpoint is a port nothing listens on: the export fails fast.
    const closed = `http://127.0.0.1:${await freePort()}`;
    const traced = modulesResolved("test/fixtures/json-logs.ts", {
      OTEL_EXPORTER_OTLP_ENDPOINT: closed,
      OTEL_EXPORTER_OTLP_TIMEOUT: "500",
    });
    // scripts/bundle-otel.mjs: the SDK's hundreds of files are one module in dist/ (issue 29); only the API, which
    // the app shares with it, loads as its package.
    expect(sdk(traced).map((url) => url.slice(url.indexOf("/dist/")))).toStrictEqual([
      "/dist/trace/otel.js",
      "/dist/trace/sdk.js",
    ]);
    const packages = new Set(otel(traced).map((url) => /@opentelemetry\/([^/]+)\//.exec(url)?.[1]));
    expect([...packages]).toStrictEqual(["api"]);
  });
});
