// The pool's exit bookkeeping: a worker that crashes soon after its start pushes the next start back by the
// shared backoff (src/http/retry.ts), jittered, so endpoints that crashed together do not restart together.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { WorkerExits } from "../../../../src/platform/workers/pool.js";

/** WorkerExits with its log lines kept, and the random source given. */
function exits(random?: () => number): { exits: WorkerExits; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger({
    level: "INFO",
    json: false,
    destination: { write: (l: string) => lines.push(l) },
  });
  return { exits: new WorkerExits(log, random), lines };
}

/** A worker that started a moment ago: its exit counts as a crash. */
const fresh = (id: string) => ({ id, startedAt: Date.now(), stopping: false });

const nextStarts = (lines: string[]) =>
  lines.map((l) => /next start in (\d+) ms/.exec(l)?.[1]).filter((w) => w !== undefined);

describe("the restart backoff", () => {
  it("doubles from 0.5 s per crash in a row, less the drawn fraction of half of it", () => {
    const draws = [0, 0.5, 0.9, 0.25];
    const { exits: pool, lines } = exits(() => draws.shift()!);
    for (const id of ["w1", "w2", "w3", "w4"]) pool.crashed(fresh(id), 1, "code 1");
    expect(nextStarts(lines)).toStrictEqual(["500", "750", "1100", "3500"]);
  });

  it("with Math.random, two pools crashing alike restart at different times, each within its bounds", () => {
    const waits = Array.from({ length: 50 }, () => {
      const { exits: pool, lines } = exits();
      for (const id of ["w1", "w2", "w3", "w4", "w5"]) pool.crashed(fresh(id), 1, "code 1");
      return Number(nextStarts(lines).at(-1));
    });
    // The fifth crash in a row: a share of 8 s.
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(4000);
      expect(wait).toBeLessThanOrEqual(8000);
    }
    expect(new Set(waits).size).toBeGreaterThan(10);
  });
});
