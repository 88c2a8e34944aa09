// Stopping a worker process: SIGTERM then SIGKILL, reaching a container's processes too.
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Children that run a container: its processes live in a session of their own, so they are signalled by pid. */
const containerRuns = new WeakSet<ChildProcess>();
/** The processes each container run had when it was asked to stop, for the SIGKILL that may follow. */
const tracked = new WeakMap<ChildProcess, number[]>();

/** Marks a child whose descendants (a container's processes) must get its signals too. */
export function markContainerRun(child: ChildProcess): void {
  containerRuns.add(child);
}

/** Every process below `pid` now (Linux /proc), parents first. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // The process ended while we looked.
    }
  }
  const out: number[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const next = queue.shift()!;
    out.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return out;
}

/** Signals the child, and every process of its container when it runs one. */
export function signal(child: ChildProcess, name: NodeJS.Signals): void {
  if (containerRuns.has(child) && child.pid !== undefined) {
    const pids = [...new Set([...(tracked.get(child) ?? []), ...descendants(child.pid)])];
    tracked.set(child, pids);
    // buildah run passes no signal on and dies of one, warning on stderr: a drain goes to the container's first
    // process (tini passes it on), the tool exits with it. A SIGKILL still reaches every process.
    const entry = name === "SIGTERM" ? containerEntry(child) : undefined;
    if (entry !== undefined) {
      try {
        process.kill(entry, name);
        return;
      } catch {
        // Gone already: signalled as a whole below.
      }
    }
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch {
        // Already gone.
      }
    }
  }
  child.kill(name);
}

/** SIGTERM now (the worker drains), SIGKILL if it has not exited within the grace period. */
export function terminate(child: ChildProcess, exited: Promise<unknown>, graceMs: number): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  signal(child, "SIGTERM");
  const killer = setTimeout(() => signal(child, "SIGKILL"), graceMs);
  killer.unref();
  void exited.then(() => clearTimeout(killer));
}

/** SIGKILL now: the user asked a second time, or the worker cannot run its drain. */
export function kill(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  signal(child, "SIGKILL");
}

/**
 * The container's own first process below the tool that runs it (buildah run's helpers skipped): the one a
 * `docker run` signal reaches, which passes it on to its children if it is an init such as tini.
 */
export function containerEntry(child: ChildProcess): number | undefined {
  if (child.pid === undefined) return undefined;
  return descendants(child.pid).find((pid) => {
    try {
      // argv[0], not comm: buildah re-executes itself from a memfd, so its helpers' comm is "memfd:…".
      const argv0 = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
      return !/^(buildah|podman|conmon|crun|runc)/.test(argv0.split("/").pop() ?? "");
    } catch {
      return false;
    }
  });
}
