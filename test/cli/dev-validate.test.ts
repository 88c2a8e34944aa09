// flash dev: a handler declared with validateAtSubmit has its input checked at /run and /runsync, refused with
// a 400 carrying the message the worker fails the same job with (docs/design.md §4.12).
import { describe, expect, it } from "vitest";
import { flash, freePort } from "../process.js";

describe("flash dev: input checked at submit", () => {
  it("refuses a bad input with the worker's own message; a good one runs; without the option the worker fails it", async () => {
    const port = await freePort();
    const dev = flash([
      "dev",
      "test/fixtures/checked-input.ts",
      "test/fixtures/unchecked-input.ts",
      "--port",
      String(port),
      "--api-key",
      "k4",
      "--workers",
      "1,1",
    ]);
    try {
      await dev.waitForLine(/^Ready\. Try: curl/, 60_000);
      const out = dev.stdout.join("\n");
      const checked = /checked-input\.ts is endpoint "([^"]+)"/.exec(out)?.[1];
      const unchecked = /unchecked-input\.ts is endpoint "([^"]+)"/.exec(out)?.[1];
      const post = (id: string | undefined, path: string, input: unknown) =>
        fetch(`http://127.0.0.1:${port}/v2/${id}${path}`, {
          method: "POST",
          headers: { Authorization: "Bearer k4", "Content-Type": "application/json" },
          body: JSON.stringify({ input }),
        });
      const bad = { name: 7, times: 0 };

      const refused = await post(checked, "/run", bad);
      expect(refused.status).toBe(400);
      const { error } = (await refused.json()) as { error: string };
      expect(error).toMatch(/^Invalid input \(2 issues\):\ninput\.name: .+\ninput\.times: .+$/);
      expect((await post(checked, "/runsync", bad)).status).toBe(400);
      // Nothing was queued for the refused jobs.
      const health = await fetch(`http://127.0.0.1:${port}/v2/${checked}/health`, {
        headers: { Authorization: "Bearer k4" },
      });
      expect(((await health.json()) as { jobs: { inQueue: number; completed: number } }).jobs).toMatchObject({
        inQueue: 0,
        completed: 0,
      });
      const good = await post(checked, "/runsync", { name: "Ada", times: 2 });
      expect(await good.json()).toMatchObject({ status: "COMPLETED", output: { greeting: "Hello, Ada!" } });

      // The same input on the endpoint that did not opt in: queued, and the worker fails it with the same message.
      const failed = (await (await post(unchecked, "/runsync", bad)).json()) as {
        status: string;
        error: string;
      };
      expect(failed.status).toBe("FAILED");
      // runpod-python's error: a JSON string of error_type, error_message and error_traceback.
      expect((JSON.parse(failed.error) as { error_message: string }).error_message).toBe(error);
    } finally {
      dev.child.kill("SIGINT");
      await dev.exited;
    }
  });
});
