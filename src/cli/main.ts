#!/usr/bin/env node
// The `flash` command: each subcommand lives in its own module, loaded on demand to keep start-up fast.
import module from "node:module";
import { VERSION } from "../version.js";
import { COMMANDS } from "./commands.js";
import { commandHelp, commandsHelp } from "./options.js";

// Node ≥ 22.1 keeps compiled code on disk between runs: every later worker start is faster.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

const isHelp = (arg: string | undefined) => arg === "--help" || arg === "-h" || arg === "help";

async function usage(): Promise<string> {
  const commands = await Promise.all(Object.values(COMMANDS).map((load) => load()));
  return commandsHelp(commands.map((c) => c.spec));
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === "--version" || name === "-v") {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (!name || isHelp(name)) {
    process.stdout.write(`${await usage()}\n`);
    return name ? 0 : 1;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`flash: unknown command "${name}"\n${await usage()}\n`);
    return 1;
  }
  const command = await load();
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${commandHelp(command.spec)}\n`);
    return 0;
  }
  return command.run(args);
}

// Handler code may leave timers or sockets open: when the command is done, the program is done.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`flash: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
