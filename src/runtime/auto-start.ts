// `node handler.js` with no `flash`: registering an app starts the runtime unless something claims it first.
import { registry } from "../app/registry.js";

/**
 * When the user's file is the program (`node handler.js`), registering an app starts the runtime (docs/design.md
 * §2.1). Deferred, so that `flash` or `flash-worker/testing` importing the file claims it first; a program run from
 * node_modules (a test runner, any tool) that imports the file never starts it.
 */
export function scheduleAutoStart(): void {
  const reg = registry();
  if (reg.autoStartScheduled) return;
  reg.autoStartScheduled = true;
  setImmediate(() => {
    if (reg.managed || programIsATool(process.argv[1])) return;
    reg.managed = true;
    void launch().then(exit, fail);
  });
}

/** Whether the program's main file is an installed package's (vitest's fork, jest, mocha…), not the user's own. */
function programIsATool(main: string | undefined): boolean {
  return main !== undefined && /[\\/]node_modules[\\/]/.test(main);
}

async function launch(): Promise<number> {
  const reg = registry();
  let app = reg.app;
  if (!app && reg.remotes.size > 0) {
    const { withRemoteFunctions } = await import("../app/remote.js");
    app = withRemoteFunctions(undefined);
  }
  if (!app) return 0;
  const { startApp } = await import("./start.js");
  return startApp(app);
}

function exit(code: number): void {
  process.exitCode = code;
  // Handler code may leave timers or sockets open; the runtime's end is the program's end.
  setImmediate(() => process.exit(code));
}

function fail(err: unknown): void {
  process.stderr.write(`flash-worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  exit(1);
}
