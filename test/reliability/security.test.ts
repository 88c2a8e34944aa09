// Security of the surfaces: API keys never reach a log line, and the local platform does not listen on
// another interface with a key nobody chose.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { startPlatform } from "../../src/platform/index.js";
import { flash, flashRun } from "../process.js";

const KEY = "sk-SECRET-do-not-log-7f3a9c";

describe("API keys are never logged", () => {
  it("platform and worker logs at DEBUG carry no trace of the key, through jobs, errors and bad auth", async () => {
    const lines: string[] = [];
    const platform = await startPlatform({
      apiKey: KEY,
      logger: createLogger({ level: "TRACE", json: false, destination: { write: (l) => lines.push(l) } }),
      endpoints: [{ id: "sec" }],
    });
    const worker = flash(["start", "examples/echo/handler.ts"], {
      ...platform.workerEnv("sec", "w-sec"),
      LOG_LEVEL: "DEBUG",
      RUNPOD_PING_INTERVAL: "200",
    });
    try {
      const call = (path: string, body: unknown, key = KEY) =>
        fetch(`${platform.url}/v2/sec${path}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        }).then((r) => r.json() as Promise<Record<string, unknown>>);
      expect(await call("/runsync", { input: { a: 1 } })).toMatchObject({ status: "COMPLETED" });
      expect(await call("/runsync", { input: { mock_error: `boom ${KEY.slice(0, 3)}` } })).toMatchObject({
        status: "FAILED",
      });
      expect(await call("/run", { input: {} }, `${KEY}-wrong`)).toHaveProperty("error");
      await worker.waitForLine(/Ping answered 200/);
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exited;
      await platform.close();
    }
    const everything = [...lines, ...worker.stdout, ...worker.stderr].join("\n");
    expect(lines.length).toBeGreaterThan(2);
    expect(worker.stdout.length).toBeGreaterThan(5);
    expect(everything).not.toContain(KEY);
  });
});

describe("the local platform's address", () => {
  it("binds 127.0.0.1 by default", async () => {
    const platform = await startPlatform();
    try {
      expect(platform.host).toBe("127.0.0.1");
    } finally {
      await platform.close();
    }
  });

  it("refuses another interface without a key someone chose", async () => {
    await expect(startPlatform({ host: "0.0.0.0" })).rejects.toThrow(
      "Refusing to serve on 0.0.0.0 without an API key you chose",
    );
    const refused = await flashRun(["serve", "--host", "0.0.0.0", "--port", "0"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("Refusing to serve on 0.0.0.0 without an API key you chose");
    const chosen = await startPlatform({ host: "0.0.0.0", apiKey: KEY });
    await chosen.close();
  });
});
