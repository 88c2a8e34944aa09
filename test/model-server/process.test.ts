// The model server's process and health wait against the real FastAPI fixture (test/fixtures/model-server):
// own process group, output as log lines, health gating, the start timeout, an early exit, SIGTERM → SIGKILL,
// and the OpenAI passthrough (plain, streamed, cut off by a crash, cancelled).
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ModelServer, server } from "../../src/app/model-server/declare.js";
import { openaiPassthrough } from "../../src/app/model-server/passthrough.js";
import { runInJobScope } from "../../src/job/scope.js";
import { createLogger, type Logger } from "../../src/log/index.js";
import { readWorkerConfig } from "../../src/runtime/config/options.js";
import { waitUntilHealthy } from "../../src/runtime/model-server/health.js";
import { ServerProcess } from "../../src/runtime/model-server/process.js";
import { startServer } from "../../src/runtime/model-server/supervise.js";
import { eventually } from "../platform/helpers.js";
import { ROOT } from "../process.js";

const FIXTURE = join(ROOT, "test/fixtures/model-server/openai_server.py");
let nextPort = 18_700 + (process.pid % 200);
const started: ServerProcess[] = [];

function logger(lines: string[]): Logger {
  return createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } });
}

function fixture(env: Record<string, string> = {}): {
  model: ModelServer;
  proc: ServerProcess;
  lines: string[];
} {
  const port = nextPort++;
  const model = server({
    command: "/usr/bin/python3",
    args: [FIXTURE, String(port)],
    env: { FIXTURE_LOAD_SECONDS: "0.3", ...env },
    port,
    name: "fixture-llm",
  });
  const lines: string[] = [];
  const proc = new ServerProcess(model.settings, logger(lines).child({ subject: "fixture-llm" }));
  model.process = proc;
  started.push(proc);
  return { model, proc, lines };
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

afterEach(async () => {
  await Promise.all(started.splice(0).map((proc) => proc.stop(1000)));
});

describe("a model server process", () => {
  it("runs in its own process group and its output becomes log lines under its name", async () => {
    const { model, proc, lines } = fixture();
    const health = await waitUntilHealthy(proc, `${model.url}/health`, 30_000);
    expect(health.ok).toBe(true);
    const pid = proc.pid!;
    // Its own group: the group id is its pid, not the test's.
    expect(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[2]).toBe(String(pid));
    expect(
      lines.find((l) => l.includes("| fixture-llm | fixture: loading fixture-model (ok)")),
    ).toBeDefined();
    expect(proc.lastLines()).toContain("fixture: loading fixture-model (ok)");
  });

  it("a shell command line runs through /bin/sh, and an exit before health names the code; its lines stay in the log", async () => {
    const model = server({ command: "echo 'no GPU found' >&2; exit 7", port: 18_699 });
    const lines: string[] = [];
    const proc = new ServerProcess(model.settings, logger(lines));
    started.push(proc);
    const health = await waitUntilHealthy(proc, `${model.url}/health`, 30_000);
    expect(health).toEqual({
      ok: false,
      reason: "it exited with code 7; its last lines are in the worker's log",
    });
    expect(lines.filter((l) => l.includes("no GPU found"))).toHaveLength(1);
  });

  it("a program that does not exist is reported with the shell's exit code and message", async () => {
    const model = server({ command: "/nonexistent/vllm", args: ["serve"], port: 18_698 });
    const proc = new ServerProcess(model.settings, logger([]));
    const exit = await proc.exited;
    expect(proc.describe(exit)).toBe("exited with code 127; its last lines are in the worker's log");
    expect(proc.lastLines()).toEqual(["server: 1: /nonexistent/vllm: not found"]);
  });

  it("a server that stays at 503 fails the health wait at the start timeout, naming the last answer", async () => {
    const { model, proc } = fixture({ FIXTURE_MODE: "never-healthy" });
    // Python may take seconds to listen on a busy machine: the wait starts once it answers at all.
    await eventually(() => listening(model.settings.port), "the fixture to listen", 30_000);
    const health = await waitUntilHealthy(proc, `${model.url}/health`, 3000);
    expect(health).toEqual({
      ok: false,
      reason: `${model.url}/health did not answer 200 within 3 s (last: it answered 503); raise RUNPOD_INIT_TIMEOUT if it needs longer`,
    });
  });

  it("a hung health endpoint is caught by the start timeout", async () => {
    const { model, proc } = fixture({ FIXTURE_MODE: "hang" });
    await eventually(() => listening(model.settings.port), "the fixture to listen", 30_000);
    const health = await waitUntilHealthy(proc, `${model.url}/health`, 3000);
    expect(health.ok).toBe(false);
    expect(health.ok || health.reason).toMatch(
      /did not answer 200 within 3 s \(last: no answer within \d+ ms\)/,
    );
  });

  it("stop sends SIGTERM to the group, then SIGKILL to one that ignores it", async () => {
    const { model, proc } = fixture({ FIXTURE_MODE: "ignore-sigterm" });
    expect((await waitUntilHealthy(proc, `${model.url}/health`, 30_000)).ok).toBe(true);
    const exit = await proc.stop(500);
    expect(exit.signal).toBe("SIGKILL");
    expect(alive(proc.pid!)).toBe(false);
  });
});

describe("startServer", () => {
  it("refuses a port something already listens on, before spawning anything", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    const lines: string[] = [];
    try {
      const model = server({ command: "echo should-not-run", port, name: "late" });
      await expect(startServer(model, readWorkerConfig([], {}).config, logger(lines))).rejects.toMatchObject({
        code: "SERVER_START_FAILED",
        message: `Model server 'late' cannot start: port ${port} on 127.0.0.1 is already in use (another worker's server, or one left running); give it port: 0 and {port} in its command for a free port per worker`,
      });
      expect(model.process).toBeUndefined();
    } finally {
      taken.close();
    }
  });

  it("waits for health with RUNPOD_INIT_TIMEOUT over the server's startTimeout, and stop ends it", async () => {
    const port = nextPort++;
    const model = server({
      command: "/usr/bin/python3",
      args: [FIXTURE, String(port)],
      env: { FIXTURE_MODE: "never-healthy" },
      port,
      startTimeout: 600,
    });
    const lines: string[] = [];
    const supervised = await startServer(
      model,
      readWorkerConfig([], { RUNPOD_INIT_TIMEOUT: "1" }).config,
      logger(lines),
    );
    started.push(supervised.process);
    const health = await supervised.ready();
    expect(health.ok || health.reason).toMatch(/did not answer 200 within 1 s/);
    await supervised.stop();
    expect(supervised.process.exit).toBeDefined();
    expect(lines.some((l) => /Starting model server 'server' \(pid \d+\)/.test(l))).toBe(true);
  });
});

