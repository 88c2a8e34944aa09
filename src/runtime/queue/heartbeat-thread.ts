// The heartbeat's own thread: pings every interval with the in-flight job ids the main thread last wrote.
import { writeSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { describeError } from "../../log/describe.js";
import { type Logger, openLogger } from "../../log/index.js";
import type { PlatformClient } from "./client.js";
import type { HeartbeatData, HeartbeatMessage } from "./heartbeat.js";
import { createPlatformClient } from "./http-client.js";
import { JobBoard } from "./job-board.js";

const { config, intervalMs, board: shared } = workerData as HeartbeatData;
let board = new JobBoard(shared);
// Written straight to fd 1: the thread's process.stdout is relayed through the main thread, which may be busy.
// No top-level await: `npm run build` also bundles this thread as CommonJS (scripts/bundle-heartbeat.mjs).
const logger = openLogger({
  level: config.logLevel,
  json: config.logJson,
  format: config.logFormat,
  destination: {
    write: (line: string) => {
      try {
        writeSync(1, line);
      } catch {
        // stdout closed (EPIPE): pings matter more than their log lines.
      }
    },
  },
});

let timer: NodeJS.Timeout | undefined;
let stopped = false;

async function beat(log: Logger, client: PlatformClient): Promise<void> {
  const started = performance.now();
  const jobIds = board.read();
  try {
    const status = await client.ping(jobIds, intervalMs * 2);
    log.debug(`Ping answered ${status} (${jobIds.length} job(s) in flight).`);
  } catch (err) {
    log.error(`Ping Request Error: ${describeError(err)}, attempting to restart ping.`);
  }
  if (!stopped)
    timer = setTimeout(beat, Math.max(0, intervalMs - (performance.now() - started)), log, client);
}

parentPort?.on("message", (message: HeartbeatMessage) => {
  if (message.type === "board") board = new JobBoard(message.board);
  else {
    stopped = true;
    clearTimeout(timer);
    parentPort?.close();
  }
});

void logger.then((opened) => {
  if (stopped) return;
  const log = opened.child({ subject: "heartbeat" });
  return beat(log, createPlatformClient({ platform: config.platform, log }));
});
