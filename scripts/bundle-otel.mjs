// `npm run build`: dist/trace/sdk.js (the OpenTelemetry SDK's parts that src/trace/otel.ts uses) as one ES module.
// The packages' ES builds, tree-shaken: ~220 KB that load in ~20 ms, where importing the packages took ~130 ms of a
// traced worker's start (docs/benchmarks.md, issue 29). Only a traced worker loads it.
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
  // The few packages with only CommonJS builds require() node's modules; an ES module has no require of its own.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);',
  },
  logLevel: "warning",
});
