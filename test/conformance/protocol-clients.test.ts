// The two PlatformClient implementations on their own: what each sends the platform for one call.
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { readWorkerConfig } from "../../src/runtime/config/options.js";
import type { PlatformClient } from "../../src/runtime/queue/client.js";
import { HttpPlatformClient } from "../../src/runtime/queue/http-client.js";
import { InProcessPlatformClient } from "../../src/runtime/queue/in-process-client.js";
import { VERSION } from "../../src/version.js";
import { RecordingPlatform } from "./recording-platform.js";

const quiet = () => createLogger({ level: "ERROR", json: false, destination: { write: () => {} } });

const closing: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const server of closing.splice(0)) await server.close();
});

describe("reportUnhealthy handed on alone, as start.ts gives it to the fitness checks and the warm-up", () => {
  it("HttpPlatformClient: one GET to the ping URL with status=unhealthy, the check and the reason", async () => {
    const platform = await new RecordingPlatform().start();
    closing.push(platform);
    const { config } = readWorkerConfig([], platform.env());
    const { reportUnhealthy } = new HttpPlatformClient({ platform: config.platform, log: quiet() });
    await reportUnhealthy("memory", "only 1 GB free", 5000);
    const pings = platform.of("ping");
    expect(pings).toHaveLength(1);
    const url = new URL(pings[0]!.url, platform.base);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      gpu: "X",
      status: "unhealthy",
      check: "memory",
      reason: "only 1 GB free",
      runpod_version: VERSION,
    });
  });

  it("InProcessPlatformClient: the local platform marks the worker unhealthy with the check and the reason", async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } });
    const platform: Platform = await startPlatform({ endpoints: [{ id: "ep" }], logger });
    closing.push(platform);
    const worker = readWorkerConfig([], platform.workerEnv("ep", "w1")).config;
    const client: PlatformClient = new InProcessPlatformClient(
      platform.workerCalls("ep", "w1"),
      worker.platform,
    );
    const { reportUnhealthy } = client;
    await reportUnhealthy("memory", "only 1 GB free", 5000);
    expect(lines.join("")).toContain("Worker:w1 | reported unhealthy: memory: only 1 GB free");
  });
});
