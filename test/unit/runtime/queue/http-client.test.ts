// HttpPlatformClient against a real HTTP server on 127.0.0.1: what each call sends, and what it makes of each answer.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RetryPolicy } from "../../../../src/http/retry.js";
import { createLogger, type LogLevel } from "../../../../src/log/index.js";
import { readWorkerConfig } from "../../../../src/runtime/config/options.js";
import {
  DeliveryError,
  PlatformHttpError,
  serializeResult,
  TooManyRequests,
} from "../../../../src/runtime/queue/client.js";
import {
  type ClientOptions,
  createPlatformClient,
  HttpPlatformClient,
  USER_AGENT,
} from "../../../../src/runtime/queue/http-client.js";
import { startTracing, stopTracing, tracing } from "../../../../src/trace/index.js";
import { VERSION } from "../../../../src/version.js";
import { OtlpReceiver } from "../../../trace/receiver.js";

/** What the server answers: a status, and a body with the content type given (none when undefined). */
interface Answer {
  status: number;
  body?: string;
  contentType?: string;
}

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A platform stand-in: records each request and answers with the next scripted answer (the last one repeats). */
class ScriptedServer {
  readonly requests: Received[] = [];
  base = "";
  /** Record requests but never answer them. */
  hold = false;
  private readonly server: Server;

  constructor(private readonly answers: Answer[]) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.requests.push({
          method: req.method ?? "",
          url: req.url ?? "",
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        if (this.hold) return;
        const answer = (this.answers.length > 1 ? this.answers.shift() : this.answers[0]) as Answer;
        res.writeHead(answer.status, answer.contentType ? { "content-type": answer.contentType } : {});
        res.end(answer.body);
      });
    });
  }

  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, "127.0.0.1", resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const closing: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const server of closing.splice(0)) await server.close();
});

async function serve(...answers: Answer[]): Promise<ScriptedServer> {
  const server = await new ScriptedServer(answers).start();
  closing.push(server);
  return server;
}

/** The RUNPOD_WEBHOOK_* templates the platform sets, pointing at `base`. */
function platformEnv(base: string): Record<string, string> {
  return {
    RUNPOD_WEBHOOK_GET_JOB: `${base}/v2/EP/job-take/$ID?gpu=X`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/v2/EP/job-done/$RUNPOD_POD_ID/$ID?gpu=X`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/v2/EP/job-stream/$RUNPOD_POD_ID/$ID?gpu=X`,
    RUNPOD_WEBHOOK_PING: `${base}/v2/EP/ping/$RUNPOD_POD_ID?gpu=X`,
    RUNPOD_POD_ID: "w1",
    RUNPOD_AI_API_KEY: "K",
  };
}

/** Millisecond waits, so retries take no time; as many attempts as the test gives. */
const fast = (attempts: number): RetryPolicy => ({ attempts, baseMs: 1, maxMs: 2 });

interface Made {
  client: HttpPlatformClient;
  lines: string[];
}

/** A client for `base`, logging at `level` into `lines`; `onLine` sees each line as it is written. */
function clientFor(
  base: string,
  options: {
    level?: LogLevel;
    env?: Record<string, string>;
    client?: Partial<ClientOptions>;
    onLine?: (line: string) => void;
  } = {},
): Made {
  const { config } = readWorkerConfig([], { ...platformEnv(base), ...options.env });
  const lines: string[] = [];
  const log = createLogger({
    level: options.level ?? "DEBUG",
    json: false,
    destination: {
      write: (line: string) => {
        lines.push(line);
        options.onLine?.(line);
      },
    },
  });
  const client = new HttpPlatformClient({
    platform: config.platform,
    log,
    retry: fast(Number.POSITIVE_INFINITY),
    progressRetry: fast(3),
    pingRetry: fast(3),
    ...options.client,
  });
  return { client, lines };
}

const never = () => new AbortController().signal;
const has = (lines: string[], text: string) => lines.some((l) => l.includes(text));
const empty = { jobs: [], rejected: [] };

