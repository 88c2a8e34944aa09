// keepTickShapes(): one micro-optimisation, alone in its module. What it buys, measured A/B (test/bench/lb-ab.ts,
// the route server under wrk, both copies at once, Node 20): 7 % less server CPU per request (issue 45); the
// queue worker's no-op jobs (npm run bench:ab) show none (0.99–1.01×). Why: docs/benchmarks-history.md, issue 29.
import { executionAsyncResource } from "node:async_hooks";

/** One of node's nextTick records, held for the life of the process (keepTickShapes). */
let keptTick: object | undefined;

/**
 * Holds one of node's nextTick records for good. V8 keeps those records' hidden classes only while one is alive:
 * a full collection at start-up, with none queued, drops them, the first requests build them again, and
 * nextTick's property stores, which still remember the dropped ones, turn megamorphic for the life of the
 * process, ~5 µs more per HTTP request (docs/benchmarks-history.md, issue 29). A record kept alive keeps its classes.
 */
export function keepTickShapes(): void {
  if (keptTick !== undefined) return;
  // Inside a nextTick callback the execution resource is that callback's record.
  process.nextTick(() => {
    keptTick = executionAsyncResource();
  });
}
