// The REST v2 state without HTTP: endpoint records and their rules, releases and versions, registry credentials,
// and which changes replace an endpoint's workers.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { DEFAULT_GPU_CATALOG } from "../../../../src/platform/rest/catalog.js";
import type { WorkerLaunch } from "../../../../src/platform/state/endpoint.js";
import { Problem } from "../../../../src/platform/state/problem.js";
import { Registries } from "../../../../src/platform/state/registries.js";
import { differences, Releases } from "../../../../src/platform/state/releases.js";
import { type CreateEndpointBody, RestEndpoints } from "../../../../src/platform/state/rest-endpoints.js";
import {
  type EndpointHost,
  type ImageRequest,
  RestWorkers,
} from "../../../../src/platform/state/rest-workers.js";

const QUEUE: CreateEndpointBody = {
  name: "echo",
  type: "QUEUE",
  image: "127.0.0.1:1/app:1",
  scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
};

/** The Problem `run` throws, as status and detail. */
function problem(run: () => unknown): { status: number; detail: string; errors?: string[] } {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(Problem);
    const { status, detail, errors } = err as Problem;
    return { status, detail, ...(errors ? { errors } : {}) };
  }
  throw new Error("no Problem thrown");
}

describe("Releases", () => {
  it("starts at version 1, adds a version per non-empty change, newest first", () => {
    const releases = new Releases([{ field: "template.imageName", old: null, new: "a:1" }]);
    releases.next([]);
    expect(releases.version).toBe(1);
    releases.next([{ field: "template.imageName", old: "a:1", new: "a:2" }]);
    expect(releases.version).toBe(2);
    expect(releases.list.map((r) => r.version)).toEqual([2, 1]);
  });

  it("workers started before the rollout are stale and run the version before", () => {
    const releases = new Releases([]);
    releases.next([{ field: "name", old: "a", new: "b" }]);
    releases.rolledOut(1_000);
    expect(releases.isStale(999)).toBe(true);
    expect(releases.versionAt(999)).toBe(1);
    expect(releases.versionAt(1_000)).toBe(2);
    expect(releases.rollout([500, 1_500, 2_000])).toEqual({
      inProgress: true,
      workersOnLatest: 2,
      workersTotal: 3,
      percentOnLatest: 67,
    });
    expect(releases.rollout([])).toMatchObject({ inProgress: false, percentOnLatest: 0 });
  });

  it("names container fields as templates do, others by their own name", () => {
    expect(
      differences({ image: "a", env: {}, name: "x" }, { image: "b", env: { A: "1" }, name: "x" }),
    ).toEqual([
      { field: "template.imageName", old: "a", new: "b" },
      { field: "template.env", old: {}, new: { A: "1" } },
    ]);
  });
});

describe("Registries", () => {
  it("lists without the password, gives the login to pulls, refuses unknown and in-use deletes", () => {
    const registries = new Registries();
    const hub = registries.add({ name: "hub", username: "me", password: "pw-state-test" });
    expect(registries.list()).toEqual([{ id: hub.id, name: "hub" }]);
    expect(registries.creds(hub.id)).toEqual({ username: "me", password: "pw-state-test" });
    expect(registries.creds(null)).toBeUndefined();
    expect(problem(() => registries.get("nope"))).toEqual({ status: 404, detail: "registry not found" });
    expect(problem(() => registries.remove(hub.id, "endpoint e1"))).toEqual({
      status: 400,
      detail: `registry credential ${hub.id} is in use by endpoint e1`,
    });
    registries.remove(hub.id, undefined);
    expect(registries.has(hub.id)).toBe(false);
  });
});

