// The process-wide registry of the app the user's code registered, shared by every copy of the package.
import type { HandlerDefinition } from "../job/definition.js";
import type { RemoteTarget } from "../payload/remote.js";
import { VERSION } from "../version.js";
import type { Endpoint } from "./endpoint.js";

/** An app the runtime can start: a queue handler, or an Endpoint (load-balanced, or wrapping a queue handler). */
export type App = HandlerDefinition | Endpoint;

interface Registry {
  /** The last app the user's code registered. */
  app?: App;
  /** Set by `flash` and by `flash-worker/testing`: they start apps themselves, so handler() must not. */
  managed: boolean;
  /** Every version of this package that has loaded in the process: more than one means two copies. */
  versions: Set<string>;
  /** Functions and classes registered with remote(), called by name from Python. */
  remotes: Map<string, RemoteTarget>;
  autoStartScheduled?: boolean;
}

// Kept on globalThis so the CLI and a user's own copy of the package share one registry.
const KEY = Symbol.for("flash-worker.registry");
const holder = globalThis as { [KEY]?: Registry };

export function registry(): Registry {
  holder[KEY] ??= { managed: false, versions: new Set(), remotes: new Map() };
  holder[KEY].versions.add(VERSION);
  return holder[KEY];
}

/** A warning when the app imported another copy of the package than the one running it (e.g. in an image). */
export function versionMismatch(): string | undefined {
  const { versions } = registry();
  if (versions.size <= 1) return undefined;
  const others = [...versions].filter((v) => v !== VERSION);
  return `The app imports flash-worker ${others.join(", ")}, but the runtime running it is ${VERSION}; handlers registered with either work, but behaviour follows ${VERSION}. Remove flash-worker from the app's dependencies to use the runtime's copy, or pin the same version.`;
}
