// A queue handler backed by a model server: OpenAI passthrough jobs go to the server, the rest to the app's function.
import type { HandlerDefinition } from "../../job/definition.js";
import type { HandlerFn } from "../../job/types.js";
import type { ModelServer } from "./declare.js";
import { isOpenAIInput, openaiPassthrough } from "./passthrough.js";

/** A handler definition that runs with a model server beside it. */
export type ServerBackedDefinition<I = unknown, O = unknown> = HandlerDefinition<I, O> & {
  readonly server: ModelServer;
};

/** The definition with `server` attached and, unless the server's `openai: false`, the passthrough in front. */
export function withServer<D extends HandlerDefinition>(
  definition: D,
  server: ModelServer,
): D & { server: ModelServer } {
  const fn = definition.fn as HandlerFn;
  const routed: HandlerFn = server.settings.openai
    ? (job) => (isOpenAIInput(job.input) ? openaiPassthrough(server, job.input) : fn(job))
    : fn;
  // Marked as app/openai.ts marks openaiCompatible() handlers (a global symbol), so `flash dev` prints the OpenAI base URL.
  if (server.settings.openai)
    Object.defineProperty(routed, Symbol.for("flash-worker.openai-compatible"), { value: true });
  return { ...definition, fn: routed, server };
}

/** The model server an app declared, if any. */
export function serverOf(app: object): ModelServer | undefined {
  return (app as { server?: ModelServer }).server;
}
