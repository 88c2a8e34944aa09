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
  it("50,000 no-op jobs grow the worker's RSS by less than 20 MB after warm-up", async () => {
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
    await platform.serve(5000);
    const warm = await rssMb();
    await platform.serve(45_000);
    const after = await rssMb();
    expect(
      after - warm,
      `RSS ${warm.toFixed(1)} MB after 5,000 jobs, ${after.toFixed(1)} MB after 50,000`,
    ).toBeLessThan(20);
  }, 600_000);
});
