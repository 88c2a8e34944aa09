// `flash endpoints` against the local platform in this process: the table, and --json.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { flashRun } from "../process.js";

let platform: Platform;
beforeAll(async () => {
  // A tool that cannot run here: endpoints are recorded, their workers never start.
  platform = await startPlatform({
    apiKey: "k",
    containers: { tool: "podman", env: { PATH: "/nonexistent" } },
    logger: createLogger({ level: "SILENT", json: false }),
  });
  // The smallest body POST /v2/serverless takes.
  const created = await fetch(`${platform.url}/v2/serverless`, {
    method: "POST",
    headers: { Authorization: "Bearer k", "Content-Type": "application/json" },
    body: JSON.stringify({
      name: "echo",
      type: "QUEUE",
      image: "127.0.0.1:1/app:1",
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
    }),
  });
  expect(created.status).toBe(201);
});
afterAll(() => platform.close());

describe("flash endpoints", () => {
  it("lists the account's endpoints as a table", async () => {
    const run = await flashRun(["endpoints", "--api-url", platform.url, "--api-key", "k"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^echo {2}\S+ {2}QUEUE /);
  });

  it("--json: the same list as JSON", async () => {
    const run = await flashRun(["endpoints", "--api-url", platform.url, "--api-key", "k", "--json"]);
    expect(run.code).toBe(0);
    const list = JSON.parse(run.stdout) as { endpoint: { name: string; type: string } }[];
    expect(list.map((e) => [e.endpoint.name, e.endpoint.type])).toEqual([["echo", "QUEUE"]]);
  });
});
