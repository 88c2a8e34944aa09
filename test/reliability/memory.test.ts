// 50,000 jobs through one worker process: its resident memory stays within a stated bound (no per-job leak).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { BenchPlatform } from "../bench/bench-platform.js";
import { FLASH, ROOT } from "../process.js";

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;
let platform: BenchPlatform | undefined;
let kill: (() => void) | undefined;

afterAll(async () => {
  kill?.();
  await platform?.close();
});

describe("memory", () => {
  it("50,000 no-op jobs grow the worker's RSS by less than 20 MB after warm-up", async () => {
    platform = await new BenchPlatform().start();
    const child = spawn(process.execPath, [FLASH, "start", "test/bench/fixtures/noop.mjs"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", ...platform.env(), BENCH_CONCURRENCY: "8" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    kill = () => child.kill("SIGKILL");
    child.stdout.resume();
    child.stderr.resume();
    await platform.serve(5000);
    await new Promise((r) => setTimeout(r, 1000));
    const warm = rssMb(child.pid!);
    await platform.serve(45_000);
    await new Promise((r) => setTimeout(r, 1000));
    const after = rssMb(child.pid!);
    expect(
      after - warm,
      `RSS ${warm.toFixed(1)} MB after 5,000 jobs, ${after.toFixed(1)} MB after 50,000`,
    ).toBeLessThan(20);
  }, 600_000);
});
