// `flash pods`, `flash logs` and `flash undeploy` on Pods, against the local platform in this process (every
// exchange judged by the OpenAPI document). Its container tool cannot run here, so a Pod ends in ERROR: what it
// records, lists, logs and deletes is the same.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type ConformanceProxy, conformanceProxy } from "../deploy/openapi.js";
import { flashRun } from "../process.js";

let platform: Platform;
let proxy: ConformanceProxy;
let dir: string;
const ids: Record<string, string> = {};

async function createPod(body: unknown): Promise<string> {
  const created = await fetch(`${proxy.url}/v2/pods`, {
    method: "POST",
    headers: { Authorization: "Bearer k", "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

beforeAll(async () => {
  platform = await startPlatform({
    apiKey: "k",
    containers: { tool: "podman", env: { PATH: "/nonexistent" } },
    logger: createLogger({ level: "SILENT", json: false }),
  });
  proxy = await conformanceProxy(platform.url);
  ids.app = await createPod({
    name: "app",
    image: "127.0.0.1:1/app:1",
    gpu: { id: "NVIDIA L4" },
    ports: ["8080/http", "2222/tcp"],
  });
  ids.other = await createPod({
    name: "other",
    image: "127.0.0.1:1/other:1",
    cpu: { id: "cpu3c", vcpuCount: 2 },
  });
  // This app deployed "app" as a Pod (as flash deploy --pod records it), beside no endpoint.
  dir = mkdtempSync(join(tmpdir(), "flash-pods-cli-"));
  mkdirSync(join(dir, ".flash"));
  writeFileSync(
    join(dir, ".flash", "deployments.json"),
    JSON.stringify({
      platform: proxy.url,
      deployedAt: new Date().toISOString(),
      endpoints: {},
      pods: { app: { id: ids.app, image: "x", kind: "load-balanced", url: "http://x", http: {}, tcp: {} } },
    }),
  );
});
afterAll(async () => {
  await proxy?.close();
  await platform?.close();
});

const flash = (args: string[]) => flashRun([...args, "--api-url", proxy.url, "--api-key", "k"], {}, dir);

describe("Pods from the toolkit", () => {
  it("flash pods: each Pod's status, compute, cost, and its http port's proxy URL on the platform", async () => {
    const run = await flash(["pods"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(
        `^app {2}${ids.app} {2}(PROVISIONING|ERROR) {2}gpu 1x NVIDIA L4 {2}\\$0\\.00/hr {2}127\\.0\\.0\\.1:1/app:1$`,
        "m",
      ),
    );
    expect(run.stdout).toContain(
      `  8080/http  ${proxy.url}/pods/${ids.app}/8080\n  2222/tcp  (once it runs)`,
    );
    expect(run.stdout).toMatch(new RegExp(`^other {2}${ids.other} {2}\\S+ {2}cpu cpu3cx2 4 GB `, "m"));
    const json = JSON.parse((await flash(["pods", "--json"])).stdout) as {
      pod: { id: string };
      addresses: { http: Record<string, string> };
    }[];
    expect(json.find((p) => p.pod.id === ids.app)?.addresses.http).toEqual({
      "8080": `${proxy.url}/pods/${ids.app}/8080`,
    });
  });

  it("flash deploy: --port and --gpu need --pod; a --port that is not N/http or N/tcp is refused, naming it", async () => {
    const bare = await flash(["deploy", "--image", "127.0.0.1:1/app:1", "--port", "80/http"]);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toBe(
      "✗ flash deploy --port is for a Pod: add --pod (an endpoint's GPUs and ports come from its Endpoint)",
    );
    const bad = await flash(["deploy", "--pod", "--image", "127.0.0.1:1/app:1", "--port", "80/udp"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      '✗ Invalid port "80/udp" in flag --port: expected N/http or N/tcp, N from 1 to 65535',
    );
  });

  it("flash logs NAME reads a Pod's logs: why it could not run", async () => {
    // The pull fails here (no container tool): the Pod is in ERROR and its log says why.
    for (let i = 0; i < 100; i++) {
      const pod = await fetch(`${proxy.url}/v2/pods/${ids.app}`, { headers: { Authorization: "Bearer k" } });
      if (((await pod.json()) as { status: string }).status === "ERROR") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const run = await flash(["logs", "app"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("cannot run 127.0.0.1:1/app:1");
    const none = await flash(["logs", "nothing", "--pod"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("No Pod named nothing");
  });

  it("flash undeploy: an unknown name lists what is there; --all deletes the recorded Pod and forgets it", async () => {
    const unknown = await flash(["undeploy", "nope", "--yes"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("✗ No endpoint or Pod named nope on");
    expect(unknown.stderr).toContain("(there: app (Pod), other (Pod))");

    const removed = await flash(["undeploy", "--all", "--yes"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(
      `Deleting 0 endpoints, 1 Pod on ${proxy.url}…\n  deleted Pod app (${ids.app})\n✓ deleted 1 of 1 (0 endpoints, 1 Pod)`,
    );
    const recorded = JSON.parse(readFileSync(join(dir, ".flash", "deployments.json"), "utf8"));
    expect(recorded.pods).toBeUndefined();
    const left = (await flash(["pods"])).stdout;
    expect(left).not.toContain(ids.app);

    const byName = await flash(["undeploy", "other", "--yes"]);
    expect(byName.stdout).toContain(`  deleted Pod other (${ids.other})\n✓ deleted 1 of 1`);
    expect((await flash(["pods"])).stdout).toBe("No Pods.");
    expect(proxy.violations).toEqual([]);
    expect(proxy.requestViolations).toEqual([]);
  });
});
