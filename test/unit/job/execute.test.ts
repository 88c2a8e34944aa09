import { describe, expect, it } from "vitest";
import { type ExecuteOptions, executeJob } from "../../../src/job/execute.js";
import type { HandlerFn } from "../../../src/job/types.js";
import { createLogger } from "../../../src/log/index.js";
import { VERSION } from "../../../src/version.js";

const silent = createLogger({ level: "SILENT", json: false });

function options(extra: Partial<ExecuteOptions> = {}): ExecuteOptions {
  return {
    worker: { workerId: "w1", hostname: "host-a" },
    log: silent,
    signal: new AbortController().signal,
    returnAggregateStream: false,
    refreshWorker: false,
    ...extra,
  };
}

async function run(fn: HandlerFn, extra: Partial<ExecuteOptions> = {}) {
  const chunks: unknown[] = [];
  const outcome = await executeJob(
    fn,
    { id: "j1", input: { x: 1 } },
    {
      ...options(extra),
      stream: extra.stream ?? (async (c) => void chunks.push(c)),
    },
  );
  return { outcome, chunks };
}

// docs/protocol.md §4.2: how a plain handler's return value becomes the result.
const plainRows: Array<[string, unknown, unknown]> = [
  ["a dict becomes output", { a: 1 }, { output: { a: 1 } }],
  ["an error key alone gives only error", { error: "msg" }, { error: "msg" }],
  ["an error key beside others gives both", { error: "msg", x: 1 }, { output: { x: 1 }, error: "msg" }],
  ["an empty dict gives an empty body", {}, {}],
  [
    "refresh_worker is popped and sets stopPod",
    { refresh_worker: true, a: 1 },
    { output: { a: 1 }, stopPod: true },
  ],
  ["an output key is not unwrapped", { output: 5 }, { output: { output: 5 } }],
  ["a falsy error is dropped", { error: "", a: 1 }, { output: { a: 1 } }],
  ["a null error and nothing else gives an empty body", { error: null }, {}],
  ["a falsy refresh_worker is dropped", { refresh_worker: false, a: 1 }, { output: { a: 1 } }],
  ["true", true, { output: true }],
  ["false", false, { output: false }],
  ["a string", "hello", { output: "hello" }],
  ["a number", 3.5, { output: 3.5 }],
  ["zero", 0, { output: 0 }],
  ["a list", [1, "a"], { output: [1, "a"] }],
  ["null", null, { output: null }],
  ["nothing (undefined) gives output null", undefined, { output: null }],
  ["a non-ASCII string", "héllo 世界 🚀", { output: "héllo 世界 🚀" }],
];

