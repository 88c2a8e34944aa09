// A Python program using cloudpickle calls functions of a TypeScript worker through the local platform
// (examples/remote-function), and gets the right values and types back.
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { flashRun, ROOT } from "../process.js";
import { findPython } from "../unit/payload/python.js";

const python = findPython();

describe("examples/remote-function", () => {
  it("flash run answers its test_input.json (add(5, 3) as cloudpickle)", async () => {
    const { code, stdout } = await flashRun(["run", "examples/remote-function/handler.ts"]);
    expect(code).toBe(0);
    expect(stdout).toContain('"success":true,"result":"gAVLCC4="');
  });

  if (python.path === null) {
    it("Python client: needs Debian's python3 with cloudpickle", () => {
      throw new Error(python.reason);
    });
    return;
  }
  const pythonPath = python.path;
  let platform: Platform;

  beforeAll(async () => {
    platform = await startPlatform({
      endpoints: [{ id: "remote", file: "examples/remote-function/handler.ts", workers: [1, 1] }],
    });
  });

  afterAll(async () => {
    await platform?.close();
  });

  // Asynchronous: the platform runs in this process and must keep serving while Python waits.
  const client = (...args: string[]) => runPython(["examples/remote-function/client.py", ...args]);
  const runPython = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        pythonPath,
        args,
        {
          cwd: ROOT,
          timeout: 120_000,
          env: {
            ...process.env,
            FLASH_URL: platform.url,
            FLASH_API_KEY: platform.apiKey,
            FLASH_ENDPOINT: "remote",
          },
        },
        (err, stdout, stderr) => resolve({ status: err ? 1 : 0, stdout, stderr }),
      );
    });

  it("the Python client's calls come back with the right values and types", async () => {
    const run = await client("add", "[2, 3]");
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("5\necho round trip: True\n");
  });

  it("integers beyond 64 bits", async () => {
    const run = await client("add", `[${2n ** 80n}, 1]`);
    expect(run.stdout.split("\n")[0]).toBe(String(2n ** 80n + 1n));
  });

  it("declared float returns and records come back as Python floats", async () => {
    expect((await client("scale", "[[1, 2], 0.5]")).stdout.split("\n")[0]).toBe("[0.5, 1.0]");
    expect((await client("describe", "[[1, 3]]")).stdout.split("\n")[0]).toBe(
      "{'count': 2, 'sum': 4.0, 'mean': 2.0}",
    );
  });

  it("class mode: class_client.py keeps a Counter by instance_id and gets what it printed", async () => {
    const run = await runPython(["examples/remote-function/class_client.py"]);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("15 17 True 'increment by 5\\n'\n");
  });

  it("an unknown function is a clear remote failure", async () => {
    const run = await client("nope", "[]");
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain("Remote execution failed");
    expect(run.stderr).toContain("nope");
  });
});
