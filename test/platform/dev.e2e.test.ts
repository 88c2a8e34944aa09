// End to end: `flash dev examples/echo/handler.ts` as a child process, real worker processes connected to it
// over the worker protocol, jobs sent over HTTP as a user would.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultWorkerCommand } from "../../src/platform/index.js";
import { chatCurlCommand } from "../../src/toolkit/dev/app.js";
import { type FlashProcess, ROOT, startFlash } from "./cli.js";
import { eventually, type JobJson } from "./helpers.js";

const E2E_TIMEOUT = 180_000;

describe("flash dev examples/echo/handler.ts", () => {
  let dev: FlashProcess;
  beforeAll(async () => {
    dev = await startFlash("dev", [
      "examples/echo/handler.ts",
      "--port",
      "0",
      "--api-key",
      "dev-key",
      "--workers",
      "1,3",
    ]);
  }, E2E_TIMEOUT);
  afterAll(async () => {
    expect(await dev?.stop()).toBe(0);
  }, E2E_TIMEOUT);

  it("prints a ready line with a curl call for the endpoint", () => {
    expect(dev.endpointUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v2\/echo$/);
    expect(dev.apiKey).toBe("dev-key");
    const ready = dev.lines.find((l) => l.includes("Ready. Try:"))!;
    expect(ready).toContain(`-d '{"input":{"name":"flash","message":"hello"}}'`);
  });

  it(
    "runs a job sent over HTTP and logs its Delay Time and Execution Time",
    async () => {
      const job = await dev.call("/runsync", { input: { name: "e2e" } });
      expect(job).toMatchObject({ status: "COMPLETED", output: { name: "e2e" } });
      const worker = job.workerId!;
      await dev.waitForLine(
        new RegExp(`\\| ${job.id} \\| Worker:${worker} \\| Delay Time: ${job.delayTime} ms$`),
        "the Delay Time line",
      );
      await dev.waitForLine(
        new RegExp(`\\| ${job.id} \\| Worker:${worker} \\| Execution Time: ${job.executionTime} ms$`),
        "the Execution Time line",
      );
      // The worker's own lines reach the platform log under its id.
      await dev.waitForLine(
        new RegExp(`\\| ${worker} \\| ${job.id} \\| Finished\\.`),
        "the worker's Finished line",
      );
    },
    E2E_TIMEOUT,
  );

  it(
    "scales up to max workers under load and back to min when idle",
    async () => {
      // Jobs that run until cancelled: three at once on three workers can only mean the pool scaled up.
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await dev.call("/run", { input: { mock_delay: 600, i } })).id);
      const running = await eventually(
        async () => {
          const jobs = await Promise.all(ids.map((id) => dev.call(`/status/${id}`)));
          const workers = new Set(jobs.filter((j) => j.status === "IN_PROGRESS").map((j) => j.workerId));
          return workers.size >= 3 ? jobs : undefined;
        },
        "three workers each running a job",
        150_000,
      );
      // The pool starts every worker it wants in one go; with five jobs still queued it wanted no fourth.
      expect(running.filter((j) => j.status === "IN_QUEUE")).toHaveLength(5);
      expect(dev.workerPids().size).toBe(3);
      for (const id of ids) await dev.call(`/cancel/${id}`, {});
      await eventually(
        async () => {
          const jobs = await Promise.all(ids.map((id) => dev.call(`/status/${id}`)));
          return jobs.every((j) => j.status === "CANCELLED") || undefined;
        },
        "all jobs to be cancelled",
        60_000,
      );
      // Idle workers above min are stopped after the idle timeout (5 s).
      await eventually(
        async () => {
          const health = (await dev.call("/health")) as unknown as { workers: Record<string, number> };
          const { idle = 0, running = 0, initializing = 0 } = health.workers;
          return idle + running + initializing === 1;
        },
        "the pool to shrink back to one worker",
        60_000,
      );
      expect(
        dev.lines.filter((l) => /\| idle for \d+ ms; stopping it$/.test(l)).length,
      ).toBeGreaterThanOrEqual(2);
    },
    E2E_TIMEOUT,
  );
});

