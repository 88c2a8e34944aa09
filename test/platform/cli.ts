// Runs `flash dev` / `flash serve` as a user would, in a child process, and reads what it prints.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FLASH } from "../process.js";
import { eventually, type JobJson } from "./helpers.js";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface FlashProcess {
  child: ChildProcess;
  lines: string[];
  /** The platform's base URL, from the ready line. */
  url: string;
  apiKey: string;
  /** `${url}/v2/<endpoint>` of the first endpoint printed. */
  endpointUrl: string;
  /** fetch under the endpoint with the Bearer key. */
  call(path: string, body?: unknown): Promise<JobJson>;
  /** Waits for a printed line matching `pattern`. */
  waitForLine(pattern: RegExp, what: string, timeoutMs?: number): Promise<string>;
  /** Worker process ids from the pool's "starting (pid N)" lines, by worker id. */
  workerPids(): Map<string, number>;
  /** SIGINT, as Ctrl-C; anything still running afterwards is killed. Resolves to the exit code. */
  stop(): Promise<number | null>;
}

/** `detached`: the command leads a process group of its own, as a shell's foreground job does (for Ctrl-C tests). */
export async function startFlash(
  command: "dev" | "serve",
  args: string[],
  options: { detached?: boolean } = {},
): Promise<FlashProcess> {
  const child = spawn(process.execPath, [FLASH, command, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "INFO", FORCE_COLOR: "0" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached === true,
  });
  const lines: string[] = [];
  let partial = "";
  const collect = (chunk: Buffer) => {
    const parts = (partial + chunk.toString("utf8")).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));

  const waitForLine = (pattern: RegExp, what: string, timeoutMs = 60_000) =>
    eventually(() => lines.find((l) => pattern.test(l)), what, timeoutMs);
  const workerPids = () => {
    const pids = new Map<string, number>();
    for (const line of lines) {
      const match = /Worker:(\w+) \| starting \(pid (\d+)\)/.exec(line);
      if (match) pids.set(match[1]!, Number(match[2]));
    }
    return pids;
  };

  let ready: string;
  try {
    ready = await waitForLine(/Ready\. Try: curl/, "the ready line");
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${(err as Error).message}; output:\n${lines.join("\n")}`);
  }
  // a queue endpoint's curl posts to /runsync, a chat-completion worker's to its OpenAI base URL
  const endpointUrl = /curl -s -X POST (\S+?)\/(?:runsync|openai\/v1\/chat\/completions) /.exec(ready)![1]!;
  const apiKey = /Authorization: Bearer ([^']+)'/.exec(ready)![1]!;
  const url = endpointUrl.replace(/\/v2\/[^/]+$/, "");
  return {
    child,
    lines,
    url,
    apiKey,
    endpointUrl,
    waitForLine,
    workerPids,
    async call(path, body) {
      const response = await fetch(`${endpointUrl}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await response.json()) as JobJson;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGINT");
      const timer = setTimeout(() => child.kill("SIGKILL"), 45_000);
      const code = await exited;
      clearTimeout(timer);
      // Workers of a platform that did not shut down cleanly must not outlive the test.
      for (const pid of workerPids().values()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Already gone: the normal case.
        }
      }
      return code;
    },
  };
}
