// Files workers store on the local platform (generated images): links that expire after 7 days, as the
// interface document says of public image endpoints' image_url.
import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import type { PlatformContext } from "../../src/platform/api/context.js";
import { filesApi } from "../../src/platform/api/files.js";
import { errorHandler } from "../../src/platform/api/http.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";

let platform: Platform | undefined;
afterEach(async () => {
  await platform?.close();
  platform = undefined;
});

describe("file store", () => {
  it("stores bytes from a worker and serves them by their link, which lives fileLifetimeMs", async () => {
    platform = await startPlatform({ fileLifetimeMs: 3_600_000, endpoints: [{ id: "img" }] });
    const env = platform.workerEnv("img", "w1");
    expect(env.FLASH_FILES_URL).toBe(`${platform.url}/v2/img/files`);
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const before = Date.now();
    const stored = await fetch(env.FLASH_FILES_URL!, {
      method: "POST",
      headers: { Authorization: platform.apiKey, "Content-Type": "image/png" },
      body: png,
    });
    const after = Date.now();
    expect(stored.status).toBe(201);
    const { url, expiresAt } = (await stored.json()) as { url: string; expiresAt: string };
    // Stored between `before` and `after`: the link ends one lifetime after that instant.
    expect(Date.parse(expiresAt)).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(Date.parse(expiresAt)).toBeLessThanOrEqual(after + 3_600_000);
    const got = await fetch(url);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await got.arrayBuffer())).toStrictEqual(png);
  });

  it("a link is served until its lifetime ends, then answers 410 (the store's clock, set by the test)", async () => {
    // The store's own clock, moved by hand: expiry is checked at the instant, not raced against a timer.
    let clock = 1_000_000;
    const app = Fastify();
    app.setErrorHandler(errorHandler(createLogger({ level: "SILENT", json: false })));
    const ctx = { apiKey: "key" } as PlatformContext;
    let base = "";
    await app.register(filesApi, { ctx, lifetimeMs: 400, baseUrl: () => base, now: () => clock });
    base = await app.listen({ host: "127.0.0.1", port: 0 });
    try {
      const stored = await fetch(`${base}/v2/img/files`, {
        method: "POST",
        headers: { Authorization: "key", "Content-Type": "image/png" },
        body: Buffer.from([1, 2, 3]),
      });
      const { url, expiresAt } = (await stored.json()) as { url: string; expiresAt: string };
      expect(Date.parse(expiresAt)).toBe(1_000_400);
      clock += 399;
      const last = await fetch(url);
      expect(last.status).toBe(200);
      expect(Buffer.from(await last.arrayBuffer())).toStrictEqual(Buffer.from([1, 2, 3]));
      clock += 1;
      const gone = await fetch(url);
      expect(gone.status).toBe(410);
      expect(await gone.json()).toStrictEqual({ error: "This file's URL has expired" });
    } finally {
      await app.close();
    }
  });

  it("the default lifetime is 7 days; storing needs the key", async () => {
    platform = await startPlatform({ endpoints: [{ id: "img" }] });
    const url = `${platform.url}/v2/img/files`;
    expect((await fetch(url, { method: "POST", body: "x" })).status).toBe(401);
    const stored = await fetch(url, {
      method: "POST",
      headers: { Authorization: platform.apiKey },
      body: "x",
    });
    const { expiresAt } = (await stored.json()) as { expiresAt: string };
    const days = (Date.parse(expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.99);
    expect(days).toBeLessThanOrEqual(7);
    expect((await fetch(`${platform.url}/files/not-a-file`)).status).toBe(404);
  });

  it("the image-endpoint example returns a platform link to a real PNG", async () => {
    platform = await startPlatform({
      endpoints: [{ id: "img", file: "examples/image-endpoint/handler.ts", workers: [1, 1] }],
    });
    const answer = await fetch(`${platform.url}/v2/img/runsync`, {
      method: "POST",
      headers: { Authorization: `Bearer ${platform.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ input: { prompt: "a red sunset", width: 64, height: 48 } }),
    });
    const job = (await answer.json()) as { status: string; output: { image_url: string; cost: number } };
    expect(job.status).toBe("COMPLETED");
    expect(job.output.image_url.startsWith(`${platform.url}/files/`)).toBe(true);
    const image = Buffer.from(await (await fetch(job.output.image_url)).arrayBuffer());
    expect(image.subarray(0, 8)).toStrictEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(image.readUInt32BE(16)).toBe(64);
    expect(image.readUInt32BE(20)).toBe(48);
  });
});