describe("the OpenAI passthrough", () => {
  it("answers a plain chat completion and /v1/models with the server's JSON", async () => {
    const { model, proc } = fixture();
    expect((await waitUntilHealthy(proc, `${model.url}/health`, 30_000)).ok).toBe(true);
    const answer = (await openaiPassthrough(model, {
      openai_route: "/v1/chat/completions",
      openai_input: { model: "fixture-model", messages: [{ role: "user", content: "hello world" }] },
    })) as { choices: { message: { content: string } }[] };
    expect(answer.choices[0]!.message.content).toBe("echo: hello world");
    const models = await openaiPassthrough(model, { openai_route: "/v1/models" });
    expect(models).toMatchObject({ object: "list", data: [{ id: "fixture-model" }] });
  });

  it("relays a streamed answer as one SSE event per chunk, ending with the server's [DONE]", async () => {
    const { model, proc } = fixture();
    expect((await waitUntilHealthy(proc, `${model.url}/health`, 30_000)).ok).toBe(true);
    const stream = (await openaiPassthrough(model, {
      openai_route: "/v1/chat/completions",
      openai_input: { messages: [{ role: "user", content: "one two" }], stream: true },
    })) as AsyncGenerator<string>;
    const events: string[] = [];
    for await (const event of stream) events.push(event);
    expect(events.every((e) => e.startsWith("data: ") && e.endsWith("\n\n"))).toBe(true);
    expect(events.at(-1)).toBe("data: [DONE]\n\n");
    const deltas = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.slice(6)) as { choices: { delta: { content?: string } }[] })
      .map((c) => c.choices[0]!.delta.content ?? "");
    expect(deltas.join("")).toBe("echo: one two");
  });

  it("an error answer fails with the server's status and message", async () => {
    const { model, proc } = fixture();
    expect((await waitUntilHealthy(proc, `${model.url}/health`, 30_000)).ok).toBe(true);
    await expect(
      openaiPassthrough(model, { openai_route: "chat/completions", openai_input: { prompt: "x" } }),
    ).rejects.toMatchObject({
      code: "SERVER_HTTP",
      status: 400,
      message: "Model server answered 400 on /v1/chat/completions: messages is required",
    });
  });

  it("a server that crashes mid-stream fails the stream with its exit code, not its lines", async () => {
    const { model, proc } = fixture({ FIXTURE_MODE: "crash-mid-stream" });
    expect((await waitUntilHealthy(proc, `${model.url}/health`, 30_000)).ok).toBe(true);
    const stream = (await openaiPassthrough(model, {
      openai_route: "/v1/chat/completions",
      openai_input: { messages: [{ role: "user", content: "a b c d" }], stream: true },
    })) as AsyncGenerator<string>;
    const events: string[] = [];
    const failure = await (async () => {
      for await (const event of stream) events.push(event);
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(failure).toMatchObject({ code: "SERVER_EXITED" });
    expect((failure as Error).message).toBe(
      "Model server 'fixture-llm' exited with code 3; its last lines are in the worker's log",
    );
  });

  it("stopping a stream (cancel) closes the upstream request: the server sees the disconnect", async () => {
    const marker = join(mkdtempSync(join(tmpdir(), "flash-ms-")), "disconnected");
    const { model, proc } = fixture({ FIXTURE_TOKEN_DELAY: "0.5", FIXTURE_MARKER: marker });
    expect((await waitUntilHealthy(proc, `${model.url}/health`, 30_000)).ok).toBe(true);
    const stream = (await openaiPassthrough(model, {
      openai_route: "/v1/chat/completions",
      openai_input: { messages: [{ role: "user", content: "a b c d e f g h" }], stream: true },
    })) as AsyncGenerator<string>;
    expect((await stream.next()).done).toBe(false);
    await stream.return(undefined);
    await eventually(() => existsSync(marker), "the server's disconnect marker", 20_000);
    await eventually(() => proc.lastLines().includes("client disconnected"), "its disconnect line", 20_000);
  });

  it("the job's signal (cancel, the execution timeout) ends a stream mid-way with its reason: the server sees the disconnect", async () => {
    const marker = join(mkdtempSync(join(tmpdir(), "flash-ms-")), "disconnected");
    const { model, proc, lines } = fixture({ FIXTURE_TOKEN_DELAY: "0.5", FIXTURE_MARKER: marker });
    expect((await waitUntilHealthy(proc, `${model.url}/health`, 30_000)).ok).toBe(true);
    const job = new AbortController();
    const reason = new Error("Job was cancelled");
    const events: string[] = [];
    const failure = await runInJobScope({ id: "job-1", input: {} }, job.signal, logger(lines), async () => {
      const stream = (await openaiPassthrough(model, {
        openai_route: "/v1/chat/completions",
        openai_input: { messages: [{ role: "user", content: "a b c d e f g h" }], stream: true },
      })) as AsyncGenerator<string>;
      for await (const event of stream) {
        events.push(event);
        job.abort(reason);
      }
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(events).toHaveLength(1);
    expect(failure).toBe(reason);
    await eventually(() => existsSync(marker), "the server's disconnect marker", 20_000);
  });
});
