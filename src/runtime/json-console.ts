// With LOG_FORMAT=json, the app's console.* calls become records too (the method's level, the running job's id):
// a log tool reading the worker's stdout gets one JSON object per line and nothing else.
import { format } from "node:util";
import { currentJob } from "../job/scope.js";
import type { Logger } from "../log/index.js";

const LEVELS = { debug: "debug", log: "info", info: "info", warn: "warn", error: "error" } as const;
type Method = keyof typeof LEVELS;

/** Routes console.debug/log/info/warn/error through `log` for the rest of the process. */
export function consoleAsRecords(log: Logger): void {
  const outside = log.child({ subject: "console" });
  for (const method of Object.keys(LEVELS) as Method[]) {
    console[method] = (...args: unknown[]) => {
      const job = currentJob();
      const target = job ? log.child({ requestId: job.job.id }) : outside;
      target[LEVELS[method]](format(...args));
    };
  }
}
