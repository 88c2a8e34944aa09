// The circuit breaker: opens after consecutive failures, fails fast with "Retry in N seconds", tests
// recovery once ~60 s have passed. Time is a fake clock moved by hand; the endpoint is a real server.
import { describe, expect, it } from "vitest";
import {
  CircuitBreakers,
  CircuitOpenError,
  EndpointClient,
  EndpointConnectionError,
} from "../../../src/client/index.js";
import { BREAKER_DEFAULTS, CircuitBreaker } from "../../../src/http/breaker.js";
import { captureLog, json, startServer } from "../../client/servers.js";

function fakeClock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe("CircuitBreaker", () => {
  it("opens after 5 consecutive failures, half-opens after 60 s, closes after 2 successes", () => {
    const clock = fakeClock();
    const { log, lines } = captureLog();
    const breaker = new CircuitBreaker("http://x/v2/ep", BREAKER_DEFAULTS, clock.now, log);
    for (let i = 0; i < 4; i++) breaker.failure();
    expect(breaker.state).toBe("CLOSED");
    breaker.success();
    for (let i = 0; i < 4; i++) breaker.failure();
    expect(breaker.state).toBe("CLOSED"); // a success in between resets the run
    breaker.failure();
    expect(breaker.state).toBe("OPEN");
    expect(lines.at(-1)).toMatch(
      /\| WARN \| .* \| Circuit breaker OPEN for http:\/\/x\/v2\/ep after 5 failures$/,
    );

    expect(breaker.admit()).toEqual({ allowed: false, retryInMs: 60_000, failures: 5 });
    clock.advance(59_999);
    expect(breaker.admit()).toEqual({ allowed: false, retryInMs: 1, failures: 5 });
    clock.advance(1);
    expect(breaker.admit()).toEqual({ allowed: true });
    expect(breaker.state).toBe("HALF_OPEN");
    breaker.success();
    expect(breaker.state).toBe("HALF_OPEN");
    breaker.success();
    expect(breaker.state).toBe("CLOSED");
    expect(
      lines.some((l) => l.endsWith("Circuit breaker HALF_OPEN for http://x/v2/ep, testing recovery")),
    ).toBe(true);
    expect(lines.at(-1)).toMatch(/Circuit breaker CLOSED for http:\/\/x\/v2\/ep, recovered$/);
  });

  it("a failure while half-open opens it again for another full recovery period", () => {
    const clock = fakeClock();
    const breaker = new CircuitBreaker("u", BREAKER_DEFAULTS, clock.now);
    for (let i = 0; i < 5; i++) breaker.failure();
    clock.advance(60_000);
    expect(breaker.admit().allowed).toBe(true);
    breaker.failure();
    expect(breaker.state).toBe("OPEN");
    expect(breaker.admit()).toMatchObject({ allowed: false, retryInMs: 60_000 });
  });

  it("one breaker per endpoint URL", () => {
    const breakers = new CircuitBreakers({ failureThreshold: 1 });
    breakers.for("a").failure();
    expect(breakers.for("a").state).toBe("OPEN");
    expect(breakers.for("b").state).toBe("CLOSED");
  });
});

describe("the client's circuit breaker", () => {
  it("opens after repeated connection failures, fails fast with Retry in N seconds, recovers after 60 s", async () => {
    let up = false;
    const server = await startServer((request, response) => {
      if (!up) return request.socket.destroy();
      json(response, 200, { id: "job-1", status: "IN_QUEUE" });
    });
    const clock = fakeClock();
    const { log } = captureLog();
    let calls = 0;
    const ep = new EndpointClient({
      id: "ep",
      name: "flaky",
      baseUrl: server.url,
      apiKey: "k",
      logger: log,
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      breakers: new CircuitBreakers({}, clock.now),
      fetch: (input, init) => {
        calls++;
        return fetch(input, init);
      },
    });
    try {
      for (let i = 0; i < 5; i++) await expect(ep.run({})).rejects.toBeInstanceOf(EndpointConnectionError);
      expect(calls).toBe(5);

      // Open: no request goes out, the message gives the wait.
      const open = await ep.run({}).catch((e: unknown) => e);
      expect(open).toBeInstanceOf(CircuitOpenError);
      expect((open as Error).message).toBe(
        `Circuit breaker open for endpoint flaky (${server.url}/v2/ep) after 5 consecutive failures. Retry in 60 seconds.`,
      );
      clock.advance(45_500);
      await expect(ep.status("job-1")).rejects.toThrow(/Retry in 15 seconds\.$/);
      expect(calls).toBe(5);

      // After the recovery period the next calls go through; two successes close the circuit.
      up = true;
      clock.advance(14_500);
      expect(await ep.run({})).toEqual({ id: "job-1", status: "IN_QUEUE" });
      expect(await ep.run({})).toEqual({ id: "job-1", status: "IN_QUEUE" });
      expect(calls).toBe(7);

      // Closed again: a single failure does not reopen it.
      up = false;
      await expect(ep.run({})).rejects.toBeInstanceOf(EndpointConnectionError);
      up = true;
      expect((await ep.run({})).status).toBe("IN_QUEUE");
    } finally {
      await server.close();
    }
  });

  it("5xx answers count as failures; 4xx answers do not", async () => {
    let status = 404;
    const server = await startServer((_request, response) => json(response, status, { error: "nope" }));
    const clock = fakeClock();
    const ep = new EndpointClient({
      id: "ep",
      baseUrl: server.url,
      apiKey: "k",
      logger: captureLog().log,
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      breakers: new CircuitBreakers({}, clock.now),
    });
    try {
      for (let i = 0; i < 6; i++) await expect(ep.status("j")).rejects.toThrow(/404 Not Found/);
      status = 500;
      for (let i = 0; i < 5; i++) await expect(ep.status("j")).rejects.toThrow(/500 Internal Server Error/);
      await expect(ep.status("j")).rejects.toThrow(/Retry in 60 seconds/);
    } finally {
      await server.close();
    }
  });
});