describe("flash dev: stopping jobs reaches the handler", () => {
  let dev: FlashProcess;
  beforeAll(async () => {
    dev = await startFlash("dev", ["examples/echo/handler.ts", "--port", "0", "--workers", "1,1"]);
  }, E2E_TIMEOUT);
  afterAll(async () => {
    await dev?.stop();
  }, E2E_TIMEOUT);

  // With one worker of concurrency 1, a following job can only run once the stopped handler has returned;
  // the 10-minute sleep ends only through its signal.
  const nextJobRuns = async () => {
    expect(await dev.call("/runsync", { input: { after: true } })).toMatchObject({ status: "COMPLETED" });
  };

  it(
    "an execution timeout aborts the handler's signal",
    async () => {
      const { id } = await dev.call("/run", {
        input: { mock_delay: 600 },
        policy: { executionTimeout: 5_000 },
      });
      const job = await eventually(
        async () => {
          const status = await dev.call(`/status/${id}`);
          return status.status === "TIMED_OUT" ? status : undefined;
        },
        "the timeout",
        60_000,
      );
      await dev.waitForLine(
        new RegExp(`\\| ${job.workerId} \\| ${id} \\| Job stopped\\.`),
        "the worker's stop line",
      );
      await nextJobRuns();
    },
    E2E_TIMEOUT,
  );

  it(
    "a cancel aborts the handler's signal",
    async () => {
      const { id } = await dev.call("/run", { input: { mock_delay: 600 } });
      const running = await eventually(
        async () => {
          const status = await dev.call(`/status/${id}`);
          return status.status === "IN_PROGRESS" ? status : undefined;
        },
        "the job to start",
        60_000,
      );
      expect(await dev.call(`/cancel/${id}`, {})).toMatchObject({ id, status: "CANCELLED" });
      await dev.waitForLine(
        new RegExp(`\\| ${running.workerId} \\| ${id} \\| Job stopped\\.`),
        "the worker's stop line",
      );
      await nextJobRuns();
    },
    E2E_TIMEOUT,
  );

  it(
    "a killed worker's job is retried on a new worker",
    async () => {
      const { id } = await dev.call("/run", { input: { mock_delay: 600 } });
      const first = await eventually(
        async () => {
          const status = await dev.call(`/status/${id}`);
          return status.status === "IN_PROGRESS" ? status : undefined;
        },
        "the job to start",
        60_000,
      );
      const pid = dev.workerPids().get(first.workerId!);
      expect(pid).toBeDefined();
      process.kill(pid!, "SIGKILL");
      const second = await eventually(
        async () => {
          const status = await dev.call(`/status/${id}`);
          return status.status === "IN_PROGRESS" && status.workerId !== first.workerId ? status : undefined;
        },
        "the job to run again on another worker",
        90_000,
      );
      expect(second.retries).toBe(1);
      expect(await dev.call("/health")).toMatchObject({ jobs: { retried: 1 } });
      await dev.waitForLine(
        new RegExp(`Worker:${first.workerId} \\| exited with signal SIGKILL`),
        "the exit line",
      );
      expect(await dev.call(`/cancel/${id}`, {})).toMatchObject({ status: "CANCELLED" });
    },
    E2E_TIMEOUT,
  );
});

