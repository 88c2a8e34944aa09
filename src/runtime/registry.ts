import type { HandlerDefinition } from "../job/definition.js";
import { VERSION } from "../version.js";

/** An app the runtime can start; load-balanced endpoints join this union. */
export type App = HandlerDefinition;

interface Registry {
  /** The last app the user's code registered. */
  app?: App;
  /** Set by `flash` and by `flash-worker/testing`: they start apps themselves, so handler() must not. */
  managed: boolean;
  /** The version that created the registry, to detect a second copy of the package. */
  version: string;
}

// Kept on globalThis so the CLI and a user's own copy of the package share one registry.
const KEY = Symbol.for("flash-worker.registry");
const holder = globalThis as { [KEY]?: Registry };

export function registry(): Registry {
  holder[KEY] ??= { managed: false, version: VERSION };
  return holder[KEY];
}
