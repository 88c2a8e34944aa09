// `flash dev` in a terminal: Ctrl-C sends SIGINT to the whole foreground process group. Workers run in groups
// of their own, so only the platform takes it and gives each worker one SIGTERM: in-flight jobs get the grace
// period. And workers do not outlive a platform that dies without stopping them.
import { afterEach, describe, expect, it } from "vitest";
import { type FlashProcess, startFlash } from "./cli.js";
import { eventually, type JobJson } from "./helpers.js";

const TIMEOUT = 120_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("flash dev and its workers' signals", { timeout: TIMEOUT }, () => {
  let dev: FlashProcess | undefined;
  afterEach(async () => {
    await dev?.stop();
    dev = undefined;
  }, TIMEOUT);

  it("one Ctrl-C to the terminal's process group: the job in flight still completes, then dev exits 0", async () => {
    dev = await startFlash(
      "dev",
      ["examples/echo/handler.ts", "--port", "0", "--api-key", "sig-key", "--workers", "1,1"],
      { detached: true },
    );
    const { id } = await dev.call("/run", { input: { mock_delay: 3, n: 1 } });
    await eventually(
      async () => ((await dev!.call(`/status/${id}`)) as JobJson).status === "IN_PROGRESS",
      "the job to start",
      60_000,
    );
    // What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
    process.kill(-dev.child.pid!, "SIGINT");
    await dev.waitForLine(new RegExp(`\\| ${id} \\| Finished\\.`), "the job to finish", 60_000);
    const code = await new Promise<number | null>((resolve) =>
      dev!.child.exitCode !== null ? resolve(dev!.child.exitCode) : dev!.child.once("exit", resolve),
    );
    expect(code).toBe(0);
    // The job ran to its end: it was neither failed nor cancelled by a second signal.
    expect(dev.lines.some((l) => l.includes(id) && /FAILED|aborted|second/i.test(l))).toBe(false);
  });

  it("workers stop when the platform that spawned them is killed without stopping them", async () => {
    dev = await startFlash(
      "dev",
      ["examples/echo/handler.ts", "--port", "0", "--api-key", "sig-key", "--workers", "1,1"],
      { detached: true },
    );
    const pids = await eventually(
      () => (dev!.workerPids().size > 0 ? [...dev!.workerPids().values()] : undefined),
      "a worker to start",
      60_000,
    );
    dev.child.kill("SIGKILL");
    await eventually(() => pids.every((pid) => !alive(pid)), "the orphaned workers to exit", 60_000);
  });
});