describe("flash dev restarts the workers of an endpoint whose code changed, and no others", () => {
  const dir = join(ROOT, "test-artifacts", "dev-watch");
  const file = join(dir, "handler.ts");
  const other = join(dir, "other.ts");
  const lib = (version: string) =>
    writeFileSync(join(dir, "lib.ts"), `export const version = "${version}";\n`);
  let dev: FlashProcess;
  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      file,
      `import { handler } from "flash-worker";\nimport { version } from "./lib.js";\nexport default handler(async () => ({ version }));\n`,
    );
    lib("v1");
    writeFileSync(
      other,
      `import { handler } from "flash-worker";\nexport default handler(async () => ({ other: true }));\n`,
    );
    // Imported by neither endpoint: a script of the user's that calls them.
    writeFileSync(join(dir, "client.ts"), `export const url = "http://127.0.0.1:8000";\n`);
    dev = await startFlash("dev", [file, other, "--port", "0", "--workers", "1,1"]);
  }, E2E_TIMEOUT);
  afterAll(async () => {
    await dev?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, E2E_TIMEOUT);

  /** The "starting (pid N): … start <file>" lines of the workers of one file. */
  const starts = (of: string) => dev.lines.filter((l) => /\| starting \(pid \d+\)/.test(l) && l.endsWith(of));

  it(
    "a change to a file no endpoint imports restarts nothing",
    async () => {
      expect(await dev.call("/runsync", { input: {} })).toMatchObject({ output: { version: "v1" } });
      const before = dev.lines.filter((l) => /\| starting \(pid/.test(l)).length;
      writeFileSync(join(dir, "client.ts"), `export const url = "http://127.0.0.1:8001";\n`);
      await dev.waitForLine(
        /client\.ts changed; no endpoint imports it, nothing to restart$/,
        "the change to be seen",
      );
      expect(dev.lines.filter((l) => /\| starting \(pid/.test(l))).toHaveLength(before);
      expect(dev.lines.some((l) => /changed; restarting/.test(l))).toBe(false);
    },
    E2E_TIMEOUT,
  );

  it(
    "a change to a module the handler imports restarts that endpoint only, in one line, and it serves the new code",
    async () => {
      expect(starts(file)).toHaveLength(1);
      expect(starts(other)).toHaveLength(1);
      lib("v2");
      await dev.waitForLine(/lib\.ts changed; restarting dev-watch$/, "the restart");
      await eventually(
        async () =>
          ((await dev.call("/runsync", { input: {} })).output as { version?: string }).version === "v2",
        "the new code to answer",
        90_000,
      );
      expect(starts(file)).toHaveLength(2);
      // The other endpoint's worker was left alone; the burst of writes made one restart line.
      expect(starts(other)).toHaveLength(1);
      expect(dev.lines.filter((l) => /changed; restarting/.test(l))).toHaveLength(1);
    },
    E2E_TIMEOUT,
  );
});

describe("flash dev restarts an endpoint when its model server's file or a --watch file changes (issue 44, item 9)", () => {
  const dir = join(ROOT, "test-artifacts", "dev-server-watch");
  const rel = "test-artifacts/dev-server-watch";
  /** A stdlib Python server: /health for the runtime, /version answering the VERSION this file holds. */
  const serverPy = (version: string) =>
    [
      "import sys",
      "from http.server import BaseHTTPRequestHandler, HTTPServer",
      `VERSION = "${version}"`,
      "class H(BaseHTTPRequestHandler):",
      "    def do_GET(self):",
      "        body = (VERSION if self.path == '/version' else 'ok').encode()",
      "        self.send_response(200)",
      "        self.send_header('content-length', str(len(body)))",
      "        self.end_headers()",
      "        self.wfile.write(body)",
      "    def log_message(self, *args):",
      "        pass",
      "HTTPServer(('127.0.0.1', int(sys.argv[sys.argv.index('--port') + 1])), H).serve_forever()",
      "",
    ].join("\n");
  let dev: FlashProcess;
  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "server.py"), serverPy("v1"));
    // Read when the worker starts, imported by nothing: only --watch makes its change restart the workers.
    writeFileSync(join(dir, "note.txt"), "n1\n");
    writeFileSync(
      join(dir, "handler.ts"),
      [
        'import { readFileSync } from "node:fs";',
        'import { handler, server } from "flash-worker";',
        'const note = readFileSync(new URL("./note.txt", import.meta.url), "utf8").trim();',
        `const model = server({ command: "python3 ${rel}/server.py --port {port}", port: 0, openai: false, name: "watched" });`,
        'export default handler(async () => ({ server: await (await model.fetch("/version")).text(), note }), { server: model });',
        "",
      ].join("\n"),
    );
    dev = await startFlash("dev", [
      join(dir, "handler.ts"),
      "--port",
      "0",
      "--workers",
      "1,1",
      "--watch",
      `${rel}/*.txt`,
    ]);
  }, E2E_TIMEOUT);
  afterAll(async () => {
    await dev?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, E2E_TIMEOUT);

  const answer = async () =>
    (await dev.call("/runsync", { input: {} })).output as { server?: string; note?: string };

  it(
    "an edit of server.py (named by the server's command) restarts the worker, and the new server answers",
    async () => {
      expect(await answer()).toEqual({ server: "v1", note: "n1" });
      writeFileSync(join(dir, "server.py"), serverPy("v2"));
      await dev.waitForLine(/server\.py changed; restarting dev-server-watch$/, "the restart");
      await eventually(
        async () => ((await answer()).server === "v2" ? true : undefined),
        "the new server",
        90_000,
      );
    },
    E2E_TIMEOUT,
  );

  it(
    "a file matching --watch restarts the worker, which reads it anew",
    async () => {
      writeFileSync(join(dir, "note.txt"), "n2\n");
      await dev.waitForLine(/note\.txt changed; restarting dev-server-watch$/, "the restart");
      await eventually(
        async () => ((await answer()).note === "n2" ? true : undefined),
        "the new note",
        90_000,
      );
      expect(await answer()).toEqual({ server: "v2", note: "n2" });
    },
    E2E_TIMEOUT,
  );
});

