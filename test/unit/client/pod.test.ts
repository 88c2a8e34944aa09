// The client on a Pod's app: by the name `flash deploy --pod` recorded or by its proxy URL, the same route helpers
// as a load-balanced endpoint, against a real server on 127.0.0.1 reached through a `.localhost` proxy-style name.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CircuitBreakers, EndpointNotDeployedError, pod } from "../../../src/client/index.js";
import { createLogger } from "../../../src/log/index.js";
import { startServer, type TestServer } from "../../client/servers.js";

let server: TestServer;
let proxyUrl: string;
let dir: string;
const hosts: string[] = [];
const quiet = { logger: createLogger({ level: "SILENT", json: false }), apiKey: "k" };

beforeAll(async () => {
  server = await startServer((request, response) => {
    hosts.push(request.headers.host ?? "");
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ method: request.method, path: request.url, body: body || null }));
    });
  });
  // The local platform's form of a Pod's proxy URL: <pod_id>-<port>.localhost:<platform port>.
  proxyUrl = `http://pod1-8080.localhost:${new URL(server.url).port}`;
  dir = mkdtempSync(join(tmpdir(), "flash-pod-client-"));
  mkdirSync(join(dir, ".flash"));
  writeFileSync(
    join(dir, ".flash", "deployments.json"),
    JSON.stringify({
      platform: "http://127.0.0.1:8000",
      deployedAt: new Date().toISOString(),
      endpoints: {},
      pods: {
        "lb-example": {
          id: "pod1",
          image: "r/app@sha256:ab",
          kind: "load-balanced",
          url: proxyUrl,
          http: { "8080": proxyUrl },
          tcp: {},
        },
      },
    }),
  );
});
afterAll(() => server.close());

describe("pod()", () => {
  it("by the recorded name: routes go to the Pod's proxy URL, with the Host the proxy routes on", async () => {
    const app = pod("lb-example", { ...quiet, cwd: dir, breakers: new CircuitBreakers() });
    expect(app.url).toBe(proxyUrl);
    expect(await app.get("/hello/pods", { x: "1" })).toEqual({
      method: "GET",
      path: "/hello/pods?x=1",
      body: null,
    });
    expect(await app.post("/echo", { a: 1 })).toEqual({ method: "POST", path: "/echo", body: '{"a":1}' });
    expect(hosts.at(-1)).toBe(new URL(proxyUrl).host);
  });

  it("by its proxy URL, as any load-balanced base URL", async () => {
    const app = pod(proxyUrl, { ...quiet, breakers: new CircuitBreakers() });
    expect(await app.get("/greet")).toMatchObject({ path: "/greet" });
  });

  it("a name no deploy --pod recorded: EndpointNotDeployedError saying where it looked", () => {
    const app = pod("missing", { ...quiet, cwd: dir });
    expect(() => app.url).toThrow(EndpointNotDeployedError);
    expect(() => app.url).toThrow(`no Pod of that name is recorded in ${dir}/.flash (flash deploy --pod)`);
  });
});
