// An app's endpoint as a Pod: the POST /v2/pods body for each kind, the PATCH that brings an existing Pod to it,
// the pinned image and the addresses of its ports; every body checked against the vendored OpenAPI document.
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/options/index.js";
import { DEFAULT_GPU_CATALOG } from "../../src/platform/index.js";
import type { ManifestEndpoint } from "../../src/toolkit/bundle/index.js";
import { EndpointMappingError } from "../../src/toolkit/deploy/mapping.js";
import {
  deployedPod,
  pinnedImage,
  podAddresses,
  podPort,
  podRequest,
  podUpdate,
  proxyUrl,
} from "../../src/toolkit/deploy/pod.js";
import type { RestPod } from "../../src/toolkit/rest/types.js";
import { schemaErrors } from "./openapi.js";

const catalog = DEFAULT_GPU_CATALOG;
const create = { $ref: "#/components/schemas/CreatePodRequest" };
const update = { $ref: "#/components/schemas/UpdatePodRequest" };
const endpoint = (extra: Partial<ManifestEndpoint> = {}): ManifestEndpoint => ({
  name: "app",
  id: "app",
  file: "handler.ts",
  kind: "load-balanced",
  routes: [{ method: "GET", path: "/ping" }],
  workers: [0, 2],
  executionTimeoutMs: 0,
  maxConcurrency: 1,
  dependencies: [],
  ...extra,
});
const base = { image: "127.0.0.1:5000/app@sha256:ab", ports: [], catalog, apiKey: "rk" };
const pod = (extra: Partial<RestPod> = {}): RestPod => ({
  id: "p1",
  name: "app",
  status: "RUNNING",
  image: "127.0.0.1:5000/app:1",
  args: "",
  env: {},
  ports: ["80/http"],
  registry: null,
  gpu: { id: "NVIDIA L4", count: 1 },
  cost: 0.44,
  runtime: null,
  createdAt: "2026-01-01T00:00:00Z",
  ...extra,
});

