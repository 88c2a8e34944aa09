// A load-balanced endpoint in front of a real model server (the FastAPI fixture), served in-process on loopback:
// /ping 204 until the server's health answers 200, undeclared routes proxied (any method, bodies both ways,
// SSE as it comes) so the `openai` client works against it, declared TS routes win, a client that goes away
// aborts the upstream request, and the server exiting ends the endpoint with exit code 1.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { Endpoint } from "../../src/app/endpoint.js";
import { server } from "../../src/app/model-server/declare.js";
import { createLogger } from "../../src/log/index.js";
import { readWorkerConfig } from "../../src/runtime/config/options.js";
import { serveEndpoint } from "../../src/runtime/lb/serve.js";
import { eventually } from "../platform/helpers.js";
import { type Flash, flash, flashRun, freePort, ROOT } from "../process.js";

const FIXTURE = join(ROOT, "test/fixtures/model-server/openai_server.py");
let nextPort = 18_800 + (process.pid % 50) * 2;

interface Running {
  url: string;
  lines: string[];
  exitCode: Promise<number>;
  stop(): void;
}

async function serve(
  env: Record<string, string>,
  declare?: (api: Endpoint) => void,
  workerEnv: Record<string, string> = {},
  executionTimeoutMs = 0,
): Promise<Running> {
  const port = nextPort++;
  const model = server({
    command: "/usr/bin/python3",
    args: [FIXTURE, String(port)],
    env,
    port,
    name: "fixture-llm",
  });
  const api = new Endpoint({ name: "llm-proxy", server: model, executionTimeoutMs });
  declare?.(api);
  const lines: string[] = [];
  const log = createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } });
  const { config } = readWorkerConfig(
    ["--port", "0", "--host", "127.0.0.1", "--grace-period", "5"],
    workerEnv,
  );
  let stop: (reason: string) => void = () => {};
  const stopped = new Promise<string>((resolve) => {
    stop = resolve;
  });
  const exitCode = serveEndpoint(api, config, log, { stop: stopped });
  const listening = await eventually(
    () => lines.map((l) => /listening on (http:\/\/\S+)/.exec(l)?.[1]).find(Boolean),
    "the listening line",
  );
  return { url: listening, lines, exitCode, stop: () => stop("test over") };
}

