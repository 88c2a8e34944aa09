// The parts of the OpenTelemetry SDK that otel.ts uses, in one module: `npm run build` replaces its output with
// one esbuild bundle of them (scripts/bundle-lazy.mjs). Imported package by package, their hundreds of CommonJS
// files took ~130 ms of a traced worker's start; the bundle of their ES builds loads in ~20 (issue 29).
export {
  context,
  DiagLogLevel,
  diag,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
export { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
export {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from "@opentelemetry/resources";
export { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