describe("executeJob: plain handlers (docs/protocol.md §4.2)", () => {
  for (const [name, returned, expected] of plainRows) {
    it(`sync: ${name}`, async () => {
      const { outcome } = await run(() => returned);
      expect(outcome).toMatchObject({ kind: "result", isStream: false });
      expect(outcome.kind === "result" && outcome.result).toStrictEqual(expected);
    });
    it(`async: ${name}`, async () => {
      const { outcome } = await run(async () => returned);
      expect(outcome.kind === "result" && outcome.result).toStrictEqual(expected);
    });
  }

  it("does not mutate the dict the handler returned", async () => {
    const returned = { error: "e", refresh_worker: true, a: 1 };
    await run(() => returned);
    expect(returned).toStrictEqual({ error: "e", refresh_worker: true, a: 1 });
  });

  it("a thrown Error becomes the runpod-python error JSON string", async () => {
    const { outcome } = await run(() => {
      throw new RangeError("bad value");
    });
    if (outcome.kind !== "result") throw new Error("expected a result");
    expect(Object.keys(outcome.result)).toStrictEqual(["error"]);
    const error = outcome.result.error as string;
    expect(error.startsWith('{"error_type": "<class \'RangeError\'>", "error_message": "bad value", ')).toBe(
      true,
    );
    const info = JSON.parse(error);
    expect(Object.keys(info)).toStrictEqual([
      "error_type",
      "error_message",
      "error_traceback",
      "hostname",
      "worker_id",
      "runpod_version",
    ]);
    expect(info).toMatchObject({ hostname: "host-a", worker_id: "w1", runpod_version: VERSION });
    expect(info.error_traceback).toContain("RangeError: bad value");
  });

  it("a rejected promise with a non-Error value is still a clear error", async () => {
    const { outcome } = await run(() => Promise.reject("just a string"));
    const info = JSON.parse((outcome.kind === "result" && (outcome.result.error as string)) || "{}");
    expect(info.error_type).toBe("<class 'string'>");
    expect(info.error_message).toBe("just a string");
  });

  it("a thrown object is described as JSON", async () => {
    const { outcome } = await run(() => {
      throw { code: 42 };
    });
    const info = JSON.parse((outcome.kind === "result" && (outcome.result.error as string)) || "{}");
    expect(info).toMatchObject({ error_type: "<class 'object'>", error_message: '{"code":42}' });
  });

  it("refreshWorker adds stopPod to every result, errors too", async () => {
    const ok = await run(() => ({ a: 1 }), { refreshWorker: true });
    expect(ok.outcome.kind === "result" && ok.outcome.result).toStrictEqual({
      output: { a: 1 },
      stopPod: true,
    });
    const failed = await run(
      () => {
        throw new Error("x");
      },
      { refreshWorker: true },
    );
    expect(failed.outcome.kind === "result" && failed.outcome.result.stopPod).toBe(true);
  });

  const unsafe: Array<[string, () => unknown, string]> = [
    ["a BigInt", () => ({ big: 2n ** 64n }), "output.big is a BigInt (18446744073709551616n)"],
    ["NaN", () => ({ list: [1, Number.NaN] }), "output.list[1] is NaN"],
    ["Infinity", () => Number.POSITIVE_INFINITY, "output is Infinity"],
    ["a function", () => ({ f: () => 1 }), "output.f is a function"],
    ["a symbol", () => ({ s: Symbol("x") }), "output.s is a symbol"],
    ["a Map", () => ({ m: new Map([[1, 2]]) }), "output.m is a Map"],
    ["bytes", () => ({ "odd key": new Uint8Array(2) }), 'output["odd key"] is binary data (Uint8Array)'],
    ["undefined in a list", () => [1, undefined], "output[1] is undefined inside an array"],
    [
      "a deep bad value",
      () => ({ items: [{ ok: 1 }, { "a b": [0, { n: 1n }] }] }),
      'output.items[1]["a b"][1].n is a BigInt (1n)',
    ],
    [
      "a cycle",
      () => {
        const a: Record<string, unknown> = { n: 1 };
        a.self = a;
        return { a };
      },
      "output.a.self is a circular reference",
    ],
  ];
  for (const [name, fn, message] of unsafe) {
    it(`a result holding ${name} is an error naming its path`, async () => {
      const { outcome } = await run(fn);
      const info = JSON.parse((outcome.kind === "result" && (outcome.result.error as string)) || "{}");
      expect(info.error_type).toBe("<class 'TypeError'>");
      expect(info.error_message).toContain("Handler result cannot be sent as JSON");
      expect(info.error_message).toContain(message);
    });
  }

  it("shared (non-circular) references and toJSON values are fine", async () => {
    const shared = { v: 1 };
    const { outcome } = await run(() => ({ a: shared, b: shared, when: new Date(0) }));
    expect(outcome.kind === "result" && outcome.result).toStrictEqual({
      output: { a: shared, b: shared, when: new Date(0) },
    });
  });

  it("passes the raw job fields, id and input to the handler", async () => {
    let seen: Record<string, unknown> = {};
    await executeJob(
      (job) => {
        seen = {
          id: job.id,
          input: job.input,
          webhook: job.webhook,
          signal: job.signal instanceof AbortSignal,
        };
      },
      { id: "j9", input: [1], webhook: "http://x" },
      options(),
    );
    expect(seen).toStrictEqual({ id: "j9", input: [1], webhook: "http://x", signal: true });
  });

  it("hands progress values to the progress callback", async () => {
    const seen: unknown[] = [];
    await executeJob(
      (job) => {
        job.progress(1);
        job.progress({ pct: 50 });
      },
      { id: "j", input: null },
      options({ progress: (v) => seen.push(v) }),
    );
    expect(seen).toStrictEqual([1, { pct: 50 }]);
  });
});

