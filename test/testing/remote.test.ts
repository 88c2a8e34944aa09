// flash-worker/testing with remote functions: runJob dispatches FunctionRequests as the worker does, and
// callRemote calls a registered function with Python-typed arguments and decodes what Python would get.
import { describe, expect, it } from "vitest";
import { handler, remote } from "../../src/index.js";
import { deserializeArg, type FunctionResponse, serializeArg } from "../../src/payload/index.js";
import { callRemote, isPyFloat, PyFloat, runJob, tuple } from "../../src/testing/index.js";

const app = handler((job) => ({ plain: job.input }));
remote("mean", (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length, {
  params: ["xs"],
  types: { xs: "list[float]", return: "float" },
});
remote("pair", (a: unknown, b: unknown) => tuple(a, b), { exact: true });
remote("noisy", (s: string) => {
  process.stdout.write(`got ${s}\n`);
  return s.length;
});

describe("runJob", () => {
  it("sends a FunctionRequest to the registered function, as the worker dispatches it", async () => {
    const run = await runJob(app, { function_name: "mean", args: [serializeArg([1, 2, 3])] });
    const out = run.result?.output as FunctionResponse;
    expect(out.success).toBe(true);
    const value = deserializeArg(out.result);
    expect(isPyFloat(value) && value.value).toBe(2);
  });

  it("still sends any other input to the handler", async () => {
    const run = await runJob(app, { prompt: "hi" });
    expect(run.result).toEqual({ output: { plain: { prompt: "hi" } } });
  });

  it("pops a failed call's error into the job error, as the worker reports it", async () => {
    const run = await runJob(app, { function_name: "mean" });
    expect(run.result?.error).toBe("mean() missing 1 required positional argument: 'xs'");
    expect((run.result?.output as FunctionResponse | undefined)?.success).toBe(false);
  });
});

describe("callRemote", () => {
  it("takes Python-typed arguments and gives back the value Python would receive", async () => {
    const mean = await callRemote("mean", [[new PyFloat(1), 2, 3.5]]);
    expect(mean.success).toBe(true);
    expect(mean.value).toBeCloseTo(6.5 / 3);
    const whole = await callRemote("mean", [[1, 3]]);
    expect(isPyFloat(whole.value) && whole.value.value).toBe(2);
    const pair = await callRemote("pair", [new PyFloat(1)], { b: tuple(2) });
    expect(pair.value).toStrictEqual(tuple(new PyFloat(1), { b: tuple(2) }));
    const [first] = pair.value as unknown[];
    expect(isPyFloat(first)).toBe(true);
  });

  it("reports errors and what the function wrote", async () => {
    const noisy = await callRemote("noisy", ["abc"]);
    expect(noisy.value).toBe(3);
    expect(noisy.stdout).toBe("got abc\n");
    const wrong = await callRemote("mean", [["x"]]);
    expect(wrong.success).toBe(false);
    expect(wrong.error).toBe("mean() argument 'xs'[0] must be float, not str");
    await expect(callRemote("nope")).rejects.toThrow(
      `callRemote("nope"): no function is registered under that name`,
    );
  });
});
