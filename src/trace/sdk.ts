// The parts of the OpenTelemetry SDK that otel.ts uses, in one module: `npm run build` replaces its output with
// one esbuild bundle of them (scripts/bundle-otel.mjs), all but @opentelemetry/api, which stays the package the
// app's own spans use. Imported package by package, the SDK's hundreds of CommonJS files took 60–100 ms more of a
// traced worker's start (issue 29).
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
