// flash deploy of an app with a queue endpoint and a load-balanced one in one image built from the project's own
// Dockerfile (issue 44): each endpoint's container runs its own file (`args`), not the Dockerfile's CMD, so both
// answer. Built on the runtime image, pushed to a real registry on loopback, run as buildah containers by the local
// platform (every exchange judged by the OpenAPI document). Needs root, buildah and docker-registry.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makeProject, type Project } from "../cli/toolkit-project.js";
import type { ConformanceProxy } from "../deploy/openapi.js";
import { flashRun } from "../process.js";
import {
  DEPLOY_STORAGE,
  describeWithImages,
  type LocalCloud,
  type Registry,
  STANDIN,
  startLocalCloud,
} from "./registry.js";
import { snippets } from "./snippets.js";

const KEY = "e2e-own-dockerfile-key";
const readmeDockerfile = snippets("README.md").find(
  (s) => s.section === "Wrap a model server" && s.lang === "dockerfile",
)?.text;

describeWithImages("flash deploy: two endpoints, one image from the project's own Dockerfile", () => {
  let cloud: LocalCloud | undefined;
  let registry: Registry;
  let proxy: ConformanceProxy;
  let project: Project;
  let home: string;

  beforeAll(async () => {
    expect(readmeDockerfile, 'README.md "Wrap a model server" has a Dockerfile').toMatch(
      /^CMD \["queue\/handler\.ts"\]$/m,
    );
    cloud = await startLocalCloud(KEY, 5_000);
    ({ registry, proxy } = cloud);
    home = mkdtempSync(join(tmpdir(), "flash-home-"));
    project = makeProject({
      "queue/handler.ts": [
        'import { Endpoint } from "flash-worker";',
        'const ep = new Endpoint({ name: "own-queue", cpu: "cpu3c-2-4" });',
        'export default ep.handler(async (job: { input: unknown }) => ({ from: "queue", input: job.input }));',
        "",
      ].join("\n"),
      "queue/test_input.json": JSON.stringify({ input: { n: 1 } }),
      "lb/handler.ts": [
        'import { Endpoint } from "flash-worker";',
        'const api = new Endpoint({ name: "own-lb", cpu: "cpu3c-2-4" });',
        'api.get("/whoami", () => ({ from: "lb" }));',
        "export default api;",
        "",
      ].join("\n"),
      "lb/test_input.json": JSON.stringify({ requests: [{ method: "GET", path: "/whoami" }] }),
      // The README's own Dockerfile ("Wrap a model server"): its CMD names the queue file, which every endpoint used to run.
      Dockerfile: readmeDockerfile ?? "",
      ".dockerignore": "node_modules\n.flash\n",
    });
  }, 20 * 60_000);

  afterAll(async () => {
    await cloud?.close();
    project?.remove();
    if (home) rmSync(home, { recursive: true, force: true });
  }, 5 * 60_000);

  it("each endpoint's template args name its file, and both endpoints answer", {
    timeout: 20 * 60_000,
  }, async () => {
    const deployed = await flashRun(
      [
        ...["deploy", "queue/handler.ts", "lb/handler.ts"],
        ...["--image", `${registry.host}/own:1`, "--api-url", proxy.url],
      ],
      {
        HOME: home,
        RUNPOD_API_KEY: KEY,
        FLASH_CONTAINER_STORAGE: DEPLOY_STORAGE,
        FLASH_NODE_BASE_IMAGE: STANDIN,
      },
      project.dir,
    );
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}`.slice(-4000)).toBe(0);
    expect(deployed.stderr).toContain("from the project's Dockerfile");
    expect(deployed.stdout).toMatch(/^✓ own-queue ready: smoke job \S+ from test_input\.json COMPLETED/m);
    expect(deployed.stdout).toMatch(/^✓ own-lb ready: GET \/whoami \(test_input\.json\) answered/m);

    const headers = { Authorization: `Bearer ${KEY}` };
    const { endpoints } = (await (await fetch(`${proxy.url}/v2/serverless`, { headers })).json()) as {
      endpoints: { id: string; name: string; args: string }[];
    };
    const byName = new Map(endpoints.map((e) => [e.name, e]));
    expect(byName.get("own-queue")?.args).toBe("queue/handler.ts");
    expect(byName.get("own-lb")?.args).toBe("lb/handler.ts");
    const recorded = JSON.parse(readFileSync(join(project.dir, ".flash/deployments.json"), "utf8")) as {
      endpoints: Record<string, { url: string }>;
    };

    const queue = await fetch(`${recorded.endpoints["own-queue"]!.url}/runsync`, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: JSON.stringify({ input: { hello: "queue" } }),
    });
    expect(await queue.json()).toMatchObject({
      status: "COMPLETED",
      output: { from: "queue", input: { hello: "queue" } },
    });
    const lb = await fetch(`${recorded.endpoints["own-lb"]!.url}/whoami`, { headers });
    expect(await lb.json()).toEqual({ from: "lb" });

    const removed = await flashRun(
      ["undeploy", "--all", "--yes", "--api-url", proxy.url],
      { HOME: home, RUNPOD_API_KEY: KEY },
      project.dir,
    );
    expect(removed.code, removed.stderr).toBe(0);
    expect(proxy.violations).toEqual([]);
    expect(proxy.requestViolations).toEqual([]);
  });
});
