// `flash run`'s test input: test_input.json beside the handler wins over ./test_input.json, the file used is
// named, and a test input of the wrong kind is refused before the model server starts (its load can take minutes).
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { flashRun, ROOT } from "../process.js";

// Under the repository, so the handler's `import "flash-worker"` resolves to this package.
const project = mkdtempSync(join(ROOT, "test-artifacts-"));
const marker = join(project, "server-started");
// A model server that leaves a marker as it starts, then loads "forever": a run that starts it is caught.
const SERVER = `python3 -c "open('${marker}', 'w').write('started'); import time; time.sleep(60)"`;

function lbHandler(withServer: boolean): string {
  return [
    `import { Endpoint${withServer ? ", server" : ""} } from "flash-worker";`,
    withServer
      ? `const api = new Endpoint({ name: "lb-input", server: server({ command: ${JSON.stringify(SERVER)}, port: 0, env: { PORT: "{port}" }, name: "slow", startTimeout: 5 }) });`
      : 'const api = new Endpoint({ name: "lb-input" });',
    'api.post("/echo", (body) => ({ echoed: body }));',
    "export default api;",
    "",
  ].join("\n");
}

describe("flash run: which test input, checked before the model server starts", () => {
  afterAll(() => rmSync(project, { recursive: true, force: true }));

  it("a queue job for a load-balanced endpoint is refused, naming the file, and the server never starts", async () => {
    const dir = join(project, "wrong-kind");
    mkdirSync(join(dir, "lb"), { recursive: true });
    writeFileSync(join(dir, "lb/handler.ts"), lbHandler(true));
    writeFileSync(join(dir, "test_input.json"), '{"input": {"prompt": "hi"}}');
    const { code, stderr } = await flashRun(["run", "lb/handler.ts"], {}, dir);
    expect(code).toBe(1);
    expect(stderr).toContain(
      `Test input from ${join(dir, "test_input.json")}: this is a load-balanced endpoint: its test input describes HTTP requests`,
    );
    expect(existsSync(marker)).toBe(false);
    expect(stderr).not.toContain("Starting model server");
  }, 60_000);

  it("lb/test_input.json is used over ./test_input.json, and named", async () => {
    const dir = join(project, "beside-first");
    mkdirSync(join(dir, "lb"), { recursive: true });
    writeFileSync(join(dir, "lb/handler.ts"), lbHandler(false));
    writeFileSync(join(dir, "test_input.json"), '{"input": {"prompt": "for the queue endpoint"}}');
    writeFileSync(
      join(dir, "lb/test_input.json"),
      '{"requests": [{"method": "POST", "path": "/echo", "body": {"from": "lb"}}]}',
    );
    const { code, stdout, stderr } = await flashRun(["run", "lb/handler.ts"], {}, dir);
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('{"echoed":{"from":"lb"}}');
    expect(stderr).toContain(`Test input: ${join(dir, "lb/test_input.json")}`);
  }, 60_000);

  it("a queue handler's test_input.json beside it wins too, and load-balanced requests are refused for it", async () => {
    const dir = join(project, "queue");
    mkdirSync(join(dir, "queue"), { recursive: true });
    writeFileSync(
      join(dir, "queue/handler.ts"),
      'import { handler } from "flash-worker";\nexport default handler((job) => job.input);\n',
    );
    writeFileSync(join(dir, "test_input.json"), '{"requests": [{"path": "/echo"}]}');
    const wrong = await flashRun(["run", "queue/handler.ts"], {}, dir);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(
      `Test input from ${join(dir, "test_input.json")}: this is a queue endpoint: its test input is a job {"input": {...}}`,
    );
    writeFileSync(join(dir, "queue/test_input.json"), '{"input": {"from": "queue"}}');
    const { code, stdout, stderr } = await flashRun(["run", "queue/handler.ts"], {}, dir);
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('{"output":{"from":"queue"}}');
    expect(stderr).toContain(`Test input: ${join(dir, "queue/test_input.json")}`);
  }, 60_000);

  it("a test_input.json that is a folder, or over the platform's 20 MB /runsync limit, is refused in one line", async () => {
    const dir = join(project, "hostile");
    mkdirSync(join(dir, "test_input.json"), { recursive: true });
    writeFileSync(
      join(dir, "handler.ts"),
      'import { handler } from "flash-worker";\nexport default handler((job) => job.input);\n',
    );
    const folder = await flashRun(["run", "handler.ts"], {}, dir);
    expect(folder.code).toBe(1);
    expect(folder.stderr).toContain(`Test input ${join(dir, "test_input.json")} is not a file`);
    expect(folder.stderr).not.toContain("EISDIR");

    rmSync(join(dir, "test_input.json"), { recursive: true });
    writeFileSync(join(dir, "test_input.json"), `{"input": "${"x".repeat(21 * 1024 * 1024)}"}`);
    const big = await flashRun(["run", "handler.ts"], {}, dir);
    expect(big.code).toBe(1);
    expect(big.stderr).toContain(
      `Test input from ${join(dir, "test_input.json")} is 21.0 MB; a job's input is at most 20.0 MB (the platform's /runsync limit)`,
    );
  }, 60_000);
});
