// flash deploy's refusals, each a clear message and exit 1, before any image is built: a refused key, an unknown
// GPU type, an odd vCPU count, a name two endpoints share, a type clash, no container tool, a bad --image.
// The CLI talks to a real local platform through a proxy judging every exchange by the OpenAPI document.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { DEFAULT_GPU_CATALOG, type Platform, startPlatform } from "../../src/platform/index.js";
import { makeProject, type Project } from "../cli/toolkit-project.js";
import { flashRun } from "../process.js";
import { type ConformanceProxy, conformanceProxy } from "./openapi.js";

const KEY = "deploy-errors-key";
let platform: Platform;
let proxy: ConformanceProxy;
let home: string;
let project: Project | undefined;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "flash-home-"));
  platform = await startPlatform({
    apiKey: KEY,
    logger: createLogger({ level: "SILENT", json: false }),
    // B200 sold in no serverless pool here
    gpuCatalog: DEFAULT_GPU_CATALOG.map((g) => (g.id === "NVIDIA B200" ? { ...g, pool: null } : g)),
    containers: { tool: "podman", env: { PATH: "/nonexistent" } },
  });
  proxy = await conformanceProxy(platform.url);
});
afterAll(async () => {
  await proxy.close();
  await platform.close();
  rmSync(home, { recursive: true, force: true });
});
afterEach(() => {
  project?.remove();
  project = undefined;
  expect(proxy.violations).toEqual([]);
  expect(proxy.requestViolations).toEqual([]);
});

const endpointFile = (options: string) =>
  [
    'import { Endpoint, GpuType } from "flash-worker";',
    `const ep = new Endpoint(${options});`,
    "export default ep.handler(async (job) => job.input);",
  ].join("\n");

const deploy = (args: string[], env: Record<string, string> = {}) =>
  flashRun(
    ["deploy", "--image", "127.0.0.1:9/app:1", "--api-url", proxy.url, ...args],
    { HOME: home, RUNPOD_API_KEY: KEY, LOG_LEVEL: "ERROR", ...env },
    project!.dir,
  );

