// Runs the real `flash` command as a child process, the way users and images run it.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const FLASH = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));

export interface Flash {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exited: Promise<number | null>;
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

// Children left running by a failed test are killed when the test process ends.
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

/** `flash` from this checkout's dist/, or the CLI at `cli` (an installed package's). */
export function flash(args: string[], env: Record<string, string> = {}, cwd = ROOT, cli = FLASH): Flash {
  const child = spawn(process.execPath, [cli, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const listeners = new Set<() => void>();
  const collect = (into: string[]) => {
    let partial = "";
    return (chunk: Buffer) => {
      const parts = (partial + chunk.toString("utf8")).split("\n");
      partial = parts.pop() ?? "";
      into.push(...parts);
      for (const l of listeners) l();
    };
  };
  child.stdout.on("data", collect(stdout));
  child.stderr.on("data", collect(stderr));
  children.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return {
    child,
    stdout,
    stderr,
    exited,
    waitForLine(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = stdout.find((l) => pattern.test(l));
          if (line === undefined) return false;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(line);
          return true;
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no line matching ${pattern} in:\n${stdout.join("\n")}\n${stderr.join("\n")}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

/** Runs `flash` to completion and returns its exit code and output. */
export async function flashRun(args: string[], env: Record<string, string> = {}, cwd = ROOT, cli = FLASH) {
  const run = flash(args, env, cwd, cli);
  // "exit" can come before the last output is read: wait for the streams to close too.
  const closed = new Promise((resolve) => run.child.once("close", resolve));
  const code = await run.exited;
  await closed;
  return { code, stdout: run.stdout.join("\n"), stderr: run.stderr.join("\n") };
}

/** A port nothing listens on right now, for servers a child process starts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}
