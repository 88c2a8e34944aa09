import type { ChildProcess } from "node:child_process";

/** Children spawned with `detached: true`: each leads its own process group. */
const leaders = new WeakSet<ChildProcess>();

/** Sends a signal to the child, or to its whole process group when it leads one (a container run). */
function signal(child: ChildProcess, name: NodeJS.Signals): void {
  if (child.pid !== undefined && leaders.has(child)) {
    try {
      process.kill(-child.pid, name);
      return;
    } catch {
      // The group is gone already; the child itself is tried below.
    }
  }
  child.kill(name);
}

/** Marks a child spawned with `detached: true`: it is signalled with its whole group. */
export function markGroupLeader(child: ChildProcess): void {
  leaders.add(child);
}

/** SIGTERM now (the worker drains), SIGKILL if it has not exited within the grace period. */
export function terminate(child: ChildProcess, exited: Promise<unknown>, graceMs: number): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  signal(child, "SIGTERM");
  const killer = setTimeout(() => signal(child, "SIGKILL"), graceMs);
  killer.unref();
  void exited.then(() => clearTimeout(killer));
}
