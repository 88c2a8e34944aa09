// The local platform's load balancer (src/platform/workers/lb-proxy.ts) in process, in front of real worker
// processes running test/fixtures/lb-tiny-worker.mjs (plain node, no import of the package: it starts in tens
// of ms): LbEndpoint's worker choice, scaling, acquire and release, health checks, exits; lbProxy's answers on
// a real fastify server on 127.0.0.1 (502, 503, 504, 413, affinity, headers, WebSockets); parseAffinity and
// lbHostRewrite. Gates are files the worker waits for; every wait is on an event, with a generous timeout.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import type { PlatformContext } from "../../../../src/platform/api/context.js";
import { errorHandler, HttpError } from "../../../../src/platform/api/http.js";
import { ENDPOINT_DEFAULTS } from "../../../../src/platform/state/endpoint.js";
import { DEFAULT_RETENTION } from "../../../../src/platform/state/jobs.js";
import { Scheduler } from "../../../../src/platform/state/scheduler.js";
import {
  LB_REQUESTS_KEPT,
  LbEndpoint,
  type LbEndpointInit,
  LbEndpoints,
  type LbOptions,
  type LbRequest,
  lbHostRewrite,
  lbProxy,
  parseAffinity,
  WORKER_ID_HEADER,
} from "../../../../src/platform/workers/lb-proxy.js";

const FIXTURE = resolve("test/fixtures/lb-tiny-worker.mjs");
const NODE = process.execPath;
const KEY = "lb-test-key";
const dir = mkdtempSync(join(tmpdir(), "flash-lb-unit-"));
let gates = 0;
/** A file that does not exist yet: what waits on it goes on once open() writes it. */
const gate = () => join(dir, `gate-${++gates}`);
const open = (file: string) => writeFileSync(file, "");

type Acquired = Exclude<Awaited<ReturnType<LbEndpoint["acquire"]>>, "gone" | undefined>;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (let n = 1; n <= gates; n++) open(join(dir, `gate-${n}`));
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}, 30_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Polls `check` until it holds (every 10 ms, up to `ms`). */
async function until<T>(check: () => T | undefined | false, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function logger() {
  const lines: string[] = [];
  const log = createLogger({
    level: "DEBUG",
    json: false,
    destination: { write: (l) => lines.push(l.trimEnd()) },
  });
  return { log, lines };
}

function lbOptions(extra: Partial<LbOptions> = {}) {
  const { log, lines } = logger();
  const options: LbOptions = { log, workerCommand: (file) => [NODE, file], stopGraceMs: 2_000, ...extra };
  return { options, lines };
}

/** An endpoint running the tiny worker, closed after the test. */
function endpoint(init: Partial<LbEndpointInit> = {}, extra: Partial<LbOptions> = {}) {
  const { options, lines } = lbOptions(extra);
  const e = new LbEndpoint({ id: "ep", command: [NODE, FIXTURE], ...init }, options);
  cleanups.push(() => e.close());
  return { e, lines };
}

const readyCount = (e: LbEndpoint, n: number) =>
  until(() => e.workerList().filter((w) => w.state === "ready").length === n, `${n} ready worker(s)`);

const never = () => new AbortController().signal;

async function take(e: LbEndpoint, waitMs = 20_000, affinity?: Parameters<LbEndpoint["acquire"]>[2]) {
  const worker = await e.acquire(waitMs, never(), affinity);
  if (worker === undefined || worker === "gone") throw new Error(`no worker: ${worker}`);
  return worker;
}

/** The private 250 ms tick, run now (its effect is then checked at once, not after a sleep). */
const tick = (e: LbEndpoint) => (e as unknown as { scale(wanted: boolean): void }).scale(false);

/** The wait a crash line announced for this worker's `crashes`-th crash in a row (NaN when none was logged). */
function nextStartMs(lines: string[], id: string, crashes: number): number {
  const line = lines.find((l) =>
    l.includes(`Worker:${id} | crashed ${crashes} time(s) in a row; next start in `),
  );
  return Number(/next start in (\d+) ms/.exec(line ?? "")?.[1]);
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The answer ended before its last byte (the proxy cut it). */
  cut: boolean;
}

/** One request on its own connection, every header as given. */
function call(
  port: number,
  path: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | string[];
    signal?: AbortSignal;
  } = {},
): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: init.headers ?? { authorization: `Bearer ${KEY}` },
        agent: false,
        ...(init.signal ? { signal: init.signal } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        const end = (cut: boolean) =>
          done({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
            cut,
          });
        res.on("data", (c: Buffer) => chunks.push(c));
        res.once("end", () => end(false));
        res.once("aborted", () => end(true));
        res.once("error", () => end(true));
      },
    );
    req.once("error", fail);
    if (Array.isArray(init.body)) {
      // Chunked, no content-length.
      for (const part of init.body) req.write(part);
      req.end();
    } else req.end(init.body);
  });
}

const json = (a: Answer) => JSON.parse(a.body) as Record<string, unknown>;

