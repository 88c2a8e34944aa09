// The tracing hooks the runtime calls: `tracing` stays undefined unless an OTLP endpoint variable is set, so the
// default path pays one check and never loads the OpenTelemetry SDK (docs/design.md §4 item 9).
import type { ServerResponse } from "node:http";
import type { Logger } from "../log/index.js";
import { setTraceIdSource } from "../log/trace.js";

/** Span attribute values: what OTLP carries. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** The span of one queue job; its children are the handler run, the result post and the stream posts. */
export interface JobSpan {
  /** Runs the handler with its own span active: spans the handler starts through @opentelemetry/api are its children. */
  handler<T>(run: () => Promise<T>): Promise<T>;
  /** A child of the job span around `run` (a result or stream post); its retries are events on it. */
  child<T>(name: string, run: () => Promise<T>): Promise<T>;
  /** Ends the job span with the job's final status (COMPLETED, FAILED, CANCELLED). */
  end(status: string): void;
}

/** A job as job-take gave it: its id, and `delayTime` where the platform sent one. */
export interface TracedJob {
  id: string;
  [field: string]: unknown;
}

/** Who runs the job: the span's attributes. */
export interface JobIdentity {
  workerId: string;
  endpointId?: string;
}

export interface Tracing {
  /** Starts the job's span and runs `run` with it active, so the job's log lines carry its trace id. */
  job<T>(raw: TracedJob, who: JobIdentity, run: (span: JobSpan) => Promise<T>): Promise<T>;
  /** A span around `run` (ended when it returns, or settles if it returns a promise), a child of the active span. */
  span<T>(name: string, attributes: SpanAttributes, run: () => T): T;
  /** An event on the active span, e.g. a post's retry. */
  event(name: string, attributes: SpanAttributes): void;
  /**
   * A load-balanced request's span, continuing the caller's trace from its `traceparent` header; `run` is the
   * route with the span active; the span ends when the response is finished or its connection closes.
   */
  request<T>(
    name: string,
    attributes: SpanAttributes,
    headers: Record<string, string | string[] | undefined>,
    response: ServerResponse,
    run: () => T,
  ): T;
  /** Sends the spans not yet sent and stops the exporter: called once before the process exits. */
  flush(): Promise<void>;
}

/** Set by startTracing() when tracing is on; undefined otherwise, and then no call site does anything else. */
export let tracing: Tracing | undefined;

/** The standard variables that turn tracing on (OpenTelemetry's OTLP exporter specification). */
export const TRACES_ENDPOINT_VARIABLES = [
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
] as const;

/** Whether the environment asks for traces: an OTLP endpoint is set and OTEL_SDK_DISABLED is not true. */
export function tracingWanted(env: Record<string, string | undefined>): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  return TRACES_ENDPOINT_VARIABLES.some((name) => (env[name] ?? "").trim() !== "");
}

/** Loads the SDK and starts exporting when the environment asks for it; otherwise does nothing at all. */
export async function startTracing(env: Record<string, string | undefined>, log: Logger): Promise<void> {
  if (tracing || !tracingWanted(env)) return;
  const { createTracing } = await import("./otel.js");
  const started = createTracing(log);
  tracing = started.tracing;
  setTraceIdSource(started.traceId);
}

/** Sends the spans still buffered and stops tracing; a no-op when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stopping = tracing;
  if (!stopping) return;
  tracing = undefined;
  setTraceIdSource(undefined);
  await stopping.flush();
}
