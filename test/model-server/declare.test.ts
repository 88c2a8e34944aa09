// server()'s options and what declaring one does to handler() and Endpoint: defaults, refusals, concurrency,
// the passthrough in front of the app's function, and an Endpoint whose only content is a server.
import { afterEach, describe, expect, it } from "vitest";
import { declarationOf } from "../../src/app/endpoint.js";
import { serverOf } from "../../src/app/model-server/handler.js";
import { registry } from "../../src/app/registry.js";
import { Endpoint, handler, type ServerOptions, server } from "../../src/index.js";
import { executeJob } from "../../src/job/execute.js";
import { createLogger } from "../../src/log/index.js";

const base: ServerOptions = { command: "vllm serve Qwen/Qwen3-0.6B", port: 8000 };

afterEach(() => {
  registry().app = undefined;
});

describe("server()", () => {
  it("fills in the defaults", () => {
    expect(server(base).settings).toEqual({
      command: "vllm serve Qwen/Qwen3-0.6B",
      args: undefined,
      env: {},
      port: 8000,
      health: "/health",
      startTimeoutMs: 420_000,
      name: "server",
      openai: true,
    });
    expect(server(base).url).toBe("http://127.0.0.1:8000");
    expect(server({ ...base, startTimeout: 1.5, name: "llama", openai: false }).settings).toMatchObject({
      startTimeoutMs: 1500,
      name: "llama",
      openai: false,
    });
  });

  it.each([
    [
      { ...base, command: " " },
      'server(): command must be a non-empty string, e.g. "vllm serve Qwen/Qwen3-0.6B", got  ',
    ],
    [
      { ...base, port: 0 },
      'server(): port: 0 picks a free port when the worker starts; put {port} in command, args or env to tell the server which, e.g. "vllm serve Qwen/Qwen3-0.6B --port {port}"',
    ],
    [
      { ...base, port: 8000.5 },
      "server(): port must be a whole number from 1 to 65535, or 0 for a free one per worker, got 8000.5",
    ],
    [{ ...base, health: "health" }, "server(): health must be a path starting with /, got health"],
    [{ ...base, startTimeout: 0 }, "server(): startTimeout must be a number of seconds above 0, got 0"],
    [{ ...base, args: ["ok", 3] }, "server(): args must be a list of strings"],
    [{ ...base, env: { A: 1 } }, "server(): env must be an object of strings"],
    [
      { ...base, name: "my server" },
      "server(): name must be letters, digits, '.', '_' or '-', got my server",
    ],
    [
      { ...base, healthPath: "/x" },
      "server(): unknown option(s): healthPath; expected command, args, env, port, health, startTimeout, name, openai",
    ],
  ])("refuses %j", (options, message) => {
    expect(() => server(options as unknown as ServerOptions)).toThrow(message);
  });

  it("port: 0 has no URL until started; the port it is started on fills {port} in command, args and env", () => {
    const shell = server({ command: "vllm serve m --port {port}", port: 0, name: "vllm" });
    expect(() => shell.url).toThrow(
      "Model server 'vllm' has no port yet: with port: 0 one is picked when the worker starts it",
    );
    expect(shell.listenOn(41_234)).toMatchObject({ command: "vllm serve m --port 41234", port: 41_234 });
    expect(shell.url).toBe("http://127.0.0.1:41234");
    const argv = server({ command: "python3", args: ["serve.py", "{port}"], env: { P: ":{port}" }, port: 0 });
    expect(argv.listenOn(5_000)).toMatchObject({ args: ["serve.py", "5000"], env: { P: ":5000" } });
    // A fixed port fills {port} too, so one command line serves both.
    expect(server({ ...base, command: "s --port {port}" }).listenOn(8000).command).toBe("s --port 8000");
  });
});

describe("a server given to handler() and Endpoint", () => {
  const log = createLogger({ level: "ERROR", json: false, destination: { write: () => {} } });
  const run = (fn: Parameters<typeof executeJob>[0], input: unknown) =>
    executeJob(
      fn,
      { id: "job-1", input },
      {
        worker: { workerId: "w", hostname: "h" },
        log,
        signal: new AbortController().signal,
        returnAggregateStream: false,
        refreshWorker: false,
      },
    );

  it("handler(): concurrency 16 and aggregated streams unless the app says otherwise; the server is attached", () => {
    const model = server(base);
    const plain = handler(() => "ok", { server: model });
    expect(plain).toMatchObject({ concurrency: 16, returnAggregateStream: true });
    expect(serverOf(plain)).toBe(model);
    expect(handler(() => "ok", { server: model, concurrency: 2 }).concurrency).toBe(2);
    expect(() => handler(() => "ok", { server: {} as never })).toThrow(
      "handler options: server must be made by server({...})",
    );
  });

  it("jobs without openai_route reach the app's function; with openai: false every job does", async () => {
    const model = server({ ...base, port: 1 });
    const definition = handler((job) => ({ got: job.input }), { server: model });
    expect(await run(definition.fn, { prompt: "hi" })).toMatchObject({
      result: { output: { got: { prompt: "hi" } } },
    });
    const own = handler((job) => ({ got: job.input }), { server: server({ ...base, openai: false }) });
    const input = { openai_route: "/v1/models" };
    expect(await run(own.fn, input)).toMatchObject({ result: { output: { got: input } } });
  });

  it("new Endpoint({ server }) alone is a load-balanced app; with .handler() a queue one with the passthrough", () => {
    const model = server(base);
    const lb = new Endpoint({ name: "llm", server: model });
    expect(declarationOf(lb).isLoadBalanced).toBe(true);
    expect(lb.server).toBe(model);
    expect(() => declarationOf(lb).assertRoutes()).not.toThrow();
    expect(declarationOf(lb).settings.maxConcurrency).toBe(16);
    expect(registry().app).toBe(lb);
    const queue = new Endpoint({ name: "llm-queue", server: model, maxConcurrency: 4 });
    const definition = queue.handler(() => "ok");
    expect(declarationOf(queue).isLoadBalanced).toBe(false);
    expect(definition).toMatchObject({ concurrency: 4, returnAggregateStream: true });
    expect(serverOf(definition)).toBe(model);
    expect(() => new Endpoint({ name: "x", server: "vllm" as never })).toThrow(
      "server must be made by server({...}), got string",
    );
  });
});
