// `flash dev examples/load-balanced/handler.ts`: the local platform spawns the endpoint's HTTP workers and proxies
// /lb/<endpoint_id>/<path> to a ready one, holding requests while /ping says 204 (npm run build first).
import { existsSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Flash, flash } from "../process.js";

const KEY = "lb-dev-key";
const TIMEOUT = 120_000;
const gate = join(tmpdir(), `flash-lb-dev-${process.pid}-ready`);

describe("flash dev on a load-balanced endpoint", { timeout: TIMEOUT }, () => {
  let dev: Flash;
  let base = "";

  beforeAll(async () => {
    rmSync(gate, { force: true });
    dev = flash(
      ["dev", "examples/load-balanced/handler.ts", "--port", "0", "--api-key", KEY, "--workers", "1,2"],
      {
        MODEL_LOAD_MS: "0",
        MODEL_READY_FILE: gate,
      },
    );
    const line = await dev.waitForLine(
      /is load-balanced endpoint "lb-example" at http:\/\/127\.0\.0\.1:\d+\/lb\/lb-example/,
      60_000,
    );
    base = /(http:\/\/127\.0\.0\.1:\d+\/lb\/lb-example)/.exec(line)![1]!;
    await dev.waitForLine(/Ready\. Try: curl -s -X POST http:\/\/127\.0\.0\.1:\d+\/lb\/lb-example\/echo/);
  }, TIMEOUT);

  afterAll(async () => {
    if (dev && dev.child.exitCode === null) {
      dev.child.kill("SIGINT");
      const timer = setTimeout(() => dev.child.kill("SIGKILL"), 45_000);
      expect(await dev.exited).toBe(0);
      clearTimeout(timer);
    }
    rmSync(gate, { force: true });
  }, TIMEOUT);

  const call = (path: string, init: { method?: string; body?: unknown; key?: string | null } = {}) =>
    fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: {
        ...(init.key === null ? {} : { authorization: `Bearer ${init.key ?? KEY}` }),
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });

  it(
    "holds a request while the worker's /ping answers 204, then proxies it to the ready worker",
    async () => {
      let settled = false;
      const pending = call("/echo", { body: { prompt: "cold start" } }).then((res) => {
        settled = true;
        return res;
      });
      // The worker cannot be ready before the gate file exists: the request must still be waiting.
      await dev.waitForLine(/initializing \(\/ping 204\)/, 60_000);
      expect(settled).toBe(false);
      expect(existsSync(gate)).toBe(false);
      await writeFile(gate, "");
      const res = await pending;
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ prompt: "cold start" });
      await dev.waitForLine(/ready on port \d+ \(\/ping 200\)/);
    },
    TIMEOUT,
  );

  it("proxies path parameters, query strings, errors and status codes", async () => {
    const hello = await call("/hello/dev");
    expect(hello.status).toBe(200);
    expect(await hello.json()).toEqual({ hello: "dev" });
    const greet = await call("/greet?name=proxy");
    expect(await greet.json()).toEqual({ greeting: "hello proxy", path: "/greet" });
    const fail = await call("/fail", { body: { message: "from the worker" } });
    expect(fail.status).toBe(500);
    expect(await fail.json()).toEqual({ error: "from the worker" });
    const missing = await call("/no-such-route");
    expect(missing.status).toBe(404);
  });

  it("needs the platform key, and knows only its endpoints", async () => {
    const anonymous = await call("/hello/x", { key: null });
    expect(anonymous.status).toBe(401);
    const wrong = await call("/hello/x", { key: "nope" });
    expect(wrong.status).toBe(401);
    const unknown = await fetch(base.replace(/lb-example$/, "other/hello/x"), {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "Load-balanced endpoint other not found" });
    const typo = await fetch(base.replace(/lb-example$/, "lb-exmaple/hello/x"), {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(await typo.json()).toEqual({
      error: "Load-balanced endpoint lb-exmaple not found (did you mean lb-example?)",
    });
  });

  it("answers at http://<endpoint_id>.localhost:<port>/<path> too, as RunPod at <endpoint_id>.api.runpod.ai", async () => {
    // Node's resolver does not know *.localhost (curl and browsers do): connect to 127.0.0.1 and send the Host
    const { port } = new URL(base);
    const viaHost = (host: string, path: string, key: string | null = KEY) =>
      new Promise<{ status: number; body: unknown }>((done, fail) => {
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            path,
            method: "POST",
            headers: {
              host,
              "content-type": "application/json",
              ...(key === null ? {} : { authorization: `Bearer ${key}` }),
            },
          },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => {
              text += c.toString();
            });
            res.on("end", () => done({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          },
        );
        req.on("error", fail);
        req.end(JSON.stringify({ via: "host" }));
      });
    expect(await viaHost(`lb-example.localhost:${port}`, "/echo")).toEqual({
      status: 200,
      body: { via: "host" },
    });
    expect((await viaHost(`lb-example.localhost:${port}`, "/echo", null)).status).toBe(401);
    expect(await viaHost(`other.localhost:${port}`, "/echo")).toEqual({
      status: 404,
      body: { error: "Load-balanced endpoint other not found" },
    });
  });

  it("serves concurrent requests", async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call("/echo", { body: { i } }).then((r) => r.json())),
    );
    expect(answers).toEqual(Array.from({ length: 8 }, (_, i) => ({ i })));
  });
});