/** lbProxy on a real fastify server on 127.0.0.1 (with lbHostRewrite), its endpoints, and a queue endpoint "queue-ep". */
async function serve(
  extra: Partial<LbOptions> = {},
  claimUpgrade?: (req: IncomingMessage, socket: Duplex) => boolean,
) {
  const { options, lines } = lbOptions(extra);
  const endpoints = new LbEndpoints(options);
  const scheduler = new Scheduler({
    retention: DEFAULT_RETENTION,
    workerLostMs: 3_600_000,
    logger: options.log,
  });
  scheduler.addEndpoint({ id: "queue-ep", name: "queue-ep", env: {}, ...ENDPOINT_DEFAULTS });
  const ctx: PlatformContext = {
    scheduler,
    apiKey: KEY,
    log: options.log,
    longPollMs: 1_000,
    initializingWorkers: () => 0,
    deadWorkers: () => 0,
  };
  const app: FastifyInstance = Fastify({
    logger: false,
    forceCloseConnections: true,
    rewriteUrl: lbHostRewrite,
  });
  app.setErrorHandler(errorHandler(options.log));
  await app.register(lbProxy, {
    ctx,
    endpoints,
    ...(claimUpgrade ? { claimUpgrade } : {}),
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const port = (app.server.address() as { port: number }).port;
  cleanups.push(async () => {
    await endpoints.close();
    await app.close();
    scheduler.close();
  });
  const create = (init: Partial<LbEndpointInit> & { id: string }) =>
    endpoints.create({ command: [NODE, FIXTURE], ...init });
  return { endpoints, port, lines, create, app };
}

describe("parseAffinity", () => {
  it("reads soft, strict and strict-resume; absent, empty or blank is no affinity", () => {
    expect(parseAffinity(undefined)).toBeUndefined();
    expect(parseAffinity("")).toBeUndefined();
    expect(parseAffinity("   ")).toBeUndefined();
    expect(parseAffinity([])).toBeUndefined();
    expect(parseAffinity("abc")).toEqual({ mode: "soft", worker: "abc" });
    expect(parseAffinity("  abc  ")).toEqual({ mode: "soft", worker: "abc" });
    expect(parseAffinity(["w1", "w2"])).toEqual({ mode: "soft", worker: "w1" });
    expect(parseAffinity("strict w1")).toEqual({ mode: "strict", worker: "w1" });
    expect(parseAffinity(" strict \t w1 ")).toEqual({ mode: "strict", worker: "w1" });
    expect(parseAffinity("strict-resume w2")).toEqual({ mode: "strict-resume", worker: "w2" });
    // A lone word is a worker id, even one spelled like a mode.
    expect(parseAffinity("strict")).toEqual({ mode: "soft", worker: "strict" });
  });

  it("a malformed value is a 400 naming the forms it takes", () => {
    for (const value of ["sticky abc", "strict a b", "strict-resume a b c", "soft w1"]) {
      let caught: unknown;
      try {
        parseAffinity(value);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(HttpError);
      expect((caught as HttpError).status).toBe(400);
      expect((caught as HttpError).message).toBe(
        `Invalid X-Runpod-Worker-Id "${value}": expected "<worker-id>", "strict <worker-id>" or "strict-resume <worker-id>"`,
      );
    }
  });
});

describe("lbHostRewrite", () => {
  const rewrite = (host: string | undefined, url: string | undefined) =>
    lbHostRewrite({ url, headers: host === undefined ? {} : { host } } as IncomingMessage);

  it("routes <endpoint_id>.localhost[:port] to /lb/<endpoint_id>/<path>, any other host as it came", () => {
    expect(rewrite("ep-1.localhost:8080", "/a/b?c=1")).toBe("/lb/ep-1/a/b?c=1");
    expect(rewrite("Ep_2.LOCALHOST", "/x")).toBe("/lb/Ep_2/x");
    expect(rewrite("ep.localhost", "x")).toBe("/lb/ep/x");
    expect(rewrite("ep.localhost:1", undefined)).toBe("/lb/ep/");
    expect(rewrite("localhost:8080", "/v2/x")).toBe("/v2/x");
    expect(rewrite("a.b.localhost", "/x")).toBe("/x");
    expect(rewrite("ep.localhost.evil", "/x")).toBe("/x");
    expect(rewrite("xep.localhostx", "/x")).toBe("/x");
    expect(rewrite("ep.localhost:abc", "/x")).toBe("/x");
    expect(rewrite("ep.localhost:", "/x")).toBe("/x");
    expect(rewrite("ep!.localhost", "/x")).toBe("/x");
    expect(rewrite(".localhost", "/x")).toBe("/x");
    expect(rewrite(undefined, "/x")).toBe("/x");
    expect(rewrite(undefined, undefined)).toBe("/");
  });
});

describe("LbEndpoint construction", () => {
  const make = (init: Partial<LbEndpointInit>, extra: Partial<LbOptions> = {}) => {
    const { options } = lbOptions(extra);
    const e = new LbEndpoint({ id: "ep", ...init }, options);
    cleanups.push(() => e.close());
    return e;
  };

  it("refuses workers outside 0 <= min <= max, max >= 1, and an endpoint with nothing to run", () => {
    const invalid = (workers: [number, number]) =>
      `Invalid workers [${workers[0]}, ${workers[1]}]: expected 0 <= min <= max and max >= 1`;
    for (const workers of [
      [2, 1],
      [-1, 1],
      [0.5, 1],
      [0, 1.5],
      [0, 0],
      [1, 0],
    ] as [number, number][]) {
      expect(() => make({ command: [NODE, FIXTURE], workers })).toThrow(invalid(workers));
    }
    expect(() => make({})).toThrow("Load-balanced endpoint ep needs a file or command");
    expect(() => make({ command: [] })).toThrow("Load-balanced endpoint ep needs a file or command");
    // A launched endpoint (or one waiting for its launch) may be scaled to none, and needs no command.
    expect(make({ awaitLaunch: true, workers: [0, 0] }).workers).toEqual([0, 0]);
    expect(make({ launch: () => ({ argv: [NODE, FIXTURE], env: {} }), workers: [0, 0] }).workers).toEqual([
      0, 0,
    ]);
    expect(() => make({ awaitLaunch: true, workers: [1, 0] })).toThrow(invalid([1, 0]));
    expect(() => make({ awaitLaunch: true, workers: [-1, 0] })).toThrow(invalid([-1, 0]));
  });

  it("defaults: workers [0, 1], the name its id, a 600 s execution timeout; info() describes it", () => {
    const e = make({ command: [NODE, FIXTURE] });
    expect(e.workers).toEqual([0, 1]);
    expect(e.name).toBe("ep");
    expect(e.id).toBe("ep");
    expect(e.executionTimeoutMs).toBe(600_000);
    expect(e.running).toBe(0);
    expect(e.info("http://p:1")).toEqual({
      id: "ep",
      name: "ep",
      url: "http://p:1/lb/ep",
      workers: [0, 1],
      workersRunning: 0,
      workersReady: 0,
      sample: undefined,
    });
    const named = make({
      id: "ep2",
      name: "My API",
      command: [NODE, FIXTURE],
      workers: [0, 3],
      executionTimeoutMs: 1_234,
      routes: [
        { method: "POST", path: "/make" },
        { method: "GET", path: "/items/:id" },
      ],
    });
    expect(named.name).toBe("My API");
    expect(named.executionTimeoutMs).toBe(1_234);
    expect(named.info("")).toEqual({
      id: "ep2",
      name: "My API",
      url: "/lb/ep2",
      workers: [0, 3],
      workersRunning: 0,
      workersReady: 0,
      sample: JSON.stringify({ method: "POST", path: "/make", body: {} }),
    });
  });

  it("a file runs as workerCommand(<cwd>/<file>); its test_input.json is the sample", async () => {
    const cwd = mkdtempSync(join(dir, "app-"));
    writeFileSync(join(cwd, "test_input.json"), JSON.stringify({ input: { a: 1 } }));
    writeFileSync(join(cwd, "worker.mjs"), `import ${JSON.stringify(FIXTURE)};\n`);
    const asked: string[] = [];
    const e = make(
      { file: "worker.mjs", cwd, workers: [1, 1], routes: [{ method: "GET", path: "/who" }] },
      {
        workerCommand: (file) => {
          asked.push(file);
          return [NODE, file];
        },
      },
    );
    expect(asked).toEqual([join(cwd, "worker.mjs")]);
    expect(e.info("").sample).toBe(JSON.stringify({ input: { a: 1 } }, null, 2));
    await readyCount(e, 1);
    expect(e.info("").workersReady).toBe(1);
    expect(e.info("").workersRunning).toBe(1);
  });
});

describe("LbEndpoint workers", () => {
  it("starts min workers with PORT=0, its env, its id, the parent pipe; health checks make them ready", async () => {
    const { e, lines } = endpoint({ workers: [2, 3], env: { CUSTOM: "yes" }, cwd: dir });
    expect(e.running).toBe(2);
    expect(e.workerList().map((w) => [w.state, w.inFlight])).toEqual([
      ["starting", 0],
      ["starting", 0],
    ]);
    await readyCount(e, 2);
    expect(e.ready).toBe(2);
    const [a, b] = e.workerList();
    expect(a!.startedAt).toBeGreaterThan(Date.now() - 60_000);
    expect(a!.startedAt).toBeLessThanOrEqual(Date.now());
    const w = await take(e);
    const env = await fetch(`http://127.0.0.1:${w.port}/env`).then((r) => r.json());
    expect(env).toEqual({
      worker: w.id,
      pid: w.child.pid,
      cwd: dir,
      stdin: "pipe",
      ownGroup: true,
      vars: {
        PORT: "0",
        PORT_HEALTH: null,
        FLASH_LB_HOST: "127.0.0.1",
        RUNPOD_POD_ID: w.id,
        FLASH_STOP_WITH_PARENT: "1",
        CUSTOM: "yes",
      },
    });
    expect([a!.id, b!.id]).toContain(w.id);
    const started = lines.find((l) => l.includes(`Worker:${a!.id} | starting (pid `));
    expect(started).toMatch(new RegExp(`Worker:${a!.id} \\| starting \\(pid \\d+\\): ${NODE} ${FIXTURE}$`));
    expect(
      lines.some((l) => l.includes(`Worker:${a!.id} | ready on port `) && l.endsWith("(/ping 200)")),
    ).toBe(true);
    // The worker's own output is relayed under its id.
    expect(lines.some((l) => l.includes("tiny | listening on http://127.0.0.1:"))).toBe(true);
  });

  it("a container launch gets the env to pass on; its process gets the launch's env, no parent pipe", async () => {
    const envs: Record<string, string>[] = [];
    const { e } = endpoint({
      command: undefined,
      workers: [1, 1],
      env: { CUSTOM: "c" },
      // The values travel in the tool's environment (a container tool reads them there), never in its argv.
      launch: (env) => {
        envs.push(env);
        return { argv: [NODE, FIXTURE], env };
      },
    });
    await readyCount(e, 1);
    const w = await take(e);
    expect(envs).toEqual([{ CUSTOM: "c", PORT: "0", FLASH_LB_HOST: "127.0.0.1", RUNPOD_POD_ID: w.id }]);
    const env = (await fetch(`http://127.0.0.1:${w.port}/env`).then((r) => r.json())) as {
      stdin: string;
      vars: Record<string, unknown>;
    };
    expect(env.stdin).toBe("other");
    expect(env.vars).toMatchObject({ CUSTOM: "c", RUNPOD_POD_ID: w.id });
    expect(env.vars.FLASH_STOP_WITH_PARENT).toBe(process.env.FLASH_STOP_WITH_PARENT ?? null);
  });

  it("awaitLaunch starts nothing until setLaunch(); a launch that names no command starts nothing", async () => {
    const { e } = endpoint({ command: undefined, awaitLaunch: true, workers: [1, 1] });
    tick(e);
    expect(e.running).toBe(0);
    expect(await e.acquire(0, never())).toBeUndefined();
    expect(e.running).toBe(0);
    e.setLaunch(() => ({ argv: [], env: {} }));
    expect(e.running).toBe(0);
    e.setLaunch((env) => ({ argv: [NODE, FIXTURE], env }));
    expect(e.running).toBe(1);
    await readyCount(e, 1);
  });

  it("PORT_HEALTH in the env: health checks go to the worker's health port, once both ports are known", async () => {
    const portGate = gate();
    const { e, lines } = endpoint({
      workers: [1, 1],
      env: {
        PORT_HEALTH: "9",
        HEALTH_LINE_FIRST: "1",
        PORT_LINE_GATE: portGate,
        HEALTH_CHECK_PATH: "/healthz",
      },
    });
    await until(() => lines.some((l) => l.includes("Health checks on http://127.0.0.1:")), "the health line");
    // The health port alone is not enough: the worker stays starting (no request could reach it).
    expect(await e.acquire(0, never())).toBeUndefined();
    expect(e.workerList()[0]!.state).toBe("starting");
    open(portGate);
    await readyCount(e, 1);
    const w = await take(e);
    const env = (await fetch(`http://127.0.0.1:${w.port}/env`).then((r) => r.json())) as {
      vars: Record<string, unknown>;
    };
    expect(env.vars.PORT_HEALTH).toBe("0");
    const ready = lines.find((l) =>
      l.includes(`Worker:${w.id} | ready on port ${w.port} (/healthz on port `),
    );
    expect(ready).toMatch(/\(\/healthz on port \d+ 200\)$/);
    // The main port answers no /healthz: only the health port made it ready.
    expect((await fetch(`http://127.0.0.1:${w.port}/healthz`)).status).toBe(404);
  });

  it("PORT_HEALTH, the listening line first: ready once the health line follows", async () => {
    const { e, lines } = endpoint({ workers: [1, 1], env: { PORT_HEALTH: "9" } });
    await readyCount(e, 1);
    const w = e.workerList()[0]!;
    expect(lines.find((l) => l.includes(`Worker:${w.id} | ready on port `))).toMatch(
      /\(\/ping on port \d+ 200\)$/,
    );
  });

  it("204 is initializing, 200 ready, anything else unhealthy (and skipped), then ready again", async () => {
    const init = gate();
    const sick = join(dir, `sick-${++gates}`);
    const { e, lines } = endpoint({ workers: [1, 1], env: { INIT_GATE: init, SICK_FILE: sick } });
    await until(() => e.workerList()[0]?.state === "initializing", "initializing");
    const id = e.workerList()[0]!.id;
    expect(lines.some((l) => l.includes(`Worker:${id} | initializing (/ping 204)`))).toBe(true);
    expect(e.ready).toBe(0);
    expect(e.running).toBe(1);
    expect(await e.acquire(0, never())).toBeUndefined();
    open(init);
    await readyCount(e, 1);
    writeFileSync(sick, "");
    await until(() => e.workerList()[0]?.state === "unhealthy", "unhealthy");
    expect(lines.some((l) => l.includes(`Worker:${id} | unhealthy: /ping failed`))).toBe(true);
    expect(await e.acquire(0, never())).toBeUndefined();
    rmSync(sick);
    await readyCount(e, 1);
    expect((await take(e)).id).toBe(id);
  });

  it("a dropped /ping connection is unhealthy too; a state is logged once, not at every check", async () => {
    const sick = join(dir, `sick-${++gates}`);
    const { e, lines } = endpoint({ workers: [1, 1], env: { SICK_FILE: sick, PING_LOG: "1" } });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    // Two more checks (a second apart while ready) after the first 200.
    const pings = () => lines.filter((l) => l.includes(`${id} ping 200`)).length;
    await until(() => pings() >= 3, "three checks");
    expect(lines.filter((l) => l.includes(`Worker:${id} | ready on port `))).toHaveLength(1);
    writeFileSync(sick, "reset");
    await until(() => e.workerList()[0]?.state === "unhealthy", "unhealthy");
    expect(lines.filter((l) => l.includes(`Worker:${id} | unhealthy: /ping failed`))).toHaveLength(1);
    expect(e.ready).toBe(0);
  });

  it("a worker unhealthy before it was ever ready is not logged as one that failed", async () => {
    const sick = join(dir, `sick-${++gates}`);
    const init = gate();
    writeFileSync(sick, "");
    const { e, lines } = endpoint({ workers: [1, 1], env: { SICK_FILE: sick, INIT_GATE: init } });
    await until(() => e.workerList()[0]?.state === "initializing", "initializing");
    open(init);
    await until(() => e.workerList()[0]?.state === "unhealthy", "unhealthy");
    expect(lines.some((l) => l.includes("unhealthy: /ping failed"))).toBe(false);
  });

  it("a health line without PORT_HEALTH changes nothing: the checks stay on PORT", async () => {
    const { e } = endpoint({ workers: [1, 1], env: { STRAY_HEALTH_LINE: "1" } });
    await readyCount(e, 1);
    expect(e.ready).toBe(1);
  });

  it("a command that cannot start is logged, and counted as a crash", async () => {
    const { e, lines } = endpoint({ workers: [1, 1], command: [join(dir, "no-such-program")] });
    await until(() => e.dead.length >= 1, "the failed start");
    const id = e.dead[0]!.id;
    expect(lines.find((l) => l.includes(`Worker:${id} | could not start: `))).toMatch(
      new RegExp(`could not start: spawn ${join(dir, "no-such-program")} ENOENT$`),
    );
  });

  it("a worker waited for is taken as soon as it is ready", async () => {
    const init = gate();
    const { e } = endpoint({ workers: [1, 1], env: { INIT_GATE: init } });
    await until(() => e.workerList()[0]?.state === "initializing", "initializing");
    const waiting = e.acquire(60_000, never());
    open(init);
    const w = await waiting;
    expect(w).toMatchObject({ id: e.workerList()[0]!.id, inFlight: 1 });
  });
});

describe("LbEndpoint worker choice and scaling", () => {
  it("idle workers take turns; the least busy takes the next request", async () => {
    const { e } = endpoint({ workers: [2, 2] });
    await readyCount(e, 2);
    const turns: string[] = [];
    for (let i = 0; i < 4; i++) {
      const w = await take(e);
      turns.push(w.id);
      e.release(w);
    }
    expect(turns[0]).not.toBe(turns[1]);
    expect(turns[2]).toBe(turns[0]);
    expect(turns[3]).toBe(turns[1]);
    const held = await take(e);
    expect(held.inFlight).toBe(1);
    for (let i = 0; i < 3; i++) {
      const w = await take(e);
      expect(w.id).not.toBe(held.id);
      expect(w.inFlight).toBe(1);
      e.release(w);
    }
    // Both busy: the one with fewer requests.
    const other = await take(e);
    const third = await take(e);
    expect(third.inFlight).toBe(2);
    const fourth = await take(e);
    expect(fourth.id).toBe(third.id === held.id ? other.id : held.id);
    expect(e.workerList().map((w) => w.inFlight)).toEqual([2, 2]);
  });

  it("release counts down to zero and never below", async () => {
    const { e } = endpoint({ workers: [1, 1] });
    await readyCount(e, 1);
    const w = await take(e);
    await take(e);
    expect(w.inFlight).toBe(2);
    e.release(w);
    expect(w.inFlight).toBe(1);
    e.release(w);
    e.release(w);
    expect(w.inFlight).toBe(0);
    expect(e.workerList()[0]!.inFlight).toBe(0);
  });

  it("a second request on a busy worker starts another (within max), which takes the next", async () => {
    const { e, lines } = endpoint({ workers: [1, 2] });
    await readyCount(e, 1);
    const first = await take(e);
    expect(e.running).toBe(1);
    await take(e);
    expect(e.running).toBe(2);
    await readyCount(e, 2);
    const second = await take(e);
    expect(second.id).not.toBe(first.id);
    expect(second.inFlight).toBe(1);
    // At max: busy as they are, no third.
    await take(e);
    await take(e);
    expect(e.running).toBe(2);
    expect(lines.filter((l) => / \| starting \(pid /.test(l))).toHaveLength(2);
  });

  it("a request with no worker running starts one; one already starting is not doubled", async () => {
    const init = gate();
    const { e } = endpoint({ workers: [0, 3], env: { INIT_GATE: init } });
    tick(e);
    expect(e.running).toBe(0);
    const a = e.acquire(60_000, never());
    expect(e.running).toBe(1);
    const b = e.acquire(60_000, never());
    expect(e.running).toBe(1);
    open(init);
    const [wa, wb] = await Promise.all([a, b]);
    expect((wa as Acquired).id).toBe((wb as Acquired).id);
  });

  it("an idle worker above min stops after the idle timeout (the newest first); min stay", async () => {
    const { e, lines } = endpoint({ workers: [1, 3], idleTimeoutMs: 300 });
    await readyCount(e, 1);
    const first = await take(e);
    const extra = await take(e);
    expect(extra.id).toBe(first.id);
    await readyCount(e, 2);
    const second = await take(e);
    expect(second.id).not.toBe(first.id);
    // Busy workers stay, however long.
    e.release(first);
    e.release(second);
    await until(() => e.running === 1, "one worker left");
    expect(e.workerList().map((w) => w.id)).toEqual([first.id]);
    expect(first.inFlight).toBe(1);
    const stopped = lines.find((l) => l.includes(`Worker:${second.id} | idle for `));
    expect(stopped).toMatch(/idle for \d+ ms; stopping it$/);
    const idleMs = Number(/idle for (\d+) ms/.exec(stopped!)![1]);
    expect(idleMs).toBeGreaterThanOrEqual(300);
    expect(idleMs).toBeLessThan(60_000);
    await until(
      () => lines.some((l) => l.includes(`Worker:${second.id} | stopped (signal SIGTERM)`)),
      "stop",
    );
    e.release(first);
    tick(e);
    tick(e);
    expect(e.workerList().map((w) => w.id)).toEqual([first.id]);
  });

  it("idle time counts from a worker's last request; a worker not ready is never stopped as idle", async () => {
    const { e, lines } = endpoint({
      workers: [0, 1],
      idleTimeoutMs: 300,
      env: { INIT_GATE: join(dir, "never") },
    });
    const waiting = e.acquire(0, never());
    expect(e.running).toBe(1);
    await waiting;
    await until(() => e.workerList()[0]?.state === "initializing", "initializing");
    await until(
      () => Date.now() - e.workerList()[0]!.startedAt > 600,
      "the worker older than its idle timeout",
    );
    tick(e);
    expect(e.running).toBe(1);
    expect(lines.some((l) => l.includes("idle for"))).toBe(false);
  });

  it("a worker busy past the idle timeout is not stopped the moment it is released", async () => {
    const { e } = endpoint({ workers: [1, 2], idleTimeoutMs: 300 });
    await readyCount(e, 1);
    const first = await take(e);
    await take(e);
    await readyCount(e, 2);
    const second = await take(e);
    expect(second.id).not.toBe(first.id);
    await until(
      () => Date.now() - e.workerList()[1]!.startedAt > 600,
      "the second older than its idle timeout",
    );
    e.release(second);
    tick(e);
    expect(e.running).toBe(2);
    const idle = await until(
      () => e.running === 1 && e.workerList().length === 1,
      "the second stopped once idle long enough",
    );
    expect(idle).toBe(true);
    expect(e.workerList()[0]!.id).toBe(first.id);
  });

  it("idle workers above min all stop, down to min", async () => {
    const { e } = endpoint({ workers: [1, 3], idleTimeoutMs: 100_000 });
    await readyCount(e, 1);
    const [a] = [await take(e)];
    await take(e);
    await readyCount(e, 2);
    const b = await take(e);
    await take(e);
    await readyCount(e, 3);
    for (const w of e.workerList()) expect(w.state).toBe("ready");
    e.release(a);
    e.release(a);
    e.release(b);
    e.release(b);
    // Under the idle timeout: none stops.
    tick(e);
    expect(e.running).toBe(3);
  });
});

describe("LbEndpoint.acquire", () => {
  it("ends undefined at its deadline, when its signal aborts, or when the endpoint closes", async () => {
    const init = gate();
    const { e } = endpoint({ workers: [1, 1], env: { INIT_GATE: init } });
    expect(await e.acquire(50, never())).toBeUndefined();
    const aborted = new AbortController();
    aborted.abort();
    expect(await e.acquire(60_000, aborted.signal)).toBeUndefined();
    const later = new AbortController();
    const waiting = e.acquire(60_000, later.signal);
    later.abort();
    expect(await waiting).toBeUndefined();
    const closing = e.acquire(60_000, never());
    await e.close();
    expect(await closing).toBeUndefined();
    expect(await e.acquire(60_000, never())).toBeUndefined();
    expect(e.running).toBe(0);
  });

  it("a release lets a request waiting for a worker at capacity go", async () => {
    const { e } = endpoint({ workers: [1, 1], workerConcurrency: 1 });
    await readyCount(e, 1);
    const w = await take(e);
    const waiting = e.acquire(60_000, never());
    expect(await e.acquire(0, never())).toBeUndefined();
    e.release(w);
    expect(await waiting).toBe(w);
    expect(w.inFlight).toBe(1);
  });

  it("soft affinity: its worker when it can take it, else another; an unknown worker is no pin", async () => {
    const { e } = endpoint({ workers: [2, 2], workerConcurrency: 1 });
    await readyCount(e, 2);
    const [a, b] = e.workerList();
    for (let i = 0; i < 3; i++) {
      for (const pin of [a!, b!]) {
        const w = await take(e, 1_000, { mode: "soft", worker: pin.id });
        expect(w.id).toBe(pin.id);
        e.release(w);
      }
    }
    const held = await take(e, 1_000, { mode: "soft", worker: a!.id });
    expect((await take(e, 1_000, { mode: "soft", worker: a!.id })).id).toBe(b!.id);
    e.release(held);
    const any = await take(e, 1_000, { mode: "soft", worker: "nope" });
    expect(any.id).toBe(a!.id);
  });

  it("strict affinity: gone when its worker is not running; waits for it when busy, then gets it", async () => {
    const { e } = endpoint({ workers: [1, 2], workerConcurrency: 1 });
    await readyCount(e, 1);
    const [a] = e.workerList();
    expect(await e.acquire(1_000, never(), { mode: "strict", worker: "nope" })).toBe("gone");
    expect(await e.acquire(1_000, never(), { mode: "strict-resume", worker: "nope" })).toBe("gone");
    const held = await take(e, 1_000, { mode: "strict", worker: a!.id });
    expect(held.id).toBe(a!.id);
    // Busy: strict waits (and starts no other worker), past its deadline it is undefined.
    expect(await e.acquire(0, never(), { mode: "strict", worker: a!.id })).toBeUndefined();
    expect(e.running).toBe(1);
    const waiting = e.acquire(60_000, never(), { mode: "strict-resume", worker: a!.id });
    e.release(held);
    expect(await waiting).toBe(held);
  });

  it("a soft pin to a worker being stopped (still finishing) goes to another", async () => {
    const { e } = endpoint({ workers: [1, 1], env: { IGNORE_TERM: "1" } }, { stopGraceMs: 60_000 });
    await readyCount(e, 1);
    const old = e.workerList()[0]!;
    e.restartAll();
    await readyCount(e, 1);
    const w = await take(e, 20_000, { mode: "soft", worker: old.id });
    expect(w.id).not.toBe(old.id);
    e.killAll();
  });

  it("strict affinity to a worker that exits while waited for, or that is being stopped: gone", async () => {
    const { e } = endpoint({ workers: [1, 1], workerConcurrency: 1 });
    await readyCount(e, 1);
    const a = await take(e);
    const waiting = e.acquire(60_000, never(), { mode: "strict", worker: a.id });
    a.child.kill("SIGKILL");
    expect(await waiting).toBe("gone");
    await readyCount(e, 1);
    const b = e.workerList()[0]!;
    e.restartAll();
    expect(await e.acquire(60_000, never(), { mode: "strict", worker: b.id })).toBe("gone");
    // A soft pin to it falls back to the new worker.
    await readyCount(e, 1);
    const c = await take(e, 1_000, { mode: "soft", worker: b.id });
    expect(c.id).not.toBe(b.id);
  });
});

describe("LbEndpoint exits, restarts, records", () => {
  it("a worker that exits is replaced; crashes soon after start back off and are listed as dead", async () => {
    const { e, lines } = endpoint({ workers: [1, 1], env: { EXIT_AT_START: "1" } });
    await until(() => e.dead.length === 2, "two crashes");
    const [d1, d2] = e.dead;
    expect(d1!.reason).toBe("exited with code 1; crashed 1 time(s) in a row");
    expect(d2!.reason).toBe("exited with code 1; crashed 2 time(s) in a row");
    // The next start waited out the back-off (a bound the code guarantees, however loaded the machine).
    const first = nextStartMs(lines, d1!.id, 1);
    expect(d2!.startedAt - d1!.exitedAt).toBeGreaterThanOrEqual(first - 10);
    expect(lines.some((l) => l.includes(`Worker:${d1!.id} | exited with code 1`))).toBe(true);
    // Shares of 0.5 s then 1 s, each jittered down by up to half.
    expect(first).toBeGreaterThanOrEqual(250);
    expect(first).toBeLessThanOrEqual(500);
    expect(nextStartMs(lines, d2!.id, 2)).toBeGreaterThanOrEqual(500);
    expect(nextStartMs(lines, d2!.id, 2)).toBeLessThanOrEqual(1000);
    // restartAll forgets the crashes: a worker starts at once.
    e.restartAll();
    expect(e.dead).toEqual([]);
    expect(e.running).toBe(1);
  });

  it("a ready worker clears the dead list of workers that died before it started", async () => {
    const { e } = endpoint({ workers: [1, 1] });
    await readyCount(e, 1);
    const a = await take(e);
    a.child.kill("SIGKILL");
    await until(() => e.dead.length === 1, "the dead worker");
    expect(e.dead[0]!.id).toBe(a.id);
    expect(e.dead[0]!.reason).toBe("exited with signal SIGKILL; crashed 1 time(s) in a row");
    await until(() => e.ready === 1 && e.dead.length === 0, "a new ready worker to clear it");
    expect(e.workerList()[0]!.id).not.toBe(a.id);
  });

  it("restartAll: the old workers finish their requests, new ones take the next", async () => {
    const { e, lines } = endpoint({ workers: [1, 1] });
    await readyCount(e, 1);
    const old = await take(e);
    e.restartAll();
    expect(e.workerList().map((w) => w.id)).not.toContain(old.id);
    expect(e.running).toBe(1);
    await readyCount(e, 1);
    const fresh = await take(e);
    expect(fresh.id).not.toBe(old.id);
    await until(
      () => lines.some((l) => l.includes(`Worker:${old.id} | stopped (signal SIGTERM)`)),
      "old stopped",
    );
    // A stopped worker is not counted as a crash.
    expect(e.dead).toEqual([]);
  });

  it("killAll kills every worker at once, and they are replaced", async () => {
    const { e, lines } = endpoint({ workers: [2, 2] });
    await readyCount(e, 2);
    const before = e.workerList().map((w) => w.id);
    e.killAll();
    for (const id of before)
      await until(() => lines.some((l) => l.includes(`Worker:${id} | exited with signal SIGKILL`)), id);
    await readyCount(e, 2);
    for (const w of e.workerList()) expect(before).not.toContain(w.id);
  });

  it("close stops the workers, killing one that ignores SIGTERM after the grace", async () => {
    const { e, lines } = endpoint({ workers: [1, 1], env: { IGNORE_TERM: "1" } }, { stopGraceMs: 200 });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    await e.close();
    expect(lines.some((l) => l.includes("SIGTERM ignored"))).toBe(true);
    expect(lines.some((l) => l.includes(`Worker:${id} | stopped (signal SIGKILL)`))).toBe(true);
    expect(e.running).toBe(0);
    tick(e);
    expect(e.running).toBe(0);
  });

  it("a worker asked to stop twice (restart, then close) gets one SIGTERM", async () => {
    const { e, lines } = endpoint({ workers: [1, 1], env: { IGNORE_TERM: "1" } }, { stopGraceMs: 300 });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    e.restartAll();
    await until(() => lines.some((l) => l.includes(`${id} SIGTERM ignored`)), "the SIGTERM");
    await e.close();
    expect(lines.some((l) => l.includes(`Worker:${id} | stopped (signal SIGKILL)`))).toBe(true);
    expect(lines.filter((l) => l.includes(`${id} SIGTERM ignored`))).toHaveLength(1);
  });

  it("record keeps the newest LB_REQUESTS_KEPT requests, paths without query, long ones cut", () => {
    const seen: [string, LbRequest][] = [];
    const { e } = endpoint({ workers: [0, 1] }, { onRequest: (id, r) => seen.push([id, r]) });
    const t0 = Date.now() - 50;
    e.record("GET", "/a?b=c", 200, t0);
    const [first] = e.recentRequests();
    expect(first).toMatchObject({ at: t0, method: "GET", path: "/a", status: 200 });
    expect(first!.ms).toBeGreaterThanOrEqual(50);
    expect(first!.ms).toBeLessThan(60_000);
    expect(seen).toEqual([["ep", first]]);
    e.record("POST", `/${"p".repeat(300)}?q`, 502, t0);
    expect(e.recentRequests()[1]!.path).toBe(`/${"p".repeat(199)}…`);
    e.record("POST", `/${"p".repeat(199)}`, 200, t0);
    expect(e.recentRequests()[2]!.path).toBe(`/${"p".repeat(199)}`);
    for (let i = 0; i < LB_REQUESTS_KEPT; i++) e.record("GET", `/n${i}`, 200, t0);
    const kept = e.recentRequests();
    expect(LB_REQUESTS_KEPT).toBe(200);
    expect(kept).toHaveLength(200);
    expect(kept[0]!.path).toBe("/n0");
    expect(kept[199]!.path).toBe("/n199");
    // A copy: the caller cannot change the ring.
    kept.length = 0;
    expect(e.recentRequests()).toHaveLength(200);
  });
});

describe("LbEndpoints", () => {
  it("creates, lists, removes and closes endpoints; their requests reach every listener", async () => {
    const heard: string[] = [];
    const { options } = lbOptions({ onRequest: (id, r) => heard.push(`options ${id} ${r.path}`) });
    const lb = new LbEndpoints(options);
    cleanups.push(() => lb.close());
    expect(lb.readyWaitMs).toBe(120_000);
    expect(lb.affinityWaitMs).toBe(300_000);
    expect(lb.payloadLimitBytes).toBe(30 * 1024 * 1024);
    const a = lb.create({ id: "a", command: [NODE, FIXTURE] });
    const b = lb.create({ id: "b", command: [NODE, FIXTURE] });
    expect(() => lb.create({ id: "a", command: [NODE, FIXTURE] })).toThrow(
      "Load-balanced endpoint a already exists",
    );
    expect(lb.get("a")).toBe(a);
    expect(lb.get("c")).toBeUndefined();
    expect(lb.list()).toEqual([a, b]);
    const off = lb.onRequest((id, r) => heard.push(`listener ${id} ${r.path}`));
    a.record("GET", "/one", 200, Date.now());
    off();
    b.record("GET", "/two", 200, Date.now());
    expect(heard).toEqual(["options a /one", "listener a /one", "options b /two"]);
    expect(await lb.remove("a")).toBe(true);
    expect(await lb.remove("a")).toBe(false);
    expect(lb.list()).toEqual([b]);
    await lb.close();
    expect(lb.list()).toEqual([]);
    expect(lb.get("b")).toBeUndefined();
  });

  it("close stops every endpoint's workers", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const { pid } = json(await call(s.port, "/lb/ep/env")) as { pid: number };
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    await s.endpoints.close();
    await until(() => !alive(), `worker process ${pid} gone`);
  });

  it("the limits the options set", () => {
    const { options } = lbOptions({ readyWaitMs: 1, affinityWaitMs: 2, payloadLimitBytes: 3 });
    const lb = new LbEndpoints(options);
    expect([lb.readyWaitMs, lb.affinityWaitMs, lb.payloadLimitBytes]).toEqual([1, 2, 3]);
  });
});

describe("lbProxy", () => {
  it("checks the key; an unknown endpoint is a 404 naming the nearest, a queue endpoint how to call it", async () => {
    const s = await serve();
    s.create({ id: "alpha" });
    const noKey = await call(s.port, "/lb/alpha/who", { headers: {} });
    expect(noKey.status).toBe(401);
    expect(json(noKey)).toEqual({ error: "Unauthorized: missing Authorization: Bearer <API key> header" });
    const badKey = await call(s.port, "/lb/alpha/who", { headers: { authorization: "Bearer nope" } });
    expect(json(badKey)).toEqual({ error: "Unauthorized: invalid API key" });
    // The raw key, as workers send it to the worker API, is not a client's: requests need Bearer.
    const raw = await call(s.port, "/lb/alpha/who", { headers: { authorization: KEY } });
    expect(raw.status).toBe(401);
    expect(json(raw)).toEqual({ error: "Unauthorized: invalid API key" });
    const near = await call(s.port, "/lb/alpah/who");
    expect(near.status).toBe(404);
    expect(json(near)).toEqual({ error: "Load-balanced endpoint alpah not found (did you mean alpha?)" });
    const queue = await call(s.port, "/lb/queue-ep");
    expect(queue.status).toBe(404);
    expect(json(queue)).toEqual({
      error:
        'Endpoint queue-ep is a queue endpoint, not load-balanced: send it jobs with POST /v2/queue-ep/runsync (or /run) and a body {"input": {...}}',
    });
  });

  it("sends the request on: path and query, method, body, its headers less hop-by-hop; the answer back with the worker's id", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const res = await call(s.port, "/lb/ep/echo?x=1&y=2", {
      method: "PUT",
      headers: {
        authorization: `Bearer ${KEY}`,
        "x-custom": "kept",
        "content-type": "text/plain",
        "content-length": "5",
        "proxy-authorization": "secret",
        te: "trailers",
      },
      body: "hello",
    });
    expect(res.status).toBe(200);
    expect(res.headers[WORKER_ID_HEADER]).toBe(id);
    const echo = json(res) as { headers: Record<string, string> };
    expect(echo).toMatchObject({ worker: id, method: "PUT", url: "/echo?x=1&y=2", body: "hello" });
    expect(echo.headers["x-custom"]).toBe("kept");
    expect(echo.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(echo.headers["proxy-authorization"]).toBeUndefined();
    expect(echo.headers.te).toBeUndefined();
    expect(echo.headers.host).toMatch(/^127\.0\.0\.1:\d+$/);
    // The endpoint's root, and a route named by the <id>.localhost host.
    const root = await call(s.port, "/lb/ep");
    expect(root.status).toBe(404);
    expect(json(root)).toEqual({ worker: id, url: "/", error: "no route /" });
    expect(json(await call(s.port, "/lb/ep?q=1")).url).toBe("/?q=1");
    const byHost = await call(s.port, "/echo?z", {
      headers: { authorization: `Bearer ${KEY}`, host: `ep.localhost:${s.port}` },
    });
    expect(json(byHost)).toMatchObject({ worker: id, url: "/echo?z" });
    // The worker's status and headers, less its hop-by-hop ones.
    const teapot = await call(s.port, "/lb/ep/status?code=418");
    expect(teapot.status).toBe(418);
    expect(teapot.headers["x-answer"]).toBe("yes");
    expect(teapot.headers["keep-alive"]).not.toBe("timeout=99");
    expect(teapot.headers[WORKER_ID_HEADER]).toBe(id);
    expect(e.recentRequests().map((r) => [r.method, r.path, r.status])).toEqual([
      ["PUT", "/echo", 200],
      ["GET", "/", 404],
      ["GET", "/", 404],
      ["GET", "/echo", 200],
      ["GET", "/status", 418],
    ]);
    expect(e.workerList()[0]!.inFlight).toBe(0);
  });

  it("a request that ends frees its worker once: one held beside it still counts", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const holding = call(s.port, `/lb/ep/hold?gate=${gate()}`);
    await until(() => e.workerList()[0]?.inFlight === 1, "the held request");
    for (let i = 0; i < 3; i++) expect((await call(s.port, "/lb/ep/who")).status).toBe(200);
    await until(() => e.recentRequests().length === 3, "the records");
    expect(e.workerList()[0]!.inFlight).toBe(1);
    open(join(dir, `gate-${gates}`));
    expect((await holding).status).toBe(200);
    await until(() => e.workerList()[0]?.inFlight === 0, "the worker free");
  });

  it("RunPod's payload limit by default: a declared 40 MB answer is a 502; 1 MB reads as 1.0 MB", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const res = await call(s.port, `/lb/ep/declare?bytes=${40 * 1024 * 1024}`);
    expect(res.status).toBe(502);
    expect(json(res)).toEqual({
      error: `Worker ${id}'s answer is over the load balancer's 30.0 MB payload limit (40.0 MB so far): use a network volume or send it in chunks`,
    });
    const small = await serve({ payloadLimitBytes: 1024 * 1024 });
    const f = small.create({ id: "ep", workers: [1, 1] });
    await readyCount(f, 1);
    const over = await call(small.port, `/lb/ep/declare?bytes=${1024 * 1024 + 1}`);
    expect(json(over).error).toMatch(/ 1\.0 MB payload limit \(1\.0 MB so far\)/);
  });

  it("502 naming the worker when its port refuses the connection; a WebSocket to it too", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1], env: { PORT_HEALTH: "0" } });
    await readyCount(e, 1);
    const w = await take(e);
    e.release(w);
    // Straight to the worker: the proxy keeps no connection to it that could be reused.
    expect((await fetch(`http://127.0.0.1:${w.port}/close`, { method: "POST" })).status).toBe(200);
    const refused = await call(s.port, "/lb/ep/who");
    expect(refused.status).toBe(502);
    expect(json(refused)).toEqual({ error: `Worker ${w.id}: connect ECONNREFUSED 127.0.0.1:${w.port}` });
    const { socket, head, rest } = await upgrade(s.port, "/lb/ep/ws", {
      authorization: `Bearer ${KEY}`,
      host: `127.0.0.1:${s.port}`,
    });
    socket.destroy();
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 502 Bad Gateway");
    expect(JSON.parse(rest)).toEqual({ error: `Worker ${w.id} refused the WebSocket` });
    await until(() => e.recentRequests().length === 2, "the records");
    expect(e.recentRequests().map((r) => [r.path, r.status])).toEqual([
      ["/who", 502],
      ["/ws", 499],
    ]);
    expect(e.workerList()[0]!.inFlight).toBe(0);
  });

  it("a client that leaves a strict wait is recorded as 499, not 400", async () => {
    const s = await serve({ affinityWaitMs: 60_000 });
    const e = s.create({ id: "sticky", workers: [1, 1], workerConcurrency: 1 });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const holding = call(s.port, `/lb/sticky/hold?gate=${gate()}`);
    await until(() => e.workerList()[0]?.inFlight === 1, "the worker busy");
    const leave = new AbortController();
    const waiting = call(s.port, "/lb/sticky/who", {
      headers: { authorization: `Bearer ${KEY}`, [WORKER_ID_HEADER]: `strict ${id}` },
      signal: leave.signal,
    }).catch(() => "left");
    await until(() => (e as unknown as { waiters: Set<unknown> }).waiters.size === 1, "the strict wait");
    leave.abort();
    expect(await waiting).toBe("left");
    await until(() => e.recentRequests().length === 1, "the record");
    expect(e.recentRequests()[0]).toMatchObject({ path: "/who", status: 499 });
    open(join(dir, `gate-${gates}`));
    expect((await holding).status).toBe(200);
  });

  it("streams a chunked request body to the worker", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const res = await call(s.port, "/lb/ep/echo", {
      headers: { authorization: `Bearer ${KEY}` },
      body: ["ab", "cd", "ef"],
    });
    expect(json(res).body).toBe("abcdef");
  });

  it("503 with RunPod's body when no worker is ready within the wait", async () => {
    const s = await serve({ readyWaitMs: 100 });
    const e = s.create({ id: "cold", workers: [1, 1], env: { INIT_GATE: gate() } });
    const res = await call(s.port, "/lb/cold/who");
    expect(res.status).toBe(503);
    expect(json(res)).toEqual({
      error: "no workers available",
      message: "No worker of endpoint cold is ready (1 starting); try again shortly",
    });
    expect(e.recentRequests().map((r) => [r.path, r.status])).toEqual([["/who", 503]]);
  });

  it("a client that leaves while waiting for a worker is recorded as 499", async () => {
    const s = await serve({ readyWaitMs: 60_000 });
    const e = s.create({ id: "cold", workers: [1, 1], env: { INIT_GATE: gate() } });
    const leave = new AbortController();
    const res = call(s.port, "/lb/cold/who", { signal: leave.signal }).catch(() => "left");
    await until(() => e.workerList()[0]?.state === "initializing", "initializing");
    leave.abort();
    expect(await res).toBe("left");
    await until(() => e.recentRequests().length === 1, "the record");
    expect(e.recentRequests()[0]).toMatchObject({ path: "/who", status: 499 });
  });

  it("a client that leaves mid-request: recorded 499, the worker released", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const leave = new AbortController();
    const res = call(s.port, `/lb/ep/hold?gate=${gate()}`, { signal: leave.signal }).catch(() => "left");
    await until(() => e.workerList()[0]?.inFlight === 1, "the request on the worker");
    leave.abort();
    expect(await res).toBe("left");
    await until(() => e.recentRequests().length === 1, "the record");
    expect(e.recentRequests()[0]).toMatchObject({ path: "/hold", status: 499 });
    expect(e.workerList()[0]!.inFlight).toBe(0);
    // The request to the worker is let go too.
    await until(() => s.lines.some((l) => /\/hold\?gate=\S+ abandoned$/.test(l)), "the worker to see it go");
  });

  it("502 naming the worker when it dies mid-request; a new worker takes its place", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const died = await call(s.port, "/lb/ep/exit?code=3", { method: "POST" });
    expect(died.status).toBe(502);
    expect(died.headers[WORKER_ID_HEADER]).toBe(id);
    expect(died.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(json(died)).toEqual({ error: `Worker ${id}: socket hang up` });
    await until(() => e.ready === 1 && e.workerList()[0]!.id !== id, "a replacement");
    expect(nextStartMs(s.lines, id, 1)).toBeLessThanOrEqual(500);
    expect(e.recentRequests().map((r) => r.status)).toEqual([502]);
  });

  it("a worker that dies after its answer began: the answer is cut", async () => {
    const s = await serve();
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const res = await call(s.port, "/lb/ep/half");
    expect(res.status).toBe(200);
    expect(res.cut).toBe(true);
    expect(res.body).toBe("half");
    await until(() => e.recentRequests().length === 1, "the record");
    expect(e.recentRequests()[0]!.status).toBe(200);
  });

  it("504 when the worker does not answer within the execution timeout", async () => {
    const s = await serve();
    const e = s.create({ id: "slow", workers: [1, 1], executionTimeoutMs: 200 });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const res = await call(s.port, `/lb/slow/hold?gate=${gate()}`);
    expect(res.status).toBe(504);
    expect(res.headers[WORKER_ID_HEADER]).toBe(id);
    expect(json(res)).toEqual({ error: "Execution timeout on slow after 0.2s" });
    expect(e.recentRequests().map((r) => r.status)).toEqual([504]);
    expect(e.workerList()[0]!.inFlight).toBe(0);
  });

  it("504 at the processing timeout; after the answer began, the answer is cut", async () => {
    const s = await serve({ processingTimeoutMs: 300 });
    const e = s.create({ id: "long", workers: [1, 1] });
    await readyCount(e, 1);
    const res = await call(s.port, `/lb/long/hold?gate=${gate()}`);
    expect(res.status).toBe(504);
    expect(json(res)).toEqual({
      error: "Processing timeout on long after 0.3s: the load balancer's limit per request",
    });
    const streamed = await call(s.port, `/lb/long/stream?chunk=3&count=2&gate=${gate()}`);
    expect(streamed.status).toBe(200);
    expect(streamed.cut).toBe(true);
    expect(streamed.body).toBe("yyyyyy");
    await until(() => e.recentRequests().length === 2, "the records");
    expect(e.recentRequests().map((r) => r.status)).toEqual([504, 200]);
    await until(() => e.workerList()[0]?.inFlight === 0, "the worker released");
  });

  it("payload limit: a declared body over it is a 413 before any worker; a streamed one is cut at it", async () => {
    const s = await serve({ payloadLimitBytes: 1024 });
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const declared = await call(s.port, "/lb/ep/echo", { body: "x".repeat(1_500) });
    expect(declared.status).toBe(413);
    expect(json(declared)).toEqual({
      error:
        "The request body is 2 KB, over the load balancer's 1 KB payload limit: use a network volume or send it in chunks",
    });
    const exact = await call(s.port, "/lb/ep/who", { body: "x".repeat(1_024) });
    expect(exact.status).toBe(200);
    const streamed = await call(s.port, "/lb/ep/echo", {
      headers: { authorization: `Bearer ${KEY}` },
      body: ["x".repeat(1_000), "x".repeat(100)],
    });
    expect(streamed.status).toBe(413);
    expect(json(streamed)).toEqual({
      error:
        "The request body is over the load balancer's 1 KB payload limit (2 KB so far): use a network volume or send it in chunks",
    });
    expect(e.recentRequests().map((r) => r.status)).toEqual([413, 200, 413]);
  });

  it("sizes are named in MB from exactly 1 MiB up, in KB below", async () => {
    const s = await serve({ payloadLimitBytes: 1024 * 1024 - 1 });
    s.create({ id: "ep", workers: [0, 1] });
    // A declared length over the limit is refused before any body is read or any worker started.
    const over = await call(s.port, "/lb/ep/echo", {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-length": String(1024 * 1024) },
    });
    expect(over.status).toBe(413);
    expect(json(over)).toEqual({
      error:
        "The request body is 1.0 MB, over the load balancer's 1024 KB payload limit: use a network volume or send it in chunks",
    });
  });

  it("payload limit on answers: a declared one over it is a 502; one without a length is cut; up to it goes", async () => {
    const s = await serve({ payloadLimitBytes: 2 * 1024 * 1024 });
    const e = s.create({ id: "ep", workers: [1, 1] });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const ok = await call(s.port, `/lb/ep/big?bytes=${2 * 1024 * 1024}`);
    expect(ok.status).toBe(200);
    expect(ok.body).toHaveLength(2 * 1024 * 1024);
    const big = await call(s.port, `/lb/ep/big?bytes=${3 * 1024 * 1024}`);
    expect(big.status).toBe(502);
    expect(big.headers[WORKER_ID_HEADER]).toBe(id);
    expect(json(big)).toEqual({
      error: `Worker ${id}'s answer is over the load balancer's 2.0 MB payload limit (3.0 MB so far): use a network volume or send it in chunks`,
    });
    const flowing = await call(s.port, `/lb/ep/stream?chunk=${1024 * 1024}&count=3`);
    expect(flowing.status).toBe(200);
    expect(flowing.cut).toBe(true);
    expect(flowing.body.length).toBeLessThan(3 * 1024 * 1024);
    const under = await call(s.port, `/lb/ep/stream?chunk=${512 * 1024}&count=4`);
    expect(under.cut).toBe(false);
    expect(under.body).toHaveLength(2 * 1024 * 1024);
  });

  it("affinity over HTTP: soft, strict, 404 when its worker is gone, 400 when busy past the wait or malformed", async () => {
    const s = await serve({ affinityWaitMs: 100 });
    const e = s.create({ id: "sticky", workers: [1, 1], workerConcurrency: 1 });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const pinned = (pin: string, path = "/who") =>
      call(s.port, `/lb/sticky${path}`, {
        headers: { authorization: `Bearer ${KEY}`, [WORKER_ID_HEADER]: pin },
      });
    expect(json(await pinned(id)).worker).toBe(id);
    expect(json(await pinned(`strict ${id}`)).worker).toBe(id);
    const gone = await pinned("strict-resume w-gone");
    expect(gone.status).toBe(404);
    expect(json(gone)).toEqual({ error: "affinity_worker_gone", worker: "w-gone" });
    const malformed = await pinned("sticky abc");
    expect(malformed.status).toBe(400);
    expect(json(malformed).error).toBe(
      'Invalid X-Runpod-Worker-Id "sticky abc": expected "<worker-id>", "strict <worker-id>" or "strict-resume <worker-id>"',
    );
    const holding = call(s.port, `/lb/sticky/hold?gate=${gate()}`);
    await until(() => e.workerList()[0]?.inFlight === 1, "the worker busy");
    const busy = await pinned(`strict ${id}`);
    expect(busy.status).toBe(400);
    expect(json(busy)).toEqual({
      error: "timed out waiting for worker",
      reason: "worker_timeout",
      worker: id,
    });
    expect(e.recentRequests().map((r) => [r.path, r.status])).toEqual([
      ["/who", 200],
      ["/who", 200],
      ["/who", 404],
      ["/who", 400],
    ]);
    open(join(dir, `gate-${gates}`));
    expect((await holding).status).toBe(200);
  });
  it("soft affinity through the proxy: an unknown worker named without `strict` is no pin, for requests and WebSockets", async () => {
    const s = await serve({ readyWaitMs: 100, affinityWaitMs: 100 });
    const e = s.create({ id: "ep", workers: [1, 1] });
    s.create({ id: "cold", workers: [1, 1], env: { INIT_GATE: gate() } });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const soft = { authorization: `Bearer ${KEY}`, [WORKER_ID_HEADER]: "no-such-worker" };
    const res = await call(s.port, "/lb/ep/who", { headers: soft });
    expect(res.status).toBe(200);
    expect(json(res)).toEqual({ worker: id });
    // No worker ready: the 503 of any request, not strict affinity's 400.
    const cold = await call(s.port, "/lb/cold/who", { headers: soft });
    expect(cold.status).toBe(503);
    expect(json(cold)).toMatchObject({ error: "no workers available" });
    const ws = await upgrade(s.port, "/lb/ep/room", { ...soft, host: `127.0.0.1:${s.port}` });
    cleanups.push(() => ws.socket.destroy());
    expect(ws.head.split("\r\n")[0]).toBe("HTTP/1.1 101 Switching Protocols");
    // /lb/ anywhere but at the start of the path is no load-balanced endpoint's.
    const elsewhere = await upgrade(s.port, "/x/lb/ep/room", { ...soft, host: `127.0.0.1:${s.port}` });
    elsewhere.socket.destroy();
    expect(elsewhere.head.split("\r\n")[0]).toBe("HTTP/1.1 404 Not Found");
  });
});