describe("executeJob: generator handlers (docs/protocol.md §4.3)", () => {
  const kinds: Array<[string, (values: unknown[]) => HandlerFn]> = [
    [
      "sync generator",
      (values) =>
        function* () {
          yield* values;
        },
    ],
    [
      "async generator",
      (values) =>
        async function* () {
          for (const v of values) yield v;
        },
    ],
    [
      "plain function returning a generator",
      (values) => () =>
        (function* () {
          yield* values;
        })(),
    ],
  ];

  for (const [kind, make] of kinds) {
    it(`${kind}: one stream chunk per yield, final output []`, async () => {
      const { outcome, chunks } = await run(make(["a", { b: 2 }]));
      expect(chunks).toStrictEqual(["a", { b: 2 }]);
      expect(outcome).toMatchObject({ kind: "result", isStream: true, result: { output: [] } });
    });
    it(`${kind}: returnAggregateStream lists every chunk`, async () => {
      const { outcome } = await run(make(["a", "b"]), { returnAggregateStream: true });
      expect(outcome).toMatchObject({ result: { output: ["a", "b"] } });
    });
  }

  it("a yielded {error} ends the stream with that error and pulls nothing more", async () => {
    let pulledAfter = false;
    const { outcome, chunks } = await run(function* () {
      yield 1;
      yield { error: "boom", detail: 1 };
      pulledAfter = true;
      yield 2;
    });
    expect(chunks).toStrictEqual([1]);
    expect(outcome).toMatchObject({ kind: "result", isStream: true, result: { error: "boom" } });
    expect(pulledAfter).toBe(false);
  });

  it("a generator that throws gives the plain-string error after the chunks already sent", async () => {
    const { outcome, chunks } = await run(async function* () {
      yield "first";
      throw new Error("broke");
    });
    expect(chunks).toStrictEqual(["first"]);
    const error = outcome.kind === "result" ? (outcome.result.error as string) : "";
    expect(error.startsWith("handler: broke \ntraceback: Error: broke")).toBe(true);
  });

  it("refresh_worker inside a yielded value is ignored (runpod-python #397)", async () => {
    const { outcome, chunks } = await run(function* () {
      yield { refresh_worker: true, v: 1 };
    });
    expect(chunks).toStrictEqual([{ refresh_worker: true, v: 1 }]);
    expect(outcome.kind === "result" && outcome.result).toStrictEqual({ output: [] });
  });

  it("refreshWorker sets stopPod on the final stream result", async () => {
    const { outcome } = await run(
      function* () {
        yield 1;
      },
      { refreshWorker: true },
    );
    expect(outcome.kind === "result" && outcome.result).toStrictEqual({ output: [], stopPod: true });
  });

  it("a chunk the sink cannot deliver fails the job", async () => {
    const { outcome } = await run(
      function* () {
        yield "x";
        yield "y";
      },
      {
        stream: async () => {
          throw new Error("platform down");
        },
      },
    );
    expect(outcome.kind === "result" && outcome.result).toStrictEqual({
      error: "Stream chunk 0 could not be delivered: platform down",
    });
  });

  it("a chunk JSON cannot carry fails the job naming it", async () => {
    const { outcome, chunks } = await run(function* () {
      yield 1;
      yield { n: 1n };
    });
    expect(chunks).toStrictEqual([1]);
    const info = JSON.parse((outcome.kind === "result" && (outcome.result.error as string)) || "{}");
    expect(info.error_message).toContain("stream chunk 1.n is a BigInt");
  });
});

describe("executeJob: abort", () => {
  it("ends a handler that never resolves as soon as the signal aborts", async () => {
    const controller = new AbortController();
    const pending = executeJob(
      () => new Promise(() => {}),
      { id: "j", input: 1 },
      options({ signal: controller.signal }),
    );
    const reason = new Error("stopped");
    controller.abort(reason);
    await expect(pending).resolves.toMatchObject({ kind: "aborted", reason });
  });

  it("ends a generator waiting for its next value", async () => {
    const controller = new AbortController();
    const pending = run(
      async function* () {
        yield 1;
        await new Promise(() => {});
      },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort("stop"), 20);
    const { outcome, chunks } = await pending;
    expect(chunks).toStrictEqual([1]);
    expect(outcome).toMatchObject({ kind: "aborted", reason: "stop" });
  });

  it("closes a generator (its finally runs) when aborted while a chunk is being sent", async () => {
    const controller = new AbortController();
    let closed = false;
    const { outcome } = await run(
      function* () {
        try {
          yield 1;
          yield 2;
        } finally {
          closed = true;
        }
      },
      {
        signal: controller.signal,
        stream: async () => {
          controller.abort("stop");
        },
      },
    );
    await new Promise((r) => setImmediate(r));
    expect(outcome).toMatchObject({ kind: "aborted", reason: "stop" });
    expect(closed).toBe(true);
  });

  it("a handler that observes the signal and throws is reported as aborted, not as a handler error", async () => {
    const controller = new AbortController();
    const pending = executeJob(
      (job) =>
        new Promise((_, reject) =>
          job.signal.addEventListener("abort", () => reject(new Error("cancelled"))),
        ),
      { id: "j", input: 1 },
      options({ signal: controller.signal }),
    );
    controller.abort("timeout");
    await expect(pending).resolves.toMatchObject({ kind: "aborted", reason: "timeout" });
  });
});
