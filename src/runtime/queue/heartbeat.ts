// The heartbeat: pings with the in-flight job ids from its own thread, so a busy handler cannot stop them.
import { existsSync } from "node:fs";
import type { Worker } from "node:worker_threads";
import type { Logger } from "../../log/index.js";
import type { WorkerConfig } from "../config/options.js";
import { JobBoard } from "./job-board.js";
import type { JobIdsListener } from "./worker.js";

/** Pings faster than this are clamped: runpod-python turns values under 1000 ms into a hot loop (docs/protocol.md §12.15). */
export const PING_INTERVAL_FLOOR_MS = 100;

/** What the heartbeat thread is started with. */
export interface HeartbeatData {
  config: WorkerConfig;
  intervalMs: number;
  /** The in-flight job ids, shared memory (JobBoard). */
  board: SharedArrayBuffer;
}

/** A new board when the ids outgrew the old one; stop at shutdown. */
export type HeartbeatMessage = { type: "board"; board: SharedArrayBuffer } | { type: "stop" };

export interface Heartbeat extends JobIdsListener {
  stop(): Promise<void>;
}

/**
 * Starts the heartbeat on its own thread, so pings go on while a handler blocks the main event loop
 * (runpod-python PR #425 moved its ping to a separate process for the same reason).
 */
export function startHeartbeat(config: WorkerConfig, log: Logger): Heartbeat | undefined {
  const { platform } = config;
  if (!platform.pingUrl || !platform.apiKey || !platform.workerIdFromEnv) {
    const missing = [
      !platform.pingUrl && "RUNPOD_WEBHOOK_PING",
      !platform.apiKey && "RUNPOD_AI_API_KEY",
      !platform.workerIdFromEnv && "RUNPOD_POD_ID",
    ].filter(Boolean);
    log.info(`Heartbeat off: ${missing.join(", ")} not set.`);
    return undefined;
  }
  const intervalMs = Math.max(PING_INTERVAL_FLOOR_MS, platform.pingIntervalMs);
  const file = threadFile();
  let board = new JobBoard();
  let stopping = false;
  let thread: Worker;
  // Loaded here, once the first job-take is on its way, rather than with this module before it.
  const { Worker: Thread } = process.getBuiltinModule("node:worker_threads");

  // A small heap is plenty for a ping loop and keeps the worker's idle memory down.
  const spawnThread = () => {
    thread = new Thread(file, {
      workerData: { config, intervalMs, board: board.buffer } satisfies HeartbeatData,
      resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 32 },
    });
    thread.unref();
    thread.on("error", (err) => log.error(`Heartbeat thread failed: ${err.message}`));
    // The platform kills workers that stop pinging: a heartbeat that dies is started again.
    thread.on("exit", (code) => {
      if (stopping) return;
      log.error(`Heartbeat thread exited (code ${code}); restarting it.`);
      setTimeout(spawnThread, 100).unref();
    });
  };
  spawnThread();
  log.debug(`Heartbeat every ${intervalMs} ms.`);
  return {
    update(ids) {
      if (board.write(ids)) return;
      board = JobBoard.grown(ids);
      thread.postMessage({ type: "board", board: board.buffer } satisfies HeartbeatMessage);
    },
    async stop() {
      stopping = true;
      thread.postMessage({ type: "stop" } satisfies HeartbeatMessage);
      await thread.terminate();
    },
  };
}

/**
 * The thread's code: dist/heartbeat-thread.cjs, the CommonJS bundle `npm run build` makes of heartbeat-thread.ts
 * (~5 MB less RSS on Node 24 than a thread loading ES modules), else the module itself (from src/, in tests).
 */
function threadFile(): URL {
  if (import.meta.url.endsWith(".ts")) return new URL("./heartbeat-thread.ts", import.meta.url);
  const bundle = new URL("../../heartbeat-thread.cjs", import.meta.url);
  return existsSync(bundle) ? bundle : new URL("./heartbeat-thread.js", import.meta.url);
}
