// The endpoint client against the real local platform (worker side spoken in raw requests), and against
// small servers that misbehave, for every message of the interface document's "Errors" table it owns.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  CircuitBreakers,
  DeserializeError,
  EndpointClient,
  type EndpointClientOptions,
  EndpointConnectionError,
  EndpointHttpError,
  EndpointNotDeployedError,
  ExecutionTimeoutError,
  JobFailedError,
  PayloadTooLargeError,
} from "../../src/client/index.js";
import { writeDeployments } from "../../src/project/deployments.js";
import { ENDPOINT, eventually, startTestPlatform, type TestPlatform } from "../platform/helpers.js";
import { captureLog, closedPortUrl, FAST_RETRY, json, startServer } from "./servers.js";

let t: TestPlatform;
let captured: ReturnType<typeof captureLog>;
beforeEach(async () => {
  t = await startTestPlatform();
  captured = captureLog("DEBUG");
});
afterEach(async () => {
  await t.platform.close();
});

function client(options: Partial<EndpointClientOptions> = {}): EndpointClient {
  return new EndpointClient({
    id: ENDPOINT,
    name: "test endpoint",
    baseUrl: t.platform.url,
    apiKey: t.platform.apiKey,
    logger: captured.log,
    retry: FAST_RETRY,
    breakers: new CircuitBreakers(),
    env: {},
    ...options,
  });
}

/** A worker that takes one job and answers it with `body` (or, with chunks, streams them first). */
async function answerOne(body: unknown, chunks: unknown[] = []): Promise<string> {
  const worker = t.worker("w1");
  const job = await worker.takeOne();
  for (const chunk of chunks) await worker.stream(job.id, chunk);
  await worker.done(job.id, body, { isStream: chunks.length > 0 });
  return job.id;
}

const line = (subject: string, message: string) =>
  new RegExp(`^\\S+ \\| INFO \\| ${subject.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\| ${message}$`);

