// Bad input on every HTTP surface: the local platform's client and worker APIs and a load-balanced
// server. Each gets a 4xx with a JSON error, and the process keeps serving.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type Flash, flash, freePort } from "../process.js";

let platform: Platform;
let lb: Flash;
let lbBase: string;

interface Sent {
  status: number;
  json: unknown;
  text: string;
}

async function send(base: string, path: string, init: RequestInit = {}): Promise<Sent> {
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

const bearer = () => ({ Authorization: `Bearer ${platform.apiKey}`, "Content-Type": "application/json" });
const raw = () => ({ Authorization: platform.apiKey, "Content-Type": "application/json" });

function expectClientError(sent: Sent, status?: number): void {
  if (status !== undefined) expect(sent.status, sent.text).toBe(status);
  expect(sent.status, sent.text).toBeGreaterThanOrEqual(400);
  expect(sent.status, sent.text).toBeLessThan(500);
  expect(typeof sent.json, sent.text).toBe("object");
  expect(JSON.stringify(sent.json).length).toBeGreaterThan(2);
}

beforeAll(async () => {
  platform = await startPlatform({ longPollMs: 200, endpoints: [{ id: "EP" }] });
  const port = await freePort();
  lbBase = `http://127.0.0.1:${port}`;
  lb = flash(["start", "examples/load-balanced/handler.ts"], { PORT: String(port), MODEL_LOAD_MS: "0" });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ping = await fetch(`${lbBase}/ping`).catch(() => undefined);
    if (ping?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`load-balanced server not ready:\n${lb.stdout.join("\n")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

afterAll(async () => {
  lb?.child.kill("SIGKILL");
  await lb?.exited;
  await platform?.close();
});

describe("local platform client API", () => {
  const cases: Array<[string, string, RequestInit, number]> = [
    ["malformed JSON", "/v2/EP/run", { method: "POST", body: "{not json" }, 400],
    ["a body that is an array", "/v2/EP/run", { method: "POST", body: "[1,2]" }, 400],
    ["no input", "/v2/EP/run", { method: "POST", body: '{"webhook": "http://x"}' }, 400],
    [
      "a webhook of the wrong type",
      "/v2/EP/run",
      { method: "POST", body: '{"input": {}, "webhook": 5}' },
      400,
    ],
    [
      "a webhook that is not a URL",
      "/v2/EP/run",
      { method: "POST", body: '{"input": {}, "webhook": "file:///etc/passwd"}' },
      400,
    ],
    ["an unknown endpoint", "/v2/nope/run", { method: "POST", body: '{"input": {}}' }, 404],
    ["an unknown job", "/v2/EP/status/no-such-job", {}, 404],
    ["a path trick", "/v2/EP/status/..%2F..%2Fetc%2Fpasswd", {}, 404],
    ["dot segments", "/v2/EP/../EP/status/x", {}, 404],
    ["a NUL in the path", "/v2/EP%00/run", { method: "POST", body: '{"input": {}}' }, 404],
  ];
  for (const [name, path, init, status] of cases) {
    it(`${name} → ${status} with a JSON error`, async () => {
      expectClientError(await send(platform.url, path, { ...init, headers: bearer() }), status);
    });
  }

  it("missing or wrong key → 401", async () => {
    expectClientError(await send(platform.url, "/v2/EP/run", { method: "POST", body: '{"input":{}}' }), 401);
    const wrong = { Authorization: "Bearer wrong", "Content-Type": "application/json" };
    expectClientError(await send(platform.url, "/v2/EP/health", { headers: wrong }), 401);
  });

  it("a body over 10 MB → 413 naming the limit", async () => {
    const body = JSON.stringify({ input: { blob: "x".repeat(11 * 1024 * 1024) } });
    const sent = await send(platform.url, "/v2/EP/run", { method: "POST", headers: bearer(), body });
    expectClientError(sent, 413);
    expect(sent.text).toContain("10 MB");
  });

  it("generated bodies and paths never get a 5xx, and the platform keeps serving", async () => {
    const paths = [
      "/run",
      "/runsync?wait=1000",
      "/status/x",
      "/cancel/x",
      "/retry/x",
      "/purge-queue",
      "/stream/x",
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string(),
          fc.constant(""),
        ),
        fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded"),
        async (path, body, type) => {
          const sent = await send(platform.url, `/v2/EP${path}`, {
            method: "POST",
            headers: { Authorization: `Bearer ${platform.apiKey}`, "Content-Type": type },
            body,
          });
          expect(sent.status, `${path} ${type} ${body.slice(0, 80)} → ${sent.text}`).toBeLessThan(500);
        },
      ),
      { numRuns: 300 },
    );
    const ok = await send(platform.url, "/v2/EP/run", {
      method: "POST",
      headers: bearer(),
      body: '{"input": 1}',
    });
    expect(ok.status).toBe(200);
  });
});

describe("local platform worker API", () => {
  it("job-take without the key → 401", async () => {
    expectClientError(await send(platform.url, "/v2/EP/job-take/w1?job_in_progress=0"), 401);
  });

  it("job-done with malformed JSON → 400", async () => {
    const sent = await send(platform.url, "/v2/EP/job-done/w1/j1?isStream=false", {
      method: "POST",
      headers: { ...raw(), "Content-Type": "application/x-www-form-urlencoded" },
      body: '{"output": ',
    });
    expectClientError(sent, 400);
  });

  it("a result for a job the worker does not hold is refused", async () => {
    const sent = await send(platform.url, "/v2/EP/job-done/w1/not-mine?isStream=false", {
      method: "POST",
      headers: raw(),
      body: '{"output": 1}',
    });
    expectClientError(sent);
  });

  it("generated job-done bodies never get a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string(),
        ),
        async (body) => {
          const sent = await send(platform.url, "/v2/EP/job-done/w1/j?isStream=false", {
            method: "POST",
            headers: { ...raw(), "Content-Type": "application/x-www-form-urlencoded" },
            body,
          });
          expect(sent.status, sent.text).toBeLessThan(500);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("load-balanced server", () => {
  it("malformed JSON → 400 JSON; an unknown route → 404 JSON, a known path with another method 405; a huge body → 413", async () => {
    const headers = { "Content-Type": "application/json" };
    expectClientError(await send(lbBase, "/echo", { method: "POST", headers, body: "{oops" }), 400);
    expectClientError(await send(lbBase, "/nope", { method: "POST", headers, body: "{}" }), 404);
    // The path matches GET /hello/:name (the parameter is "../../etc", never a file): DELETE is not allowed there.
    expectClientError(await send(lbBase, "/hello/..%2F..%2Fetc", { method: "DELETE" }), 405);
    const huge = JSON.stringify({ blob: "x".repeat(31 * 1024 * 1024) });
    const tooBig = await send(lbBase, "/echo", { method: "POST", headers, body: huge });
    expectClientError(tooBig, 413);
    expect(tooBig.text).toContain("30 MB limit");
  });

  it("generated bodies never get a 5xx, and the server keeps serving", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string(),
        ),
        async (body) => {
          const sent = await send(lbBase, "/echo", {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body,
          });
          expect(sent.status, sent.text).toBeLessThan(500);
        },
      ),
      { numRuns: 200 },
    );
    const ok = await send(lbBase, "/hello/flash");
    expect(ok.json).toStrictEqual({ hello: "flash" });
  });
});