describe("RestEndpoints", () => {
  const make = () => {
    const registries = new Registries();
    return { registries, endpoints: new RestEndpoints(DEFAULT_GPU_CATALOG, registries) };
  };

  it("fills the defaults: every pool, 0-3 workers, 300 s, version 1 from the image", () => {
    const { endpoints } = make();
    const stored = endpoints.create(QUEUE);
    expect(stored.record).toMatchObject({
      workers: { min: 0, max: 3, idleTimeout: 10 },
      timeout: 300_000,
      gpu: { pools: endpoints.pools(), count: 1 },
      registry: null,
    });
    expect(stored.releases.list[0]!.diff).toEqual([
      { field: "template.imageName", old: null, new: "127.0.0.1:1/app:1" },
    ]);
    expect(endpoints.get(stored.record.id)).toBe(stored);
    expect(problem(() => endpoints.get("nope"))).toEqual({
      status: 404,
      detail: "serverless endpoint nope not found",
    });
  });

  it("an update with a change is a new version; one without is not; a failed rule changes nothing", () => {
    const { endpoints } = make();
    const stored = endpoints.create(QUEUE);
    expect(endpoints.update(stored, { name: "echo" }).diff).toEqual([]);
    expect(stored.releases.version).toBe(1);
    const { diff } = endpoints.update(stored, { image: "127.0.0.1:1/app:2", workers: { max: 1 } });
    expect(diff.map((d) => d.field)).toEqual(["template.imageName", "workers"]);
    expect(stored.releases.version).toBe(2);
    expect(problem(() => endpoints.update(stored, { workers: { min: 2 } }))).toEqual({
      status: 400,
      detail: "workers.min (2) cannot exceed workers.max (1)",
    });
    expect(stored.record.workers.min).toBe(0);
    expect(stored.releases.version).toBe(2);
  });

  it("says each rule the schema cannot: images, templates, compute families, CUDA, registries", () => {
    const { endpoints, registries } = make();
    expect(problem(() => endpoints.create({ ...QUEUE, image: undefined })).errors).toEqual([
      "$: must have required property 'image'",
    ]);
    expect(problem(() => endpoints.create({ ...QUEUE, templateId: "t1" })).status).toBe(400);
    expect(problem(() => endpoints.create({ ...QUEUE, type: "LOAD_BALANCER" })).errors).toEqual([
      "$.scaling.type: load-balanced endpoints must scale on REQUEST_COUNT",
    ]);
    expect(
      problem(() =>
        endpoints.create({
          ...QUEUE,
          gpu: { pools: ["ADA_24"], allowedCudaVersions: ["12.8"], minCudaVersion: "12.1" },
        }),
      ).detail,
    ).toBe("gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive");
    expect(problem(() => endpoints.create({ ...QUEUE, cpu: [{ id: "cpu9x", vcpuCount: 2 }] })).detail).toBe(
      "cpu[0].id: unknown CPU flavor cpu9x",
    );
    const cpu = endpoints.create({ ...QUEUE, cpu: [{ id: "cpu5m", vcpuCount: 4 }] });
    expect(cpu.record.cpu).toEqual([{ id: "cpu5m", vcpuCount: 4, memory: 32 }]);
    expect(problem(() => endpoints.update(cpu, { gpu: { count: 2 } })).detail).toContain(
      "compute family cannot be changed",
    );
    expect(problem(() => endpoints.create({ ...QUEUE, registry: "nope" })).detail).toBe(
      "registry: no registry credential nope",
    );
    const hub = registries.add({ name: "hub", username: "u", password: "pw-state-test-2" });
    const pulling = endpoints.create({ ...QUEUE, registry: hub.id });
    expect(endpoints.usingRegistry(hub.id)).toBe(`endpoint ${pulling.record.id}`);
    endpoints.delete(pulling);
    expect(endpoints.usingRegistry(hub.id)).toBeUndefined();
    expect(endpoints.holds(pulling)).toBe(false);
  });
});

describe("RestWorkers", () => {
  /** A platform that records what it is asked, and images that are ready when the test says. */
  function platform() {
    const calls: string[] = [];
    const pulls: { request: ImageRequest; ready: (launch: WorkerLaunch) => void }[] = [];
    const host: EndpointHost = {
      addQueue: (config) => calls.push(`addQueue ${config.id} ${config.workers.join("-")}`),
      updateQueue: (config) => calls.push(`updateQueue ${config.id} ${config.workers.join("-")}`),
      addLb: (settings) => calls.push(`addLb ${settings.id}`),
      setLaunch: (id, launch) => calls.push(`setLaunch ${id} ${launch({}).argv.join(" ")}`),
      remove: async (id) => {
        calls.push(`remove ${id}`);
        return true;
      },
      workers: () => [],
    };
    const images = {
      prepare: (request: ImageRequest) =>
        new Promise<{ launch: WorkerLaunch }>((resolve) =>
          pulls.push({ request, ready: (launch) => resolve({ launch }) }),
        ),
      remove: async () => {},
    };
    const log = createLogger({ level: "ERROR", json: false, destination: { write: () => {} } });
    const registries = new Registries();
    const endpoints = new RestEndpoints(DEFAULT_GPU_CATALOG, registries);
    const workers = new RestWorkers(host, images, registries, (s) => endpoints.holds(s), log);
    return { calls, pulls, endpoints, workers };
  }

  it("a later image wins over an earlier slow pull; a settings-only change keeps the workers", async () => {
    const { calls, pulls, endpoints, workers } = platform();
    const stored = endpoints.create(QUEUE);
    const id = stored.record.id;
    workers.start(stored);
    const { before } = endpoints.update(stored, { image: "127.0.0.1:1/app:2" });
    expect(await workers.restart(stored, before)).toBe(true);
    expect(pulls.map((p) => p.request.name)).toEqual([`flash-${id}-v1-1`, `flash-${id}-v2-2`]);
    pulls[1]!.ready(() => ({ argv: ["new"], env: {} }));
    pulls[0]!.ready(() => ({ argv: ["old"], env: {} }));
    await new Promise((r) => setTimeout(r, 0));
    expect(calls.filter((c) => c.startsWith("setLaunch"))).toEqual([`setLaunch ${id} new`]);
    const scaled = endpoints.update(stored, { workers: { max: 1 } });
    expect(await workers.restart(stored, scaled.before)).toBe(false);
    expect(calls.at(-1)).toBe(`updateQueue ${id} 0-1`);
    expect(pulls).toHaveLength(2);
  });
});
