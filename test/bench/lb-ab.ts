// `node --import tsx test/bench/lb-ab.ts <checkout>`: the route server's CPU per request (a trivial POST route under
// wrk) of this checkout's dist/ beside another's, both up at once, windows in turns (A B, B A, …) so the host's
// load falls on both alike. How src/tick-shapes.ts was measured (docs/benchmarks-history.md, "Oddities, measured").
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startUntil, stopChild } from "./bench-platform.js";
import { load, median, window } from "./wrk.js";

const PAIRS = 8;
const WINDOW_MS = 2000;
const CONNECTIONS = 16;

const dirs = [fileURLToPath(new URL("../..", import.meta.url)), resolve(process.argv[2] ?? ".")];
const servers: { child: import("node:child_process").ChildProcess; url: string }[] = [];
for (const dir of dirs) {
  const { child, found } = await startUntil(
    process.execPath,
    [`${dir}/dist/cli/main.js`, "start", `${dir}/test/bench/fixtures/routes-echo.mjs`],
    { PORT: "0", FLASH_LB_HOST: "127.0.0.1", LOG_LEVEL: "INFO" },
    (seen) => {
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(seen)?.[1];
      return port && /ready/.test(seen) ? Number(port) : undefined;
    },
  );
  servers.push({ child, url: `http://127.0.0.1:${found}/echo` });
}
try {
  for (const server of servers) await load(server.url, "post-echo.lua", CONNECTIONS, WINDOW_MS);
  const cpu: number[][] = [[], []];
  const ratios: number[] = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    const figures: number[] = [];
    for (const i of pair % 2 ? [1, 0] : [0, 1]) {
      const { child, url } = servers[i]!;
      figures[i] = (
        await window(child.pid!, url, "post-echo.lua", CONNECTIONS, WINDOW_MS)
      ).cpuMicrosPerRequest;
    }
    cpu[0]!.push(figures[0]!);
    cpu[1]!.push(figures[1]!);
    ratios.push(figures[0]! / figures[1]!);
  }
  console.log(
    `this ${median(cpu[0]!).toFixed(1)} µs/request, ${dirs[1]} ${median(cpu[1]!).toFixed(1)} µs/request; this ÷ that: median ${median(ratios).toFixed(3)} [${ratios.map((r) => r.toFixed(3)).join(" ")}]`,
  );
} finally {
  for (const server of servers) await stopChild(server.child);
}