describe("job-take", () => {
  it("logs the take URL at DEBUG and TRACE, and an empty poll (204) logs nothing else", async () => {
    const server = await serve({ status: 204 });
    for (const level of ["DEBUG", "TRACE"] as const) {
      const { client, lines } = clientFor(server.base, { level });
      await expect(client.take(1, false, never())).resolves.toEqual(empty);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`Taking 1 job(s): ${server.base}/v2/EP/job-take/w1?gpu=X&job_in_progress=0`);
    }
  });

  it("400 (no job while FlashBoot is on) is an empty take, not an error", async () => {
    const server = await serve({ status: 400, body: "no job", contentType: "text/plain" });
    const { client, lines } = clientFor(server.base);
    await expect(client.take(1, true, never())).resolves.toEqual(empty);
    expect(has(lines, "Received 400 from job-take: no job (expected when FlashBoot is enabled).")).toBe(true);
  });

  it("a body that is not JSON is no job, whatever it holds, and the log names its content type", async () => {
    const job = JSON.stringify({ id: "j1", input: {} });
    const server = await serve(
      { status: 200, body: job, contentType: "text/plain" },
      { status: 200, body: job },
      { status: 200, body: "", contentType: "application/json" },
    );
    const { client, lines } = clientFor(server.base);
    await expect(client.take(1, false, never())).resolves.toEqual(empty);
    expect(has(lines, "job-take answered without a JSON body (text/plain): no job.")).toBe(true);
    await expect(client.take(1, false, never())).resolves.toEqual(empty);
    expect(has(lines, "job-take answered without a JSON body (no content type): no job.")).toBe(true);
    await expect(client.take(1, false, never())).resolves.toEqual(empty);
    expect(has(lines, "job-take answered without a JSON body (application/json): no job.")).toBe(true);
  });

  it("malformed JSON is no job and nothing rejected", async () => {
    const server = await serve({ status: 200, body: "{not json", contentType: "application/json" });
    const { client, lines } = clientFor(server.base);
    await expect(client.take(1, false, never())).resolves.toEqual(empty);
    expect(has(lines, "job-take answered with malformed JSON: no job.")).toBe(true);
  });

  it("a job that is not an object is rejected with its JSON cut to 200 characters", async () => {
    const long = "x".repeat(300);
    const server = await serve({
      status: 200,
      body: JSON.stringify([long, { id: "j1", input: 1 }]),
      contentType: "application/json",
    });
    const { client } = clientFor(server.base);
    const taken = await client.take(2, false, never());
    expect(taken.jobs).toEqual([{ id: "j1", input: 1 }]);
    expect(taken.rejected).toEqual([
      { reason: `Job is not a JSON object: ${JSON.stringify(long).slice(0, 200)}` },
    ]);
  });

  it("a job without a non-empty id or without input is rejected naming what is missing", async () => {
    const server = await serve({
      status: 200,
      body: JSON.stringify([{ id: "", input: 1 }, { id: "j2" }, { other: 1 }]),
      contentType: "application/json",
    });
    const { client } = clientFor(server.base);
    const taken = await client.take(3, false, never());
    expect(taken.jobs).toEqual([]);
    expect(taken.rejected).toEqual([
      { id: undefined, reason: "Job has missing field(s): id." },
      { id: "j2", reason: "Job has missing field(s): input." },
      { id: undefined, reason: "Job has missing field(s): id and input." },
    ]);
  });

  it("a take held past pollTimeoutMs is cut off there", async () => {
    const held = new ScriptedServer([{ status: 204 }]);
    // The take's request is left unanswered: only the client's own deadline can end it.
    held.hold = true;
    await held.start();
    closing.push(held);
    const { client } = clientFor(held.base, { client: { pollTimeoutMs: 200 } });
    await expect(client.take(1, false, never())).rejects.toThrow(/200 ms/);
  });

  it("createPlatformClient gives a client that takes over the wire", async () => {
    const server = await serve({
      status: 200,
      body: JSON.stringify({ id: "j1", input: {} }),
      contentType: "application/json",
    });
    const { config } = readWorkerConfig([], platformEnv(server.base));
    const log = createLogger({ level: "ERROR", json: false, destination: { write: () => {} } });
    const client = createPlatformClient({ platform: config.platform, log });
    await expect(client.take(1, false, never())).resolves.toEqual({
      jobs: [{ id: "j1", input: {} }],
      rejected: [],
    });
    expect(server.requests[0]?.headers["user-agent"]).toBe(USER_AGENT);
  });
});

