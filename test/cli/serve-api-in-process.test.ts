// --rp_serve_api in-process answers exactly as over the worker protocol (--serve-api-loopback), and keeps the handler's concurrency.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Flash, flash, freePort } from "../process.js";

type Body = Record<string, unknown>;

async function serve(extra: string[], env: Record<string, string> = {}) {
  const port = await freePort();
  const server = flash(
    [
      "start",
      "test/fixtures/serve-api-kinds.ts",
      "--rp_serve_api",
      "--rp_api_port",
      String(port),
      "--api-key",
      "k1",
      ...extra,
    ],
    env,
  );
  await server.waitForLine(/^Ready\. Try: curl/);
  const call = (path: string, body?: unknown): Promise<Body> =>
    fetch(`http://127.0.0.1:${port}/v2/local${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { Authorization: "Bearer k1", "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then((r) => r.json() as Promise<Body>);
  return { server, call };
}

async function stop(server: Flash): Promise<void> {
  server.child.kill("SIGTERM");
  expect(await server.exited).toBe(0);
}

/** What differs between any two runs of the same job: its id and its timings. */
function comparable(body: Body): Body {
  const { id: _id, delayTime: _delay, executionTime: _execution, ...rest } = body;
  return rest;
}

/** Every answer a client sees for one job: /runsync, then /run followed by /stream and /status. */
async function answers(call: (path: string, body?: unknown) => Promise<Body>, input: unknown) {
  const sync = comparable(await call("/runsync", { input }));
  const job = await call("/run", { input });
  const streamed: unknown[] = [];
  for (let i = 0; i < 200; i++) {
    const stream = await call(`/stream/${String(job.id)}`);
    streamed.push(...((stream.stream as unknown[] | undefined) ?? []));
    if (stream.status !== "IN_QUEUE" && stream.status !== "IN_PROGRESS") break;
  }
  const status = comparable(await call(`/status/${String(job.id)}`));
  return { sync, run: comparable(job), streamed, status };
}

describe("--rp_serve_api in-process", () => {
  let inProcess: Awaited<ReturnType<typeof serve>>;
  let loopback: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    [inProcess, loopback] = await Promise.all([serve([]), serve(["--serve-api-loopback"])]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([stop(inProcess.server), stop(loopback.server)]);
  });

  const inputs: Array<[string, unknown]> = [
    ["plain", { kind: "plain", value: { a: [1, "x", null] } }],
    ["generator", { kind: "stream", value: [{ token: "a" }, 2, "c"] }],
    ["failing", { kind: "fail", value: "x" }],
    ["validation-failing", { kind: "nope" }],
  ];
  for (const [name, input] of inputs) {
    it(`${name} handler: the same bodies as over the worker protocol`, async () => {
      const [ours, wire] = await Promise.all([answers(inProcess.call, input), answers(loopback.call, input)]);
      expect(ours).toStrictEqual(wire);
      expect(ours.sync.status).toBe(name === "plain" || name === "generator" ? "COMPLETED" : "FAILED");
    });
  }

  it("the shaped result, the stream chunks and the error carry the handler's values", async () => {
    const plain = await answers(inProcess.call, inputs[0]![1]);
    expect(plain.sync).toStrictEqual({
      status: "COMPLETED",
      workerId: "local-worker",
      output: { echo: { a: [1, "x", null] } },
    });
    const stream = await answers(inProcess.call, inputs[1]![1]);
    expect(stream.streamed).toStrictEqual([{ output: { token: "a" } }, { output: 2 }, { output: "c" }]);
    expect(stream.sync.output).toStrictEqual([{ token: "a" }, 2, "c"]);
    const failed = await answers(inProcess.call, inputs[2]![1]);
    expect(JSON.parse(String(failed.sync.error))).toMatchObject({
      error_type: "<class 'Error'>",
      error_message: "boom: x",
      worker_id: "local-worker",
    });
    const invalid = await answers(inProcess.call, inputs[3]![1]);
    expect(String(invalid.sync.error)).toContain("kind must be one of plain, stream, fail, hold");
  });
});

describe("--rp_serve_api in-process honours the handler's concurrency", () => {
  for (const concurrency of [1, 2]) {
    it(`concurrency ${concurrency}: never more jobs in the handler at once`, async () => {
      const { server, call } = await serve([], { FIXTURE_CONCURRENCY: String(concurrency) });
      try {
        const jobs = await Promise.all(
          Array.from({ length: 4 }, () => call("/runsync", { input: { kind: "hold" } })),
        );
        // Each job holds until `concurrency` are in the handler: without the limit all four would be.
        for (const job of jobs)
          expect(job).toMatchObject({ status: "COMPLETED", output: { maxActive: concurrency } });
      } finally {
        await stop(server);
      }
    });
  }
});
