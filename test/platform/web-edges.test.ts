// The platform's web-facing edges against a hostile page or a log reader (issue 43): stored files served so a
// browser never runs them as the console, links made from the platform's own address, webhook URLs logged without
// their credentials, and runpod-python's keyless paths answering only requests sent to a loopback name.
import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ENDPOINT, eventually, startTestPlatform, type TestPlatform } from "./helpers.js";

let t: TestPlatform | undefined;
afterEach(async () => {
  await t?.platform.close();
  t = undefined;
});

interface RawAnswer {
  status: number;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A request with the Host header a browser would send for another name (fetch cannot set Host). */
function send(
  url: string,
  options: { method?: string; host?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawAnswer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? "GET",
        headers: { ...(options.host ? { host: options.host } : {}), ...options.headers },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

describe("stored files (/files/<id>)", () => {
  const store = (p: TestPlatform, type: string, body: string, host?: string) =>
    send(`${p.base()}/files`, {
      method: "POST",
      ...(host ? { host } : {}),
      headers: { authorization: p.platform.apiKey, "content-type": type },
      body,
    });

  it("an uploaded HTML page is served as a sandboxed download, never as a page of the console's origin", async () => {
    t = await startTestPlatform();
    const stored = await store(t, "text/html", "<script>fetch('/x?k='+localStorage.key(0))</script>");
    expect(stored.status).toBe(201);
    const { url } = JSON.parse(stored.body) as { url: string };
    const id = url.split("/").at(-1)!;
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    const served = await send(url, {});
    expect(served.status).toBe(200);
    expect(served.body).toContain("<script>");
    expect(served.headers["content-type"]).toBe("text/html");
    expect(served.headers["x-content-type-options"]).toBe("nosniff");
    expect(served.headers["content-security-policy"]).toBe("sandbox; default-src 'none'");
    expect(served.headers["content-disposition"]).toBe(`attachment; filename="${id}"`);
  });

  it("a known type keeps its extension in the download's name; the name is never the uploader's", async () => {
    t = await startTestPlatform();
    const png = JSON.parse((await store(t, "image/png", "png bytes")).body) as { url: string };
    const served = await send(png.url, {});
    expect(served.headers["content-disposition"]).toBe(
      `attachment; filename="${png.url.split("/").at(-1)}.png"`,
    );
    const odd = JSON.parse((await store(t, 'application/x-evil; name="../../evil.html"', "data")).body) as {
      url: string;
    };
    expect((await send(odd.url, {})).headers["content-disposition"]).toBe(
      `attachment; filename="${odd.url.split("/").at(-1)}"`,
    );
  });

  it("the link is made from the platform's address, not from the request's Host", async () => {
    t = await startTestPlatform();
    const stored = await store(t, "image/png", "png bytes", "evil.example:8000");
    expect(stored.status).toBe(201);
    const { url } = JSON.parse(stored.body) as { url: string };
    expect(url).toMatch(new RegExp(`^${t.platform.url}/files/[0-9a-f]{32}$`));
    expect(url).not.toContain("evil");
  });
});

describe("webhook URLs in the platform's log", () => {
  it("show no user, password or query value; the delivery itself uses the whole URL", async () => {
    const seen: { authorization?: string; url?: string }[] = [];
    const receiver = createServer((req, res) => {
      seen.push({ authorization: req.headers.authorization, url: req.url });
      req.resume();
      // The first delivery fails (a WARN line with the URL), the second succeeds (a DEBUG line with it).
      res.statusCode = seen.length === 1 ? 500 : 200;
      res.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const { port } = receiver.address() as AddressInfo;
    try {
      t = await startTestPlatform();
      const webhook = `http://hook-user:hook-pass-1234@127.0.0.1:${port}/hook?token=tok-98765&v=2`;
      const run = await t.client("/run", { body: { input: 1, webhook } });
      const { id } = (await run.json()) as { id: string };
      const worker = t.worker("w1");
      await worker.takeOne();
      await worker.done(id, { output: 1 });
      const platformLines = () => t!.lines;
      await eventually(() => platformLines().some((l) => l.includes("Webhook delivered")), "the delivery");
      const shown = `http://***:***@127.0.0.1:${port}/hook?token=***&v=***`;
      const webhookLines = platformLines().filter((l) => l.includes("Webhook"));
      expect(webhookLines).toEqual([
        expect.stringContaining(`Webhook to ${shown} failed (attempt 1 of 3): 500 Internal Server Error`),
        expect.stringContaining(`Webhook delivered to ${shown}`),
      ]);
      for (const line of platformLines()) {
        for (const secret of ["hook-user", "hook-pass-1234", "tok-98765"]) expect(line).not.toContain(secret);
      }
      expect(seen.map((s) => s.url)).toEqual(["/hook?token=tok-98765&v=2", "/hook?token=tok-98765&v=2"]);
      expect(seen[0]?.authorization).toBe(
        `Basic ${Buffer.from("hook-user:hook-pass-1234").toString("base64")}`,
      );
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

describe("runpod-python's keyless root paths (--rp_serve_api)", () => {
  const job = JSON.stringify({ input: { hi: 1 } });
  const json = { "content-type": "application/json" };

  it("answer a request sent to a loopback name without a key", async () => {
    t = await startTestPlatform({ rootEndpoint: ENDPOINT });
    const port = t.platform.port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      const answer = await send(`${t.platform.url}/run`, { method: "POST", host, headers: json, body: job });
      expect(answer.status, host).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ status: "IN_QUEUE" });
    }
  });

  it("refuse another Host (a page whose name was rebound to 127.0.0.1) with 403, and queue nothing", async () => {
    t = await startTestPlatform({ rootEndpoint: ENDPOINT });
    for (const [method, path] of [
      ["POST", "/run"],
      ["POST", "/runsync"],
      ["GET", "/health"],
      ["GET", "/status/some-job"],
    ] as const) {
      const answer = await send(`${t.platform.url}${path}`, {
        method,
        host: `evil.example:${t.platform.port}`,
        headers: json,
        ...(method === "POST" ? { body: job } : {}),
      });
      expect(answer.status, path).toBe(403);
      expect(JSON.parse(answer.body)).toEqual({
        error: `Host "evil.example:${t.platform.port}" is not this machine's loopback: the paths that need no API key answer only requests sent to localhost, 127.0.0.1 or [::1] (a web page cannot reach them by DNS rebinding); send the API key to use another name`,
      });
    }
    const health = await t.client("/health");
    expect(((await health.json()) as { jobs: { inQueue: number } }).jobs.inQueue).toBe(0);
  });

  it("another Host with the key is the keyed API as usual", async () => {
    t = await startTestPlatform({ rootEndpoint: ENDPOINT });
    const answer = await send(`${t.platform.url}/run`, {
      method: "POST",
      host: `evil.example:${t.platform.port}`,
      headers: { ...json, authorization: `Bearer ${t.platform.apiKey}` },
      body: job,
    });
    expect(answer.status).toBe(200);
  });
});
