// The shared HTTP client against real servers on 127.0.0.1: what it retries, what it hands back, the breaker, the errors.
import { afterEach, describe, expect, it } from "vitest";
import { isFlashError } from "../../../src/flash-error.js";
import { CircuitBreaker } from "../../../src/http/breaker.js";
import {
  describeAnswer,
  describeFailure,
  HttpClient,
  type HttpClientOptions,
  type HttpRequest,
  neverSent,
  RETRYABLE_STATUS,
  unsendable,
} from "../../../src/http/client.js";
import { h1Transport } from "../../../src/http/h1.js";
import { nodeTransport } from "../../../src/http/wire.js";
import { closedPortUrl, json, startServer, type TestServer } from "../../client/servers.js";

const FAST = { attempts: 3, baseMs: 1, maxMs: 1 };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server answering each request with the next status of `statuses` (the last one from then on). */
async function answering(...statuses: number[]): Promise<TestServer> {
  let n = 0;
  server = await startServer((_request, response) => {
    const status = statuses[Math.min(n++, statuses.length - 1)]!;
    json(response, status, status < 300 ? { ok: n } : { error: `no ${n}` });
  });
  return server;
}

function client(options: Partial<HttpClientOptions> = {}) {
  const retries: string[] = [];
  const http = new HttpClient({
    retry: FAST,
    retryStatus: (status) => RETRYABLE_STATUS.has(status),
    onRetry: (request, reason, attempt) => retries.push(`${request.what} ${attempt}: ${reason}`),
    ...options,
  });
  return { http, retries };
}

const get = (url: string, extra: Partial<HttpRequest> = {}): HttpRequest => ({
  method: "GET",
  url: `${url}/x`,
  headers: { Accept: "application/json" },
  timeoutMs: 5_000,
  what: "GET /x",
  ...extra,
});

