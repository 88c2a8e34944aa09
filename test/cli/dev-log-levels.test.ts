// flash dev relays each worker's log lines at their own level: a record's continuation lines (a stack, an
// indented JSON payload) stay at the level of the line they continue, not the stream's default (INFO).
import { describe, expect, it } from "vitest";
import { flash, freePort } from "../process.js";

describe("flash dev: a failed job's exception, as the terminal shows it", { timeout: 120_000 }, () => {
  it("every line of the Captured Handler Exception record is an ERROR line", async () => {
    const port = await freePort();
    const dev = flash([
      "dev",
      "examples/echo/handler.ts",
      "--port",
      String(port),
      "--api-key",
      "k3",
      "--workers",
      "1,1",
    ]);
    try {
      await dev.waitForLine(/^Ready\. Try: curl/, 60_000);
      const answer = await fetch(`http://127.0.0.1:${port}/v2/echo/runsync`, {
        method: "POST",
        headers: { Authorization: "Bearer k3", "Content-Type": "application/json" },
        body: JSON.stringify({ input: { mock_error: "kaput" } }),
      }).then((r) => r.json() as Promise<{ status: string }>);
      expect(answer.status).toBe("FAILED");
      // The payload's last line closes it: once it is in, the whole record has been relayed.
      await dev.waitForLine(/\| ERROR \| .* \| {5}"runpod_version": /, 30_000);
      await dev.waitForLine(/\| ERROR \| .* \| }$/, 30_000);
      const out = dev.stdout.join("\n");
      expect(out).toMatch(/\| ERROR \| .* \| Captured Handler Exception$/m);
      expect(out).toMatch(/\| ERROR \| .* \| {5}"error_message": "kaput",$/m);
      expect(out).not.toMatch(/\| INFO \| .* \| {5}"error_/m);
    } finally {
      dev.child.kill("SIGINT");
      await dev.exited;
    }
  });
});
