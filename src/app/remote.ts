// Remote functions in the runtime: FunctionRequest jobs go to the registered functions, others to the handler.
import { defineHandler, type HandlerDefinition } from "../job/definition.js";
import type { Job } from "../job/types.js";
import { isFunctionRequest, RemoteDispatcher, RequestError } from "../payload/remote.js";
import { captureOutput } from "./output.js";
import { registry } from "./registry.js";

let dispatcher: RemoteDispatcher | undefined;
const wrapped = new WeakSet<HandlerDefinition>();

/** One dispatcher per process, so class-mode instances live between jobs. */
function dispatch(input: Parameters<RemoteDispatcher["dispatch"]>[0]) {
  dispatcher ??= new RemoteDispatcher(registry().remotes, { capture: captureOutput });
  return dispatcher.dispatch(input);
}

const NOT_A_REQUEST =
  "This worker runs remote functions: the job input must be a FunctionRequest (function_name, args, kwargs).";

/**
 * A queue handler that answers FunctionRequest jobs with the registered functions and passes any
 * other job to the user's own handler. The FunctionResponse's `error` key is popped into the job's
 * error by the job engine, as runpod-python does (docs/toolkit.md §2.4).
 */
export function withRemoteFunctions(definition: HandlerDefinition | undefined): HandlerDefinition {
  if (definition && wrapped.has(definition)) return definition;
  const own = definition?.fn;
  const fn = (job: Job) => {
    if (isFunctionRequest(job.input)) return dispatch(job.input);
    if (own) return own(job);
    throw new RequestError(NOT_A_REQUEST);
  };
  const result = defineHandler(fn, {
    concurrency: definition?.concurrency ?? 1,
    returnAggregateStream: definition?.returnAggregateStream ?? false,
    refreshWorker: definition?.refreshWorker ?? false,
  });
  wrapped.add(result);
  return result;
}