describe("HttpClient.send", () => {
  it("retries overloaded answers until one stands, telling onRetry why", async () => {
    const target = await answering(503, 429, 200);
    const { http, retries } = client();
    const answer = await http.send(get(target.url));
    expect(answer.response.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ ok: 3 });
    expect(target.requests).toEqual(["GET /x", "GET /x", "GET /x"]);
    expect(retries).toEqual([
      'GET /x 1: 503 Service Unavailable: {"error":"no 1"}',
      'GET /x 2: 429 Too Many Requests: {"error":"no 2"}',
    ]);
  });

  it("hands back an answer that retrying will not fix at once, and the last one once the attempts are spent", async () => {
    const refused = await answering(400);
    const { http } = client();
    expect((await http.send(get(refused.url))).response.status).toBe(400);
    expect(refused.requests).toHaveLength(1);
    await refused.close();

    const busy = await answering(502);
    const second = client();
    const answer = await second.http.send(get(busy.url));
    expect(describeAnswer(answer)).toBe('502 Bad Gateway: {"error":"no 3"}');
    expect(busy.requests).toHaveLength(FAST.attempts);
  });

  it("does not repeat a call that is not idempotent once it was answered", async () => {
    const target = await answering(503, 200);
    const { http, retries } = client();
    const answer = await http.send(get(target.url, { method: "POST", body: "{}", idempotent: false }));
    expect(answer.response.status).toBe(503);
    expect(target.requests).toEqual(["POST /x"]);
    expect(retries).toEqual([]);
  });

  it("a call that is not idempotent: retried when the connection was refused, not when it broke after sending", async () => {
    const refused = await closedPortUrl();
    const first = client();
    const failure = await first.http
      .send(get(refused, { method: "POST", body: "{}", idempotent: false }))
      .catch((err: unknown) => err);
    expect(describeFailure(failure)).toMatch(/ECONNREFUSED/);
    expect(first.retries).toHaveLength(FAST.attempts - 1);

    // The request reached the server, which dropped the connection without answering: it may have run.
    server = await startServer((request) => request.socket.destroy());
    const second = client();
    await expect(
      second.http.send(get(server.url, { method: "POST", body: "{}", idempotent: false })),
    ).rejects.toThrow();
    expect(server.requests).toEqual(["POST /x"]);
    expect(second.retries).toEqual([]);
    // The same break on an idempotent call is retried.
    await expect(second.http.send(get(server.url))).rejects.toThrow();
    expect(server.requests).toHaveLength(1 + FAST.attempts);
  });

  it("retries connection failures, then throws the caller's error with the attempts made", async () => {
    const url = await closedPortUrl();
    const seen: Array<[string, number]> = [];
    const { http, retries } = client({
      unreachable: (request, cause, attempts) => {
        seen.push([request.what, attempts]);
        return new RangeError(`gone: ${describeFailure(cause)}`);
      },
    });
    await expect(http.send(get(url))).rejects.toThrow(/^gone: .*ECONNREFUSED/);
    expect(seen).toEqual([["GET /x", FAST.attempts]]);
    expect(retries).toHaveLength(FAST.attempts - 1);
  });

  it("without an unreachable mapping, rethrows the connection's own failure", async () => {
    const url = await closedPortUrl();
    const { http } = client();
    const failure = await http.send(get(url)).catch((err: unknown) => err);
    expect((failure as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
    expect(describeFailure(failure)).toMatch(/ECONNREFUSED/);
  });

  for (const [name, wire] of [
    ["node:http", nodeTransport],
    ["h1", h1Transport],
  ] as const) {
    it(`a request that cannot be built (${name}) is one attempt, a RequestInvalidError, neither retried nor counted on the circuit`, async () => {
      const target = await answering(200);
      const breaker = new CircuitBreaker(
        target.url,
        {
          failureThreshold: 1,
          successThreshold: 1,
          recoveryMs: 1_000,
        },
        Date.now,
      );
      const { http, retries } = client({
        wire,
        retry: { attempts: Number.POSITIVE_INFINITY, baseMs: 1, maxMs: 1 },
        circuit: { breaker, openError: () => new Error("open") },
        unreachable: () => new Error("unreachable: not this"),
      });
      for (const headers of [
        { "X-Request-ID": "job\r\nX-Injected: 1" } as Record<string, string>,
        { "X-Request-ID": "作业" },
        { "Bad Name": "1" },
      ]) {
        const failure = await http
          .send(get(target.url, { headers, what: "Result post" }))
          .catch((err: unknown) => err);
        expect(isFlashError(failure, "HTTP_REQUEST_INVALID")).toBe(true);
        expect((failure as Error).message).toMatch(
          /^Result post could not be sent: (Invalid character in header content \["X-Request-ID"\]|Header name must be a valid HTTP token \["Bad Name"\])$/,
        );
      }
      expect(retries).toEqual([]);
      expect(target.requests).toEqual([]);
      expect(breaker.state).toBe("CLOSED");
    });
  }

  it("unsendable: only Node's refusals to build a request", () => {
    const refusal = (code: string) => Object.assign(new TypeError("refused"), { code });
    expect(unsendable(refusal("ERR_INVALID_CHAR"))).toBe(true);
    expect(unsendable(refusal("ERR_INVALID_URL"))).toBe(true);
    expect(unsendable(refusal("ECONNRESET"))).toBe(false);
    expect(unsendable(new TypeError("fetch failed"))).toBe(false);
    expect(unsendable(undefined)).toBe(false);
  });

  it("counts failures on the circuit and fails fast with the caller's error while it is open", async () => {
    const target = await answering(500, 500, 404, 500);
    let now = 0;
    const breaker = new CircuitBreaker(
      target.url,
      { failureThreshold: 2, successThreshold: 1, recoveryMs: 1_000 },
      () => now,
    );
    const { http } = client({
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      circuit: { breaker, openError: (ms, failures) => new Error(`open ${failures} ${ms}`) },
    });
    await http.send(get(target.url));
    expect(breaker.state).toBe("CLOSED");
    await http.send(get(target.url));
    expect(breaker.state).toBe("OPEN");
    now = 400;
    await expect(http.send(get(target.url))).rejects.toThrow("open 2 600");
    expect(target.requests).toHaveLength(2);
    now = 1_000;
    // Half open: a 404 is the caller's mistake, not the target's, so it closes the circuit again.
    expect((await http.send(get(target.url))).response.status).toBe(404);
    expect(breaker.state).toBe("CLOSED");
  });

  it("a connection failure counts on the circuit too", async () => {
    const url = await closedPortUrl();
    const breaker = new CircuitBreaker(
      url,
      { failureThreshold: 1, successThreshold: 1, recoveryMs: 60_000 },
      () => 0,
    );
    const { http } = client({
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      circuit: { breaker, openError: () => new Error("open") },
    });
    await expect(http.send(get(url))).rejects.toThrow();
    expect(breaker.state).toBe("OPEN");
    await expect(http.send(get(url))).rejects.toThrow("open");
  });

  it("an aborted signal ends the retries", async () => {
    const target = await answering(503);
    const controller = new AbortController();
    const { http } = client({
      retry: { attempts: 5, baseMs: 60_000, maxMs: 60_000 },
      onRetry: () => controller.abort(),
    });
    const answer = await http.send(get(target.url, { signal: controller.signal }));
    expect(answer.response.status).toBe(503);
    expect(target.requests).toHaveLength(1);
  });

  it("sends the method, headers and body it was given", async () => {
    const received: Array<{ method?: string; type?: string; body: string }> = [];
    server = await startServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on("end", () => {
        received.push({ method: request.method, type: request.headers["content-type"], body });
        json(response, 200, {});
      });
    });
    const { http } = client();
    await http.send(
      get(server.url, { method: "PATCH", headers: { "Content-Type": "application/json" }, body: '{"a":1}' }),
    );
    expect(received).toEqual([{ method: "PATCH", type: "application/json", body: '{"a":1}' }]);
  });
});

