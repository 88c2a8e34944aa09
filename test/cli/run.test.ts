// `flash run`: the one-shot local test through the real command, on the shipped examples.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { flashRun, freePort, ROOT } from "../process.js";

describe("flash run", () => {
  it("runs examples/echo with its test_input.json and exits 0", async () => {
    const { code, stdout, stderr } = await flashRun(["run", "examples/echo/handler.ts"]);
    expect(code).toBe(0);
    // stdout is the result body alone (it pipes to jq); the logs are on stderr.
    expect(stdout).toBe('{"output":{"name":"flash","message":"hello"}}');
    expect(stderr).toContain("| local_test | Started.");
    expect(stderr).toContain("Job local_test completed successfully.");
    expect(stderr).toContain("Local testing complete, exiting.");
  });

  it("runs a generator handler (runpod-python never iterates it locally) and shows every chunk", async () => {
    const { code, stdout } = await flashRun(["run", "examples/stream/handler.ts"]);
    expect(code).toBe(0);
    expect(stdout).toBe(
      '{"output":[{"token":"streams"},{"token":"come"},{"token":"one"},{"token":"chunk"},{"token":"at"},{"token":"a"},{"token":"time"}]}',
    );
  });

  it("--test-input and --test_input override the file; id and extra fields pass through", async () => {
    for (const flag of ["--test-input", "--test_input"]) {
      const { code, stdout, stderr } = await flashRun([
        "run",
        "examples/echo/handler.ts",
        flag,
        '{"id": "my-job", "input": {"mock_return": [1, 2]}}',
      ]);
      expect(code).toBe(0);
      expect(stderr).toContain("Job my-job completed successfully.");
      expect(stdout).toBe('{"output":[1,2]}');
    }
  });

  it("a handler error exits 1 with the error once, through the user's own frames", async () => {
    const { code, stdout, stderr } = await flashRun([
      "run",
      "examples/echo/handler.ts",
      "--test-input",
      '{"input": {"mock_error": "kaput"}}',
    ]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toMatch(
      /\| ERROR \| local \| Job local_test failed with error: Error: kaput\n {4}at .*examples\/echo\/handler\.ts:\d+:\d+/,
    );
    expect(stderr.match(/kaput/g)).toHaveLength(1);
    // No frame of the runtime, of Node or of the TypeScript loaders.
    expect(stderr).not.toMatch(/^\s+at .*(dist\/|node:|node_modules)/m);
  });

  it("no test input anywhere: a clear message and exit 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-run-"));
    writeFileSync(
      join(dir, "handler.mjs"),
      'export default { kind: "handler", fn: () => 1, concurrency: 1 };\n',
    );
    const { code, stderr } = await flashRun(["run", join(dir, "handler.mjs")], {}, dir);
    expect(code).toBe(1);
    expect(stderr).toContain("test_input.json not found, exiting.");
    // Run from the handler's folder, the two places looked in are one: named once.
    const looked = stderr.split("\n").find((line) => line.includes("Looked for"));
    expect(looked).toContain(`Looked for ${join(dir, "test_input.json")}; pass the job`);
  });

  it("a generator without returnAggregateStream: the body the platform gets ({output: []}), the chunks apart", async () => {
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    try {
      writeFileSync(
        join(dir, "handler.ts"),
        'import { handler } from "flash-worker";\nexport default handler(async function* () { yield "a"; yield "b"; });\n',
      );
      const args = ["run", "handler.ts", "--test-input", '{"input": {}}'];
      const { code, stdout, stderr } = await flashRun(args, {}, dir);
      expect(code).toBe(0);
      expect(stderr).toContain('Stream chunk: "a"');
      expect(stderr).toContain('Stream chunk: "b"');
      expect(stdout).toBe('{"output":[]}');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a throw while the handler file loads names the file and line", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-run-"));
    writeFileSync(
      join(dir, "handler.ts"),
      'const weights: unknown = null;\nconst model = JSON.parse("{not json");\nexport default { weights, model };\n',
    );
    const { code, stderr } = await flashRun(["run", "handler.ts"], {}, dir);
    expect(code).toBe(1);
    expect(stderr).toContain(`${join(dir, "handler.ts")} failed to load: SyntaxError:`);
    expect(stderr).toMatch(/handler\.ts:2:\d+/);
  });

  it("a syntax error names the file, line and column, without the TypeScript loader's frames", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-run-"));
    writeFileSync(join(dir, "handler.ts"), "export default { kind: 'handler', fn: () => { return {; } };\n");
    const { code, stdout, stderr } = await flashRun(["run", "handler.ts"], {}, dir);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain(`${join(dir, "handler.ts")} failed to load:`);
    expect(stderr).toMatch(/handler\.ts:1:\d+/);
    expect(stderr).not.toMatch(/^\s+at /m);
    rmSync(dir, { recursive: true, force: true });
  });

  it("stdout is the result body alone whatever LOG_LEVEL says and whatever the handler prints", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-run-"));
    writeFileSync(
      join(dir, "handler.mjs"),
      'export default { kind: "handler", concurrency: 1, fn: (job) => { console.log("loading", job.id); return { n: job.input.n }; } };\n',
    );
    writeFileSync(join(dir, "test_input.json"), '{"input": {"n": 5}}\n');
    for (const level of ["WARNING", "ERROR", "INFO"]) {
      const { code, stdout, stderr } = await flashRun(["run", "handler.mjs"], { LOG_LEVEL: level }, dir);
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toStrictEqual({ output: { n: 5 } });
      expect(stderr).toContain("loading local_test");
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("a handler whose promise can never settle: exit 1 with the reason, not 0 with no result", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-run-"));
    writeFileSync(
      join(dir, "handler.mjs"),
      'export default { kind: "handler", concurrency: 1, fn: () => new Promise(() => {}) };\n',
    );
    const { code, stdout, stderr } = await flashRun(
      ["run", "handler.mjs", "--test-input", '{"input": {}}'],
      {},
      dir,
    );
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain(
      "Job local_test never finished: the handler's promise never settled, and nothing is left that could settle it",
    );
    rmSync(dir, { recursive: true, force: true });
  });

  it("a handler kept waiting by a timer ends at --timeout, else at its Endpoint's executionTimeoutMs", async () => {
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    try {
      writeFileSync(
        join(dir, "pending.mjs"),
        'export default { kind: "handler", concurrency: 1, fn: () => new Promise(() => { setInterval(() => {}, 1000); }) };\n',
      );
      const flagged = await flashRun(
        ["run", "pending.mjs", "--timeout", "1", "--test-input", '{"input": {}}'],
        {},
        dir,
      );
      expect(flagged.code).toBe(1);
      expect(flagged.stderr).toContain(
        "Job local_test timed out after 1 s: the handler had not finished. Pass --timeout <seconds> to wait longer",
      );
      writeFileSync(
        join(dir, "endpoint.mjs"),
        'import { Endpoint } from "flash-worker";\nconst api = new Endpoint({ name: "slow", executionTimeoutMs: 1500 });\nexport default api.handler(() => new Promise(() => { setInterval(() => {}, 1000); }));\n',
      );
      const declared = await flashRun(["run", "endpoint.mjs", "--test-input", '{"input": {}}'], {}, dir);
      expect(declared.code).toBe(1);
      expect(declared.stderr).toContain("Job local_test timed out after 1.5 s");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a stray error (an unawaited rejection) is logged at ERROR and ends the run with exit 1, no result", async () => {
    const { code, stdout, stderr } = await flashRun([
      "run",
      "test/fixtures/stray-rejection.ts",
      "--test-input",
      '{"input": {}}',
    ]);
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /\| ERROR \| .* \| Unhandled rejection \| Error: stray rejection from the handler\n\s+at /,
    );
    expect(stdout).toBe("");
  });

  it('input missing or null: exit 1 with runpod-python\'s message and the {"input": ...} shape', async () => {
    const { code, stderr } = await flashRun([
      "run",
      "examples/echo/handler.ts",
      "--test-input",
      '{"id": "x"}',
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain("Job has no input parameter. Unable to run.");
    // The handler's input given bare, as a user first writes it: the message shows where it goes.
    const dir = mkdtempSync(join(tmpdir(), "flash-run-"));
    writeFileSync(
      join(dir, "handler.mjs"),
      'export default { kind: "handler", fn: () => 1, concurrency: 1 };\n',
    );
    writeFileSync(join(dir, "test_input.json"), '{"n": 5}\n');
    const bare = await flashRun(["run", "handler.mjs"], {}, dir);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain(
      `Job has no input parameter. Unable to run. The test input from ${join(dir, "test_input.json")} must put the handler's input under "input": {"input": {"n":5}}`,
    );
  });

  it("test input that is not JSON: exit 1 naming the source", async () => {
    const { code, stderr } = await flashRun(["run", "examples/echo/handler.ts", "--test-input", "{nope"]);
    expect(code).toBe(1);
    expect(stderr).toContain("Test input from --test_input is not valid JSON");
  });

  it("an invalid LOG_LEVEL is a clear startup error", async () => {
    const { code, stderr } = await flashRun(["run", "examples/echo/handler.ts"], { LOG_LEVEL: "LOUD" });
    expect(code).toBe(1);
    expect(stderr).toContain('Invalid log level "LOUD" in environment variable LOG_LEVEL');
  });

  it("a missing handler file and a file that registers nothing are clear errors", async () => {
    const missing = await flashRun(["run", "nope/handler.ts"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("Handler file not found: nope/handler.ts");
    const dir = mkdtempSync(join(tmpdir(), "flash-run-"));
    writeFileSync(join(dir, "empty.mjs"), "export const x = 1;\n");
    const empty = await flashRun(["run", join(dir, "empty.mjs")]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("registered no handler");
  });

  it("node handler.js with the package installed starts the runtime by itself", async () => {
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    try {
      writeFileSync(
        join(dir, "handler.mjs"),
        'import { handler } from "flash-worker";\nhandler((job) => ({ doubled: job.input.n * 2 }));\n',
      );
      writeFileSync(join(dir, "test_input.json"), '{"input": {"n": 21}}');
      const { spawnSync } = await import("node:child_process");
      const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" };
      const result = spawnSync(process.execPath, ["handler.mjs"], { cwd: dir, encoding: "utf8", env });
      expect(result.status).toBe(0);
      expect(result.stdout).toBe('{"output":{"doubled":42}}\n');
    } finally {
      const { rmSync } = await import("node:fs");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a program from node_modules (a test runner) that imports handler.mjs does not start the runtime", async () => {
    const { mkdirSync, rmSync } = await import("node:fs");
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    try {
      writeFileSync(
        join(dir, "handler.mjs"),
        'import { handler } from "flash-worker";\nexport default handler((job) => ({ doubled: job.input.n * 2 }));\n',
      );
      writeFileSync(join(dir, "test_input.json"), '{"input": {"n": 21}}');
      // What vitest's fork, jest or mocha is: a program whose main file is an installed package's.
      mkdirSync(join(dir, "node_modules", "runner"), { recursive: true });
      writeFileSync(
        join(dir, "node_modules", "runner", "run.mjs"),
        "const app = (await import(process.argv[2])).default;\nsetTimeout(() => console.log('imported ' + app.kind), 200);\n",
      );
      const { spawnSync } = await import("node:child_process");
      const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" };
      const runner = spawnSync(process.execPath, ["node_modules/runner/run.mjs", join(dir, "handler.mjs")], {
        cwd: dir,
        encoding: "utf8",
        env,
      });
      expect(runner.status, runner.stderr).toBe(0);
      expect(runner.stdout).toBe("imported handler\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("warns when the app imports another copy of flash-worker than the runtime running it", async () => {
    const { cpSync, mkdirSync, rmSync } = await import("node:fs");
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    try {
      const copy = join(dir, "node_modules", "flash-worker");
      mkdirSync(copy, { recursive: true });
      cpSync(join(ROOT, "dist"), join(copy, "dist"), { recursive: true });
      const pkg = JSON.parse((await import("node:fs")).readFileSync(join(ROOT, "package.json"), "utf8"));
      writeFileSync(join(copy, "package.json"), JSON.stringify({ ...pkg, version: "0.0.9" }));
      writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user-app", type: "module" }));
      writeFileSync(
        join(dir, "handler.mjs"),
        'import { handler } from "flash-worker";\nexport default handler(() => "copy");\n',
      );
      const { code, stdout, stderr } = await flashRun([
        "run",
        join(dir, "handler.mjs"),
        "--test-input",
        '{"input": 1}',
      ]);
      expect(code).toBe(0);
      expect(stdout).toBe('{"output":"copy"}');
      expect(stderr).toMatch(
        /warning: The app imports flash-worker 0\.0\.9, but the runtime running it is \d+\.\d+\.\d+/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an Endpoint declared with the app's own copy of flash-worker is served by the runtime's copy", async () => {
    const { cpSync, mkdirSync, rmSync } = await import("node:fs");
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    try {
      // The same version installed again: the image's runtime and the app's dependency, two module instances.
      const copy = join(dir, "node_modules", "flash-worker");
      mkdirSync(copy, { recursive: true });
      cpSync(join(ROOT, "dist"), join(copy, "dist"), { recursive: true });
      cpSync(join(ROOT, "package.json"), join(copy, "package.json"));
      writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user-app", type: "module" }));
      writeFileSync(
        join(dir, "app.mjs"),
        'import { Endpoint } from "flash-worker";\nconst api = new Endpoint({ name: "copy-api" });\napi.onStart(() => { globalThis.started = true; });\napi.get("/hi/:who", ({ who }) => ({ hi: who, started: globalThis.started === true }));\nexport default api;\n',
      );
      const { code, stdout, stderr } = await flashRun([
        "run",
        join(dir, "app.mjs"),
        "--test-input",
        '{"method": "GET", "path": "/hi/copy"}',
      ]);
      expect(code, stderr).toBe(0);
      expect(JSON.parse(stdout)).toEqual({ hi: "copy", started: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("node app.js that only declares an Endpoint starts nothing and ends; start(api) serves it", async () => {
    const { spawn, spawnSync } = await import("node:child_process");
    const { rmSync } = await import("node:fs");
    const port = await freePort();
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    const declare =
      'import { Endpoint, start } from "flash-worker";\nconst api = new Endpoint({ name: "auto" });\napi.get("/hi/:who", ({ who }) => ({ hi: who }));\n';
    writeFileSync(join(dir, "declared.mjs"), declare);
    writeFileSync(join(dir, "started.mjs"), `${declare}await start(api);\n`);
    const env = { PATH: process.env.PATH ?? "", PORT: String(port) };
    // A plain script: it ends as any script does, without a server on PORT.
    const declared = spawnSync(process.execPath, ["declared.mjs"], { cwd: dir, env, encoding: "utf8" });
    expect(declared.status).toBe(0);
    expect(declared.stdout).toBe("");
    const child = spawn(process.execPath, ["started.mjs"], { cwd: dir, env, stdio: "ignore" });
    try {
      let answer: unknown;
      for (let i = 0; i < 200 && answer === undefined; i++) {
        answer = await fetch(`http://127.0.0.1:${port}/hi/you`)
          .then((r) => (r.ok ? r.json() : undefined))
          .catch(() => undefined);
        if (answer === undefined) await new Promise((r) => setTimeout(r, 100));
      }
      expect(answer).toStrictEqual({ hi: "you" });
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
