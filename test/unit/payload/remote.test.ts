// The remote-function dispatcher: FunctionRequest in (docs/toolkit.md §2.1), FunctionResponse out (§2.2).
import { describe, expect, it } from "vitest";
import { captureOutput } from "../../../src/app/output.js";
import {
  deserializeArg,
  type FunctionRequest,
  isFunctionRequest,
  isPyFloat,
  PyFloat,
  RemoteDispatcher,
  type RemoteTarget,
  serializeArg,
  tuple,
} from "../../../src/payload/index.js";

const RESPONSE_KEYS = ["success", "result", "json_result", "error", "stdout", "instance_id", "instance_info"];

class Counter {
  count: number;
  constructor(start = 0) {
    this.count = start;
  }
  increment(by = 1): number {
    this.count += by;
    return this.count;
  }
}

const registry = new Map<string, RemoteTarget>([
  ["add", (a: number, b: number) => a + b],
  ["echo", (v: unknown) => v],
  ["slow_upper", async (s: string) => s.toUpperCase()],
  [
    "fail",
    () => {
      throw new Error("boom");
    },
  ],
  [
    "greet",
    { target: (name: string, greeting = "hello") => `${greeting} ${name}`, params: ["name", "greeting"] },
  ],
  ["opts", (a: number, kw: Record<string, unknown>) => ({ a, kw })],
  ["Counter", Counter],
  ["kind", (x: unknown) => [typeof x, x === 1]],
  ["exact", { target: (x: unknown) => [isPyFloat(x), x], exact: true }],
  [
    "scale",
    {
      target: (xs: number[], k: number) => xs.map((x) => x * k),
      params: ["xs", "k"],
      types: { xs: "list[float]", k: "float", return: "list[float]" },
    },
  ],
  ["three", (a: number, b: number, c: number, d = 0) => a + b + c + d],
  ["when", () => new Date(0)],
  [
    "talk",
    async (word: string, ms: number) => {
      process.stdout.write(`${word} 1\n`);
      await new Promise((r) => setTimeout(r, ms));
      process.stderr.write(`${word} 2\n`);
      if (word === "bad") throw new Error("bad word");
      return word;
    },
  ],
]);

const fixedNow = () => new Date("2026-01-02T03:04:05.000Z");
const dispatcher = () => new RemoteDispatcher(registry, { now: fixedNow });

describe("isFunctionRequest", () => {
  it("recognises function and class requests and nothing else", () => {
    expect(isFunctionRequest({ function_name: "add", args: ["gAVLBS4="] })).toBe(true);
    expect(isFunctionRequest({ execution_type: "class", class_name: "Counter" })).toBe(true);
    expect(isFunctionRequest({ prompt: "hi" })).toBe(false);
    expect(isFunctionRequest({ function_name: "add", args: "nope" })).toBe(false);
    expect(isFunctionRequest(null)).toBe(false);
    expect(isFunctionRequest([{ function_name: "x" }])).toBe(false);
  });
});