describe("HttpClient.open", () => {
  it("makes one attempt and leaves the body to the caller", async () => {
    const target = await answering(503);
    const { http } = client();
    const response = await http.open(get(target.url));
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: "no 1" });
    expect(target.requests).toHaveLength(1);
  });
});

describe("HttpClient.open deadlines", () => {
  /** A server that sends headers, then holds the body until the test ends. */
  async function holding(): Promise<TestServer> {
    server = await startServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/plain" });
      response.write("first");
    });
    return server;
  }

  it("the deadline ends the whole exchange, body included; no deadline leaves it open", async () => {
    const target = await holding();
    const { http } = client();
    const timed = await http.open(get(target.url, { timeoutMs: 200 }));
    await expect(timed.text()).rejects.toThrow();
    const open = await http.open(get(target.url, { timeoutMs: undefined }));
    const reader = open.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("first");
    await reader.cancel();
  });

  it("the caller's signal ends it too, with or without a deadline", async () => {
    const target = await holding();
    const { http } = client();
    for (const timeoutMs of [60_000, undefined]) {
      const controller = new AbortController();
      const response = await http.open(get(target.url, { timeoutMs, signal: controller.signal }));
      const body = response.text();
      controller.abort();
      await expect(body).rejects.toThrow();
    }
  });
});

describe("stopRetrying", () => {
  it("ends the waits between attempts, alone or beside the request's signal", async () => {
    const target = await answering(503);
    for (const withSignal of [false, true]) {
      const stop = new AbortController();
      const { http } = client({
        retry: { attempts: 5, baseMs: 60_000, maxMs: 60_000 },
        onRetry: () => stop.abort(),
      });
      const request = get(target.url, {
        stopRetrying: stop.signal,
        ...(withSignal ? { signal: new AbortController().signal } : {}),
      });
      expect((await http.send(request)).response.status).toBe(503);
    }
    expect(target.requests).toHaveLength(2);
  });

  it("the request's signal still ends the waits when stopRetrying is given", async () => {
    const target = await answering(503);
    const controller = new AbortController();
    const { http } = client({
      retry: { attempts: 5, baseMs: 60_000, maxMs: 60_000 },
      onRetry: () => controller.abort(),
    });
    const answer = await http.send(
      get(target.url, { signal: controller.signal, stopRetrying: new AbortController().signal }),
    );
    expect(answer.response.status).toBe(503);
    expect(target.requests).toHaveLength(1);
  });
});

describe("what a failure says", () => {
  const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

  it("neverSent: only socket errors that prove nothing went out, on the error or its cause", () => {
    for (const code of [
      "ECONNREFUSED",
      "ENOTFOUND",
      "EAI_AGAIN",
      "EHOSTUNREACH",
      "ENETUNREACH",
      "EADDRNOTAVAIL",
    ]) {
      expect(neverSent(withCode("x", code)), code).toBe(true);
      expect(neverSent(new TypeError("fetch failed", { cause: withCode("x", code) })), code).toBe(true);
    }
    for (const code of ["ECONNRESET", "ETIMEDOUT", "EPIPE"])
      expect(neverSent(withCode("x", code))).toBe(false);
    expect(neverSent(new Error("no code"))).toBe(false);
    expect(neverSent(null)).toBe(false);
    expect(neverSent("ECONNREFUSED")).toBe(false);
  });

  it("describeFailure: the socket error inside fetch's, its code added once", () => {
    expect(describeFailure("plain")).toBe("plain");
    expect(describeFailure(new Error("top"))).toBe("top");
    expect(describeFailure(new Error("top", { cause: "not an error" }))).toBe("top");
    expect(
      describeFailure(new TypeError("fetch failed", { cause: withCode("connect refused", "ECONNREFUSED") })),
    ).toBe("connect refused (ECONNREFUSED)");
    expect(
      describeFailure(
        new TypeError("fetch failed", { cause: withCode("connect ECONNREFUSED 1.2.3.4", "ECONNREFUSED") }),
      ),
    ).toBe("connect ECONNREFUSED 1.2.3.4");
    expect(describeFailure(new TypeError("fetch failed", { cause: new Error("other side closed") }))).toBe(
      "other side closed",
    );
  });

  it("describeAnswer: status, text and the body's first 300 characters", async () => {
    server = await startServer((_request, response) => {
      response.writeHead(502, "Bad Gateway", { "content-type": "text/plain" }).end("b".repeat(400));
    });
    const { http } = client({ retry: { attempts: 1, baseMs: 1, maxMs: 1 } });
    expect(describeAnswer(await http.send(get(server.url)))).toBe(`502 Bad Gateway: ${"b".repeat(300)}`);
    await server.close();
    server = await startServer((_request, response) => {
      response.writeHead(503, "Service Unavailable").end();
    });
    expect(describeAnswer(await http.send(get(server.url)))).toBe("503 Service Unavailable");
  });
});