describe("a load-balanced endpoint wrapping a model server", () => {
  const folder = mkdtempSync(join(tmpdir(), "flash-ms-lb-"));
  const readyFile = join(folder, "ready");
  const marker = join(folder, "disconnected");
  let lb: Running;
  beforeAll(async () => {
    lb = await serve(
      {
        FIXTURE_READY_FILE: readyFile,
        FIXTURE_MARKER: marker,
        FIXTURE_TOKEN_DELAY: "0.1",
        FIXTURE_LOAD_SECONDS: "0",
      },
      (api) => api.get("/v1/models", () => ({ object: "list", data: [{ id: "declared-in-ts" }] })),
    );
  }, 60_000);
  afterAll(async () => {
    lb?.stop();
    expect(await lb?.exitCode).toBe(0);
    await eventually(
      () => lb.lines.some((l) => l.includes("Stopping model server 'fixture-llm'.")),
      "the stop",
    );
  }, 60_000);

  it("/ping answers 204 and proxied requests 503 until the server's health answers 200, then /ping 200", async () => {
    // The server runs (its output is relayed) but reports loading.
    await eventually(
      () => lb.lines.some((l) => l.includes("| fixture-llm | fixture: loading")),
      "the server's output",
    );
    expect((await fetch(`${lb.url}/ping`)).status).toBe(204);
    const early = await fetch(`${lb.url}/echo`, { method: "POST", body: "x" });
    expect(early.status).toBe(503);
    expect(early.headers.get("retry-after")).toBe("1");
    expect(await early.json()).toEqual({
      error: "Endpoint 'llm-proxy' is waiting for its model server 'fixture-llm'",
    });
    writeFileSync(readyFile, "");
    await eventually(async () => (await fetch(`${lb.url}/ping`)).status === 200, "/ping 200", 30_000);
  });

  it("the openai client gets plain and streamed chat completions through the proxy", async () => {
    const client = new OpenAI({ apiKey: "unused", baseURL: `${lb.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "through the proxy" }],
    });
    expect(completion.choices[0]?.message.content).toBe("echo: through the proxy");
    const stream = await client.chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "token by token" }],
      stream: true,
    });
    const deltas: string[] = [];
    for await (const chunk of stream)
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
    expect(deltas).toEqual(["echo:", " token", " by", " token"]);
  });

  it("a route declared in TS wins over the server's", async () => {
    const answer = await fetch(`${lb.url}/v1/models`);
    expect(await answer.json()).toEqual({ object: "list", data: [{ id: "declared-in-ts" }] });
  });

  it("any method, the query and a large body go through both ways unchanged", async () => {
    const body = Buffer.alloc(3 * 1024 * 1024, "ab");
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      const answer = await fetch(`${lb.url}/echo?a=1&b=two`, {
        method,
        body,
        headers: { "content-type": "application/octet-stream" },
      });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-method")).toBe(method);
      expect(answer.headers.get("x-query")).toBe("a=1&b=two");
      expect(Buffer.from(await answer.arrayBuffer()).equals(body)).toBe(true);
    }
    // A path the server does not have: its own 404, not the endpoint's.
    const missing = await fetch(`${lb.url}/nowhere`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: "Not Found" });
  });

  it("a client that goes away mid-stream aborts the upstream request: the server sees the disconnect", async () => {
    const controller = new AbortController();
    const answer = await fetch(`${lb.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        messages: [{ role: "user", content: "a b c d e f g h i j k l" }],
        stream: true,
      }),
      signal: controller.signal,
    });
    expect(answer.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = answer.body!.getReader();
    // The first event arrives while the server is still generating: the proxy does not buffer the answer.
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^data: /);
    controller.abort();
    await eventually(() => existsSync(marker), "the server's disconnect", 20_000);
  });
});

describe("a load-balanced endpoint whose model server dies", () => {
  it("ends with exit code 1, naming the exit; the server's last lines stay in the log, once", async () => {
    const lb = await serve({ FIXTURE_MODE: "crash-mid-stream", FIXTURE_LOAD_SECONDS: "0" });
    await eventually(async () => (await fetch(`${lb.url}/ping`)).status === 200, "/ping 200", 30_000);
    const answer = await fetch(`${lb.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "a b c d" }], stream: true }),
    });
    await answer.text().catch(() => "");
    expect(await lb.exitCode).toBe(1);
    expect(lb.lines.join("\n")).toContain(
      "Model server 'fixture-llm' exited with code 3; its last lines are in the worker's log",
    );
    expect(lb.lines.filter((l) => l.includes("fixture: crashing mid-stream"))).toHaveLength(1);
  }, 60_000);

  // fixture-crash exits 3; fixture-oom is SIGKILLed, as the OOM killer ends a server (its shell leader says 137).
  it.each([
    ["fixture-crash", "exited with code 3"],
    ["fixture-oom", "exited with code 137 (signal SIGKILL)"],
  ])(
    "a request the server's exit cut off (%s) gets 502 naming the exit, not its log lines (they can hold prompts)",
    async (model, exit) => {
      const lb = await serve({ FIXTURE_LOAD_SECONDS: "0" });
      await eventually(async () => (await fetch(`${lb.url}/ping`)).status === 200, "/ping 200", 30_000);
      const secret = "sk-live-prompt-4242";
      const answer = await fetch(`${lb.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: secret }] }),
      });
      expect(answer.status).toBe(502);
      const body = await answer.text();
      expect(JSON.parse(body)).toEqual({
        error: `Model server 'fixture-llm' ${exit} while serving this request; its last lines are in the worker's log`,
      });
      expect(body).not.toContain(secret);
      expect(await lb.exitCode).toBe(1);
      // The line stays in the worker's log, written once, as the server printed it.
      expect(lb.lines.filter((l) => l.includes(secret))).toHaveLength(1);
      expect(lb.lines.find((l) => l.includes(secret))).toContain(
        `| fixture-llm | fixture: crashing on prompt ${secret}`,
      );
    },
    60_000,
  );

  it("a stop while the server is still loading ends cleanly: exit code 0, the server stopped", async () => {
    const lb = await serve({ FIXTURE_MODE: "never-healthy" });
    expect((await fetch(`${lb.url}/ping`)).status).toBe(204);
    lb.stop();
    expect(await lb.exitCode).toBe(0);
    expect(lb.lines.some((l) => l.includes("Stopping model server 'fixture-llm'."))).toBe(true);
  }, 60_000);

  it("a server never healthy within RUNPOD_INIT_TIMEOUT fails the start: exit code 1 with the reason", async () => {
    const lb = await serve({ FIXTURE_MODE: "never-healthy" }, undefined, { RUNPOD_INIT_TIMEOUT: "1.5" });
    expect(await lb.exitCode).toBe(1);
    const text = lb.lines.join("\n");
    expect(text).toContain("/health did not answer 200 within 1.5 s (last: it answered 503)");
    expect(text).toContain("Endpoint llm-proxy failed to start; exiting.");
  }, 60_000);
});