describe("function mode", () => {
  it("calls the registered function with decoded args and returns every response field", async () => {
    // the live example of docs/toolkit.md §2.5: add(5, 3)
    const res = await dispatcher().dispatch({
      function_name: "add",
      function_code: "def add(a, b):\n    return a + b",
      args: ["gAVLBS4=", "gAVLAy4="],
      dependencies: ["numpy"],
    });
    expect(Object.keys(res)).toEqual(RESPONSE_KEYS);
    expect(res).toMatchObject({
      success: true,
      json_result: null,
      error: null,
      instance_id: null,
      instance_info: null,
    });
    expect(deserializeArg(res.result)).toBe(8);
    expect(res.result).toBe("gAVLCC4=");
  });

  it("awaits async functions and echoes any value unchanged", async () => {
    const d = dispatcher();
    const up = await d.dispatch({ function_name: "slow_upper", args: [serializeArg("abc")] });
    expect(deserializeArg(up.result)).toBe("abc".toUpperCase());
    const value = tuple(1n << 80n, new Set([1]), new Map<unknown, unknown>([[tuple(1, 2), null]]));
    const echoed = await d.dispatch({ function_name: "echo", args: [serializeArg(value)] });
    expect(echoed.result).toBe(serializeArg(value));
  });

  it("maps kwargs by parameter name when the entry lists them, else passes them as a trailing object", async () => {
    const d = dispatcher();
    const g = await d.dispatch({
      function_name: "greet",
      args: [serializeArg("ada")],
      kwargs: { greeting: serializeArg("hi") },
    });
    expect(deserializeArg(g.result)).toBe("hi ada");
    const o = await d.dispatch({
      function_name: "opts",
      args: [serializeArg(1)],
      kwargs: { x: serializeArg(2) },
    });
    expect(deserializeArg(o.result)).toEqual({ a: 1, kw: { x: 2 } });
    const bad = await d.dispatch({
      function_name: "greet",
      args: [serializeArg("a")],
      kwargs: { nope: serializeArg(1) },
    });
    expect(bad.error).toBe("greet() got an unexpected keyword argument 'nope'");
  });

  it("answers success: false when Python source is sent for a name that is not registered", async () => {
    const res = await dispatcher().dispatch({
      function_name: "train",
      function_code: "def train():\n    return 1",
    });
    expect(Object.keys(res)).toEqual(RESPONSE_KEYS);
    expect(res.success).toBe(false);
    expect(res.result).toBeNull();
    expect(res.error).toContain("Function 'train' is not registered");
    expect(res.error).toContain("this worker runs registered TypeScript functions");
  });

  it("validates the request as the SDK model does", async () => {
    const res = await dispatcher().dispatch({ args: [] } as FunctionRequest);
    expect(res.error).toBe('function_name is required when execution_type is "function"');
    const cls = await dispatcher().dispatch({ execution_type: "class" });
    expect(cls.error).toBe('class_name is required when execution_type is "class"');
  });

  it("reports a thrown error with its message first, then the stack", async () => {
    const res = await dispatcher().dispatch({ function_name: "fail" });
    expect(res.success).toBe(false);
    expect(res.error?.split("\n")[0]).toBe("boom");
    expect(res.error).toContain("Error: boom");
  });

  it("reports argument limits and decode failures with the interface document's texts", async () => {
    const d = dispatcher();
    const big = await d.dispatch({ function_name: "echo", args: ["A".repeat(12 * 1024 * 1024)] });
    expect(big.error?.split("\n")[0]).toBe("Payload size 12.0 MB exceeds limit of 10.0 MB");
    const bad = await d.dispatch({ function_name: "echo", args: ["gAVLKi4"] });
    expect(bad.error?.split("\n")[0]).toBe("Failed to deserialize argument: Incorrect padding");
    const unsendable = await d.dispatch({ function_name: "echo", args: [serializeArg(1)], kwargs: {} });
    expect(unsendable.success).toBe(true);
  });

  it('serialization_format "json" takes plain JSON args and answers json_result', async () => {
    const res = await dispatcher().dispatch({
      function_name: "add",
      args: [2, 3],
      serialization_format: "json",
    });
    expect(res).toMatchObject({ success: true, result: null, json_result: 5 });
  });
});

