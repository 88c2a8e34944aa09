// The worker as a real child process (`flash start`): signals, drain, exit code and the heartbeat thread.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { VERSION } from "../../src/version.js";
import { flash } from "../process.js";
import { RecordingPlatform } from "./recording-platform.js";

let platform: RecordingPlatform;

beforeEach(async () => {
  platform = await new RecordingPlatform().start();
});

afterEach(async () => {
  await platform.close();
});

const doneBodies = () =>
  Object.fromEntries(
    platform
      .of("done")
      .map((r) => [decodeURIComponent(r.url.split("/")[5]!.split("?")[0]!), JSON.parse(r.body)]),
  );

describe("flash start as the platform runs it", () => {
  it("SIGTERM: finishes in-flight jobs within the grace period, fails the rest, takes nothing new, exits 0", async () => {
    const worker = flash(["start", "test/fixtures/slow.ts"], { ...platform.env(), FLASH_GRACE_PERIOD: "2" });
    platform.push({ id: "short", input: { ms: 300 } }, { id: "long", input: { ms: 60_000 } });
    await platform.waitFor((rs) => rs.some((r) => r.url.includes("job_in_progress=1")));
    await worker.waitForLine(/\| long \| Started\./);
    const takes = () =>
      platform.requests.filter((r) => r.route === "take" || r.route === "take-batch").length;
    const before = takes();
    worker.child.kill("SIGTERM");
    platform.push({ id: "after-signal", input: { ms: 1 } });
    const code = await worker.exited;
    expect(code).toBe(0);
    expect(takes()).toBe(before);
    const bodies = doneBodies();
    expect(bodies.short).toStrictEqual({ output: { slept: 300 } });
    expect(bodies.long).toStrictEqual({
      error: "Worker shut down before the job finished (grace period of 2 s ran out).",
    });
    expect(bodies["after-signal"]).toBeUndefined();
    expect(worker.stdout.some((l) => l.includes("SIGTERM received: no new jobs will be taken"))).toBe(true);
  });

  it("pings with the in-flight job ids while the handler blocks the event loop (PR #425)", async () => {
    const worker = flash(["start", "test/fixtures/blocking.ts"], {
      ...platform.env(),
      RUNPOD_PING_INTERVAL: "200",
    });
    // The handler spins until the file exists: the main thread stays blocked until the test has seen the pings.
    const release = join(mkdtempSync(join(tmpdir(), "flash-hog-")), "release");
    platform.push({ id: "hog-1", input: { until_file: release } });
    await worker.waitForLine(/\| hog-1 \| Started\./);
    const startedAt = Date.now();
    const expected = `/v2/EP/ping/w1?gpu=X&job_id=hog-1&runpod_version=${VERSION}`;
    const during = () => platform.of("ping").filter((r) => r.at >= startedAt && r.url === expected);
    await platform.waitFor(() => during().length >= 3, 60_000);
    // Still blocked (no result yet), so every one of those pings came from the heartbeat thread.
    expect(platform.of("done")).toHaveLength(0);
    writeFileSync(release, "");
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    expect(doneBodies()["hog-1"]).toStrictEqual({ output: { spins: true } });
    for (const ping of during()) {
      expect(ping.headers.authorization).toBe("K");
      expect(ping.headers["content-type"]).toBeUndefined();
    }
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
  });

  it("ping lists every in-flight job, comma-joined and encoded as %2C (§15)", async () => {
    const worker = flash(["start", "test/fixtures/slow.ts"], {
      ...platform.env(),
      RUNPOD_PING_INTERVAL: "100",
    });
    platform.push({ id: "j1-e1", input: { ms: 3000 } }, { id: "j2-e1", input: { ms: 3000 } });
    await platform.waitFor((rs) => rs.some((r) => r.route === "ping" && r.url.includes("%2C")));
    const ping = platform.of("ping").find((r) => r.url.includes("%2C"))!;
    expect([
      `/v2/EP/ping/w1?gpu=X&job_id=j1-e1%2Cj2-e1&runpod_version=${VERSION}`,
      `/v2/EP/ping/w1?gpu=X&job_id=j2-e1%2Cj1-e1&runpod_version=${VERSION}`,
    ]).toContain(ping.url);
    // Once both are done, pings name no job.
    await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 2);
    const after = platform.requests.length;
    const idle = `/v2/EP/ping/w1?gpu=X&runpod_version=${VERSION}`;
    await platform.waitFor((rs) => rs.slice(after).some((r) => r.route === "ping" && r.url === idle));
    worker.child.kill("SIGINT");
    expect(await worker.exited).toBe(0);
  });

  it("a ping that cannot connect is logged by the heartbeat thread at INFO, and jobs go on", async () => {
    const env = {
      ...platform.env(),
      LOG_LEVEL: "INFO",
      RUNPOD_WEBHOOK_PING: "http://127.0.0.1:1/v2/EP/ping/$RUNPOD_POD_ID",
    };
    const worker = flash(["start", "examples/echo/handler.ts"], env);
    await worker.waitForLine(
      / \| ERROR \| heartbeat \| Ping Request Error: .+, attempting to restart ping\./,
    );
    platform.push({ id: "e1", input: { a: 1 } });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    expect(doneBodies().e1).toStrictEqual({ output: { a: 1 } });
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
  });

  it("no heartbeat without RUNPOD_POD_ID, and the log says why", async () => {
    const env = platform.env();
    delete (env as Record<string, string | undefined>).RUNPOD_POD_ID;
    const worker = flash(["start", "examples/echo/handler.ts"], env);
    await worker.waitForLine(/Heartbeat off: RUNPOD_POD_ID not set/);
    platform.push({ id: "e1", input: { a: 1 } });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    expect(platform.of("ping").length).toBe(0);
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
  });

  it("JSON log lines with requestId when RUNPOD_ENDPOINT_ID is set, and never the API key", async () => {
    const worker = flash(["start", "examples/echo/handler.ts"], {
      ...platform.env("w1", "secret-key-123"),
      RUNPOD_ENDPOINT_ID: "EP",
      LOG_LEVEL: "DEBUG",
    });
    platform.push({ id: "log-1", input: { a: 1 } });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    await worker.waitForLine(/"message":"Finished\./);
    worker.child.kill("SIGTERM");
    await worker.exited;
    const records = worker.stdout.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    expect(records.length).toBeGreaterThan(3);
    expect(records.find((r) => r.message === "Started.")).toStrictEqual({
      requestId: "log-1",
      level: "INFO",
      message: "Started.",
    });
    for (const r of records)
      expect(Object.keys(r).slice(0, 3)).toStrictEqual(["requestId", "level", "message"]);
    expect(worker.stdout.join("\n")).not.toContain("secret-key-123");
  });
});
