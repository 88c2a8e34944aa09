import type { ChildProcess } from "node:child_process";

/** SIGTERM now (the worker drains), SIGKILL if it has not exited within the grace period. */
export function terminate(child: ChildProcess, exited: Promise<unknown>, graceMs: number): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  killer.unref();
  void exited.then(() => clearTimeout(killer));
}