describe("Python-typed arguments and results", () => {
  it("a float arrives as a plain number by default, and as PyFloat for exact functions", async () => {
    const d = dispatcher();
    const plain = await d.dispatch({ function_name: "kind", args: [serializeArg(new PyFloat(1))] });
    expect(deserializeArg(plain.result)).toEqual(["number", true]);
    const exact = await d.dispatch({ function_name: "exact", args: [serializeArg(new PyFloat(1))] });
    const [was, back] = deserializeArg(exact.result) as [boolean, unknown];
    expect(was).toBe(true);
    expect(isPyFloat(back)).toBe(true);
  });

  it("declared float returns go back as floats; a mismatched argument is a TypeError-shaped failure", async () => {
    const d = dispatcher();
    const ok = await d.dispatch({ function_name: "scale", args: [serializeArg([1, 2]), serializeArg(0.5)] });
    const [half, one] = deserializeArg(ok.result) as unknown[];
    expect(half).toBe(0.5);
    expect(isPyFloat(one) && one.value).toBe(1);
    const bad = await d.dispatch({
      function_name: "scale",
      args: [serializeArg([1])],
      kwargs: { k: serializeArg("2") },
    });
    expect(bad.success).toBe(false);
    expect(bad.error).toBe("scale() argument 'k' must be float, not str");
  });

  it("missing required arguments are CPython's TypeError text, keyword holes included", async () => {
    const d = dispatcher();
    const one = await d.dispatch({ function_name: "add", args: [serializeArg(1)] });
    expect(one.success).toBe(false);
    expect(one.error).toBe("add() missing 1 required positional argument: 'b'");
    const none = await d.dispatch({ function_name: "three" });
    expect(none.error).toBe("three() missing 3 required positional arguments: 'a', 'b', and 'c'");
    const hole = await d.dispatch({ function_name: "scale", kwargs: { k: serializeArg(2) } });
    expect(hole.error).toBe("scale() missing 1 required positional argument: 'xs'");
    const method = await d.dispatch({
      execution_type: "class",
      class_name: "Counter",
      method_name: "increment",
    });
    expect(method.success).toBe(true);
  });

  it("a return value that cannot be pickled says so about the result", async () => {
    const res = await dispatcher().dispatch({ function_name: "when" });
    expect(res.success).toBe(false);
    expect(res.error?.split("\n")[0]).toBe(
      "Failed to serialize result: cannot pickle a Date: send date.toISOString() (Python: datetime.fromisoformat) or date.getTime() / 1000 (a timestamp)",
    );
  });

  it("stdout is what each call wrote, kept apart for concurrent calls, also when the call fails", async () => {
    const d = new RemoteDispatcher(registry, { capture: captureOutput });
    const [slow, fast, bad] = await Promise.all([
      d.dispatch({ function_name: "talk", args: [serializeArg("slow"), serializeArg(30)] }),
      d.dispatch({ function_name: "talk", args: [serializeArg("fast"), serializeArg(1)] }),
      d.dispatch({ function_name: "talk", args: [serializeArg("bad"), serializeArg(5)] }),
    ]);
    expect(slow.stdout).toBe("slow 1\nslow 2\n");
    expect(fast.stdout).toBe("fast 1\nfast 2\n");
    expect(bad.success).toBe(false);
    expect(bad.error?.split("\n")[0]).toBe("bad word");
    expect(bad.stdout).toBe("bad 1\nbad 2\n");
    const plain = await dispatcher().dispatch({
      function_name: "talk",
      args: [serializeArg("x"), serializeArg(0)],
    });
    expect(plain.stdout).toBe("");
  });
});

describe("class mode", () => {
  it("keeps an instance by instance_id and counts method calls", async () => {
    const d = dispatcher();
    const first = await d.dispatch({
      execution_type: "class",
      class_name: "Counter",
      class_code: "class Counter: ...",
      constructor_args: [serializeArg(10)],
      method_name: "increment",
      instance_id: "Counter_1a2b3c4d",
      create_new_instance: true,
    });
    expect(Object.keys(first)).toEqual(RESPONSE_KEYS);
    expect(deserializeArg(first.result)).toBe(11);
    expect(first.instance_id).toBe("Counter_1a2b3c4d");
    const second = await d.dispatch({
      execution_type: "class",
      class_name: "Counter",
      method_name: "increment",
      args: [serializeArg(5)],
      instance_id: "Counter_1a2b3c4d",
      create_new_instance: false,
    });
    expect(deserializeArg(second.result)).toBe(16);
    expect(second.instance_info).toEqual({
      class_name: "Counter",
      created_at: "2026-01-02T03:04:05.000Z",
      method_calls: 2,
      last_used: "2026-01-02T03:04:05.000Z",
    });
  });

  it("creates a fresh instance with a generated id when none is given", async () => {
    const res = await dispatcher().dispatch({
      execution_type: "class",
      class_name: "Counter",
      method_name: "increment",
    });
    expect(res.success).toBe(true);
    expect(res.instance_id).toMatch(/^Counter_[0-9a-f]{8}$/);
  });

  it("refuses unknown classes, unknown methods and Object.prototype members", async () => {
    const d = dispatcher();
    const unknown = await d.dispatch({
      execution_type: "class",
      class_name: "Model",
      class_code: "class Model: pass",
    });
    expect(unknown.error).toContain("Class 'Model' is not registered");
    expect(unknown.error).toContain("this worker runs registered TypeScript functions");
    for (const m of ["nope", "constructor", "toString", "__proto__", "hasOwnProperty"]) {
      const r = await d.dispatch({ execution_type: "class", class_name: "Counter", method_name: m });
      expect(r.success, m).toBe(false);
      expect(r.error).toBe(`'Counter' object has no method '${m}'`);
    }
  });
});
