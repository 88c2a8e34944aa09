import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Platform } from "../../src/platform/index.js";
import type { ConformanceProxy } from "../deploy/openapi.js";
import { freePort } from "../process.js";
import {
  buildahIn,
  DEPLOY_STORAGE,
  describeWithImages,
  type LocalCloud,
  type Registry,
  STANDIN,
  startLocalCloud,
  viaHost,
} from "./registry.js";

const KEY = "e2e-pods-key";
const STORAGE = DEPLOY_STORAGE;
const buildah = buildahIn(STORAGE);

/** The Pod's program: its path and greeting over HTTP, each line echoed over TCP, on the ports it is given. */
const SERVER = `
import { createServer } from "node:http";
import { createServer as createTcpServer } from "node:net";
const http = Number(process.env.HTTP_PORT), tcp = Number(process.env.TCP_PORT);
createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ path: req.url, greeting: process.env.GREETING, pod: process.env.RUNPOD_POD_ID }));
})
  .on("upgrade", (req, socket) => {
    socket.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n");
    socket.pipe(socket);
  })
  .listen(http, "127.0.0.1", () => console.log("pod app listening on " + http));
createTcpServer((socket) => socket.pipe(socket)).listen(tcp, "127.0.0.1");
`;

/** An upgrade through the platform with a Host header, then one line sent on the socket and the line echoed. */
function upgradeEcho(port: number, host: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      path: "/socket",
      headers: { host, connection: "Upgrade", upgrade: "echo" },
    });
    req.on("upgrade", (_res, socket, head) => {
      let got = head.toString();
      socket.on("data", (chunk: Buffer) => {
        got += chunk.toString();
        if (got.includes("\n")) {
          socket.end();
          resolve(got.split("\n")[0]!);
        }
      });
      socket.write(`${line}\n`);
    });
    req.on("response", (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
    req.on("error", reject);
    req.end();
  });
}