describe("podRequest", () => {
  it("a load-balanced app runs unchanged: its PORT exposed as N/http, its image's command kept", () => {
    const body = podRequest({ ...base, endpoint: endpoint({ env: { A: "1" } }), gpu: "NVIDIA L4" });
    expect(body).toStrictEqual({
      name: "app",
      image: "127.0.0.1:5000/app@sha256:ab",
      ports: ["80/http"],
      env: { A: "1", PORT: "80", PORT_HEALTH: "80" },
      gpu: { id: "NVIDIA L4", count: 1 },
    });
    expect(schemaErrors(create, body)).toEqual([]);
  });

  it("the first http port is the app's, else the first tcp one; every --port is exposed in order", () => {
    const http = podRequest({
      ...base,
      endpoint: endpoint(),
      gpu: "NVIDIA L4",
      ports: [podPort("22/tcp", "t"), podPort("8080/http", "t")],
    });
    expect(http.ports).toStrictEqual(["22/tcp", "8080/http"]);
    expect(http.env).toMatchObject({ PORT: "8080", PORT_HEALTH: "8080" });
    const tcp = podRequest({
      ...base,
      endpoint: endpoint(),
      gpu: "NVIDIA L4",
      ports: [podPort("9000/tcp", "t")],
    });
    expect(tcp.ports).toStrictEqual(["9000/tcp"]);
    expect(tcp.env).toMatchObject({ PORT: "9000" });
    for (const body of [http, tcp]) expect(schemaErrors(create, body)).toEqual([]);
  });

  it("a queue app serves its test API on every interface, with the caller's key, on 8000/http by default", () => {
    const body = podRequest({
      ...base,
      endpoint: endpoint({ kind: "queue", routes: [], cpu: ["cpu3c-2-4"] }),
      registry: "cred1",
    });
    expect(body).toStrictEqual({
      name: "app",
      image: "127.0.0.1:5000/app@sha256:ab",
      ports: ["8000/http"],
      args: "handler.ts --rp_serve_api --rp_api_host 0.0.0.0 --rp_api_port 8000",
      env: { FLASH_API_KEY: "rk" },
      registry: "cred1",
      cpu: { id: "cpu3c", vcpuCount: 2 },
    });
    expect(schemaErrors(create, body)).toEqual([]);
  });

  it("a GPU type the endpoint names is the default; a group alone or an unknown --gpu is refused, naming ids", () => {
    expect(podRequest({ ...base, endpoint: endpoint({ gpu: ["ADA_24", "NVIDIA L40S"] }) }).gpu).toStrictEqual(
      {
        id: "NVIDIA L40S",
        count: 1,
      },
    );
    expect(() => podRequest({ ...base, endpoint: endpoint({ gpu: ["any"] }) })).toThrow(
      /Pod app: a Pod runs on one GPU type, and this endpoint names only groups \(any\): pass --gpu TYPE \(GET \/v2\/catalog\/gpus ids, e\.g\. "NVIDIA RTX A4000"/,
    );
    expect(() => podRequest({ ...base, endpoint: endpoint(), gpu: "RTX 9999" })).toThrow(
      EndpointMappingError,
    );
  });

  it("--port: N/http or N/tcp, each port once", () => {
    expect(podPort("8000/http", "flag --port")).toStrictEqual({ port: 8000, type: "http" });
    expect(() => podPort("8000", "flag --port")).toThrow(
      new ConfigError('Invalid port "8000" in flag --port: expected N/http or N/tcp, N from 1 to 65535'),
    );
    expect(() => podPort("0/tcp", "flag --port")).toThrow(ConfigError);
    expect(() =>
      podRequest({
        ...base,
        endpoint: endpoint(),
        gpu: "NVIDIA L4",
        ports: [podPort("80/http", "t"), podPort("80/tcp", "t")],
      }),
    ).toThrow("--port 80 is given twice");
  });
});

describe("podUpdate", () => {
  it("restates the container's settings, clears dropped args and credential, never sends name or compute", () => {
    const wanted = podRequest({ ...base, endpoint: endpoint(), gpu: "NVIDIA L4" });
    const patch = podUpdate(pod({ args: "old.ts", registry: "cred1" }), wanted);
    expect(patch).toStrictEqual({
      image: wanted.image,
      ports: ["80/http"],
      env: { PORT: "80", PORT_HEALTH: "80" },
      args: "",
      registry: null,
    });
    expect(schemaErrors(update, patch)).toEqual([]);
  });

  it("refuses a change of compute, saying how to get there", () => {
    const wanted = podRequest({ ...base, endpoint: endpoint(), gpu: "NVIDIA L40S" });
    expect(() => podUpdate(pod(), wanted)).toThrow(
      "Pod app: a Pod of that name (p1) runs on GPU NVIDIA L4, and this deploy asks for GPU NVIDIA L40S; a Pod's compute cannot change. Undeploy it first (flash undeploy app) or rename this endpoint.",
    );
  });
});

describe("where a Pod is reached", () => {
  it("pins the pushed image by digest, keeping a registry's port", () => {
    expect(pinnedImage("127.0.0.1:5000/team/app:1", "sha256:ab")).toBe("127.0.0.1:5000/team/app@sha256:ab");
    expect(pinnedImage("docker.io/you/app", "sha256:ab")).toBe("docker.io/you/app@sha256:ab");
    expect(pinnedImage("docker.io/you/app:1", "")).toBe("docker.io/you/app:1");
  });

  it("RunPod's proxy URL, the local platform's /pods/<id>/<port> form, and tcp ports' ip:port while running", () => {
    expect(proxyUrl("https://api.runpod.io", "abc", 8000)).toBe("https://abc-8000.proxy.runpod.net");
    expect(proxyUrl("http://127.0.0.1:8000", "abc", 80)).toBe("http://127.0.0.1:8000/pods/abc/80");
    const running = pod({
      ports: ["8080/http", "22/tcp"],
      runtime: {
        ports: [
          { private: 8080, public: null, type: "http", ip: null },
          { private: 22, public: 40022, type: "tcp", ip: "203.0.113.9" },
        ],
      },
    });
    expect(podAddresses("https://api.runpod.io", running)).toStrictEqual({
      http: { "8080": "https://p1-8080.proxy.runpod.net" },
      tcp: { "22": "203.0.113.9:40022" },
    });
    expect(
      deployedPod("https://api.runpod.io", running, endpoint(), { port: 8080, type: "http" }),
    ).toMatchObject({
      id: "p1",
      kind: "load-balanced",
      url: "https://p1-8080.proxy.runpod.net",
    });
    expect(
      deployedPod("https://api.runpod.io", running, endpoint({ kind: "queue" }), { port: 22, type: "tcp" })
        .url,
    ).toBe("http://203.0.113.9:40022/v2/local");
  });
});
