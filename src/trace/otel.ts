// The OpenTelemetry SDK behind the tracing hooks: OTLP/HTTP export configured by the standard OTEL_* variables.
// Imported only by startTracing() when an OTLP endpoint is set, so the default worker never loads it.
import type { Context, Span } from "@opentelemetry/api";
import { describeError, type Logger } from "../log/index.js";
import { VERSION } from "../version.js";
import type { JobSpan, SpanAttributes, Tracing } from "./index.js";
import {
  BatchSpanProcessor,
  context,
  DiagLogLevel,
  defaultResource,
  detectResources,
  diag,
  envDetector,
  NodeTracerProvider,
  OTLPTraceExporter,
  propagation,
  resourceFromAttributes,
  SpanKind,
  SpanStatusCode,
  trace,
} from "./sdk.js";

/** The service name when OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name none. */
const DEFAULT_SERVICE_NAME = "flash-worker";
/** Statuses that end a job's span as an error. */
const FAILED_STATUSES = new Set(["FAILED", "TIMED_OUT"]);

/** Marks a span as failed with the error it ended on. */
function failed(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: describeError(err) });
}

/** Runs `run` with `span` active and ends it when `run` returns, or settles if it returns a promise. */
function within<T>(span: Span, parent: Context, run: () => T): T {
  let result: T;
  try {
    result = context.with(trace.setSpan(parent, span), run);
  } catch (err) {
    failed(span, err);
    span.end();
    throw err;
  }
  if (!(result instanceof Promise)) {
    span.end();
    return result;
  }
  return result.then(
    (value: unknown) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      failed(span, err);
      span.end();
      throw err;
    },
  ) as T;
}

/** Starts the SDK (tracer provider, W3C propagation, OTLP/HTTP exporter) and returns the hooks it fills. */
export function createTracing(log: Logger): { tracing: Tracing; traceId: () => string | undefined } {
  const traceLog = log.child({ subject: "tracing" });
  // The SDK's own complaints (a collector that cannot be reached, a bad variable) go to the worker's log.
  diag.setLogger(
    {
      error: (message) => traceLog.warn(message),
      warn: (message) => traceLog.warn(message),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  );
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the defaults.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": DEFAULT_SERVICE_NAME, "service.version": VERSION }))
    .merge(detectResources({ detectors: [envDetector] }));
  // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT/HEADERS/TIMEOUT; the provider OTEL_TRACES_SAMPLER(_ARG).
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // Global: the handler's own @opentelemetry/api calls find this provider, the async context and W3C propagation.
  provider.register();
  const tracer = trace.getTracer("flash-worker", VERSION);
  traceLog.info("Exporting traces over OTLP/HTTP.");

  const tracing: Tracing = {
    job(raw, who, run) {
      const attributes: SpanAttributes = { "flash.job.id": raw.id, "flash.worker.id": who.workerId };
      if (who.endpointId) attributes["flash.endpoint.id"] = who.endpointId;
      if (typeof raw.delayTime === "number") attributes["flash.job.delay_ms"] = raw.delayTime;
      const parent = context.active();
      const span = tracer.startSpan("job", { kind: SpanKind.CONSUMER, attributes }, parent);
      const jobContext = trace.setSpan(parent, span);
      const jobSpan: JobSpan = {
        handler: (work) => within(tracer.startSpan("handler", {}, jobContext), jobContext, work),
        child: (name, work) => within(tracer.startSpan(name, {}, jobContext), jobContext, work),
        end(status) {
          span.setAttribute("flash.job.status", status);
          if (FAILED_STATUSES.has(status)) span.setStatus({ code: SpanStatusCode.ERROR, message: status });
          span.end();
        },
      };
      return context.with(jobContext, () => run(jobSpan));
    },
    span(name, attributes, run) {
      const parent = context.active();
      return within(tracer.startSpan(name, { attributes }, parent), parent, run);
    },
    event(name, attributes) {
      trace.getActiveSpan()?.addEvent(name, attributes);
    },
    request(name, attributes, headers, response, run) {
      // W3C traceparent/tracestate: the caller's trace goes on in this worker.
      const parent = propagation.extract(context.active(), headers);
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
      const ended = () => {
        span.setAttribute("http.response.status_code", response.statusCode);
        if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        if (!response.writableFinished) span.addEvent("connection closed before the answer was sent");
        span.end();
      };
      response.once("close", ended);
      return context.with(trace.setSpan(parent, span), run);
    },
    async flush() {
      try {
        await provider.shutdown();
      } catch (err) {
        traceLog.warn(`Could not send the last spans: ${describeError(err)}`);
      }
    },
  };
  const traceId = () => trace.getActiveSpan()?.spanContext().traceId;
  return { tracing, traceId };
}
