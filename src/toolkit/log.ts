// The toolkit's logger: LOG_LEVEL through the options parser, text lines on stderr.
import { createLogger, type Logger } from "../log/index.js";
import { logLevelFrom } from "../options/index.js";

/** The toolkit's text log on stderr, so a command's own output on stdout stays clean. */
export function toolkitLogger(env: Record<string, string | undefined> = process.env): Logger {
  return createLogger({ level: logLevelFrom(env), json: false, destination: process.stderr });
}
