// An app's endpoints as REST v2 bodies: GPU groups and types to pools and exclusions, CPU instance names to
// flavors, the PATCH that restates everything; every body checked against the vendored OpenAPI document.
import { describe, expect, it } from "vitest";
import { DEFAULT_GPU_CATALOG } from "../../src/platform/index.js";
import type { ManifestEndpoint } from "../../src/toolkit/bundle/index.js";
import {
  cpuFlavor,
  createRequest,
  EndpointMappingError,
  endpointUrl,
  gpuSelection,
  updateRequest,
} from "../../src/toolkit/deploy/mapping.js";
import type { RestEndpoint } from "../../src/toolkit/rest/types.js";
import { schemaErrors } from "./openapi.js";

const catalog = DEFAULT_GPU_CATALOG;
const endpoint = (extra: Partial<ManifestEndpoint> = {}): ManifestEndpoint => ({
  name: "app",
  id: "app",
  file: "handler.ts",
  kind: "queue",
  routes: [],
  workers: [0, 2],
  executionTimeoutMs: 0,
  maxConcurrency: 1,
  dependencies: [],
  ...extra,
});
const create = { $ref: "#/components/schemas/CreateEndpointRequest" };
const update = { $ref: "#/components/schemas/UpdateEndpointRequest" };

describe("GPU selection", () => {
  it("ANY is every pool; a group is its pool; types are their pools less the pool's other cards", () => {
    expect(gpuSelection(["any"], catalog, "x").pools).toEqual(
      [...new Set(catalog.flatMap((g) => (g.pool ? [g.pool] : [])))].sort(),
    );
    expect(gpuSelection(["ADA_24"], catalog, "x")).toEqual({ pools: ["ADA_24"] });
    expect(gpuSelection(["NVIDIA L40", "NVIDIA GeForce RTX 4090"], catalog, "x")).toEqual({
      pools: ["ADA_24", "ADA_48_PRO"],
      excludedTypes: ["NVIDIA L40S", "NVIDIA RTX 6000 Ada Generation"],
    });
    // a pool chosen whole keeps all its cards even when one of them is also named
    expect(gpuSelection(["ADA_48_PRO", "NVIDIA L40"], catalog, "x")).toEqual({ pools: ["ADA_48_PRO"] });
  });

  it("a type the catalog lacks, or one in no serverless pool, is named in the error", () => {
    expect(() => gpuSelection(["NVIDIA X1"], catalog, "app")).toThrow(
      'Endpoint app: unknown GPU type or pool "NVIDIA X1": GET /v2/catalog/gpus lists no such GPU',
    );
    expect(() => gpuSelection(["NVIDIA X1"], [], "app")).toThrow(
      'Endpoint app: unknown GPU type or pool "NVIDIA X1": GET /v2/catalog/gpus lists no such GPU (pools: none)',
    );
    expect(() => gpuSelection(["NVIDIA X1"], catalog, "app")).toThrow(
      `(pools: ${[...new Set(catalog.flatMap((g) => (g.pool ? [g.pool] : [])))].sort().join(", ")})`,
    );
    expect(() => gpuSelection(["any"], [], "app")).toThrow(
      "Endpoint app: the GPU catalog has no serverless pool to run it on",
    );
    const poolless = catalog.map((g) => (g.id === "NVIDIA B200" ? { ...g, pool: null } : g));
    expect(() => gpuSelection(["NVIDIA B200"], poolless, "app")).toThrow(
      'Endpoint app: GPU type "NVIDIA B200" is in no serverless pool',
    );
  });
});