describe("a load-balanced endpoint's execution timeout", () => {
  it("a proxied request the server has not begun to answer in time gets the timeout's 504; a quick one its answer", async () => {
    const lb = await serve({ FIXTURE_LOAD_SECONDS: "0" }, undefined, {}, 1000);
    try {
      await eventually(async () => (await fetch(`${lb.url}/ping`)).status === 200, "/ping 200", 30_000);
      const quick = await fetch(`${lb.url}/slow?seconds=0`);
      expect(await quick.json()).toEqual({ slept: 0 });
      // Past the timeout, and short enough that the server (which finishes its sleep first) stops soon after.
      const late = await fetch(`${lb.url}/slow?seconds=3`);
      expect(late.status).toBe(504);
      expect(await late.json()).toEqual({ error: "Execution timeout on llm-proxy after 1.0s" });
    } finally {
      lb.stop();
      expect(await lb.exitCode).toBe(0);
    }
  }, 60_000);
});

describe("flash dev on a load-balanced endpoint wrapping a model server (npm run build first)", () => {
  let dev: Flash;
  let base = "";
  beforeAll(async () => {
    dev = flash(["dev", "test/fixtures/model-server/endpoint.ts", "--port", "0", "--api-key", "lb-key"], {
      FIXTURE_PORT: String(await freePort()),
      FIXTURE_LOAD_SECONDS: "0.3",
    });
    const line = await dev.waitForLine(/is load-balanced endpoint "llm-proxy" at (http:\/\/\S+)/, 60_000);
    base = /(http:\/\/127\.0\.0\.1:\d+\/lb\/llm-proxy)/.exec(line)![1]!;
  }, 90_000);
  afterAll(async () => {
    if (dev && dev.child.exitCode === null) {
      dev.child.kill("SIGINT");
      expect(await dev.exited).toBe(0);
    }
  }, 90_000);

  it("the openai client streams through the platform's /lb/<id>/v1 and the worker's proxy; TS routes still answer", async () => {
    const client = new OpenAI({ apiKey: "lb-key", baseURL: `${base}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "via flash dev" }],
      stream: true,
    });
    const deltas: string[] = [];
    for await (const chunk of stream)
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
    expect(deltas).toEqual(["echo:", " via", " flash", " dev"]);
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["fixture-model"]);
    const own = await fetch(`${base}/whoami`, { headers: { authorization: "Bearer lb-key" } });
    expect(await own.json()).toEqual({ endpoint: "llm-proxy", declaredInTs: true });
  }, 90_000);
});

describe("flash run on a load-balanced endpoint wrapping a model server", () => {
  it("starts the server, sends the test requests through it (TS routes first), stops it", async () => {
    const requests = {
      requests: [
        { method: "GET", path: "/whoami" },
        { method: "GET", path: "/v1/models" },
        {
          method: "POST",
          path: "/v1/chat/completions",
          body: { model: "fixture-model", messages: [{ role: "user", content: "through flash run" }] },
        },
      ],
    };
    const run = await flashRun(
      ["run", "test/fixtures/model-server/endpoint.ts", "--test-input", JSON.stringify(requests)],
      { FIXTURE_PORT: String(await freePort()), FIXTURE_LOAD_SECONDS: "0.3" },
    );
    expect(run.code, run.stderr).toBe(0);
    const answers = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(answers[0]).toEqual({ endpoint: "llm-proxy", declaredInTs: true });
    expect(answers[1]).toMatchObject({ data: [{ id: "fixture-model" }] });
    expect(answers[2]).toMatchObject({ choices: [{ message: { content: "echo: through flash run" } }] });
    expect(run.stderr).toContain("Model server 'fixture-llm' is ready.");
    expect(run.stderr).toContain("Stopping model server 'fixture-llm'.");
  }, 60_000);
});

describe("WebSockets through a load-balanced endpoint wrapping a model server", () => {
  const folder = mkdtempSync(join(tmpdir(), "flash-ms-ws-"));
  const readyFile = join(folder, "ready");
  let lb: Running;
  let stop: (reason: string) => void = () => {};
  beforeAll(async () => {
    const port = await freePort();
    const model = server({
      command: process.execPath,
      args: [join(ROOT, "test/fixtures/model-server/ws_server.mjs"), String(port)],
      env: { FIXTURE_READY_FILE: readyFile },
      port,
      name: "ws-server",
    });
    const api = new Endpoint({ name: "ws-proxy", server: model });
    // A socket route declared in TS wins over the server for its path.
    api.websocket("/ts/:room", async (socket) => {
      for await (const message of socket) socket.send(`ts: ${String(message)} (${socket.path})`);
    });
    const lines: string[] = [];
    const log = createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } });
    const { config } = readWorkerConfig(["--port", "0", "--host", "127.0.0.1", "--grace-period", "5"], {});
    const stopped = new Promise<string>((resolve) => {
      stop = resolve;
    });
    const exitCode = serveEndpoint(api, config, log, { stop: stopped });
    const url = await eventually(
      () => lines.map((l) => /listening on (http:\/\/\S+)/.exec(l)?.[1]).find(Boolean),
      "the listening line",
    );
    lb = { url, lines, exitCode, stop: () => stop("test over") };
  }, 60_000);
  afterAll(async () => {
    lb?.stop();
    expect(await lb?.exitCode).toBe(0);
  }, 60_000);

  /** Opens a WebSocket, sends one message, resolves with the first answer (or the refusal's status). */
  function exchange(path: string, message: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${lb.url.replace("http", "ws")}${path}`);
      ws.once("open", () => ws.send(message));
      ws.once("message", (data) => {
        resolve(String(data));
        ws.close();
      });
      ws.once("unexpected-response", (_req, res) => resolve(`refused ${res.statusCode}`));
      ws.once("error", reject);
    });
  }

  it("refuses upgrades with 503 until the server is healthy, then tunnels them to it; TS socket routes win", async () => {
    await eventually(() => lb.lines.some((l) => l.includes("| ws-server | ws fixture on")), "the server");
    expect(await exchange("/ws?client=1", "early")).toBe("refused 503");
    writeFileSync(readyFile, "");
    await eventually(async () => (await fetch(`${lb.url}/ping`)).status === 200, "/ping 200", 30_000);
    expect(await exchange("/ws?client=1", "progress?")).toBe("server: progress? (/ws?client=1)");
    expect(await exchange("/ts/blue", "hello")).toBe("ts: hello (/ts/blue)");
  }, 60_000);
});
