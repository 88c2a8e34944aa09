// The load generator: bounded by its request budget and duration, and stopping, with its reason, at a rate it
// cannot generate.
import { describe, expect, it } from "vitest";
import { coldStarts, integrate } from "../../../../src/toolkit/bench/index.js";
import { generateLoad, type Shot } from "../../../../src/toolkit/bench/load.js";

const answer = (ms: number) => () =>
  new Promise<{ kind: string }>((r) => setTimeout(() => r({ kind: "COMPLETED" }), ms));

describe("load generator", () => {
  it("stops at its request budget, in the open loop and the closed one", async () => {
    const open = await generateLoad(
      { mode: { kind: "rate", perSecond: 200 }, durationMs: 60_000, maxRequests: 15 },
      answer(5),
    );
    expect(open.shots).toHaveLength(15);
    expect(open.stopped).toBeUndefined();
    let most = 0;
    let now = 0;
    const closed = await generateLoad(
      { mode: { kind: "concurrency", callers: 3 }, durationMs: 60_000, maxRequests: 10 },
      async () => {
        most = Math.max(most, ++now);
        await answer(2)();
        now--;
        return { kind: "COMPLETED" };
      },
    );
    expect(closed.shots).toHaveLength(10);
    expect(most).toBe(3);
  });

  it("counts a send that throws as a failure of kind error", async () => {
    const result = await generateLoad(
      { mode: { kind: "concurrency", callers: 1 }, durationMs: 60_000, maxRequests: 2 },
      async () => {
        throw new RangeError("no socket");
      },
    );
    expect(result.shots.map((s) => [s.kind, s.detail])).toEqual([
      ["error", "no socket"],
      ["error", "no socket"],
    ]);
  });

  it("refuses a rate it falls behind on, saying so with its CPU use", async () => {
    // Each send blocks the generator's own thread for 20 ms: it cannot start 1000 a second.
    const result = await generateLoad(
      { mode: { kind: "rate", perSecond: 1_000 }, durationMs: 30_000, maxRequests: 100_000 },
      async () => {
        const until = Date.now() + 20;
        while (Date.now() < until);
        return { kind: "COMPLETED" };
      },
    );
    expect(result.stopped).toMatch(
      /^the generator fell \d+ ms behind 1000\/s: it cannot generate this rate here \(its CPU: [\d.]+ % of one core\); lower --rate or use --concurrency$/,
    );
    expect(result.shots.length).toBeLessThan(1_000);
  });
});

describe("cold starts and sampled worker-seconds", () => {
  const shot = (sentAt: number, workerId: string): Shot => ({
    kind: "COMPLETED",
    sentAt,
    doneAt: sentAt + 1,
    workerId,
  });

  it("is a worker's first job in the run, sent before that worker was seen ready", () => {
    const start = 1_000_000;
    // w1 was ready before the run; w2 became ready at +500 ms; w3 was never seen ready.
    const ready = new Map([
      ["w1", start - 10],
      ["w2", start + 500],
    ]);
    const shots = [shot(0, "w1"), shot(100, "w2"), shot(200, "w2"), shot(600, "w3"), shot(700, "w1")];
    expect(coldStarts(shots, start, ready)).toBe(2); // w2's first (sent at +100) and w3's
    expect(coldStarts([shot(600, "w2")], start, ready)).toBe(0);
  });

  it("holds each look's count until the next", () => {
    const samples = [
      { t: 0, alive: 1, ready: 1, running: 0 },
      { t: 1, alive: 2, ready: 2, running: 1 },
      { t: 3, alive: 0, ready: 0, running: 0 },
    ];
    expect(integrate(samples)).toBe(1 * 1 + 2 * 2);
  });
});
