// `flash undeploy --all` against the local platform in this process, behind a proxy that watches its DELETEs: a
// line per endpoint and Pod as each is deleted, a few at once, then the count (issue 44, item 13).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { DELETE_CONCURRENCY } from "../../src/toolkit/deploy/pod-lifecycle.js";
import { flashRun } from "../process.js";

const ENDPOINTS = ["alpha", "beta", "gamma", "delta", "epsilon"];
let platform: Platform;
let proxy: Server;
let proxyUrl: string;
let dir: string;
const ids: Record<string, string> = {};
let podId = "";

/**
 * DELETEs are held until as many are in flight as the bound allows (or as are left), then let through together: a
 * CLI that deleted one after another would never get past the first.
 */
const deletes = { expected: ENDPOINTS.length + 1, released: 0, mostAtOnce: 0 };
let held: (() => void)[] = [];

function forward(req: IncomingMessage, res: import("node:http").ServerResponse): void {
  const upstream = new URL(platform.url);
  const out = httpRequest(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  req.pipe(out);
}

async function create(path: string, body: unknown): Promise<string> {
  const created = await fetch(`${platform.url}${path}`, {
    method: "POST",
    headers: { Authorization: "Bearer k", "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

beforeAll(async () => {
  // A tool that cannot run here: endpoints and Pods are recorded, nothing starts.
  platform = await startPlatform({
    apiKey: "k",
    containers: { tool: "podman", env: { PATH: "/nonexistent" } },
    logger: createLogger({ level: "SILENT", json: false }),
  });
  for (const name of ENDPOINTS) {
    ids[name] = await create("/v2/serverless", {
      name,
      type: "QUEUE",
      image: "127.0.0.1:1/app:1",
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
    });
  }
  podId = await create("/v2/pods", {
    name: "box",
    image: "127.0.0.1:1/box:1",
    cpu: { id: "cpu3c", vcpuCount: 2 },
  });
  proxy = createServer((req, res) => {
    if (req.method !== "DELETE") return forward(req, res);
    held.push(() => forward(req, res));
    deletes.mostAtOnce = Math.max(deletes.mostAtOnce, held.length);
    const left = deletes.expected - deletes.released;
    if (held.length >= Math.min(DELETE_CONCURRENCY, left)) {
      const go = held;
      held = [];
      deletes.released += go.length;
      for (const send of go) send();
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  // What flash deploy recorded for this app: the five endpoints and the Pod.
  dir = mkdtempSync(join(tmpdir(), "flash-undeploy-"));
  mkdirSync(join(dir, ".flash"));
  writeFileSync(
    join(dir, ".flash", "deployments.json"),
    JSON.stringify({
      platform: proxyUrl,
      deployedAt: new Date().toISOString(),
      endpoints: Object.fromEntries(
        ENDPOINTS.map((name) => [name, { id: ids[name], url: `${proxyUrl}/v2/${ids[name]}`, kind: "queue" }]),
      ),
      pods: { box: { id: podId, image: "x", kind: "load-balanced", url: "http://x", http: {}, tcp: {} } },
    }),
  );
});

afterAll(async () => {
  // A CLI that deletes one at a time is still waiting on its first DELETE: let it go.
  for (const send of held) send();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await platform?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("flash undeploy --all", () => {
  it("says what it deletes, names each endpoint and Pod as it is deleted, a few at once, and counts them", async () => {
    const run = await flashRun(
      ["undeploy", "--all", "--yes", "--api-url", proxyUrl, "--api-key", "k"],
      {},
      dir,
    );
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toBe(`Deleting 5 endpoints, 1 Pod on ${proxyUrl}…`);
    // In the order the DELETEs end, which is not fixed.
    expect(lines.slice(1, -1).sort()).toEqual(
      [
        ...ENDPOINTS.map((name) => `  deleted endpoint ${name} (${ids[name]})`),
        `  deleted Pod box (${podId})`,
      ].sort(),
    );
    expect(lines.at(-1)).toBe("✓ deleted 6 of 6 (5 endpoints, 1 Pod)");
    expect(deletes.mostAtOnce).toBe(DELETE_CONCURRENCY);
    // Gone from the platform and from the record.
    const left = await fetch(`${platform.url}/v2/serverless`, { headers: { Authorization: "Bearer k" } });
    expect(await left.json()).toEqual({ endpoints: [] });
    const recorded = JSON.parse(readFileSync(join(dir, ".flash", "deployments.json"), "utf8"));
    expect(recorded.endpoints).toEqual({});
    expect(recorded.pods).toBeUndefined();
  });
});
