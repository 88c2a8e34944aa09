import { type Config, ConfigError, parseConfig } from "../config/index.js";
import { isFlashError } from "../errors.js";

/** Flags of login/build/deploy through the one options parser; anything else starting with "-" is refused. */
export function parseToolkitArgs(
  command: string,
  args: readonly string[],
  allowed: readonly string[],
  env: Record<string, string | undefined> = process.env,
): { config: Config; positional: string[] } {
  const { config, rest } = parseConfig(args, env);
  const unknown = rest.find((arg) => arg.startsWith("-"));
  if (unknown)
    throw new ConfigError(`Unknown option ${unknown} (flash ${command} takes ${allowed.join(", ")})`);
  return { config, positional: rest };
}

/** The toolkit's error line: `✗ <message>` on stderr (flash-toolkit §8.1). */
export function fail(message: string): number {
  process.stderr.write(`✗ ${message}\n`);
  return 1;
}

/** Errors the user fixes in their project or command line: printed as one `✗` message, no stack. */
export function isUserError(err: unknown): err is Error {
  return isFlashError(err, "BUILD_FAILED", "CONFIG_INVALID", "LOAD_FAILED", "ENDPOINT_CONFIG_INVALID");
}