describe("flash serve", () => {
  let serve: FlashProcess;
  beforeAll(async () => {
    serve = await startFlash("serve", ["ext", "--port", "0", "--api-key", "serve-key"]);
  }, E2E_TIMEOUT);
  afterAll(async () => {
    expect(await serve?.stop()).toBe(0);
  }, E2E_TIMEOUT);

  it(
    "prints the worker environment; a worker started with it serves the endpoint",
    async () => {
      const env: Record<string, string> = {};
      for (const line of serve.lines) {
        const match = /^ {2}export (RUNPOD_\w+)='(.*)'$/.exec(line);
        if (match) env[match[1]!] = match[2]!;
      }
      expect(env.RUNPOD_WEBHOOK_GET_JOB).toBe(`${serve.url}/v2/ext/job-take/$ID?gpu=local`);
      expect(env.RUNPOD_WEBHOOK_POST_OUTPUT).toBe(
        `${serve.url}/v2/ext/job-done/$RUNPOD_POD_ID/$ID?gpu=local`,
      );
      expect(env.RUNPOD_AI_API_KEY).toBe("serve-key");
      const [command, ...args] = defaultWorkerCommand(join(ROOT, "examples/echo/handler.ts"));
      const worker = spawn(command!, args, {
        cwd: ROOT,
        env: { ...process.env, ...env, RUNPOD_POD_ID: "external-1" },
        stdio: "ignore",
      });
      try {
        const job: JobJson = await serve.call("/runsync", { input: { from: "outside" } });
        expect(job).toMatchObject({
          status: "COMPLETED",
          output: { from: "outside" },
          workerId: "external-1",
        });
      } finally {
        const exited = new Promise((resolve) => worker.once("exit", resolve));
        worker.kill("SIGTERM");
        await exited;
      }
    },
    E2E_TIMEOUT,
  );
});

describe("flash dev examples/openai-compatible/handler.ts (a chat-completion worker)", () => {
  let dev: FlashProcess;
  beforeAll(async () => {
    dev = await startFlash("dev", [
      "examples/openai-compatible/handler.ts",
      "--port",
      "0",
      "--workers",
      "1,1",
    ]);
  }, E2E_TIMEOUT);
  afterAll(async () => {
    expect(await dev?.stop()).toBe(0);
  }, E2E_TIMEOUT);

  it(
    "prints the OpenAI base URL and a curl of /chat/completions that works as printed",
    async () => {
      const base = `${dev.endpointUrl}/openai/v1`;
      expect(dev.lines.find((l) => l.startsWith("flash dev: "))).toContain(`(OpenAI base URL: ${base})`);
      const ready = dev.lines.find((l) => l.includes("Ready. Try:"))!;
      const curl = ready.slice(ready.indexOf("curl "));
      expect(curl).toContain(`${base}/chat/completions`);
      const run = spawnSync("sh", ["-c", curl], { encoding: "utf8", timeout: 120_000 });
      expect(run.status).toBe(0);
      const answer = JSON.parse(run.stdout) as {
        object: string;
        choices: { message: { content: string } }[];
      };
      expect(answer.object).toBe("chat.completion");
      expect(answer.choices[0]?.message.content).toContain("hello from the local test");
      // flash dev tells the console it is a chat endpoint, so the playground shows its chat form.
      const endpoints = (await (
        await fetch(`${dev.url}/console/api/endpoints`, {
          headers: { authorization: `Bearer ${dev.apiKey}` },
        })
      ).json()) as { id: string; openaiCompatible?: boolean }[];
      expect(endpoints.map((e) => [e.id, e.openaiCompatible])).toEqual([
        [dev.endpointUrl.split("/").at(-1), true],
      ]);
    },
    E2E_TIMEOUT,
  );

  it("without a test_input.json the curl sends one user message", () => {
    const dir = join(ROOT, "test-artifacts", "chat-curl");
    mkdirSync(dir, { recursive: true });
    rmSync(join(dir, "test_input.json"), { force: true });
    const curl = chatCurlCommand("http://127.0.0.1:1", "llm", "k", join(dir, "handler.ts"));
    expect(curl).toBe(
      `curl -s -X POST http://127.0.0.1:1/v2/llm/openai/v1/chat/completions -H 'Authorization: Bearer k' -H 'Content-Type: application/json' -d '{"messages":[{"role":"user","content":"Hello!"}]}'`,
    );
    writeFileSync(join(dir, "test_input.json"), JSON.stringify({ input: { prompt: "not chat" } }));
    expect(chatCurlCommand("http://127.0.0.1:1", "llm", "k", join(dir, "handler.ts"))).toBe(curl);
  });
});