async function api(method: string, path: string, body?: unknown) {
  const response = await fetch(`${proxy.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await response.json()) as { id: string };
}

describe("flash deploy refuses, saying why, before building an image", () => {
  it("a key the API refuses (401): nothing is built", async () => {
    project = makeProject({ "handler.ts": endpointFile('{ name: "keyed" }') });
    const { code, stderr } = await deploy([], { RUNPOD_API_KEY: "wrong" });
    expect(code).toBe(1);
    expect(stderr).toContain(
      `✗ the API at ${proxy.url} refused the deployment (GET /v2/serverless): 401 Unauthorized: Unauthorized: invalid API key. The API key was not accepted: run flash login with a valid key, or check RUNPOD_API_KEY`,
    );
    expect(existsSync(join(project.dir, ".flash", "artifact.tar.gz"))).toBe(false);
  });

  it("a GPU type the catalog sells in no serverless pool", async () => {
    project = makeProject({ "handler.ts": endpointFile('{ name: "big", gpu: GpuType.NVIDIA_B200 }') });
    const { code, stderr } = await deploy([]);
    expect(code).toBe(1);
    expect(stderr).toContain(
      '✗ Endpoint big: GPU type "NVIDIA B200" is in no serverless pool (GET /v2/catalog/gpus gives it pool null); choose another type or a GpuGroup',
    );
  });

  it("a vCPU count that is not a power of two", async () => {
    project = makeProject({ "handler.ts": endpointFile('{ name: "odd", cpu: "cpu5c-3-6" }') });
    const { code, stderr } = await deploy([]);
    expect(code).toBe(1);
    expect(stderr).toContain(
      '✗ Endpoint odd: cpu "cpu5c-3-6" asks for 3 vCPUs; the API takes a power of two',
    );
  });

  it("a name two endpoints share, and a name taken by an endpoint of the other type", async () => {
    const body = {
      name: "twin",
      type: "QUEUE",
      image: "127.0.0.1:9/other:1",
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
    };
    const a = await api("POST", "/v2/serverless", body);
    const b = await api("POST", "/v2/serverless", body);
    project = makeProject({ "handler.ts": endpointFile('{ name: "twin" }') });
    const twins = await deploy([]);
    expect(twins.code).toBe(1);
    expect(twins.stderr).toContain(
      `✗ Endpoint twin: 2 endpoints on ${proxy.url} have this name (${a.id}, ${b.id}), so flash deploy cannot tell which to update.`,
    );
    const lb = await api("POST", "/v2/serverless", {
      ...body,
      name: "kinds",
      type: "LOAD_BALANCER",
      scaling: { type: "REQUEST_COUNT", requestCount: 4 },
    });
    project.write("handler.ts", endpointFile('{ name: "kinds" }'));
    const kinds = await deploy([]);
    expect(kinds.code).toBe(1);
    expect(kinds.stderr).toContain(
      `✗ Endpoint kinds: an endpoint of that name (${lb.id}) exists as LOAD_BALANCER, and this app's is QUEUE; the type of an endpoint cannot change.`,
    );
    for (const id of [a.id, b.id, lb.id])
      await fetch(`${proxy.url}/v2/serverless/${id}`, {
        method: "DELETE",
        headers: { Authorization: `Bearer ${KEY}` },
      });
  });

  it("no container tool: the message says what to install", async () => {
    project = makeProject({ "handler.ts": endpointFile('{ name: "toolless" }') });
    const { code, stderr } = await deploy([], { FLASH_CONTAINER_TOOL: "podman" });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /✗ The container tool podman \(FLASH_CONTAINER_TOOL\) does not run here\. Install buildah/,
    );
  });

  it("several endpoints and a project Dockerfile whose ENTRYPOINT takes no handler file (issue 44)", async () => {
    project = makeProject({
      "queue/handler.ts": endpointFile('{ name: "queue" }'),
      "batch/handler.ts": endpointFile('{ name: "batch" }'),
      Dockerfile: 'FROM localhost/flash-worker:cpu\nCOPY . /app\nENTRYPOINT ["python3", "server.py"]\n',
    });
    const files = ["queue/handler.ts", "batch/handler.ts"];
    const refused = await deploy(files);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `✗ The project's Dockerfile sets ENTRYPOINT ["python3", "server.py"], which does not start the handler file it is given, and this app has 2 endpoints (queue/handler.ts, batch/handler.ts) sharing one image`,
    );
    // The shell form drops every argument; `flash start` in exec form takes the file (it goes on to the build).
    project.write("Dockerfile", "FROM localhost/flash-worker:cpu\nENTRYPOINT flash start\n");
    expect((await deploy(files)).stderr).toContain("sets ENTRYPOINT flash start, which does not start");
    project.write("Dockerfile", 'FROM localhost/flash-worker:cpu\nENTRYPOINT ["flash", "start"]\n');
    const taken = await deploy(files, { FLASH_CONTAINER_TOOL: "podman" });
    expect(taken.stderr).not.toContain("ENTRYPOINT");
    expect(taken.stderr).toContain("✗ The container tool podman (FLASH_CONTAINER_TOOL) does not run here");
  });

  it("--image missing, or without a registry", async () => {
    project = makeProject({ "handler.ts": endpointFile('{ name: "imageless" }') });
    const none = await flashRun(
      ["deploy", "--api-url", proxy.url],
      { HOME: home, RUNPOD_API_KEY: KEY },
      project.dir,
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("✗ flash deploy needs --image REGISTRY/NAME:TAG");
    const bare = await flashRun(
      ["deploy", "--image", "app:1", "--api-url", proxy.url],
      { HOME: home, RUNPOD_API_KEY: KEY },
      project.dir,
    );
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain("✗ --image app:1: expected REGISTRY/NAME:TAG");
  });
});
