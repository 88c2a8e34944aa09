// The model server's process: spawned in its own process group, its output relayed as log lines, its exit watched.
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { createInterface } from "node:readline";
import type { RunningServer, ServerExit, ServerSettings } from "../../app/model-server/declare.js";
import type { Logger } from "../../log/index.js";

/** How the server ended: an exit code, a signal, or a spawn error (no such program). */
/**
 * The group's leader: runs the server (its stdin /dev/null), ignores SIGTERM itself so the server's own exit code is
 * the group's, and kills the whole group when its stdin (a pipe from the worker) ends: the worker died unstopped.
 */
const GUARD = [
  'exec 3<&0; "$@" </dev/null 3<&- & server=$!',
  "trap '' TERM INT",
  "(read -r _ <&3; kill -KILL 0) & guard=$!",
  "exec 3<&-",
  'wait "$server"; code=$?',
  'kill "$guard" 2>/dev/null',
  'exit "$code"',
].join("\n");

/** Lines kept of its output (lastLines); each was logged as it came, and no error repeats them. */
const KEPT_LINES = 20;

/** The signal a shell's exit code 128+N stands for (137: SIGKILL, the OOM killer's), if N is one. */
function signalOfCode(code: number | null): string | undefined {
  if (code === null || code <= 128) return undefined;
  return Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0];
}

/**
 * "exited with code 3", "exited with code 137 (signal SIGKILL)" (the server's shell leader reports a killed server
 * as 128+N), "was killed by SIGKILL", "could not start (spawn vllm ENOENT)".
 */
export function describeExit(exit: ServerExit): string {
  if (exit.error) return `could not start (${exit.error.message})`;
  if (exit.signal) return `was killed by ${exit.signal}`;
  const signal = signalOfCode(exit.code);
  return `exited with code ${exit.code}${signal ? ` (signal ${signal})` : ""}`;
}

/** A running model server; `stop` ends its whole process group. */
export class ServerProcess implements RunningServer {
  readonly exited: Promise<ServerExit>;
  /** Set once the process has ended. */
  exit: ServerExit | undefined;
  private readonly lines: string[] = [];
  private readonly child: ChildProcess;
  private readonly killOnExit = () => this.signal("SIGKILL");

  constructor(settings: ServerSettings, log: Logger) {
    const { command, args, env } = settings;
    // No args: a shell command line (MODEL_SERVER_COMMAND="vllm serve …"), as Docker's shell form runs it.
    const argv = args ? [command, ...args] : ["/bin/sh", "-c", command];
    // Its own process group (detached), so stopping it reaches every process it started (vLLM's engine cores),
    // led by a shell that watches its stdin, a pipe from this worker: SIGKILLed, the worker takes the group along.
    this.child = spawn("/bin/sh", ["-c", GUARD, settings.name, ...argv], {
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
        this.keep(line);
        log.info(line);
      });
    }
    this.exited = new Promise((resolve) => {
      const settle = (exit: ServerExit) => {
        if (this.exit) return;
        this.exit = exit;
        process.off("exit", this.killOnExit);
        resolve(exit);
      };
      this.child.once("error", (error) => settle({ code: null, signal: null, error }));
      // "close", not "exit": its output has been read to the end, so the last lines are all there.
      this.child.once("close", (code, signal) => settle({ code, signal }));
    });
    // A worker that ends without stopping it (an uncaught crash) takes the server with it.
    process.on("exit", this.killOnExit);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The server's last lines of output, oldest first. */
  lastLines(): readonly string[] {
    return this.lines;
  }

  /**
   * "exited with code 3<during>; its last lines are in the worker's log": the short cause a job, a caller and the
   * unhealthy report get. Its lines stay in the log, where they were written as they came: they can hold prompts.
   */
  describe(exit: ServerExit, during = ""): string {
    const tail = this.lines.length > 0 ? "; its last lines are in the worker's log" : " (it printed nothing)";
    return `${describeExit(exit)}${during}${tail}`;
  }

  /** SIGTERM to its process group, then SIGKILL if it is still running after `graceMs`. */
  async stop(graceMs: number): Promise<ServerExit> {
    if (this.exit) return this.exit;
    this.signal("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), graceMs);
    });
    const first = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (first !== "late") return first;
    this.signal("SIGKILL");
    return this.exited;
  }

  private signal(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined || this.exit) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  private keep(line: string): void {
    this.lines.push(line);
    if (this.lines.length > KEPT_LINES) this.lines.shift();
  }
}
