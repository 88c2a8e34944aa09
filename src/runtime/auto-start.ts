// `node handler.js` with no `flash`: registering an app starts the runtime unless something claims it first.
import { registry } from "../app/registry.js";

/**
 * When the user's file is the program (`node handler.js`), registering an app starts the runtime.
 * Deferred, so that `flash`, `flash-worker/testing` or a test runner importing the file claims it first.
 */
export function scheduleAutoStart(): void {
  const reg = registry();
  if (reg.autoStartScheduled) return;
  reg.autoStartScheduled = true;
  setImmediate(() => {
    if (reg.managed || process.env.VITEST) return;
    reg.managed = true;
    void launch().then(exit, fail);
  });
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
