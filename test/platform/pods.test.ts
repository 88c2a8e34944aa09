import { describe, expect, it } from "vitest";
import { viaHost as viaHostOn } from "../e2e/registry.js";
import { judgedPlatform } from "./judged.js";

const KEY = "pods-test-key";
const judged = judgedPlatform(KEY);
const { lines, api } = judged;

/** GET through the platform with a Host header (fetch cannot set one). */
const viaHost = (host: string, path: string) => viaHostOn(judged.platform.port, host, path);

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

const POD = {
  name: "dev",
  image: "127.0.0.1:1/app:1",
  gpu: { id: "NVIDIA GeForce RTX 4090", count: 1 },
  ports: ["8000/http", "2222/tcp"],
  env: { GREETING: "hi" },
};

describe("REST v2 Pods on the local platform", () => {
  it("create, get, list, update, delete: each as the document says", async () => {
    const created = await api("POST", "/v2/pods", POD);
    expect(judged.proxy.requestViolations).toEqual([]);
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    expect(created.json).toMatchObject({
      name: "dev",
      status: "PROVISIONING",
      actions: ["stop", "terminate"],
      image: "127.0.0.1:1/app:1",
      gpu: { id: "NVIDIA GeForce RTX 4090", count: 1 },
      ports: ["8000/http", "2222/tcp"],
      env: { GREETING: "hi" },
      cost: 0,
      runtime: null,
    });
    expect(created.json.cpu).toBeUndefined();
    expect((await api("GET", `/v2/pods/${id}`)).json.name).toBe("dev");
    expect((await api("GET", "/v2/pods")).json.pods.map((p: { id: string }) => p.id)).toEqual([id]);
    // The image cannot be pulled here: the Pod says so in its status, the platform log says why.
    const failed = await until("the Pod in ERROR", async () => {
      const { json } = await api("GET", `/v2/pods/${id}`);
      return json.status === "ERROR" ? json : undefined;
    });
    expect(failed.actions).toEqual(["start", "terminate"]);
    expect(lines.join("\n")).toMatch(
      new RegExp(`Pod ${id} \\(dev\\): cannot run 127\\.0\\.0\\.1:1/app:1: .*Install`),
    );

    const patched = await api("PATCH", `/v2/pods/${id}`, {
      name: "dev2",
      image: "127.0.0.1:1/app:2",
      env: { GREETING: "hello" },
      ports: ["8000/http"],
    });
    expect(judged.proxy.requestViolations).toEqual([]);
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ name: "dev2", image: "127.0.0.1:1/app:2", ports: ["8000/http"] });
    // A PATCH of a Pod in ERROR starts it on the new spec (issue 44): a redeploy is how a failed Pod is fixed.
    expect(patched.json.status).toBe("PROVISIONING");
    await until("the new image's pull", async () =>
      lines.join("\n").includes(`cannot run 127.0.0.1:1/app:2`) ? true : undefined,
    );

    expect((await api("DELETE", `/v2/pods/${id}`)).status).toBe(204);
    expect((await api("GET", `/v2/pods/${id}`)).status).toBe(404);
    expect((await api("DELETE", `/v2/pods/${id}`)).json.detail).toBe(`pod ${id} not found`);
  });

  it("actions: only those the status allows (409 otherwise); terminate deletes", async () => {
    const { json: pod } = await api("POST", "/v2/pods", {
      ...POD,
      gpu: undefined,
      cpu: { id: "cpu3c", vcpuCount: 2 },
    });
    expect(pod.cpu).toEqual({ id: "cpu3c", vcpuCount: 2, memory: 4 });
    await until("the Pod in ERROR", async () => {
      const { json } = await api("GET", `/v2/pods/${pod.id}`);
      return json.status === "ERROR" ? json : undefined;
    });
    const stop = await api("POST", `/v2/pods/${pod.id}/action`, { action: "stop" });
    expect(stop.status).toBe(409);
    expect(stop.json.detail).toBe(
      `pod ${pod.id} is ERROR: stop is not one of its actions (start, terminate)`,
    );
    const start = await api("POST", `/v2/pods/${pod.id}/action`, { action: "start" });
    expect(start.status).toBe(200);
    expect(start.json.status).toBe("PROVISIONING");
    expect((await api("POST", `/v2/pods/${pod.id}/action`, { action: "terminate" })).status).toBe(204);
    expect((await api("GET", `/v2/pods/${pod.id}`)).status).toBe(404);
  });

  it("bad bodies: 422 naming each field, rules the schema cannot say 400", async () => {
    const extra = await api("POST", "/v2/pods", { ...POD, bogus: 1 });
    expect(judged.proxy.requestViolations.join("\n")).toContain("bogus");
    expect(extra.status).toBe(422);
    expect(extra.json.errors).toContain("$: additional properties 'bogus' not allowed");
    const noImage = await api("POST", "/v2/pods", { ...POD, image: undefined });
    expect(noImage.status).toBe(422);
    expect(noImage.json.errors).toContain("$: must have required property 'image'");
    const both = await api("POST", "/v2/pods", { ...POD, cpu: { id: "cpu3c", vcpuCount: 2 } });
    expect(both.json).toMatchObject({ status: 400, detail: "gpu and cpu are mutually exclusive: send one" });
    const neither = await api("POST", "/v2/pods", { ...POD, gpu: undefined });
    expect(neither.json.detail).toBe("send gpu or cpu: a Pod runs on one of them");
    const gpu = await api("POST", "/v2/pods", { ...POD, gpu: { id: "NVIDIA Nope" } });
    expect(gpu.json.detail).toBe("gpu.id: unknown GPU type NVIDIA Nope (GET /v2/catalog/gpus lists the ids)");
    const port = await api("POST", "/v2/pods", { ...POD, ports: ["8000/udp"] });
    expect(port.json.detail).toBe('ports[0]: "8000/udp" is not <port>/http or <port>/tcp (port 1-65535)');
    const twice = await api("POST", "/v2/pods", { ...POD, ports: ["8000/http", "8000/tcp"] });
    expect(twice.json.detail).toBe("ports[1]: port 8000 is exposed twice");
    const registry = await api("POST", "/v2/pods", { ...POD, registry: "nope" });
    expect(registry.json.detail).toBe("registry: no registry credential nope");
    const action = await api("POST", "/v2/pods/nope/action", { action: "explode" });
    expect(action.status).toBe(404);
    expect((await api("GET", "/v2/pods")).json.pods).toEqual([]);
  });

  it("a registry credential a Pod pulls with cannot be deleted", async () => {
    const hub = await api("POST", "/v2/registries", { name: "hub", username: "me", password: "pods-secret" });
    const { json: pod } = await api("POST", "/v2/pods", { ...POD, registry: hub.json.id });
    const inUse = await api("DELETE", `/v2/registries/${hub.json.id}`);
    expect(inUse.json.detail).toBe(`registry credential ${hub.json.id} is in use by pod ${pod.id}`);
    await api("DELETE", `/v2/pods/${pod.id}`);
    expect((await api("DELETE", `/v2/registries/${hub.json.id}`)).status).toBe(204);
  });

  it("the proxy host of a Pod that is not running, or of a port it does not expose, says so", async () => {
    const { json: pod } = await api("POST", "/v2/pods", POD);
    const closed = await viaHost(`${pod.id}-9999.localhost:${judged.platform.port}`, "/");
    expect(closed.status).toBe(404);
    expect(JSON.parse(closed.body).error).toBe(
      `Pod ${pod.id} exposes no port 9999/http (its http ports: 8000/http)`,
    );
    const down = await viaHost(`${pod.id}-8000.localhost:${judged.platform.port}`, "/");
    expect(down.status).toBe(502);
    expect(JSON.parse(down.body).error).toMatch(
      new RegExp(`^Pod ${pod.id} is (PROVISIONING|ERROR), not RUNNING`),
    );
    // A host naming no Pod goes to the platform's own routes: the load balancer's, which asks for the key first.
    expect((await viaHost(`nopod-8000.localhost:${judged.platform.port}`, "/ping")).status).toBe(401);
    await api("DELETE", `/v2/pods/${pod.id}`);
  });
});