describe("calls", () => {
  it("run, then wait: the log shows the route, the job starting, IN_QUEUE, COMPLETED and the timings", async () => {
    const ep = client();
    const queued = await ep.run({ name: "x" });
    expect(queued.status).toBe("IN_QUEUE");
    const [done] = await Promise.all([ep.wait(queued.id), answerOne({ output: { hello: "x" } })]);
    expect(done).toMatchObject({
      id: queued.id,
      status: "COMPLETED",
      output: { hello: "x" },
      workerId: "w1",
    });

    const lines = captured.lines;
    const at = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l));
    const order = [
      at(line("Endpoint:test endpoint", "API /run")),
      at(line("Endpoint:test endpoint", `Started Job:${queued.id}`)),
      at(line(`Job:${queued.id}`, "Status: IN_QUEUE")),
      at(line(`Job:${queued.id}`, "Status: COMPLETED")),
      at(line("Worker:w1", `Delay Time: ${done.delayTime} ms`)),
      at(line("Worker:w1", `Execution Time: ${done.executionTime} ms`)),
    ];
    expect(
      order.every((i) => i >= 0),
      lines.join("\n"),
    ).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it("runsync returns the completed job; status, health and purgeQueue answer", async () => {
    const ep = client();
    const [done] = await Promise.all([ep.runsync({ n: 1 }), answerOne({ output: 42 })]);
    expect(done).toMatchObject({ status: "COMPLETED", output: 42 });
    expect(captured.lines.some((l) => line("Endpoint:test endpoint", "API /runsync").test(l))).toBe(true);
    expect(await ep.status(done.id)).toMatchObject({ id: done.id, status: "COMPLETED", output: 42 });

    await ep.run({ queued: 1 });
    await ep.run({ queued: 2 });
    expect((await ep.health()).jobs).toMatchObject({ inQueue: 2, completed: 1 });
    expect(await ep.purgeQueue()).toEqual({ removed: 2, status: "completed" });
  });

  it("stream yields each chunk, then ends when the job completes", async () => {
    const ep = client();
    const { id } = await ep.run({ text: "a b c" });
    const chunks: unknown[] = [];
    await Promise.all([
      (async () => {
        for await (const chunk of ep.stream(id)) chunks.push(chunk);
      })(),
      answerOne({ output: [] }, [{ token: "a" }, { token: "b" }, { token: "c" }]),
    ]);
    expect(chunks).toEqual([{ token: "a" }, { token: "b" }, { token: "c" }]);
  });

  it("stream against a server that answers at once: waits between empty answers, ends on the final status", async () => {
    const answers = [
      { status: "IN_QUEUE", stream: [] },
      { status: "IN_PROGRESS", stream: [] },
      { status: "IN_PROGRESS", stream: [{ output: 1 }] },
      { status: "IN_PROGRESS", stream: [] },
      { status: "FAILED", stream: [{ output: 2 }] },
    ];
    const server = await startServer((request, response) => {
      if (request.url?.includes("/status/")) {
        return json(response, 200, { id: "j", status: "FAILED", error: "stopped after 2" });
      }
      json(response, 200, { id: "j", ...answers.shift() });
    });
    try {
      const ep = client({
        baseUrl: server.url,
        poll: { attempts: Number.POSITIVE_INFINITY, baseMs: 5, maxMs: 20 },
      });
      const chunks: unknown[] = [];
      const err = await (async () => {
        for await (const chunk of ep.stream("j")) chunks.push(chunk);
      })().catch((e: unknown) => e);
      expect(chunks).toEqual([1, 2]);
      expect(err).toBeInstanceOf(JobFailedError);
      expect((err as Error).message).toBe("Job j on endpoint test endpoint ended FAILED: stopped after 2");
      expect(server.requests).toHaveLength(6);
    } finally {
      await server.close();
    }
  });

  it("cancel ends a queued job; waiting on it then throws JobFailedError", async () => {
    const ep = client();
    const { id } = await ep.run({});
    expect(await ep.cancel(id)).toMatchObject({ id, status: "CANCELLED" });
    await expect(ep.wait(id)).rejects.toThrow(`Job ${id} on endpoint test endpoint ended CANCELLED`);
  });

  it("a FAILED job throws JobFailedError carrying the worker's error", async () => {
    const ep = client();
    const [result] = await Promise.allSettled([ep.runsync({}), answerOne({ error: "handler blew up" })]);
    expect(result.status).toBe("rejected");
    const err = (result as PromiseRejectedResult).reason as JobFailedError;
    expect(err).toBeInstanceOf(JobFailedError);
    expect(err.message).toMatch(/^Job \S+ on endpoint test endpoint ended FAILED: handler blew up$/);
  });

  it("LOG_LEVEL decides what the default logger prints", async () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const quiet = client({ logger: undefined, env: { LOG_LEVEL: "ERROR" } });
      await quiet.run({});
      expect(written).toEqual([]);
      const loud = client({ logger: undefined, env: { LOG_LEVEL: "DEBUG" } });
      await loud.run({});
      expect(written.some((l) => /\| INFO \| Endpoint:test endpoint \| API \/run\n$/.test(l))).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("the interface document's errors", () => {
  it("Execution timeout on <endpoint> after <N>s, and the job is cancelled", async () => {
    const ep = client();
    const err = await ep.runsync({}, { timeoutMs: 1_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExecutionTimeoutError);
    expect((err as Error).message).toMatch(/^Execution timeout on test endpoint after 1s \(job \S+\)/);
    const jobId = (err as ExecutionTimeoutError).jobId!;
    expect((await ep.status(jobId)).status).toBe("CANCELLED");
  });

  it("a job the platform times out becomes Execution timeout on <endpoint> after <N>s", async () => {
    await t.platform.close();
    t = await startTestPlatform({ endpoints: [{ id: ENDPOINT, name: "t", executionTimeoutMs: 1_000 }] });
    const ep = client({ executionTimeoutMs: 1_000 });
    const { id } = await ep.run({});
    await t.worker("w1").takeOne();
    await expect(ep.wait(id, { timeoutMs: 20_000 })).rejects.toThrow(
      `Execution timeout on test endpoint after 1s (job ${id})`,
    );
  });

  it("Failed to connect to endpoint <name> (<url>), after retrying", async () => {
    const base = await closedPortUrl();
    let calls = 0;
    const ep = client({
      baseUrl: base,
      fetch: (input, init) => {
        calls++;
        return fetch(input, init);
      },
    });
    const err = await ep.run({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointConnectionError);
    expect((err as Error).message).toMatch(
      new RegExp(`^Failed to connect to endpoint test endpoint \\(${base}/v2/${ENDPOINT}\\): .*ECONNREFUSED`),
    );
    expect(calls).toBe(3);
    expect(captured.lines.filter((l) => /POST \/run failed \(attempt \d\/3\)/.test(l))).toHaveLength(2);
  });

  it("a connection reset is retried and the call then succeeds", async () => {
    let resets = 1;
    const server = await startServer((request, response) => {
      if (resets-- > 0) return request.socket.destroy();
      json(response, 200, { id: "job-1", status: "IN_QUEUE" });
    });
    try {
      const ep = client({ baseUrl: server.url });
      expect(await ep.run({})).toEqual({ id: "job-1", status: "IN_QUEUE" });
      expect(server.requests).toEqual([`POST /v2/${ENDPOINT}/run`, `POST /v2/${ENDPOINT}/run`]);
    } finally {
      await server.close();
    }
  });

  it("an HTTP error names the endpoint, the code and the reason", async () => {
    const server = await startServer((_request, response) =>
      json(response, 500, { error: "ZeroDivisionError: division by zero" }),
    );
    try {
      const err = await client({ baseUrl: server.url })
        .runsync({})
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EndpointHttpError);
      expect((err as EndpointHttpError).status).toBe(500);
      expect((err as Error).message).toBe(
        "HTTP error from endpoint test endpoint: 500 Internal Server Error: ZeroDivisionError: division by zero",
      );
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it("a wrong API key is an HTTP error too: 401 Unauthorized", async () => {
    await expect(client({ apiKey: "wrong" }).run({})).rejects.toThrow(
      "HTTP error from endpoint test endpoint: 401 Unauthorized: Unauthorized: invalid API key",
    );
  });

  it("Endpoint URL not available: called by name before flash deploy recorded it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-client-"));
    try {
      const byName = new EndpointClient({ name: "my-api", cwd: dir, apiKey: "k", logger: captured.log });
      expect(() => byName.url).toThrow(EndpointNotDeployedError);
      await expect(byName.run({})).rejects.toThrow(
        /^Endpoint URL not available for my-api: .*Deploy it first/,
      );

      writeDeployments(dir, {
        platform: t.platform.url,
        deployedAt: new Date().toISOString(),
        endpoints: { "my-api": { id: ENDPOINT, url: `${t.platform.url}/v2/${ENDPOINT}`, kind: "queue" } },
      });
      const deployed = new EndpointClient({
        name: "my-api",
        cwd: dir,
        apiKey: t.platform.apiKey,
        logger: captured.log,
        breakers: new CircuitBreakers(),
      });
      expect((await deployed.run({})).status).toBe("IN_QUEUE");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("Endpoint URL not available: the platform has no such endpoint", async () => {
    await expect(client({ id: "nope", name: "nope" }).run({})).rejects.toThrow(
      `Endpoint URL not available for nope: the platform at ${t.platform.url} has no queue endpoint nope (a load-balanced one is called through its routes: post("/path", body), get("/path")).`,
    );
  });

  it("Payload size exceeds limit of 10.0 MB, before anything is sent", async () => {
    let calls = 0;
    const ep = client({
      fetch: (input, init) => {
        calls++;
        return fetch(input, init);
      },
    });
    const big = "x".repeat(10 * 1024 * 1024);
    const err = await ep.run({ big }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as Error).message).toBe(
      // Rounded, both sizes would read 10.0 MB: the bytes show the excess.
      "Payload size exceeds limit of 10.0 MB (10485760 bytes): the request to test endpoint is 10485780 bytes. Use network volumes, compress, or split requests.",
    );
    await expect(ep.runsync({ big: `${big}yyyyyyyyyyyyyyyyyyyyyyyy${"z".repeat(200_000)}` })).rejects.toThrow(
      /^Payload size exceeds limit of 10\.0 MB: .* is 10\.2 MB/,
    );
    expect(calls).toBe(0);
  });

  it("Failed to deserialize result: the answer is not JSON", async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end('{"output": <not json>');
    });
    try {
      const err = await client({ baseUrl: server.url })
        .status("job-1")
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DeserializeError);
      expect((err as Error).message).toMatch(/^Failed to deserialize result from endpoint test endpoint: /);
    } finally {
      await server.close();
    }
  });

  it("Failed to deserialize result: JSON that is not a job", async () => {
    const server = await startServer((_request, response) => json(response, 200, ["not", "a", "job"]));
    try {
      await expect(client({ baseUrl: server.url }).run({})).rejects.toThrow(
        'Failed to deserialize result from endpoint test endpoint: expected a job with id and status, got ["not","a","job"]',
      );
    } finally {
      await server.close();
    }
  });
});

describe("polling", () => {
  it("wait polls until the status changes, logging each new status once", async () => {
    const ep = client({ poll: { attempts: Number.POSITIVE_INFINITY, baseMs: 10, maxMs: 50 } });
    const { id } = await ep.run({});
    const waiting = ep.wait(id);
    const worker = t.worker("w1");
    const job = await worker.takeOne();
    await eventually(
      () => captured.lines.some((l) => line(`Job:${id}`, "Status: IN_PROGRESS").test(l)),
      "IN_PROGRESS logged",
    );
    await worker.done(job.id, { output: "late" });
    expect((await waiting).output).toBe("late");
    const statuses = captured.lines
      .filter((l) => l.includes(`| Job:${id} | Status:`))
      .map((l) => l.split(" | ")[3]);
    // wait() logs the status it first sees, then only changes: IN_PROGRESS once, COMPLETED last.
    expect(statuses.filter((s) => s === "Status: IN_PROGRESS")).toHaveLength(1);
    expect(statuses.at(-1)).toBe("Status: COMPLETED");
    expect(statuses.filter((s) => s === "Status: COMPLETED")).toHaveLength(1);
  });
});
