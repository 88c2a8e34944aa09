// `npm run build`: the heartbeat thread (src/runtime/queue/heartbeat-thread.ts and its imports) as one CommonJS
// file, dist/heartbeat-thread.cjs. A thread that loads ES modules starts Node's ESM loader in its own isolate,
// ~5 MB of RSS on Node 24 (docs/benchmarks-history.md, issue 29); the worker starts this file when it is there.
import { build } from "esbuild";

await build({
  entryPoints: ["src/runtime/queue/heartbeat-thread.ts"],
  outfile: "dist/heartbeat-thread.cjs",
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  packages: "external",
  logLevel: "warning",
  // import.meta.url is the bundle's own URL: it sits in dist/, so version.ts's ../package.json is the package's.
  define: { "import.meta.url": "__bundle_url" },
  banner: { js: 'const __bundle_url = require("node:url").pathToFileURL(__filename).href;' },
});
