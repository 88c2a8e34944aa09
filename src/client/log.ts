// The toolkit's logger: LOG_LEVEL through the one config parser, text lines on stderr.
import { OPTIONS, parseConfig } from "../config/index.js";
import { createLogger, type Logger, type LogLevel } from "../log/index.js";

/** LOG_LEVEL (or RUNPOD_LOG_LEVEL) through the one options parser; a bad value keeps INFO, as the toolkit does. */
export function logLevelFrom(env: Record<string, string | undefined> = process.env): LogLevel {
  // Only the level's variables: another bad variable (PORT=x) is not the toolkit's business.
  const levelEnv = Object.fromEntries(OPTIONS.logLevel.env.map((name) => [name, env[name]]));
  try {
    return parseConfig([], levelEnv).config.logLevel;
  } catch {
    return "INFO";
  }
}

/** The toolkit's text log on stderr, so a command's own output on stdout stays clean. */
export function toolkitLogger(env: Record<string, string | undefined> = process.env): Logger {
  return createLogger({ level: logLevelFrom(env), json: false, destination: process.stderr });
}
