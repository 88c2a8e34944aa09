// The Pods' proxy (src/platform/workers/pod-proxy.ts) on a real server on 127.0.0.1, in front of a real
// OpenAI-style server standing in for a Pod's container: the URL the toolkit prints for a Pod's http port on the
// local platform (proxyUrl) is one the openai npm client reaches, which a `*.localhost` one is not from Node
// (issue 44, item 8).
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PodProxy, type ProxiedPod } from "../../../../src/platform/workers/pod-proxy.js";
import { proxyUrl } from "../../../../src/toolkit/deploy/pod.js";

const POD_ID = "pod1abc";
let upstream: Server;
let platform: Server;
let upstreamPort: number;
let platformUrl: string;
const seen: { method?: string; url?: string }[] = [];
let status = "RUNNING";

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
};

async function body(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

beforeAll(async () => {
  // What a model server in the Pod answers: a chat completion echoing the last message.
  upstream = createServer(async (req, res) => {
    seen.push({ method: req.method, url: req.url });
    const request = JSON.parse((await body(req)) || "{}") as { messages?: { content: string }[] };
    res.setHeader("content-type", "application/json");
    res.end(
      JSON.stringify({
        id: "c1",
        object: "chat.completion",
        created: 1,
        model: "m",
        choices: [
          {
            index: 0,
            finish_reason: "stop",
            message: { role: "assistant", content: `echo: ${request.messages?.at(-1)?.content}` },
          },
        ],
      }),
    );
  });
  upstreamPort = await listen(upstream);
  const find = (id: string): ProxiedPod | undefined =>
    id === POD_ID ? { status, httpPorts: [upstreamPort] } : undefined;
  const proxy = new PodProxy(find);
  // As the platform's server does: the proxy first, the platform's routes (here a 404) for the rest.
  platform = createServer((req, res) => {
    if (proxy.handle(req, res)) return;
    res.writeHead(404).end("platform route");
  });
  platformUrl = `http://127.0.0.1:${await listen(platform)}`;
});

afterAll(async () => {
  await new Promise((resolve) => platform?.close(resolve));
  await new Promise((resolve) => upstream?.close(resolve));
});

describe("the Pod proxy's path form", () => {
  it("the printed URL of a Pod's http port is on the platform's own address, and the openai client reaches the Pod through it", async () => {
    const url = proxyUrl(platformUrl, POD_ID, upstreamPort);
    expect(url).toBe(`${platformUrl}/pods/${POD_ID}/${upstreamPort}`);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "hi pod" }],
    });
    expect(answer.choices[0]?.message.content).toBe("echo: hi pod");
    // The container sees its own path, without the proxy's prefix.
    expect(seen.at(-1)).toEqual({ method: "POST", url: "/v1/chat/completions" });
  });

  it("keeps the query; the bare prefix is the container's root", async () => {
    await fetch(`${platformUrl}/pods/${POD_ID}/${upstreamPort}/v1/models?limit=2`);
    expect(seen.at(-1)).toEqual({ method: "GET", url: "/v1/models?limit=2" });
    await fetch(`${platformUrl}/pods/${POD_ID}/${upstreamPort}`);
    expect(seen.at(-1)).toEqual({ method: "GET", url: "/" });
  });

  it("an unknown Pod, a port it does not expose, or a Pod not running: each says so", async () => {
    const unknown = await fetch(`${platformUrl}/pods/nopod/${upstreamPort}/x`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "No Pod nopod on this platform" });
    const closed = await fetch(`${platformUrl}/pods/${POD_ID}/1/x`);
    expect(closed.status).toBe(404);
    expect(((await closed.json()) as { error: string }).error).toBe(
      `Pod ${POD_ID} exposes no port 1/http (its http ports: ${upstreamPort}/http)`,
    );
    status = "EXITED";
    try {
      const down = await fetch(`${platformUrl}/pods/${POD_ID}/${upstreamPort}/x`);
      expect(down.status).toBe(502);
    } finally {
      status = "RUNNING";
    }
    // Not the proxy's: the platform's own routes answer.
    expect(await (await fetch(`${platformUrl}/podsx/${POD_ID}/${upstreamPort}`)).text()).toBe(
      "platform route",
    );
  });
});
