// The cost estimate's arithmetic against RunPod's catalog answer (the OpenAPI document's GET /v2/catalog/gpus
// example: an RTX 4090 in pool ADA_24 at $1.1 per GPU-hour serverless).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type CatalogPrice, gpuCost, pickGpus } from "../../../../src/toolkit/bench/cost.js";
import { ROOT } from "../../../process.js";

const spec = JSON.parse(readFileSync(join(ROOT, "test/fixtures/runpod-rest-v2.openapi.json"), "utf8"));
const catalog: CatalogPrice[] =
  spec.paths["/v2/catalog/gpus"].get.responses["200"].content["application/json"].examples.gpus.value.gpus;

describe("cost per 1,000 requests", () => {
  it("picks a card by catalog id, short name or pool", () => {
    for (const name of ["NVIDIA GeForce RTX 4090", "rtx 4090", "ADA_24"])
      expect(pickGpus(catalog, [name]).map((g) => g.id)).toEqual(["NVIDIA GeForce RTX 4090"]);
    expect(pickGpus(catalog, ["H100"])).toEqual([]);
  });

  it("is price.serverless × GPUs × worker-seconds, split into execution and idle, per completed request", () => {
    const [gpu] = pickGpus(catalog, ["ADA_24"]);
    expect(gpu!.price.serverless).toBe(1.1);
    // 100 requests, 9 s executing, workers alive 36 s in all (starting, busy and idle).
    const cost = gpuCost(gpu!, 1, { workerSeconds: 36, executionSeconds: 9, completed: 100 })!;
    expect(cost.total).toBeCloseTo(0.011, 12); // 1.1 $/h × 36 s / 3600
    expect(cost.execution).toBeCloseTo(0.00275, 12); // 1.1 × 9 / 3600
    expect(cost.idle).toBeCloseTo(0.00825, 12);
    expect(cost.per1000).toBeCloseTo(0.11, 12); // 0.011 / 100 × 1000
    // Two GPUs per worker bill twice.
    expect(gpuCost(gpu!, 2, { workerSeconds: 36, executionSeconds: 9, completed: 100 })!.total).toBeCloseTo(
      0.022,
      12,
    );
  });

  it("counts execution above the worker-seconds (jobs run concurrently on one worker) inside them", () => {
    const [gpu] = pickGpus(catalog, ["RTX 4090"]);
    const cost = gpuCost(gpu!, 1, { workerSeconds: 10, executionSeconds: 30, completed: 3 })!;
    expect(cost.execution).toBeCloseTo(cost.total, 12);
    expect(cost.idle).toBe(0);
  });

  it("has no per-1,000 figure without completed requests, and no cost without a serverless price", () => {
    const [gpu] = pickGpus(catalog, ["RTX 4090"]);
    expect(gpuCost(gpu!, 1, { workerSeconds: 5, executionSeconds: 0, completed: 0 })!.per1000).toBeNull();
    const podOnly: CatalogPrice = { id: "X", name: "X", pool: null, price: {} };
    expect(gpuCost(podOnly, 1, { workerSeconds: 5, executionSeconds: 1, completed: 1 })).toBeNull();
  });
});
