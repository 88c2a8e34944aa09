// `npm run build`: the packages the worker loads only on demand, each as one ES module in place of its re-export
// module's output. Imported package by package they load as dozens or hundreds of CommonJS files; bundled from their
// ES builds (tree-shaken where they have them) they load in a fraction of the time (docs/benchmarks.md, issue 29):
// - dist/trace/sdk.js, the OpenTelemetry SDK's parts src/trace/otel.ts uses (tracing on), @opentelemetry/api aside;
// - dist/log/pino.js, pino (LOG_FORMAT=json).
import { build } from "esbuild";

for (const module of ["trace/sdk", "log/pino"]) {
  await build({
    entryPoints: [`src/${module}.ts`],
    outfile: `dist/${module}.js`,
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
}