describe("CPU flavors", () => {
  it("cpu5c-4-8 is flavor cpu5c with 4 vCPUs; vCPUs must be a power of two", () => {
    expect(cpuFlavor("cpu5c-4-8", "x")).toEqual({ id: "cpu5c", vcpuCount: 4 });
    expect(cpuFlavor("cpu10gx-16-64", "x")).toEqual({ id: "cpu10gx", vcpuCount: 16 });
    expect(cpuFlavor("cpu3c-2-4", "x")).toEqual({ id: "cpu3c", vcpuCount: 2 });
    expect(() => cpuFlavor("cpu5c-3-6", "app")).toThrow(
      'Endpoint app: cpu "cpu5c-3-6" asks for 3 vCPUs; the API takes a power of two from 2 (2, 4, 8, 16, …), e.g. cpu5c-4-6',
    );
    expect(() => cpuFlavor("cpu5c-1-2", "app")).toThrow(
      'Endpoint app: cpu "cpu5c-1-2" asks for 1 vCPUs; the API takes a power of two from 2 (2, 4, 8, 16, …), e.g. cpu5c-2-2',
    );
  });

  it("a name that is not flavor-vCPUs-GiB is refused whole, with the shape to use", () => {
    for (const bad of ["xcpu5c-4-8", "cpu5c-4-8x", "cpuc-4-8", "cpu5-4-8", "cpu5c-4", "cpu5c-four-8"]) {
      const thrown = (() => {
        try {
          cpuFlavor(bad, "app");
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(thrown, bad).toBeInstanceOf(EndpointMappingError);
      expect((thrown as Error).message).toBe(
        `Endpoint app: cpu "${bad}" is not an instance type name like cpu5c-4-8 (flavor-vCPUs-GiB)`,
      );
    }
  });

  it("the same flavor named twice is sent once; two sizes of one flavor both go", () => {
    const body = createRequest({
      endpoint: endpoint({ cpu: ["cpu5c-4-8", "cpu5c-4-8", "cpu5c-8-16", "cpu3c-4-8"] }),
      image: "r.io/a:1",
    });
    expect(body.cpu).toEqual([
      { id: "cpu5c", vcpuCount: 4 },
      { id: "cpu5c", vcpuCount: 8 },
      { id: "cpu3c", vcpuCount: 4 },
    ]);
  });
});

describe("CreateEndpointRequest and UpdateEndpointRequest", () => {
  it("every kind of endpoint maps to a body the document accepts", () => {
    const bodies = [
      createRequest({ endpoint: endpoint(), image: "r.io/a:1", catalog }),
      createRequest({
        endpoint: endpoint({
          gpu: ["NVIDIA L40"],
          minCudaVersion: "12.4",
          idleTimeout: 30,
          flashboot: "FLASHBOOT",
          volume: "vol1",
          executionTimeoutMs: 90_000,
          env: { A: "1" },
        }),
        image: "r.io/a:1",
        catalog,
        args: "handler.ts",
        registry: "reg1",
      }),
      createRequest({ endpoint: endpoint({ cpu: ["cpu5c-4-8", "cpu5g-8-32"] }), image: "r.io/a:1" }),
      createRequest({
        endpoint: endpoint({ kind: "load-balanced", routes: [{ method: "GET", path: "/x" }] }),
        image: "r.io/a:1",
        catalog,
      }),
    ];
    for (const body of bodies) expect(schemaErrors(create, body), JSON.stringify(body)).toEqual([]);
    // Field by field, whole bodies: a field the mapping drops (args, registry, env, volumes…) fails here.
    expect(bodies[1]).toStrictEqual({
      name: "app",
      type: "QUEUE",
      image: "r.io/a:1",
      args: "handler.ts",
      registry: "reg1",
      env: { A: "1" },
      workers: { min: 0, max: 2, idleTimeout: 30 },
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      gpu: {
        pools: ["ADA_48_PRO"],
        excludedTypes: ["NVIDIA L40S", "NVIDIA RTX 6000 Ada Generation"],
        count: 1,
        minCudaVersion: "12.4",
      },
      timeout: 90_000,
      flashboot: "FLASHBOOT",
      networkVolumes: ["vol1"],
    });
    expect(bodies[2]?.cpu).toEqual([
      { id: "cpu5c", vcpuCount: 4 },
      { id: "cpu5g", vcpuCount: 8 },
    ]);
    expect(bodies[2]).not.toHaveProperty("gpu");
    expect(bodies[3]).toStrictEqual({
      name: "app",
      type: "LOAD_BALANCER",
      image: "r.io/a:1",
      env: { PORT: "80", PORT_HEALTH: "80" },
      workers: { min: 0, max: 2 },
      scaling: { type: "REQUEST_COUNT", requestCount: 4 },
      gpu: {
        pools: [
          "ADA_24",
          "ADA_32_PRO",
          "ADA_48_PRO",
          "ADA_80_PRO",
          "AMPERE_16",
          "AMPERE_24",
          "AMPERE_48",
          "AMPERE_80",
          "BLACKWELL_180",
          "HOPPER_141",
        ],
        count: 1,
      },
    });
  });

  it("the PATCH restates the endpoint and clears what the app dropped; type and compute cannot change", () => {
    const existing: RestEndpoint = {
      id: "ep1",
      name: "app",
      type: "QUEUE",
      image: "r.io/a:1",
      registry: "reg1",
      gpu: { pools: ["ADA_24"], count: 1, minCudaVersion: "12.1", allowedCudaVersions: [] },
      workers: { min: 0, max: 1 },
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      dataCenterIds: [],
      networkVolumes: ["vol1"],
      timeout: 60_000,
      flashboot: "FLASHBOOT",
      createdAt: "2026-01-01T00:00:00Z",
    };
    const wanted = createRequest({ endpoint: endpoint(), image: "r.io/a:2", catalog });
    const patch = updateRequest(existing, wanted);
    expect(schemaErrors(update, patch)).toEqual([]);
    expect(patch).toStrictEqual({
      name: "app",
      image: "r.io/a:2",
      env: {},
      workers: { min: 0, max: 2 },
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      gpu: { ...wanted.gpu, minCudaVersion: "" },
      networkVolumes: [],
      registry: null,
      timeout: 300_000,
      flashboot: "OFF",
    });
    expect(patch).not.toHaveProperty("type");
    expect(() => updateRequest({ ...existing, type: "LOAD_BALANCER" }, wanted)).toThrow(
      "Endpoint app: an endpoint of that name (ep1) exists as LOAD_BALANCER, and this app's is QUEUE; the type of an endpoint cannot change.",
    );
    expect(() =>
      updateRequest({ ...existing, gpu: null, cpu: [{ id: "cpu5c", vcpuCount: 2, memory: 4 }] }, wanted),
    ).toThrow(
      "Endpoint app: an endpoint of that name (ep1) runs on CPUs, and this app's on GPUs; the compute of an endpoint cannot change. Undeploy it first (flash undeploy app) or rename this one.",
    );
    const cpuWanted = createRequest({ endpoint: endpoint({ cpu: ["cpu5c-2-4"] }), image: "r.io/a:2" });
    expect(() => updateRequest(existing, cpuWanted)).toThrow(
      "runs on GPUs, and this app's on CPUs; the compute of an endpoint cannot change",
    );
    // an empty cpu list is a GPU endpoint
    expect(updateRequest({ ...existing, cpu: [] }, wanted).gpu).toBeDefined();
    expect(() => updateRequest({ ...existing, cpu: [] }, cpuWanted)).toThrow("runs on GPUs");
  });

  it("the PATCH keeps what the app still sets, and clears nothing the endpoint does not have", () => {
    const existing: RestEndpoint = {
      id: "ep2",
      name: "app",
      type: "QUEUE",
      image: "r.io/a:1",
      gpu: { pools: ["ADA_24"], count: 1, minCudaVersion: "", allowedCudaVersions: ["12.4"] },
      workers: { min: 0, max: 1 },
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      dataCenterIds: [],
      networkVolumes: [],
      timeout: 60_000,
      flashboot: "OFF",
      createdAt: "2026-01-01T00:00:00Z",
    };
    const wanted = createRequest({
      endpoint: endpoint({
        gpu: ["ADA_24"],
        minCudaVersion: "12.8",
        volume: "vol2",
        executionTimeoutMs: 120_000,
        flashboot: "FLASHBOOT",
        env: { B: "2" },
      }),
      image: "r.io/a:3",
      catalog,
      registry: "reg2",
    });
    const patch = updateRequest(existing, wanted);
    expect(schemaErrors(update, patch)).toEqual([]);
    expect(patch).toStrictEqual({
      name: "app",
      image: "r.io/a:3",
      registry: "reg2",
      env: { B: "2" },
      workers: { min: 0, max: 2 },
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      gpu: { pools: ["ADA_24"], count: 1, minCudaVersion: "12.8", allowedCudaVersions: [] },
      networkVolumes: ["vol2"],
      timeout: 120_000,
      flashboot: "FLASHBOOT",
    });
    // Nothing to clear: no volume, registry, CUDA floor or allowed versions on the endpoint, flashboot already off.
    const bare = { ...existing, gpu: { ...existing.gpu!, allowedCudaVersions: [] }, registry: null };
    const plain = updateRequest(bare, createRequest({ endpoint: endpoint(), image: "r.io/a:4", catalog }));
    expect(Object.keys(plain).sort()).toEqual([
      "env",
      "gpu",
      "image",
      "name",
      "scaling",
      "timeout",
      "workers",
    ]);
    expect(plain.gpu).toStrictEqual(createRequest({ endpoint: endpoint(), image: "x", catalog }).gpu);
    expect(
      updateRequest({ ...bare, gpu: null }, createRequest({ endpoint: endpoint(), image: "x", catalog })).gpu,
    ).not.toHaveProperty("minCudaVersion");
  });

  it("endpoint URLs come from the API's requestUrls, else RunPod's defaults by type", () => {
    const base: RestEndpoint = {
      id: "abc123",
      name: "app",
      type: "QUEUE",
      workers: { min: 0, max: 1 },
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      timeout: 60_000,
      flashboot: "OFF",
      dataCenterIds: [],
      networkVolumes: [],
      createdAt: "2026-01-01T00:00:00Z",
    };
    const queueUrls = {
      run: "http://127.0.0.1:9/v2/abc123/run",
      runSync: "http://127.0.0.1:9/v2/abc123/runsync",
      status: "",
      stream: "",
      cancel: "",
      retry: "",
      purgeQueue: "",
      health: "",
    };
    expect(endpointUrl({ ...base, requestUrls: queueUrls }, "QUEUE")).toBe("http://127.0.0.1:9/v2/abc123");
    expect(
      endpointUrl(
        { ...base, requestUrls: { base: "http://abc123.localhost:9//", health: "" } },
        "LOAD_BALANCER",
      ),
    ).toBe("http://abc123.localhost:9");
    expect(
      endpointUrl({ ...base, requestUrls: { base: "http://x/runsync/", health: "" } }, "LOAD_BALANCER"),
    ).toBe("http://x/runsync");
    expect(endpointUrl(base, "QUEUE")).toBe("https://api.runpod.ai/v2/abc123");
    expect(endpointUrl(base, "LOAD_BALANCER")).toBe("https://abc123.api.runpod.ai");
  });
});
