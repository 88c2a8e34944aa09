// 50,000 jobs through one worker process: its resident memory stays within a stated bound (no per-job leak).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { BenchPlatform } from "../bench/bench-platform.js";
import { FLASH, ROOT } from "../process.js";

const PRELOAD = pathToFileURL(join(ROOT, "test/fixtures/rss-on-signal.mjs")).href;
let platform: BenchPlatform | undefined;
let kill: (() => void) | undefined;

afterAll(async () => {
  kill?.();
  await platform?.close();
});

describe("memory", () => {
  it("50,000 no-op jobs grow the worker's RSS by less than 20 MB after a 20,000-job warm-up", async () => {
    platform = await new BenchPlatform().start();
    const child = spawn(
      process.execPath,
      ["--expose-gc", "--import", PRELOAD, FLASH, "start", "test/bench/fixtures/noop.mjs"],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", ...platform.env(), BENCH_CONCURRENCY: "8" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    kill = () => child.kill("SIGKILL");
    child.stdout.resume();
    const rss: number[] = [];
    let partial = "";
    child.stderr.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) if (/^rss \d+$/.test(line)) rss.push(Number(line.slice(4)) / 1024 / 1024);
    });
    // The worker's RSS right after a full GC it runs on our signal, once every job of the round is answered.
    const rssMb = async () => {
      const count = rss.length;
      child.kill("SIGUSR2");
      while (rss.length === count) await once(child.stderr, "data");
      return rss[count]!;
    };
    // Warm-up long enough for every page of V8's young generation (up to 32 MB on Node 20) to have been used once:
    // at ~10,000 jobs/s it is not after 5,000 jobs, and its first use is no leak.
    await platform.serve(20_000);
    const warm = await rssMb();
    await platform.serve(50_000);
    const after = await rssMb();
    expect(
      after - warm,
      `RSS ${warm.toFixed(1)} MB after 20,000 jobs, ${after.toFixed(1)} MB after 70,000`,
    ).toBeLessThan(20);
  }, 600_000);
});
