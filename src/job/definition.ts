// handler() as data: the queue handler and its options (concurrency, streams, refresh, input schema).

import { ArgumentError } from "../flash-error.js";
import type { HandlerFn } from "./types.js";
import { isStandardSchema, type StandardSchemaV1, withInputSchema } from "./validate.js";

/** `concurrency_modifier` of runpod-python: given the current concurrency, returns the wanted one. */
export type ConcurrencyModifier = (current: number) => number;

/** Start-up work (e.g. loading a model): awaited before the worker reports ready or takes its first job. */
export type StartHook = () => void | Promise<void>;

export interface HandlerOptions {
  /** Jobs run at once: a number, or a function asked before every take (default 1). */
  concurrency?: number | ConcurrencyModifier;
  /** Generators: the final output lists every chunk instead of `[]`. */
  returnAggregateStream?: boolean;
  /** Ask the platform to replace this worker after every job (`stopPod`), then exit. */
  refreshWorker?: boolean;
  /** A Standard Schema (zod, valibot, arktype…): the job's input is validated before the handler runs. */
  input?: StandardSchemaV1;
  /**
   * With `input`: the local platform (`flash dev`) also checks each job's input at /run and /runsync and refuses
   * one that fails with a 400 carrying the same message the worker would fail the job with, before it is queued.
   */
  validateAtSubmit?: boolean;
  /**
   * Warm-up: runs once before the first job is taken, awaited, within RUNPOD_INIT_TIMEOUT; a throw
   * reports the worker unhealthy and it exits 1 (docs/protocol.md §10.2).
   */
  onStart?: StartHook;
  /**
   * An output over the platform's result limit (/run 10 MB) is uploaded to the bucket (BUCKET_ENDPOINT_URL or
   * the request's s3Config) and the job returns `{output_url, output_bytes}` instead (docs/protocol.md §11.2).
   */
  offloadOutput?: boolean;
}

/** A registered queue handler: what `handler()` returns and `start()` runs. */
export interface HandlerDefinition<I = unknown, O = unknown> {
  readonly kind: "handler";
  readonly fn: HandlerFn<I, O>;
  readonly concurrency: number | ConcurrencyModifier;
  readonly returnAggregateStream: boolean;
  readonly refreshWorker: boolean;
  /** Warm-up hooks, run in order before the first take. */
  readonly startHooks: readonly StartHook[];
  readonly offloadOutput: boolean;
}

export function defineHandler<I, O>(
  fn: HandlerFn<I, O>,
  options: HandlerOptions = {},
): HandlerDefinition<I, O> {
  if (typeof fn !== "function")
    throw new ArgumentError(`handler(fn): fn must be a function, got ${typeof fn}`);
  const { concurrency = 1 } = options;
  if (typeof concurrency !== "function" && !isValidConcurrency(concurrency)) {
    throw new ArgumentError(
      `handler options: concurrency must be a whole number >= 1 or a function, got ${String(concurrency)}`,
    );
  }
  if (options.onStart !== undefined && typeof options.onStart !== "function") {
    throw new ArgumentError(`handler options: onStart must be a function, got ${typeof options.onStart}`);
  }
  if (options.input !== undefined && !isStandardSchema(options.input)) {
    throw new ArgumentError(
      "handler options: input must be a Standard Schema (a zod, valibot or arktype schema, or any object with a `~standard` property)",
    );
  }
  return {
    kind: "handler",
    fn: options.input
      ? (withInputSchema(fn as HandlerFn, options.input, options.validateAtSubmit === true) as HandlerFn<
          I,
          O
        >)
      : fn,
    concurrency,
    returnAggregateStream: options.returnAggregateStream ?? false,
    refreshWorker: options.refreshWorker ?? false,
    startHooks: options.onStart ? [options.onStart] : [],
    offloadOutput: options.offloadOutput ?? false,
  };
}

export function isValidConcurrency(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1;
}
