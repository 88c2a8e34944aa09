// `npm run bench:ab <checkout…>`: CPU per no-op job of this checkout's worker beside other checkouts' (each with
// its dist/ built) and the bare node:http loop, all running at the same time on the same pinned CPUs, each against
// its own bench platform, so the host's noise falls on all of them alike. Taking turns (test/bench/worker.bench.ts)
// cannot resolve a change of a few per cent on a shared host; this can. Prints per-round ratios and their medians.
// FLASH_AB_NODE picks the Node, FLASH_AB_ROUNDS and FLASH_AB_JOBS the size.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BenchPlatform, percentile, pinApart, spawnNode } from "./bench-platform.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const node = process.env.FLASH_AB_NODE || process.execPath;
const rounds = Number(process.env.FLASH_AB_ROUNDS ?? "5");
const jobs = Number(process.env.FLASH_AB_JOBS ?? "5000");

const checkouts = [ROOT, ...process.argv.slice(2).map((dir) => resolve(dir))];
for (const dir of checkouts) {
  if (!existsSync(join(dir, "dist/cli/main.js"))) {
    console.error(`bench:ab: ${dir} has no dist/cli/main.js: run npm run build there first`);
    process.exit(2);
  }
}
const name = (dir: string, i: number) => (i === 0 ? "this" : `${basename(dir)}#${i}`);
// The bare node:http loop is every ratio's baseline; the bare socket loop shows what a leaner transport could save.
const baselines: [string, string[]][] = [
  ["bare", [join(ROOT, "test/bench/fixtures/bare-http-loop.mjs")]],
  ["socket", [join(ROOT, "test/bench/fixtures/bare-socket-loop.mjs")]],
];
const procs: [string, string[]][] = [
  ...baselines,
  // Each checkout's noop.mjs imports "flash-worker", which resolves to that checkout's own dist/.
  ...checkouts.map((dir, i): [string, string[]] => [
    name(dir, i),
    [join(dir, "dist/cli/main.js"), "start", join(dir, "test/bench/fixtures/noop.mjs")],
  ]),
];

/** A process's CPU so far (all threads), and its main thread's alone, in ms. */
function cpuMs(pid: number): { all: number; main: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const main = Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  return { all: (Number(stat[11]) + Number(stat[12])) * 10, main };
}

const pin = pinApart();
const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
const perJob: Record<string, { all: number; main: number }[]> = Object.fromEntries(
  procs.map(([label]) => [label, []]),
);
const loads: number[] = [];
const started = new Date().toISOString();
try {
  for (let round = 0; round < rounds; round++) {
    const running = await Promise.all(
      procs.map(async ([label, args]) => {
        const platform = await new BenchPlatform().start();
        const env = { ...platform.env(), BENCH_CONCURRENCY: "1", LOG_LEVEL: "INFO" };
        const child = spawnNode(args, env, { cpus: pin.worker, node });
        await platform.serve(300); // warm-up
        return { label, platform, child };
      }),
    );
    loads.push(loadavg()[0]!);
    const before = running.map(({ child }) => cpuMs(child.pid!));
    await Promise.all(
      running.map(async ({ label, platform, child }, i) => {
        await platform.serve(jobs);
        // Read at each process's own end: the others still running must not count against it.
        const after = cpuMs(child.pid!);
        const from = before[i]!;
        perJob[label]!.push({
          all: (after.all - from.all) / jobs,
          main: (after.main - from.main) / jobs,
        });
      }),
    );
    for (const { child, platform } of running) {
      child.kill("SIGKILL");
      await new Promise((done) => child.once("exit", done));
      await platform.close();
    }
    console.error(
      `round ${round + 1}/${rounds}: ${procs.map(([label]) => `${label} ${perJob[label]!.at(-1)!.main.toFixed(3)} ms`).join(", ")} (main thread per job), load ${loadavg()[0]!.toFixed(2)}`,
    );
  }
} finally {
  pin.release();
}

const median = (values: number[]) => percentile(values, 50);
const ratios = (a: string, b: string, key: "all" | "main") =>
  perJob[a]!.map((figures, i) => figures[key] / perJob[b]![i]![key]);
const list = (values: number[]) => values.map((v) => v.toFixed(3)).join(" ");
console.log(
  `Node ${version}, ${rounds} rounds × ${jobs} no-op jobs at concurrency 1, all at once on CPU(s) ${pin.worker ?? "any"}, ${started} → ${new Date().toISOString()}, load average ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}`,
);
for (const [label] of procs) {
  const all = ratios(label, "bare", "all");
  const main = ratios(label, "bare", "main");
  console.log(
    `${label}: CPU per job ${median(perJob[label]!.map((f) => f.all)).toFixed(3)} ms (÷ bare: median ${median(all).toFixed(2)}× [${list(all)}]), main thread ${median(perJob[label]!.map((f) => f.main)).toFixed(3)} ms (÷ bare: median ${median(main).toFixed(2)}× [${list(main)}])`,
  );
}
for (const [label] of procs.slice(baselines.length + 1)) {
  const main = ratios("this", label, "main");
  console.log(`this ÷ ${label}, main-thread CPU per job: median ${median(main).toFixed(3)} [${list(main)}]`);
}