/** One line sent to host:port and the first line that comes back. */
function echo(host: string, port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    let got = "";
    socket.on("data", (chunk: Buffer) => {
      got += chunk.toString();
      if (got.includes("\n")) {
        socket.end();
        resolve(got.split("\n")[0]!);
      }
    });
    socket.on("error", reject);
    socket.write(`${line}\n`);
  });
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, tries = 360): Promise<T> {
  let last: unknown;
  for (let i = 0; i < tries; i++) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`gave up waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

describeWithImages(
  "a Pod on the local platform: created from an image, called through its proxy and tcp forward",
  () => {
    let cloud: LocalCloud | undefined;
    let registry: Registry;
    let platform: Platform;
    let proxy: ConformanceProxy;
    let platformLog: string[];
    let image: string;

    beforeAll(async () => {
      cloud = await startLocalCloud(KEY, 5_000);
      ({ registry, platform, proxy, platformLog } = cloud);
      image = `${registry.host}/pod-app:1`;
      const dir = mkdtempSync(join(tmpdir(), "flash-pod-app-"));
      writeFileSync(join(dir, "server.mjs"), SERVER);
      const from = buildah(["from", "--pull=never", STANDIN]);
      expect(from.status, from.stderr).toBe(0);
      const ctr = from.stdout.trim().split("\n").at(-1)!;
      for (const step of [
        ["copy", ctr, join(dir, "server.mjs"), "/app/server.mjs"],
        ["config", "--entrypoint", "[]", "--cmd", '["node", "/app/server.mjs"]', ctr],
        ["commit", "--rm", ctr, image],
        ["push", "--tls-verify=false", image, `docker://${image}`],
      ]) {
        const done = buildah(step);
        expect(done.status, `buildah ${step.join(" ")}: ${done.stderr}`).toBe(0);
      }
      rmSync(dir, { recursive: true, force: true });
    }, 10 * 60_000);

    afterAll(async () => {
      await cloud?.close();
    }, 5 * 60_000);

    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${proxy.url}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${KEY}`,
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, json: text ? JSON.parse(text) : undefined };
    };
    const running = (id: string) =>
      eventually(`Pod ${id} RUNNING`, async () => {
        const { json } = await api("GET", `/v2/pods/${id}`);
        if (json.status === "ERROR") throw new Error(`Pod ${id} is in ERROR:\n${platformLog.join("")}`);
        return json.status === "RUNNING" ? json : undefined;
      });

    it(
      "runs, answers through the proxy and the tcp forward, updates, stops, starts, logs, and is deleted",
      async () => {
        const [http, tcp] = [await freePort(), await freePort()];
        const created = await api("POST", "/v2/pods", {
          name: "pod-e2e",
          image,
          cpu: { id: "cpu3c", vcpuCount: 2 },
          ports: [`${http}/http`, `${tcp}/tcp`],
          env: { HTTP_PORT: String(http), TCP_PORT: String(tcp), GREETING: "hello" },
        });
        expect(created.status).toBe(201);
        const id = created.json.id as string;
        const pod = await running(id);
        const forward = pod.runtime.ports.find((p: { type: string }) => p.type === "tcp");
        expect(forward).toMatchObject({ private: tcp, type: "tcp", ip: "127.0.0.1" });
        expect(pod.runtime.ports).toContainEqual({ private: http, public: null, type: "http", ip: null });

        const host = `${id}-${http}.localhost:${platform.port}`;
        const call = (greeting: string) =>
          eventually(`${host} answering ${greeting}`, async () => {
            const answer = await viaHost(platform.port, host, "/hello?x=1");
            const json = answer.status === 200 ? JSON.parse(answer.body) : undefined;
            return json?.greeting === greeting ? json : undefined;
          });
        expect(await call("hello")).toEqual({ path: "/hello?x=1", greeting: "hello", pod: id });
        expect(await echo(forward.ip, forward.public, "ping over tcp")).toBe("ping over tcp");
        expect(await upgradeEcho(platform.port, host, "through an upgrade")).toBe("through an upgrade");

        // An env change remakes the container: the new one answers with it.
        const patched = await api("PATCH", `/v2/pods/${id}`, {
          env: { HTTP_PORT: String(http), TCP_PORT: String(tcp), GREETING: "bonjour" },
        });
        expect(patched.status).toBe(200);
        expect((await call("bonjour")).pod).toBe(id);

        const stopped = await api("POST", `/v2/pods/${id}/action`, { action: "stop" });
        expect(stopped.json).toMatchObject({
          status: "EXITED",
          runtime: null,
          actions: ["start", "terminate"],
        });
        expect((await viaHost(platform.port, host, "/")).status).toBe(502);
        expect((await api("POST", `/v2/pods/${id}/action`, { action: "start" })).status).toBe(200);
        const restarted = await running(id);
        expect(await call("bonjour")).toMatchObject({ pod: id });
        const again = restarted.runtime.ports.find((p: { type: string }) => p.type === "tcp");
        expect(await echo(again.ip, again.public, "and again")).toBe("and again");

        // Its container's output, as the document's SSE events.
        const logs = await fetch(`${proxy.url}/v2/pods/${id}/logs?source=container`, {
          headers: { Authorization: `Bearer ${KEY}` },
        });
        const reader = logs.body!.getReader();
        let text = "";
        while (!text.includes(`pod app listening on ${http}`)) {
          const { value, done } = await reader.read();
          if (done) break;
          text += new TextDecoder().decode(value);
        }
        await reader.cancel();
        expect(text).toMatch(/"source":"container","line":"pod app listening on \d+"/);

        expect((await api("DELETE", `/v2/pods/${id}`)).status).toBe(204);
        expect((await api("GET", "/v2/pods")).json.pods).toEqual([]);
        // The proxy host is nobody's now, and the forward is closed.
        expect((await viaHost(platform.port, host, "/")).status).toBe(401);
        await expect(echo(again.ip, again.public, "gone")).rejects.toThrow();
        expect(proxy.violations).toEqual([]);
        expect(proxy.requestViolations).toEqual([]);
      },
      10 * 60_000,
    );
  },
);
