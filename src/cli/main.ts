#!/usr/bin/env node
// The `flash` command: each subcommand lives in its own module, loaded on demand to keep start-up fast.
import module from "node:module";

// Node ≥ 22.1 keeps compiled code on disk between runs: every later worker start is faster.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

interface Command {
  /** Runs the command with the arguments after its name; resolves to the process exit code. */
  run(args: string[]): Promise<number>;
  summary: string;
}

const COMMANDS: Record<string, () => Promise<Command>> = {
  run: () => import("./run.js"),
  start: () => import("./start.js"),
  dev: () => import("./dev.js"),
  serve: () => import("./serve.js"),
  login: () => import("./login.js"),
  build: () => import("./build.js"),
  deploy: () => import("./deploy.js"),
  undeploy: () => import("./undeploy.js"),
  endpoints: () => import("./endpoints.js"),
  logs: () => import("./logs.js"),
  doctor: () => import("./doctor.js"),
  image: () => import("./image.js"),
};

function usage(): string {
  return [
    "usage: flash <command> [options]",
    "",
    "commands:",
    "  run <file> [--test-input JSON]   run one job through the handler locally and print the result",
    "  start [file]                     the production entry: the mode comes from the environment",
    "  dev <file> [--host H] [--port P] [--api-key K] [--workers MIN,MAX]",
    "                                   the local platform on 127.0.0.1:8000 with workers for the file",
    "  serve [endpoint_id...] [--host H] [--port P] [--api-key K]",
    "                                   the local platform alone; workers started elsewhere connect to it",
    "  login [--api-key K] [--api-url URL] [--no-verify]",
    "                                   check an API key against the API, then save it in ~/.runpod/config.toml",
    "  build [files...] [--node-version V]",
    "                                   bundle the app and its endpoint manifest into .flash/artifact.tar.gz",
    "  deploy --image REGISTRY/NAME:TAG [files...] [--api-url URL] [--base-image I] [--tls-verify=false]",
    "         [--registry-auth] [--api-key K] [--node-version V]",
    "                                   build and push the app's image, create or update its endpoints (REST v2)",
    "  undeploy NAME... | --all [--yes] delete endpoints (asks first unless --yes)",
    "  endpoints                        list the endpoints and their workers",
    "  logs ENDPOINT [--worker ID] [--follow]",
    "                                   a deployed endpoint's worker logs",
    "  doctor [file] [--json]           run every fitness check (system, GPU, the file's own) and list the GPUs",
    "  image build [-t TAG] [DIR] | image run [-e K=V] IMAGE [ARG...]",
    "                                   docker build / docker run with buildah: ENTRYPOINT, CMD, signals kept",
    "",
    "The API is https://api.runpod.io unless --api-url or RUNPOD_API_URL names another (flash serve's, say).",
  ].join("\n");
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(`${usage()}\n`);
    return name ? 0 : 1;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`flash: unknown command "${name}"\n${usage()}\n`);
    return 1;
  }
  const command = await load();
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
