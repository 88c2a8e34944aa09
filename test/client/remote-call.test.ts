// EndpointClient.call(): a remote() function called as Python's toolkit calls it, against the real local
// platform; the worker side decodes the request and answers with the runtime's own dispatcher.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CircuitBreakers, EndpointClient, isFlashError } from "../../src/client/index.js";
import { deserializeArg } from "../../src/payload/base64.js";
import { createRemoteDispatcher } from "../../src/payload/remote.js";
import type { FunctionRequest } from "../../src/payload/types.js";
import { ENDPOINT, startTestPlatform, type TestPlatform } from "../platform/helpers.js";
import { FAST_RETRY } from "./servers.js";

let t: TestPlatform;
beforeEach(async () => {
  t = await startTestPlatform();
});
afterEach(async () => {
  await t.platform.close();
});

function client(): EndpointClient {
  return new EndpointClient({
    id: ENDPOINT,
    baseUrl: t.platform.url,
    apiKey: t.platform.apiKey,
    retry: FAST_RETRY,
    breakers: new CircuitBreakers(),
    env: {},
  });
}

const dispatch = createRemoteDispatcher(
  new Map([["scale", (values: number[], factor: number) => values.map((v) => v * factor)]]),
);

describe("call()", () => {
  it("sends a FunctionRequest of pickled arguments and resolves with the unpickled result", async () => {
    const worker = t.worker("w1");
    const answered = (async () => {
      const job = await worker.takeOne();
      const request = job.input as FunctionRequest;
      expect(request.function_name).toBe("scale");
      expect((request.args ?? []).map((a) => deserializeArg(a))).toEqual([[1, 2.5], 2]);
      await worker.done(job.id, { output: await dispatch(request) });
    })();
    const [result] = await Promise.all([client().call<number[]>("scale", [1, 2.5], 2), answered]);
    expect(result).toEqual([2, 5]);
  });

  it("a function that raised fails the job: JobFailedError with the worker's error", async () => {
    const worker = t.worker("w1");
    const answered = (async () => {
      const job = await worker.takeOne();
      await worker.done(job.id, { error: "ValueError: factor must be positive" });
    })();
    const [failed] = await Promise.all([
      client()
        .call("scale", [1], -1)
        .catch((e: unknown) => e),
      answered,
    ]);
    expect(isFlashError(failed, "JOB_FAILED")).toBe(true);
    expect((failed as Error).message).toContain("ValueError: factor must be positive");
  });
});