describe("job-stop", () => {
  it("204 is no stop; 429 is TooManyRequests; another refusal is a PlatformHttpError", async () => {
    const server = await serve({ status: 204 }, { status: 429 }, { status: 500, body: "down" });
    const { client, lines } = clientFor(server.base);
    await expect(client.stopSignals(never())).resolves.toEqual([]);
    // An empty long poll, not a body to complain about.
    expect(lines).toEqual([]);
    const tooMany = client.stopSignals(never());
    await expect(tooMany).rejects.toThrow(TooManyRequests);
    await expect(tooMany).rejects.toThrow("job-stop answered 429 Too Many Requests");
    await expect(client.stopSignals(never())).rejects.toMatchObject({
      name: "PlatformHttpError",
      status: 500,
      body: "down",
      url: `${server.base}/v2/EP/job-stop/w1?gpu=X`,
    });
    expect(server.requests.map((r) => r.url)).toEqual(Array(3).fill("/v2/EP/job-stop/w1?gpu=X"));
  });

  it("a take URL without /job-take/ turns the stop channel off: no stops, nothing sent", async () => {
    const server = await serve({ status: 204 });
    const { client, lines } = clientFor(server.base, {
      env: { RUNPOD_WEBHOOK_GET_JOB: `${server.base}/v2/EP/take/$ID?gpu=X` },
    });
    await expect(client.stopSignals(never())).resolves.toEqual([]);
    // The take that follows is the first request the server sees.
    await client.take(1, false, never());
    expect(server.requests.map((r) => r.url)).toEqual(["/v2/EP/take/w1?gpu=X&job_in_progress=0"]);
    expect(lines.filter((l) => l.includes("WARN"))).toEqual([]);
  });

  it("keeps the string ids of jobsToStop, and warns only when it dropped some", async () => {
    const server = await serve(
      { status: 200, body: JSON.stringify({ jobsToStop: ["a", "b"] }), contentType: "application/json" },
      {
        status: 200,
        body: JSON.stringify({ jobsToStop: ["c", 1, null, "d"] }),
        contentType: "application/json",
      },
    );
    const { client, lines } = clientFor(server.base);
    await expect(client.stopSignals(never())).resolves.toEqual(["a", "b"]);
    expect(lines).toEqual([]);
    await expect(client.stopSignals(never())).resolves.toEqual(["c", "d"]);
    expect(has(lines, "job-stop answer has entries that are not strings; dropped them.")).toBe(true);
  });

  it("a body that is not JSON, or has no jobsToStop list, is no stop, each with its own warning", async () => {
    const server = await serve(
      { status: 200, body: "stop them", contentType: "text/plain" },
      { status: 200, body: JSON.stringify({ stop: ["a"] }), contentType: "application/json" },
    );
    const { client, lines } = clientFor(server.base);
    await expect(client.stopSignals(never())).resolves.toEqual([]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("job-stop answered with a body that is not JSON; ignoring it.");
    await expect(client.stopSignals(never())).resolves.toEqual([]);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain("job-stop answer has no jobsToStop list; ignoring it.");
  });
});

describe("ping", () => {
  it("one GET naming the jobs, with only the Authorization header of ours; resolves with the answer's status", async () => {
    const server = await serve({ status: 404 });
    const { client } = clientFor(server.base);
    await expect(client.ping(["j1", "j2"], 5000)).resolves.toBe(404);
    expect(server.requests).toHaveLength(1);
    const [ping] = server.requests;
    expect(ping?.method).toBe("GET");
    expect(ping?.url).toBe(`/v2/EP/ping/w1?gpu=X&job_id=j1%2Cj2&runpod_version=${VERSION}`);
    expect(ping?.headers.authorization).toBe("K");
    expect(ping?.headers["content-type"]).toBeUndefined();
    expect(ping?.headers["user-agent"]).not.toBe(USER_AGENT);
  });

  it("pings retry by the pingRetry policy given: one attempt, one request", async () => {
    const server = await serve({ status: 500 });
    const { client } = clientFor(server.base, { client: { pingRetry: fast(1) } });
    await expect(client.ping([], 5000)).resolves.toBe(500);
    expect(server.requests).toHaveLength(1);
  });

  it("without a ping URL: 0 and nothing sent", async () => {
    const server = await serve({ status: 200 });
    const { client } = clientFor(server.base, { env: { RUNPOD_WEBHOOK_PING: "" } });
    await expect(client.ping(["j1"], 5000)).resolves.toBe(0);
    // The take that follows is the first request the server sees.
    await client.take(1, false, never());
    expect(server.requests.map((r) => r.url)).toEqual(["/v2/EP/job-take/w1?gpu=X&job_in_progress=0"]);
  });
});

describe("reportUnhealthy", () => {
  it("sends the key; logs a refusal at DEBUG, and nothing when it is accepted", async () => {
    const server = await serve({ status: 200 }, { status: 503, body: "busy" });
    const { client, lines } = clientFor(server.base);
    await client.reportUnhealthy("memory", "low", 5000);
    expect(server.requests[0]?.headers.authorization).toBe("K");
    expect(lines).toEqual([]);
    await client.reportUnhealthy("memory", "low", 5000);
    expect(server.requests).toHaveLength(2);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("Unhealthy report answered 503");
  });

  it("a report that cannot be sent is logged at DEBUG with its error", async () => {
    const gone = await new ScriptedServer([{ status: 200 }]).start();
    await gone.close();
    const { client, lines } = clientFor(gone.base, { client: { pingRetry: fast(1) } });
    await client.reportUnhealthy("memory", "low", 5000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/\| DEBUG \| flash-worker \| Unhealthy report failed: \S/);
  });

  it("without an API key nothing is sent", async () => {
    const server = await serve({ status: 200 });
    const { client } = clientFor(server.base, { env: { RUNPOD_AI_API_KEY: "" } });
    await client.reportUnhealthy("memory", "low", 5000);
    // The take that follows is the first request the server sees.
    await client.take(1, false, never());
    expect(server.requests.map((r) => r.url)).toEqual(["/v2/EP/job-take/w1?gpu=X&job_in_progress=0"]);
  });
});

describe("result, stream and progress posts", () => {
  const result = serializeResult({ output: { ok: true } });

  it("retryable answers that outlast the attempts: DeliveryError counting every attempt sent", async () => {
    const server = await serve({ status: 503, body: "busy" });
    const { client } = clientFor(server.base, { client: { retry: fast(3) } });
    const post = client.done("j1", result, false);
    await expect(post).rejects.toThrow(DeliveryError);
    await expect(post).rejects.toThrow(
      "Result post for job j1 failed after 3 attempts: 503 Service Unavailable: busy",
    );
    expect(server.requests).toHaveLength(3);
  });

  it("a stream post stopped before its first retry: DeliveryError after 1 attempt, named a stream post", async () => {
    const server = await serve({ status: 429 });
    const { client } = clientFor(server.base);
    const stopped = new AbortController();
    stopped.abort();
    await expect(client.stream("j1", { token: "a" }, { stop: stopped.signal })).rejects.toThrow(
      "Stream post for job j1 failed after 1 attempts: 429 Too Many Requests",
    );
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body).toBe(JSON.stringify({ output: { token: "a" } }));
  });

  it("a result post stopped while it waits to retry: DeliveryError counting only the attempts sent", async () => {
    const server = await serve({ status: 503 });
    const stop = new AbortController();
    // The stop comes as the second failure's retry is logged, just before its wait: no third attempt.
    const { client } = clientFor(server.base, {
      onLine: (line) => {
        if (line.includes("Result post failed (attempt 2)")) stop.abort();
      },
    });
    await expect(client.done("j1", result, false, { stop: stop.signal })).rejects.toThrow(
      "Result post for job j1 failed after 2 attempts: 503 Service Unavailable",
    );
    expect(server.requests).toHaveLength(2);
  });

  it("a platform that cannot be reached: DeliveryError with the connection error", async () => {
    const gone = await new ScriptedServer([{ status: 200 }]).start();
    const { base } = gone;
    await gone.close();
    const { client } = clientFor(base, { client: { retry: fast(2) } });
    const post = client.done("j1", result, false);
    await expect(post).rejects.toThrow(DeliveryError);
    await expect(post).rejects.toThrow(
      `Result post for job j1 failed after 2 attempts: connect ECONNREFUSED ${base.slice("http://".length)}`,
    );
  });

  it("refused connections before a refusal: the platform cannot have recorded the post; a 5xx before it may have", async () => {
    // The server comes up on the port only once the first attempt was refused and its retry logged.
    const gone = await new ScriptedServer([{ status: 200 }]).start();
    const port = Number(new URL(gone.base).port);
    await gone.close();
    const later = new ScriptedServer([{ status: 400, body: "bad" }]);
    let started: Promise<unknown> | undefined;
    const { client, lines } = clientFor(gone.base, {
      onLine: (line) => {
        if (!started && line.includes("Result post failed (attempt 1)")) {
          started = later.start(port);
          closing.push(later);
        }
      },
    });
    const refused = await client.done("j1", result, false).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PlatformHttpError);
    expect(refused).toMatchObject({ status: 400, earlierAttemptMayBeRecorded: false });
    expect(has(lines, "ECONNREFUSED")).toBe(true);

    const server = await serve({ status: 502 }, { status: 400, body: "bad" });
    const after5xx = await clientFor(server.base)
      .client.done("j1", result, false)
      .catch((err: unknown) => err);
    expect(after5xx).toMatchObject({ status: 400, earlierAttemptMayBeRecorded: true });

    // 500 itself is a 5xx; a 429 is a refusal before any work, so nothing may be recorded after it.
    const at500 = await serve({ status: 500 }, { status: 400, body: "bad" });
    await expect(clientFor(at500.base).client.done("j1", result, false)).rejects.toMatchObject({
      status: 400,
      earlierAttemptMayBeRecorded: true,
    });
    const at429 = await serve({ status: 429 }, { status: 400, body: "bad" });
    await expect(clientFor(at429.base).client.done("j1", result, false)).rejects.toMatchObject({
      status: 400,
      earlierAttemptMayBeRecorded: false,
    });
  });

  it("each retry is logged with its attempt, of how many when the policy counts them, and the job id", async () => {
    const server = await serve({ status: 503 }, { status: 200, body: "{}" });
    const { client, lines } = clientFor(server.base);
    await client.progress("j1", { step: 1 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /Progress post failed \(attempt 1 of 3\): 503 Service Unavailable; retrying in 1 ms \| \{"jobId":"j1"\}/,
    );
    expect(JSON.parse(server.requests[1]?.body ?? "")).toEqual({
      status: "IN_PROGRESS",
      output: { step: 1 },
    });
  });

  it("with tracing on, each retry is an event on the post's span", async () => {
    const receiver = await new OtlpReceiver().start();
    closing.push(receiver);
    const server = await serve({ status: 503 }, { status: 200, body: "{}" });
    const { client } = clientFor(server.base);
    vi.stubEnv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url);
    vi.stubEnv("OTEL_BSP_SCHEDULE_DELAY", "60000");
    try {
      const log = createLogger({ level: "ERROR", json: false, destination: { write: () => {} } });
      await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, log);
      await tracing?.span("result post", {}, () => client.done("j1", result, false));
    } finally {
      await stopTracing();
      vi.unstubAllEnvs();
    }
    await receiver.waitFor((spans) => spans.some((s) => s.name === "result post"));
    const post = receiver.spans.find((s) => s.name === "result post");
    expect(post?.events).toEqual([
      { name: "retry", attributes: { attempt: 1, failure: "503 Service Unavailable", "wait.ms": 1 } },
    ]);
  });
});
