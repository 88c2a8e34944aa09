// `flash start` and `flash run` on examples/load-balanced, as the images and users run them (npm run build first).
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Flash, flash, flashRun } from "../process.js";

const EXAMPLE = "examples/load-balanced/handler.ts";
const running: Flash[] = [];
let dir = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flash-lb-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const run of running.splice(0)) {
    if (run.child.exitCode === null && run.child.signalCode === null) {
      run.child.kill("SIGKILL");
      await run.exited;
    }
  }
});

/** Starts the example on a free port; resolves with its base URL once it listens. */
async function startExample(env: Record<string, string> = {}): Promise<{ run: Flash; url: string }> {
  const run = flash(["start", EXAMPLE], { PORT: "0", FLASH_LB_HOST: "127.0.0.1", ...env });
  running.push(run);
  const line = await run.waitForLine(/listening on http:\/\/127\.0\.0\.1:\d+/, 60_000);
  const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1];
  if (!url) throw new Error(`no URL in ${line}`);
  return { run, url };
}

async function waitForPing(url: string, status: number): Promise<void> {
  for (;;) {
    const res = await fetch(`${url}/ping`);
    await res.arrayBuffer();
    if (res.status === status) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("flash start on a load-balanced endpoint (real socket)", { timeout: 120_000 }, () => {
  it("/ping answers 204 while onStart runs, then 200 {status: healthy}", async () => {
    const gate = join(dir, "weights-ready");
    const { run, url } = await startExample({ MODEL_LOAD_MS: "0", MODEL_READY_FILE: gate });
    // The model cannot finish loading before the gate file exists, so this answer is always 204.
    const during = await fetch(`${url}/ping`);
    expect(during.status).toBe(204);
    expect(await during.text()).toBe("");
    writeFileSync(gate, "");
    await waitForPing(url, 200);
    const after = await fetch(`${url}/ping`);
    expect(await after.json()).toEqual({ status: "healthy" });
    await run.waitForLine(/Endpoint lb-example ready/);

    const echo = await fetch(`${url}/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "hi", n: [1, 2] }),
    });
    expect(echo.status).toBe(200);
    expect(await echo.json()).toEqual({ prompt: "hi", n: [1, 2] });
    const hello = await fetch(`${url}/hello/flash`);
    expect(await hello.json()).toEqual({ hello: "flash" });
    const greet = await fetch(`${url}/greet?name=you`);
    expect(await greet.json()).toEqual({ greeting: "hello you", path: "/greet" });
    const fail = await fetch(`${url}/fail`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "on purpose" }),
    });
    expect(fail.status).toBe(500);
    expect(await fail.json()).toEqual({ error: "on purpose" });
    const malformed = await fetch(`${url}/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(malformed.status).toBe(400);

    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
  });

  it("SIGTERM lets an in-flight request finish, then exits 0", async () => {
    const { run, url } = await startExample({ MODEL_LOAD_MS: "0" });
    await waitForPing(url, 200);
    const answer = fetch(`${url}/sleep`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ms: 4000 }),
    });
    await run.waitForLine(/sleeping 4000 ms/);
    run.child.kill("SIGTERM");
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ slept: 4000 });
    expect(await run.exited).toBe(0);
    expect(run.stdout.join("\n")).toMatch(
      /Shutting down lb-example endpoint \(SIGTERM received\); 1 request\(s\) in flight/,
    );
  });

  it("an endpoint with no routes fails at start with the toolkit's message", async () => {
    const { code, stdout } = await flashRun(["start", "test/fixtures/lb-no-routes.ts"], {
      PORT: "0",
      FLASH_LB_HOST: "127.0.0.1",
    });
    expect(code).toBe(1);
    expect(stdout).toContain(
      "Load-balanced endpoints require route decorators: endpoint 'empty-api' has no routes.",
    );
  });

  it("flash dev refuses an endpoint with no routes when it loads the file, before any worker starts", async () => {
    const { code, stdout, stderr } = await flashRun([
      "dev",
      "test/fixtures/lb-no-routes.ts",
      "--port",
      "0",
      "--api-key",
      "k",
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain(
      "flash dev: test/fixtures/lb-no-routes.ts: Load-balanced endpoints require route decorators: endpoint 'empty-api' has no routes.",
    );
    // Not listed as a queue endpoint with a runsync curl.
    expect(stdout).not.toContain("Ready. Try:");
  });
});

describe("flash run on a load-balanced endpoint", { timeout: 120_000 }, () => {
  it("sends the requests of test_input.json through the routes and prints the answers", async () => {
    const { code, stdout, stderr } = await flashRun(["run", EXAMPLE], { MODEL_LOAD_MS: "0" });
    expect(code).toBe(0);
    // Each answer's body alone on stdout, one a line; the statuses in the log on stderr.
    const bodies = stdout.split("\n");
    expect(bodies).toContain('{"prompt":"hello","n":1}');
    expect(bodies).toContain('{"hello":"flash"}');
    expect(stderr).toContain("POST /echo -> 200");
    expect(stderr).toContain("GET /hello/flash -> 200");
    expect(stderr).toContain("Local testing complete: 3 of 3 request(s) succeeded.");
  });

  it("exits 1 when a request fails", async () => {
    const input = JSON.stringify({ method: "POST", path: "/fail", body: { message: "nope" } });
    const { code, stderr } = await flashRun(["run", EXAMPLE, "--test-input", input], { MODEL_LOAD_MS: "0" });
    expect(code).toBe(1);
    expect(stderr).toContain('POST /fail -> 500 {"error":"nope"}');
  });

  it("an Endpoint used with .handler(fn) runs as a queue handler", async () => {
    const { code, stdout } = await flashRun([
      "run",
      "test/fixtures/endpoint-queue.ts",
      "--test-input",
      '{"input": {"x": 21}}',
    ]);
    expect(code).toBe(0);
    expect(stdout).toBe('{"output":{"doubled":42}}');
  });

  it("explains a queue job's test input", async () => {
    const { code, stderr } = await flashRun(["run", EXAMPLE, "--test-input", '{"input": {"a": 1}}'], {
      MODEL_LOAD_MS: "0",
    });
    expect(code).toBe(1);
    expect(stderr).toContain("this is a load-balanced endpoint: its test input describes HTTP requests");
  });
});
