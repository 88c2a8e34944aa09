// pino, which LOG_FORMAT=json writes its records with, in one module: `npm run build` replaces its output with one
// esbuild bundle of the package and its dependencies (scripts/bundle-lazy.mjs): their ~20 CommonJS files took
// ~15 ms more of a worker's start (issue 29).
export { pino, stdTimeFunctions } from "pino";