/** Sends an upgrade request on a raw socket; resolves to the socket and the answer's head once it came. */
function upgrade(port: number, path: string, headers: Record<string, string>, first = "") {
  return new Promise<{ socket: Socket; head: string; rest: string }>((done, fail) => {
    const socket = connect(port, "127.0.0.1");
    let got = "";
    socket.on("data", (chunk: Buffer) => {
      got += chunk.toString("latin1");
      const end = got.indexOf("\r\n\r\n");
      if (end >= 0) {
        socket.removeAllListeners("data");
        done({ socket, head: got.slice(0, end), rest: got.slice(end + 4) });
      }
    });
    socket.once("error", fail);
    socket.once("close", () => done({ socket, head: got, rest: "" }));
    const lines = [`GET ${path} HTTP/1.1`, "Connection: Upgrade", "Upgrade: echo"];
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    socket.write(`${lines.join("\r\n")}\r\n\r\n${first}`);
  });
}

/** The next bytes the socket receives. */
const nextData = (socket: Socket) =>
  new Promise<string>((done) => socket.once("data", (c: Buffer) => done(c.toString())));

describe("lbProxy WebSockets (upgrades)", () => {
  it("tunnels an upgrade to a worker: its 101 carries the worker's id, bytes flow both ways", async () => {
    const s = await serve();
    const e = s.create({ id: "ws", workers: [1, 1] });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const auth = { authorization: `Bearer ${KEY}`, host: `127.0.0.1:${s.port}` };
    const { socket, head, rest } = await upgrade(s.port, "/lb/ws/room?x=1", auth, "early");
    cleanups.push(() => socket.destroy());
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 101 Switching Protocols");
    expect(head).toContain("\r\nx-path: /room?x=1\r\n");
    expect(head.endsWith(`\r\nX-Runpod-Worker-Id: ${id}`)).toBe(true);
    const echoed = rest === "" ? await nextData(socket) : rest;
    expect(echoed).toBe(`${id}:early`);
    socket.write("hi");
    expect(await nextData(socket)).toBe(`${id}:hi`);
    expect(e.workerList()[0]!.inFlight).toBe(1);
    socket.destroy();
    await until(() => e.recentRequests().length === 1, "the record");
    expect(e.recentRequests()[0]).toMatchObject({ method: "GET", path: "/room", status: 101 });
    expect(e.workerList()[0]!.inFlight).toBe(0);
    // By host, the endpoint's root.
    const byHost = await upgrade(s.port, "/", {
      authorization: `Bearer ${KEY}`,
      host: `ws.localhost:${s.port}`,
    });
    cleanups.push(() => byHost.socket.destroy());
    expect(byHost.head).toContain("\r\nx-path: /\r\n");
    const root = await upgrade(s.port, "/lb/ws", auth);
    cleanups.push(() => root.socket.destroy());
    expect(root.head).toContain("\r\nx-path: /\r\n");
  });

  it("refusals: no route, no key, no endpoint, a gone pin, no worker ready, the worker's own refusal", async () => {
    const s = await serve({ readyWaitMs: 100, affinityWaitMs: 100 });
    const e = s.create({ id: "ws", workers: [1, 1], workerConcurrency: 1 });
    s.create({ id: "cold", workers: [1, 1], env: { INIT_GATE: gate() } });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const host = `127.0.0.1:${s.port}`;
    const auth = { authorization: `Bearer ${KEY}`, host };
    const answer = async (path: string, headers: Record<string, string>) => {
      const { socket, head, rest } = await upgrade(s.port, path, headers);
      socket.destroy();
      return { status: head.split("\r\n")[0], body: rest === "" ? "" : JSON.parse(rest).error };
    };
    expect(await answer("/v2/x", auth)).toEqual({
      status: "HTTP/1.1 404 Not Found",
      body: "No WebSocket at /v2/x: load-balanced endpoints take them at /lb/<endpoint_id>/<path>",
    });
    expect(await answer("/lb/ws/x", { host })).toEqual({
      status: "HTTP/1.1 401 Unauthorized",
      body: "Unauthorized: missing Authorization: Bearer <API key> header",
    });
    expect(await answer("/lb/ws/x", { host, authorization: KEY })).toEqual({
      status: "HTTP/1.1 401 Unauthorized",
      body: "Unauthorized: invalid API key",
    });
    expect(await answer("/lb/wx/x", auth)).toEqual({
      status: "HTTP/1.1 404 Not Found",
      body: "Load-balanced endpoint wx not found (did you mean ws?)",
    });
    expect(await answer("/lb/ws/x", { ...auth, [WORKER_ID_HEADER]: "strict nope" })).toEqual({
      status: "HTTP/1.1 404 Not Found",
      body: "affinity_worker_gone",
    });
    expect(await answer("/lb/cold/x", auth)).toEqual({
      status: "HTTP/1.1 503 Service Unavailable",
      body: "no workers available",
    });
    // A soft pin is no pin: still the 503, not strict affinity's 400.
    expect(await answer("/lb/cold/x", { ...auth, [WORKER_ID_HEADER]: "no-such-worker" })).toEqual({
      status: "HTTP/1.1 503 Service Unavailable",
      body: "no workers available",
    });
    const refused = await answer("/lb/ws/upgrade-refuse", auth);
    expect(refused.status).toBe("HTTP/1.1 403 Forbidden");
    await until(() => e.recentRequests().length === 1, "the record");
    expect(e.recentRequests()[0]).toMatchObject({ path: "/upgrade-refuse", status: 403 });
    // A busy worker, pinned strict: 400 past the wait.
    const held = await upgrade(s.port, "/lb/ws/held", auth);
    cleanups.push(() => held.socket.destroy());
    expect(await answer("/lb/ws/x", { ...auth, [WORKER_ID_HEADER]: `strict ${id}` })).toEqual({
      status: "HTTP/1.1 400 Bad Request",
      body: "timed out waiting for worker",
    });
    held.socket.destroy();
    await until(() => e.workerList()[0]?.inFlight === 0, "the worker released");
    // A worker that drops the connection without answering: recorded 499, released.
    const dropped = await answer("/lb/ws/upgrade-drop", auth);
    expect(dropped.status).toBe("");
    await until(() => e.recentRequests().length === 3, "the records");
    expect(e.recentRequests().map((r) => [r.path, r.status])).toEqual([
      ["/upgrade-refuse", 403],
      ["/held", 101],
      ["/upgrade-drop", 499],
    ]);
  });

  it("a malformed endpoint id is a 502; a worker answering no HTTP is recorded as 502", async () => {
    const s = await serve();
    const e = s.create({ id: "ws", workers: [1, 1] });
    await readyCount(e, 1);
    const id = e.workerList()[0]!.id;
    const auth = { authorization: `Bearer ${KEY}`, host: `127.0.0.1:${s.port}` };
    const bad = await upgrade(s.port, "/lb/%E0/x", auth);
    bad.socket.destroy();
    expect(bad.head.split("\r\n")[0]).toBe("HTTP/1.1 502 Bad Gateway");
    expect(JSON.parse(bad.rest)).toEqual({ error: "URI malformed" });
    const garbage = await upgrade(s.port, "/lb/ws/upgrade-garbage", auth);
    garbage.socket.destroy();
    expect(garbage.head).toBe(`HELLO\r\nX-Runpod-Worker-Id: ${id}`);
    await until(() => e.recentRequests().length === 1, "the record");
    expect(e.recentRequests()[0]).toMatchObject({ path: "/upgrade-garbage", status: 502 });
  });

  it("an upgrade another handler claims is left to it", async () => {
    const claimed: string[] = [];
    const s = await serve({}, (req, socket) => {
      if (!req.url?.startsWith("/pod")) return false;
      claimed.push(req.url);
      socket.end("HTTP/1.1 418 I'm a Teapot\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
      return true;
    });
    const { socket, head } = await upgrade(s.port, "/pod/x", { host: `127.0.0.1:${s.port}` });
    socket.destroy();
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 418 I'm a Teapot");
    expect(claimed).toEqual(["/pod/x"]);
    // The rest still reach the load balancer.
    const { socket: other, head: refused } = await upgrade(s.port, "/lb/none/x", {
      authorization: `Bearer ${KEY}`,
      host: `127.0.0.1:${s.port}`,
    });
    other.destroy();
    expect(refused.split("\r\n")[0]).toBe("HTTP/1.1 404 Not Found");
  });
});
