// The local platform's REST v2 subset, driven over HTTP through a proxy that judges every request and response
// by the vendored OpenAPI document. Images are never pulled here (FLASH_CONTAINER_TOOL names a tool that is not
// installed): these tests are about the API; test/e2e/deploy.test.ts runs real containers.
import { describe, expect, it } from "vitest";
import { judgedPlatform } from "./judged.js";

const KEY = "rest-test-key";
const judged = judgedPlatform(KEY);
const { lines, api } = judged;

const QUEUE = {
  name: "echo",
  type: "QUEUE",
  image: "127.0.0.1:1/app:1",
  gpu: { pools: ["ADA_24"], count: 1 },
  workers: { min: 0, max: 2, idleTimeout: 5 },
  scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
  env: { GREETING: "hi" },
  timeout: 60_000,
};

describe("REST v2 serverless endpoints on the local platform", () => {
  it("create, get, list, patch (a new release), workers, releases, delete: each as the document says", async () => {
    const done = () => expect(judged.proxy.requestViolations).toEqual([]);
    const created = await api("POST", "/v2/serverless", QUEUE);
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    expect(created.json).toMatchObject({
      name: "echo",
      type: "QUEUE",
      image: "127.0.0.1:1/app:1",
      gpu: { pools: ["ADA_24"], count: 1, allowedCudaVersions: [], minCudaVersion: null },
      workers: { min: 0, max: 2, idleTimeout: 5 },
      timeout: 60_000,
      flashboot: "OFF",
      requestUrls: { runSync: `${judged.platform.url}/v2/${id}/runsync` },
    });
    expect((await api("GET", `/v2/serverless/${id}`)).json.name).toBe("echo");
    expect((await api("GET", "/v2/serverless")).json.endpoints.map((e: { id: string }) => e.id)).toContain(
      id,
    );

    const patched = await api("PATCH", `/v2/serverless/${id}`, {
      image: "127.0.0.1:1/app:2",
      gpu: { pools: ["ADA_24", "AMPERE_48"], excludedTypes: ["NVIDIA A40"], minCudaVersion: "12.1" },
      workers: { min: 0, max: 1 },
    });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({
      image: "127.0.0.1:1/app:2",
      gpu: { pools: ["ADA_24", "AMPERE_48"], excludedTypes: ["NVIDIA A40"], minCudaVersion: "12.1" },
      workers: { min: 0, max: 1, idleTimeout: 5 },
    });
    // pools without excludedTypes replace the selection and clear the exclusions
    const cleared = await api("PATCH", `/v2/serverless/${id}`, {
      gpu: { pools: ["ADA_24"], minCudaVersion: "" },
    });
    expect(cleared.json.gpu).toEqual({
      pools: ["ADA_24"],
      count: 1,
      allowedCudaVersions: [],
      minCudaVersion: null,
    });

    const releases = await api("GET", `/v2/serverless/${id}/releases`);
    expect(releases.json.endpointVersion).toBe(3);
    expect(releases.json.releases[1].diff).toContainEqual({
      field: "template.imageName",
      old: "127.0.0.1:1/app:1",
      new: "127.0.0.1:1/app:2",
    });
    const workers = await api("GET", `/v2/serverless/${id}/workers`);
    expect(workers.json).toEqual({
      workers: [],
      summary: { running: 0, idle: 0, initializing: 0, throttled: 0, unhealthy: 0, total: 0 },
      endpointVersion: 3,
    });

    const deleted = await api("DELETE", `/v2/serverless/${id}`);
    expect(deleted.status).toBe(204);
    expect((await api("GET", `/v2/serverless/${id}`)).status).toBe(404);
    expect((await api("DELETE", `/v2/serverless/${id}`)).status).toBe(404);
    done();
  });

  it("a load-balanced endpoint answers with its base and health URLs, and must scale on REQUEST_COUNT", async () => {
    const refused = await api("POST", "/v2/serverless", { ...QUEUE, name: "lb", type: "LOAD_BALANCER" });
    expect(refused.status).toBe(422);
    expect(refused.type).toContain("application/problem+json");
    expect(refused.json.errors).toContain(
      "$.scaling.type: load-balanced endpoints must scale on REQUEST_COUNT",
    );
    const created = await api("POST", "/v2/serverless", {
      ...QUEUE,
      name: "lb",
      type: "LOAD_BALANCER",
      scaling: { type: "REQUEST_COUNT", requestCount: 4 },
      env: { PORT: "80" },
    });
    expect(created.status).toBe(201);
    expect(created.json.requestUrls).toEqual({
      base: `${judged.platform.url}/lb/${created.json.id}`,
      health: `${judged.platform.url}/lb/${created.json.id}/ping`,
    });
    expect((await api("DELETE", `/v2/serverless/${created.json.id}`)).status).toBe(204);
  });

  it("CPU endpoints: flavors and power-of-two vCPUs; memory follows from the flavor", async () => {
    const created = await api("POST", "/v2/serverless", {
      ...QUEUE,
      gpu: undefined,
      cpu: [{ id: "cpu5c", vcpuCount: 4 }],
    });
    expect(created.status).toBe(201);
    expect(created.json.cpu).toEqual([{ id: "cpu5c", vcpuCount: 4, memory: 8 }]);
    expect(created.json.gpu).toBeUndefined();
    const toGpu = await api("PATCH", `/v2/serverless/${created.json.id}`, { gpu: { pools: ["ADA_24"] } });
    expect(toGpu.status).toBe(400);
    expect(toGpu.json.detail).toContain("compute family cannot be changed");
    await api("DELETE", `/v2/serverless/${created.json.id}`);
    const odd = await api("POST", "/v2/serverless", {
      ...QUEUE,
      gpu: undefined,
      cpu: [{ id: "cpu5c", vcpuCount: 3 }],
    });
    expect(odd.status).toBe(400);
    expect(odd.json.detail).toBe("cpu[0].vcpuCount: 3 is not a power of two");
  });

  it("bad bodies: 422 with each field named; rule conflicts 400; unknown pools and exclusions 400", async () => {
    const extra = await api("POST", "/v2/serverless", { ...QUEUE, bogus: 1 });
    // the document rejects this body as the platform does
    expect(judged.proxy.requestViolations.join("\n")).toContain("bogus");
    expect(extra.status).toBe(422);
    expect(extra.json).toMatchObject({ title: "Unprocessable Entity", status: 422 });
    expect(extra.json.errors).toContain("$: additional properties 'bogus' not allowed");
    const noImage = await api("POST", "/v2/serverless", { ...QUEUE, image: undefined });
    expect(noImage.status).toBe(422);
    expect(noImage.json.errors).toEqual(["$: must have required property 'image'"]);
    const pool = await api("POST", "/v2/serverless", { ...QUEUE, gpu: { pools: ["NOPE_1"] } });
    expect(pool.status).toBe(400);
    expect(pool.json.detail).toMatch(/^gpu\.pools: unknown pool NOPE_1/);
    const excluded = await api("POST", "/v2/serverless", {
      ...QUEUE,
      gpu: { pools: ["ADA_24"], excludedTypes: ["NVIDIA A40"] },
    });
    expect(excluded.status).toBe(400);
    expect(excluded.json.detail).toBe("gpu.excludedTypes: NVIDIA A40 is not a GPU type in the pools ADA_24");
    const both = await api("POST", "/v2/serverless", {
      ...QUEUE,
      gpu: { pools: ["ADA_24"], minCudaVersion: "12.1", allowedCudaVersions: ["12.8"] },
    });
    expect(both.status).toBe(400);
    const workers = await api("POST", "/v2/serverless", { ...QUEUE, workers: { min: 3, max: 1 } });
    expect(workers.json.detail).toBe("workers.min (3) cannot exceed workers.max (1)");
    expect((await api("GET", "/v2/serverless")).json.endpoints).toEqual([]);
  });

  it("401 with a problem body for a wrong or missing key", async () => {
    const wrong = await api("GET", "/v2/serverless", undefined, "nope");
    expect(wrong.status).toBe(401);
    expect(wrong.type).toContain("application/problem+json");
    expect(wrong.json).toMatchObject({ title: "Unauthorized", status: 401 });
  });

  it("registry credentials: created, listed without the password, in use refused, deleted", async () => {
    const created = await api("POST", "/v2/registries", { name: "hub", username: "me", password: "secret" });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ id: created.json.id, name: "hub" });
    expect((await api("GET", "/v2/registries")).json.registries).toEqual([created.json]);
    const endpoint = await api("POST", "/v2/serverless", { ...QUEUE, registry: created.json.id });
    expect(endpoint.json.registry).toBe(created.json.id);
    const inUse = await api("DELETE", `/v2/registries/${created.json.id}`);
    expect(inUse.status).toBe(400);
    await api("DELETE", `/v2/serverless/${endpoint.json.id}`);
    expect((await api("DELETE", `/v2/registries/${created.json.id}`)).status).toBe(204);
    const unknown = await api("POST", "/v2/serverless", { ...QUEUE, registry: "nope" });
    expect(unknown.json.detail).toBe("registry: no registry credential nope");
  });

  it("the GPU catalog lists each card with its serverless pool", async () => {
    const { json } = await api("GET", "/v2/catalog/gpus");
    expect(json.gpus).toContainEqual(
      expect.objectContaining({ id: "NVIDIA GeForce RTX 4090", pool: "ADA_24" }),
    );
    expect(judged.proxy.exchanges.length).toBeGreaterThan(20);
  });

  it("an image that cannot be run is said in the platform log, naming the endpoint", async () => {
    const created = await api("POST", "/v2/serverless", QUEUE);
    for (
      let i = 0;
      i < 100 && !lines.some((l) => l.includes(`Endpoint ${created.json.id} (echo): cannot run`));
      i++
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(lines.join("\n")).toMatch(
      new RegExp(
        `Endpoint ${created.json.id} \\(echo\\): cannot run 127\\.0\\.0\\.1:1/app:1: .*Install buildah`,
      ),
    );
    await api("DELETE", `/v2/serverless/${created.json.id}`);
  });
});
