// Cancel as a user meets it in `flash dev`: a job whose handler blocks the event loop cannot see its abort
// signal, so the platform replaces its worker instead of leaving the slot held; the cancel answer carries no
// progress as output; stopping dev with a hung job takes a second Ctrl-C, and it says so.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type FlashProcess, startFlash } from "./cli.js";
import { eventually } from "./helpers.js";

// Far longer than the test may run: a finished follow-up job proves the worker was replaced, not waited for.
const BLOCK_MS = 600_000;

describe("cancelling a CPU-bound job in flash dev", { timeout: 90_000 }, () => {
  let dev: FlashProcess | undefined;
  const markers = mkdtempSync(join(tmpdir(), "flash-cancel-"));
  afterAll(() => {
    rmSync(markers, { recursive: true, force: true });
    // Busy workers of a failed run must not outlive the test.
    if (dev && dev.child.exitCode === null) dev.child.kill("SIGKILL");
    for (const pid of dev?.workerPids().values() ?? []) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone: the normal case.
      }
    }
  });

  it("replaces the blocked worker, answers without progress as output, and a second SIGINT ends dev", async () => {
    dev = await startFlash("dev", [
      "test/fixtures/cpu-bound.ts",
      "--port",
      "0",
      "--api-key",
      "k",
      "--workers",
      "1,1",
    ]);
    const marker = join(markers, "blocking");
    const started = await dev.call("/run", { input: { block_ms: BLOCK_MS, marker } });
    // Running, with its progress shown as output while it runs.
    await eventually(async () => {
      const status = await dev!.call(`/status/${started.id}`);
      return status.status === "IN_PROGRESS" && JSON.stringify(status.output) === '{"step":"loading"}';
    }, "the job's progress");
    // Cancelled once its loop holds the event loop, as a CPU-bound job is for most of its life.
    await eventually(() => existsSync(marker), "the handler's loop");
    const cancelled = await dev.call(`/cancel/${started.id}`, {});
    expect(cancelled.status).toBe("CANCELLED");
    expect(cancelled).not.toHaveProperty("output");
    await dev.waitForLine(
      new RegExp(`still running stopped job ${started.id} .*; replacing the worker`),
      "the replaced worker",
    );
    // The only worker slot is free again: a new worker takes the next job.
    const next = await dev.call("/runsync", { input: { block_ms: 0 } });
    expect(next).toMatchObject({ status: "COMPLETED", output: { done: true } });

    // A hung job at shutdown: the first SIGINT waits for it, the second kills it.
    const hung = await dev.call("/run", { input: { block_ms: BLOCK_MS } });
    await eventually(
      async () => (await dev!.call(`/status/${hung.id}`)).status === "IN_PROGRESS",
      "the hung job",
    );
    const exited = new Promise<number | null>((resolve) => dev!.child.once("exit", resolve));
    dev.child.kill("SIGINT");
    await dev.waitForLine(/press Ctrl-C again to stop them now/, "the first SIGINT's line");
    dev.child.kill("SIGINT");
    await dev.waitForLine(/SIGINT received again; killing the workers now/, "the second SIGINT's line");
    expect(await exited).toBe(0);
  });
});
