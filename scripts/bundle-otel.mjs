// `npm run build`: dist/trace/sdk.js, the OpenTelemetry SDK's parts that src/trace/otel.ts uses, as one ES module in
// place of sdk.ts's output. Imported package by package, the SDK loads as hundreds of CommonJS files; bundled from
// the packages' ES builds, which esbuild tree-shakes, it loads in a fraction of the time (docs/benchmarks-history.md,
// issue 29). Only a traced worker (OTEL_EXPORTER_OTLP_ENDPOINT set) loads it.
import { build } from "esbuild";

await build({
  entryPoints: ["src/trace/sdk.ts"],
  outfile: "dist/trace/sdk.js",
  allowOverwrite: true,
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // The packages' "module" builds: ES modules esbuild can tree-shake (their "main" builds are CommonJS).
  mainFields: ["module", "main"],
  sourcemap: false,
  // The packages with only CommonJS builds require() node's modules; an ES module has no require of its own.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);',
  },
  // One @opentelemetry/api for the SDK and the app: a tracer the app takes before tracing starts is a proxy of
  // its copy of the API, and only that copy's global provider, once set, gives it a real delegate.
  external: ["@opentelemetry/api"],
  logLevel: "warning",
});
