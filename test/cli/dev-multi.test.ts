// flash dev with several handler files: every endpoint of the app on one local platform.
import { describe, expect, it } from "vitest";
import { flash, freePort } from "../process.js";

describe("flash dev with several files", () => {
  it("serves one endpoint per file, queue and load-balanced side by side", async () => {
    const port = await freePort();
    const dev = flash(
      [
        "dev",
        "examples/echo/handler.ts",
        "examples/stream/handler.ts",
        "examples/load-balanced/handler.ts",
        "--port",
        String(port),
        "--api-key",
        "k2",
        "--workers",
        "1,1",
      ],
      { MODEL_LOAD_MS: "0" },
    );
    try {
      await dev.waitForLine(/^Ready\. Try: curl/, 60_000);
      const out = dev.stdout.join("\n");
      expect(out).toContain(`is endpoint "echo" at http://127.0.0.1:${port}/v2/echo`);
      expect(out).toContain(`is endpoint "stream" at http://127.0.0.1:${port}/v2/stream`);
      expect(out).toContain(
        `is load-balanced endpoint "lb-example" at http://127.0.0.1:${port}/lb/lb-example`,
      );
      const headers = { Authorization: "Bearer k2", "Content-Type": "application/json" };
      const call = (path: string, body: unknown) =>
        fetch(`http://127.0.0.1:${port}${path}`, {
          method: "POST",
          headers,
          body: JSON.stringify(body),
        }).then((r) => r.json() as Promise<Record<string, unknown>>);
      expect(await call("/v2/echo/runsync", { input: { a: 1 } })).toMatchObject({
        status: "COMPLETED",
        output: { a: 1 },
      });
      expect(await call("/v2/stream/runsync", { input: { text: "p q" } })).toMatchObject({
        status: "COMPLETED",
        output: [{ token: "p" }, { token: "q" }],
      });
      expect(await call("/lb/lb-example/echo", { hello: "lb" })).toStrictEqual({ hello: "lb" });
    } finally {
      dev.child.kill("SIGINT");
      await dev.exited;
    }
  });
});
