// The node:http transport over TLS, as the worker reaches the real platform (https): the server's certificate
// is checked against the trusted CAs, and one kept-alive connection carries the requests.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runClient, selfSigned } from "./fixtures/tls.js";

const CLIENT = fileURLToPath(new URL("./fixtures/tls-client.ts", import.meta.url));

let dir = "";
let server: Server;
let url = "";
const connections = new Set<number>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "flash-tls-"));
  server = createServer(selfSigned(dir), (request, response) => {
    connections.add(request.socket.remotePort ?? 0);
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    request.on("end", () => {
      response
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ echo: JSON.parse(body) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/echo`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** The client in its own process: NODE_EXTRA_CA_CERTS is read when Node starts. */
function client(
  env: Record<string, string>,
): Promise<{ answers?: { status: number; text: string }[]; error?: string }> {
  return runClient(CLIENT, [url], env);
}

describe("nodeTransport over https", () => {
  it("refuses a server whose certificate no trusted CA signed", async () => {
    const result = await client({});
    expect(result.error).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
  });

  it("with the server's CA trusted: answers come back over one kept-alive TLS connection", async () => {
    connections.clear();
    const result = await client({ NODE_EXTRA_CA_CERTS: join(dir, "cert.pem") });
    expect(result.answers).toEqual(
      [0, 1, 2].map((i) => ({ status: 200, text: JSON.stringify({ echo: { i } }) })),
    );
    expect(connections.size).toBe(1);
  });
});
