// A server-backed queue worker (`flash start`, a real child process) against a recording platform, on the wire:
// heartbeat pings go out while the model server loads and no job-take is sent until its health answers 200; a
// server that never becomes healthy is reported with status=unhealthy and the worker exits 1 without a take.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RecordingPlatform } from "../conformance/recording-platform.js";
import { eventually } from "../platform/helpers.js";
import { flash, freePort } from "../process.js";

let platform: RecordingPlatform;
beforeEach(async () => {
  platform = await new RecordingPlatform().start();
});
afterEach(async () => {
  await platform.close();
});

const takes = () => platform.requests.filter((r) => r.route === "take" || r.route === "take-batch");

describe("a server-backed queue worker on the wire", { timeout: 90_000 }, () => {
  it("pings while the server loads, takes nothing until its health answers 200, then runs a passthrough job", async () => {
    const ready = join(mkdtempSync(join(tmpdir(), "flash-ms-wire-")), "ready");
    const worker = flash(["start", "test/fixtures/model-server/handler.ts"], {
      ...platform.env(),
      RUNPOD_PING_INTERVAL: "200",
      FIXTURE_PORT: String(await freePort()),
      FIXTURE_READY_FILE: ready,
      FIXTURE_LOAD_SECONDS: "0",
    });
    try {
      await worker.waitForLine(/\| fixture-llm \| fixture: loading fixture-model/, 30_000);
      // Three pings while /health still answers 503: the heartbeat runs, and the job loop has not started.
      await platform.waitFor((rs) => rs.filter((r) => r.route === "ping").length >= 3, 30_000);
      expect(existsSync(ready)).toBe(false);
      expect(takes()).toEqual([]);
      platform.push({
        id: "chat-1",
        input: {
          openai_route: "/v1/chat/completions",
          openai_input: { messages: [{ role: "user", content: "on the wire" }] },
        },
      });
      writeFileSync(ready, "");
      await platform.waitFor((rs) => rs.some((r) => r.route === "done"), 30_000);
      const done = platform.of("done")[0]!;
      expect(done.url).toContain("/job-done/w1/chat-1");
      expect(JSON.parse(done.body)).toMatchObject({
        output: { object: "chat.completion", choices: [{ message: { content: "echo: on the wire" } }] },
      });
      const firstTake = takes()[0]!;
      const readyLine = worker.stdout.findIndex((l) => l.includes("Model server 'fixture-llm' is ready."));
      expect(readyLine).toBeGreaterThanOrEqual(0);
      expect(firstTake.at).toBeGreaterThan(platform.of("ping")[2]!.at);
    } finally {
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe(0);
    }
  });

  it("never healthy within RUNPOD_INIT_TIMEOUT: ping with status=unhealthy naming the reason, exit 1, no take", async () => {
    const worker = flash(["start", "test/fixtures/model-server/handler.ts"], {
      ...platform.env(),
      FIXTURE_PORT: String(await freePort()),
      FIXTURE_MODE: "never-healthy",
      // Long enough that start-up's own checks end inside it on a loaded machine: the health wait is what times out.
      RUNPOD_INIT_TIMEOUT: "5",
    });
    expect(await worker.exited).toBe(1);
    const report = platform.of("ping").find((r) => r.url.includes("status=unhealthy"));
    expect(report, platform.requests.map((r) => r.url).join("\n")).toBeDefined();
    const query = new URL(report!.url, platform.base).searchParams;
    expect([...query.values()].join(" ")).toContain("did not answer 200 within 5 s (last: it answered 503)");
    expect(takes()).toEqual([]);
    expect(worker.stdout.some((l) => l.includes("Worker is unhealthy, exiting."))).toBe(true);
  });

  it("a worker killed with SIGKILL takes its model server's whole process group along", async () => {
    const port = await freePort();
    const worker = flash(["start", "test/fixtures/model-server/handler.ts"], {
      ...platform.env(),
      FIXTURE_PORT: String(port),
      FIXTURE_LOAD_SECONDS: "0",
    });
    const line = await worker.waitForLine(/Starting model server 'fixture-llm' \(pid \d+\)/, 30_000);
    const leader = Number(/\(pid (\d+)\)/.exec(line)![1]);
    await worker.waitForLine(/Model server 'fixture-llm' is ready\./, 30_000);
    worker.child.kill("SIGKILL");
    await worker.exited;
    const gone = (pid: number) => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    };
    await eventually(() => gone(leader), "the server's group leader to exit", 20_000);
    // Nothing of the group is left: no process in it, the port free again.
    await eventually(
      () => !readdirSync("/proc").some((d) => /^\d+$/.test(d) && pgid(d) === leader),
      "the group",
      20_000,
    );
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined)) === undefined,
      "the port to be free",
      20_000,
    );
  });
});

/** The process group of a pid, from /proc (undefined once it is gone). */
function pgid(pid: string): number | undefined {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[2]);
  } catch {
    return undefined;
  }
}
