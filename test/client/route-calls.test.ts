// Route calls that must not run a route twice or send what the platform refuses: the endpoint client on a
// real load-balanced worker behind the local platform's proxy, its route calls counted by the worker itself.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CircuitBreakers,
  EndpointClient,
  type EndpointClientOptions,
  EndpointHttpError,
  ExecutionTimeoutError,
} from "../../src/client/index.js";
import { PayloadTooLargeError } from "../../src/flash-error.js";
import { lbReady, startTestPlatform, type TestPlatform } from "../platform/helpers.js";
import { captureLog, closedPortUrl, FAST_RETRY } from "./servers.js";

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({
    loadBalanced: [
      { id: "once-api", file: "test/fixtures/lb-once.ts", workers: [1, 1], executionTimeoutMs: 1_000 },
    ],
  });
  await lbReady(t, "once-api");
}, 90_000);
afterAll(async () => {
  await t?.platform.close();
});

function client(options: Partial<EndpointClientOptions> = {}): EndpointClient {
  return new EndpointClient({
    id: "once-api",
    baseUrl: t.platform.url,
    apiKey: t.platform.apiKey,
    logger: captureLog("WARN").log,
    retry: FAST_RETRY,
    breakers: new CircuitBreakers(),
    env: {},
    ...options,
  });
}

const calls = async () => client().get<{ slow: number; busy: number }>("/calls");

describe("a POST route past the execution timeout", { timeout: 60_000 }, () => {
  it("runs once and throws the execution-timeout error the queue path throws", async () => {
    const before = await calls();
    const err = await client()
      .post("/slow", {})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExecutionTimeoutError);
    expect((err as Error).message).toBe(
      "Execution timeout on once-api after 1s (POST /slow). Raise executionTimeoutMs on the endpoint, make the route faster, or use a queue-based endpoint.",
    );
    expect((err as ExecutionTimeoutError).seconds).toBe(1);
    expect((await calls()).slow).toBe(before.slow + 1);
  });

  it("the 504 through the proxy carries the worker's message, naming the endpoint", async () => {
    const res = await fetch(`${t.platform.url}/lb/once-api/slow`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.platform.apiKey}` },
    });
    expect(res.status).toBe(504);
    expect(await res.json()).toEqual({ error: "Execution timeout on once-api after 1.0s" });
  });

  it("a worker too stuck to answer gets the platform's 504, with the same message", async () => {
    const res = await fetch(`${t.platform.url}/lb/once-api/spin`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.platform.apiKey}` },
    });
    expect(res.status).toBe(504);
    expect(await res.json()).toEqual({ error: "Execution timeout on once-api after 1.0s" });
  });
});

describe("answered 5xx of route calls", { timeout: 60_000 }, () => {
  it("a POST answered 503 is not repeated: the route ran once", async () => {
    const before = await calls();
    const err = await client()
      .post("/busy", { n: 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointHttpError);
    expect((err as EndpointHttpError).status).toBe(503);
    expect((await calls()).busy).toBe(before.busy + 1);
  });

  it("retryNonIdempotent opts in: the POST is repeated as often as the retry policy says", async () => {
    const before = await calls();
    const err = await client({ retryNonIdempotent: true })
      .post("/busy", { n: 1 })
      .catch((e: unknown) => e);
    expect((err as EndpointHttpError).status).toBe(503);
    expect((await calls()).busy).toBe(before.busy + FAST_RETRY.attempts);
  });

  it("a POST to a platform that is not listening is retried: the connection was never made", async () => {
    const seen: string[] = [];
    const ep = new EndpointClient({
      url: `${await closedPortUrl()}/lb/once-api`,
      apiKey: "k",
      logger: captureLog("WARN").log,
      retry: FAST_RETRY,
      breakers: new CircuitBreakers(),
      env: {},
      fetch: (input, init) => {
        seen.push(String(input));
        return fetch(input, init);
      },
    });
    await expect(ep.post("/busy", {})).rejects.toThrow(/^Failed to connect to endpoint once-api/);
    expect(seen).toHaveLength(FAST_RETRY.attempts);
  });
});

describe("route bodies over the platform's 10 MB", { timeout: 60_000 }, () => {
  it("are refused before sending, with the message queue inputs get", async () => {
    let sent = 0;
    const ep = client({
      fetch: (input, init) => {
        sent++;
        return fetch(input, init);
      },
    });
    const err = await ep.post("/busy", { text: "x".repeat(12 * 1024 * 1024) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as Error).message).toBe(
      "Payload size exceeds limit of 10.0 MB: the request to once-api is 12.0 MB. Use network volumes, compress, or split requests.",
    );
    await expect(ep.put("/busy", "y".repeat(11 * 1024 * 1024))).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(sent).toBe(0);
  });

  it("show bytes when the rounded sizes are equal", async () => {
    // {"text":"…"} is 11 bytes around the text: 10 MiB + 1 byte in all.
    const err = await client()
      .post("/busy", { text: "x".repeat(10 * 1024 * 1024 - 10) })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe(
      "Payload size exceeds limit of 10.0 MB (10485760 bytes): the request to once-api is 10485761 bytes. Use network volumes, compress, or split requests.",
    );
  });
});
