// `flash dev` names an endpoint as `flash deploy` does (its Endpoint's name), keeps the workers it declares,
// and suggests a curl for one of its real routes when there is no test_input.json.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { flash, ROOT } from "../process.js";

const KEY = "naming-key";

describe("flash dev: names, workers and the first curl", { timeout: 90_000 }, () => {
  const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("a load-balanced app is /lb/<slug of its Endpoint name>/, as deploy names it", async () => {
    const app = join(dir, "lbapp");
    mkdirSync(app);
    writeFileSync(
      join(app, "handler.ts"),
      [
        'import { Endpoint } from "flash-worker";',
        'const api = new Endpoint({ name: "Summary API", workers: [0, 2] });',
        'api.get("/hello/:name", ({ name }: { name: string }) => ({ hello: name }));',
        'api.post("/sum", ({ a, b }: { a: number; b: number }) => ({ sum: a + b }));',
        "export default api;",
        "",
      ].join("\n"),
    );
    const dev = flash(["dev", join(app, "handler.ts"), "--port", "0", "--api-key", KEY], {}, dir);
    try {
      const line = await dev.waitForLine(
        /is load-balanced endpoint "summary-api" at http:\/\/127\.0\.0\.1:\d+\/lb\/summary-api/,
      );
      const base = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)![1]!;
      // No test_input.json: the suggestion calls a declared route, not GET /.
      const ready = await dev.waitForLine(/^Ready\. Try: /);
      expect(ready).toBe(
        `Ready. Try: curl -s -X GET ${base}/lb/summary-api/hello/name -H 'Authorization: Bearer ${KEY}'`,
      );
      const tried = await fetch(`${base}/lb/summary-api/hello/name`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(await tried.json()).toEqual({ hello: "name" });
      // The worker's own 404 names the endpoint by the name the URL uses.
      const missing = await fetch(`${base}/lb/summary-api/nope`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ error: "No route GET /nope on endpoint 'Summary API'" });
      // The declared workers, [0, 2], not a dev default.
      const endpoints = (await (
        await fetch(`${base}/console/api/endpoints`, { headers: { authorization: `Bearer ${KEY}` } })
      ).json()) as Array<{ id: string; workers: [number, number] }>;
      expect(endpoints.find((e) => e.id === "summary-api")?.workers).toEqual([0, 2]);
    } finally {
      dev.child.kill("SIGINT");
      await dev.exited;
    }
  });
});
