import { type Config, ConfigError, parseConfig } from "../config/index.js";

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
