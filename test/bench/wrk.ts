// wrk, the load generator of the HTTP benchmarks: one run against a URL, with its own CPU share, and the medians of windows.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** CPU seconds (user + system) on a line of bash's `times`, e.g. "0m0.412s 0m0.301s". */
const cpuSeconds = (line: string): number =>
  [...line.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0);

export interface Load {
  requests: number;
  errors: number;
  /** Seconds wrk itself measured the load for. */
  seconds: number;
  /** wrk's CPU seconds per second of load: well under 1 (its one thread) means it had room to send more. */
  generatorCpu: number;
}

/**
 * Debian's wrk (C, one thread, `connections` keep-alive connections) running a fixtures/*.lua script:
 * a generator much cheaper per request than the servers, so they are what is measured; its own CPU
 * share is reported to show it had room. `timeoutS`: wrk's per-request timeout (its default is 2 s).
 */
export function load(
  url: string,
  script: string,
  connections: number,
  ms: number,
  timeoutS?: number,
): Promise<Load> {
  const seconds = Math.max(1, Math.round(ms / 1000));
  const timeout = timeoutS === undefined ? "" : ` --timeout ${timeoutS}s`;
  const command = `wrk -t1 -c${connections} -d${seconds}s${timeout} -s ${fixture(script)} ${url}; times`;
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString("utf8");
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      const total = /(\d+) requests in ([\d.]+)(ms|s)/.exec(out);
      if (code !== 0 || !total) {
        reject(new Error(`wrk failed (exit ${code}; is wrk installed? scripts/test-deps.sh): ${out}${err}`));
        return;
      }
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0");
      const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
      const measured = Number(total[2]) / (total[3] === "ms" ? 1000 : 1);
      // `times` prints the shell's own times, then its children's: the last line is wrk's.
      const wrkCpu = cpuSeconds(out.trim().split("\n").at(-1) ?? "");
      resolve({
        requests: Number(total[1]) - non2xx,
        errors: non2xx + socketErrors,
        seconds: measured,
        generatorCpu: wrkCpu / measured,
      });
    });
  });
}

/** /proc/<pid>/stat's fields after the command name (index 0 is the state, 2 the process group), or none if gone. */
function statFields(pid: number | string): string[] {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  } catch {
    return [];
  }
}

/** CPU time the process has used, in µs (utime + stime of /proc/<pid>/stat, in 10 ms ticks). */
export function cpuMicros(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/**
 * CPU time of every live process in process group `pgid`, in µs: a model server the runtime starts runs under a
 * shell that leads its group, so the server's CPU is its group's, not the logged pid's.
 */
export function groupCpuMicros(pgid: number): number {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (Number(fields[2]) === pgid) total += (Number(fields[11]) + Number(fields[12])) * 10_000;
  }
  return total;
}

/** Whose CPU a window counts: one process, or a whole process group. */
export type CpuOf = number | { group: number };

const cpuOf = (of: CpuOf): number => (typeof of === "number" ? cpuMicros(of) : groupCpuMicros(of.group));

export interface Figures {
  requestsPerSecond: number;
  /** Server CPU per request: steadier than req/s when other work shares the machine. */
  cpuMicrosPerRequest: number;
  /** wrk's CPU seconds per second of load. */
  generatorCpu: number;
}

/** One load window against a server process: its req/s, its CPU per request, and wrk's CPU share. */
export async function window(
  pid: CpuOf,
  url: string,
  script: string,
  connections: number,
  ms: number,
  timeoutS?: number,
): Promise<Figures> {
  const cpuBefore = cpuOf(pid);
  const { requests, errors, seconds, generatorCpu } = await load(url, script, connections, ms, timeoutS);
  const cpu = cpuOf(pid) - cpuBefore;
  if (errors > 0) throw new Error(`${errors} request(s) failed`);
  return { requestsPerSecond: requests / seconds, cpuMicrosPerRequest: cpu / requests, generatorCpu };
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
