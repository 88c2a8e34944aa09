import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RecordingPlatform } from "../conformance/recording-platform.js";
import { modulesResolved } from "../modules.js";
import { flash, flashRun, freePort } from "../process.js";

interface Record {
  level: string;
  message: string;
  time: string;
  [key: string]: unknown;
}

/** Each non-empty line parsed; a line that is not a JSON object with level, time and message fails the test. */
function records(lines: readonly string[]): Record[] {
  const out: Record[] = [];
  for (const line of lines) {
    if (line === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new Error(`not a JSON line: ${line}`);
    }
    expect(value, line).toMatchObject({
      level: expect.stringMatching(/^(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)$/),
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      message: expect.any(String),
    });
    out.push(value as Record);
  }
  return out;
}

describe("LOG_FORMAT=json", () => {
  it("flash run: every log line is a JSON record; stdout stays the result body", async () => {
    const ok = await flashRun(["run", "test/fixtures/json-logs.ts", "--test-input", '{"input":{}}'], {
      LOG_FORMAT: "json",
    });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toStrictEqual({ output: { answered: true } });
    const logged = records(ok.stderr.split("\n"));
    expect(logged[0]?.message).toMatch(/^--- Starting Serverless Worker \| {2}Version /);
    expect(logged).toContainEqual(
      expect.objectContaining({ requestId: "local_test", message: "from the handler", step: 1 }),
    );
    expect(logged).toContainEqual(
      expect.objectContaining({
        requestId: "local_test",
        via: "pino",
        message: "from the handler's pino logger",
      }),
    );
    expect(logged).toContainEqual(expect.objectContaining({ message: "Local testing complete, exiting." }));

    const failed = await flashRun(
      ["run", "test/fixtures/json-logs.ts", "--test-input", '{"input":{"fail":true}}'],
      {
        LOG_FORMAT: "json",
      },
    );
    expect(failed.code).toBe(1);
    const errors = records(failed.stderr.split("\n")).filter((r) => r.level === "ERROR");
    // A stack is one record, its frames inside the message; a stray error ends the run with exit 1 (design.md §4.10).
    const strayRun = await flashRun(
      ["run", "test/fixtures/json-logs.ts", "--test-input", '{"input":{"stray":true}}'],
      { LOG_FORMAT: "json" },
    );
    expect(strayRun.code).toBe(1);
    const stray = records(strayRun.stderr.split("\n")).find((r) =>
      r.message.startsWith("Uncaught exception | Error: stray throw from a timer"),
    );
    expect(stray?.message).toMatch(/\n {4}at .*json-logs\.ts:\d+:\d+/);
    const kaput = errors.find((r) => r.message.includes("failed with error: Error: kaput"));
    expect(kaput?.message).toMatch(/\n {4}at .*json-logs\.ts:\d+:\d+/);
  });

  it("a bad LOG_FORMAT is refused with the variable named", async () => {
    const run = await flashRun(["run", "test/fixtures/json-logs.ts"], { LOG_FORMAT: "yaml" });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'Invalid log format "yaml" in environment variable LOG_FORMAT: expected text or json',
    );
  });

  describe("queue worker against the recording platform", () => {
    let platform: RecordingPlatform;
    beforeEach(async () => {
      platform = await new RecordingPlatform().start();
    });
    afterEach(async () => {
      await platform.close();
    });

    it("every line of stdout and stderr is a JSON record, the heartbeat thread's too", async () => {
      const worker = flash(["start", "test/fixtures/json-logs.ts"], {
        ...platform.env(),
        LOG_FORMAT: "json",
        LOG_LEVEL: "DEBUG",
        RUNPOD_PING_INTERVAL: "100",
      });
      platform.push({ id: "good-1", input: {} }, { id: "bad-1", input: { fail: true } });
      await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 2);
      await platform.waitFor((rs) => rs.some((r) => r.route === "ping"));
      await worker.waitForLine(/"subject":"heartbeat".*"message":"Ping answered/);
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe(0);
      const logged = records([...worker.stdout, ...worker.stderr]);
      expect(logged[0]?.message).toMatch(/^--- Starting Serverless Worker/);
      for (const id of ["good-1", "bad-1"]) {
        expect(logged).toContainEqual(expect.objectContaining({ requestId: id, message: "Started." }));
        expect(logged).toContainEqual(expect.objectContaining({ requestId: id, via: "pino" }));
        expect(logged).toContainEqual(
          expect.objectContaining({ requestId: id, level: "INFO", message: "from console.log { step: 2 }" }),
        );
        expect(logged).toContainEqual(
          expect.objectContaining({ requestId: id, level: "ERROR", message: "from console.error" }),
        );
      }
      // runpod-python's error report (a JSON text over several lines) is one record, its traceback inside.
      const failure = logged.find(
        (r) =>
          r.requestId === "bad-1" && r.level === "ERROR" && r.message.includes('"error_message": "kaput"'),
      );
      expect(failure?.message).toMatch(/"error_traceback": "Error: kaput\\n {4}at /);
    });
  });

  it("load-balanced worker: requests, a route's thrown error with its stack, shutdown: all JSON", async () => {
    const port = await freePort();
    const worker = flash(["start", "test/fixtures/lb-json-logs.ts"], {
      PORT: String(port),
      FLASH_LB_HOST: "127.0.0.1",
      LOG_FORMAT: "json",
      LOG_LEVEL: "DEBUG",
    });
    await worker.waitForLine(/"message":"Endpoint json-logs-api ready/);
    expect(await (await fetch(`http://127.0.0.1:${port}/hello`)).json()).toStrictEqual({ text: "hello" });
    expect((await fetch(`http://127.0.0.1:${port}/boom`)).status).toBe(500);
    await worker.waitForLine(/GET \/boom failed: Error: route exploded/);
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    const logged = records([...worker.stdout, ...worker.stderr]);
    const boom = logged.find((r) => r.message.startsWith("GET /boom failed"));
    expect(boom).toMatchObject({ level: "ERROR", subject: "json-logs-api" });
    expect(boom?.message).toMatch(/\n {4}at .*lb-json-logs\.ts:\d+:\d+/);
    expect(logged).toContainEqual(
      expect.objectContaining({ message: expect.stringMatching(/^GET \/hello 200 \d+ ms$/) }),
    );
    expect(logged.at(-1)?.message).toBe("Endpoint json-logs-api stopped.");
  });

  it("the default text format never loads pino; LOG_FORMAT=json does", () => {
    const pino = (urls: string[]) => urls.filter((url) => url.includes("/node_modules/pino/"));
    const text = modulesResolved("test/fixtures/json-logs.ts", {});
    expect(text.some((url) => url.endsWith("/dist/runtime/start.js"))).toBe(true);
    expect(pino(text)).toStrictEqual([]);
    expect(
      pino(modulesResolved("test/fixtures/json-logs.ts", { LOG_FORMAT: "json" })).length,
    ).toBeGreaterThan(0);
  });
});
