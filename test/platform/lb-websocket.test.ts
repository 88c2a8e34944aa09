// WebSockets on a load-balanced endpoint (serverless/load-balancing/build-a-worker, "WebSocket support"): a
// route declared with api.websocket() in a real worker (test/fixtures/lb-sockets.ts), the local platform's
// proxy tunnelling the upgrade on /lb/<id>/… and <id>.localhost with the Bearer key, and the client's socket().
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CircuitBreakers, EndpointClient, EndpointHttpError } from "../../src/client/index.js";
import { captureLog, FAST_RETRY } from "../client/servers.js";
import { eventually, startTestPlatform, type TestPlatform } from "./helpers.js";

const TIMEOUT = 120_000;
let t: TestPlatform;
const workers = () => t.platform.lb.get("sockets")!.workerList();
beforeAll(async () => {
  t = await startTestPlatform({
    loadBalanced: [{ id: "sockets", file: "test/fixtures/lb-sockets.ts", workers: [2, 2] }],
  });
  await eventually(
    () => workers().filter((w) => w.state === "ready").length === 2,
    "two ready workers",
    60_000,
  );
}, TIMEOUT);
afterAll(async () => {
  await t?.platform.close();
}, TIMEOUT);

const client = (apiKey = t.platform.apiKey) =>
  new EndpointClient({
    id: "sockets",
    baseUrl: t.platform.url,
    apiKey,
    logger: captureLog("WARN").log,
    retry: FAST_RETRY,
    breakers: new CircuitBreakers(),
    env: {},
  });

/** The next message of an iterator, or undefined once the connection closed. */
async function next(messages: AsyncIterator<string | Uint8Array>): Promise<string | Uint8Array | undefined> {
  const { value, done } = await messages.next();
  return done ? undefined : value;
}

describe("WebSockets through the local platform", { timeout: TIMEOUT }, () => {
  it("client.socket(): the worker greets, echoes text and bytes, and closes on bye; workerId names it", async () => {
    const socket = await client().socket("/ws?room=a");
    const messages = socket[Symbol.asyncIterator]();
    const hello = JSON.parse(String(await next(messages)));
    expect(hello).toEqual({ worker: socket.workerId, path: "/ws", query: { room: "a" } });
    expect(workers().map((w) => w.id)).toContain(socket.workerId);
    socket.send("hi");
    expect(await next(messages)).toBe("echo: hi");
    socket.send(new Uint8Array([1, 2, 3]));
    expect(await next(messages)).toEqual(new Uint8Array([1, 2, 3]));
    socket.send("bye");
    expect(await next(messages)).toBeUndefined();
  });

  it("a strict pin opens the socket on that worker", async () => {
    for (const { id } of workers()) {
      const socket = await client().pin(id, "strict").socket("/ws");
      const hello = JSON.parse(String(await next(socket[Symbol.asyncIterator]())));
      expect([socket.workerId, hello.worker]).toEqual([id, id]);
      socket.close();
    }
  });

  it("<id>.localhost with the Bearer key, from a plain ws client; without the key a 401", async () => {
    const port = new URL(t.platform.url).port;
    const open = (headers: Record<string, string>) =>
      new WebSocket(`ws://127.0.0.1:${port}/ws`, {
        headers: { host: `sockets.localhost:${port}`, ...headers },
      });
    const ws = open({ authorization: `Bearer ${t.platform.apiKey}` });
    const hello = await new Promise<string>((resolve, reject) => {
      ws.once("message", (data) => resolve(String(data)));
      ws.once("error", reject);
    });
    expect(JSON.parse(hello)).toMatchObject({ path: "/ws" });
    ws.close();
    const refused = open({});
    const status = await new Promise<number>((resolve) => {
      refused.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    });
    expect(status).toBe(401);
    const err = await client("wrong-key")
      .socket("/ws")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointHttpError);
    expect((err as EndpointHttpError).status).toBe(401);
    expect((err as Error).message).toContain("Unauthorized: invalid API key");
  });
});
