// GPU facts where people look, on a (stand-in) GPU host: the load-balanced /ping body and the local
// console's worker view; on this CPU host the /ping body stays { status: "healthy" }.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConsoleEndpoint } from "../../src/platform/console/wire.js";
import { startTestPlatform, type TestPlatform } from "../platform/helpers.js";
import { flash } from "../process.js";
import { fakeDriverDir, hasCompiler } from "./fake-driver.js";

async function pingBody(env: Record<string, string>): Promise<unknown> {
  const run = flash(["start", "examples/load-balanced/handler.ts"], {
    PORT: "0",
    FLASH_LB_HOST: "127.0.0.1",
    ...env,
  });
  try {
    await run.waitForLine(/ready \| \/ping answers 200/, 60_000);
    const line = await run.waitForLine(/listening on http:\/\/127\.0\.0\.1:\d+/);
    const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)![1];
    const response = await fetch(`${url}/ping`);
    expect(response.status).toBe(200);
    return await response.json();
  } finally {
    run.child.kill("SIGTERM");
    await run.exited;
  }
}

describe("the load-balanced /ping body", () => {
  it("on a CPU host: no GPU field", async () => {
    expect(await pingBody({})).toEqual({ status: "healthy" });
  });

  it.runIf(hasCompiler())("on a GPU host: driver, CUDA and each GPU", async () => {
    expect(await pingBody({ FLASH_GPU_LIBRARY_DIR: fakeDriverDir() })).toEqual({
      status: "healthy",
      gpu: {
        driver: "580.159.04",
        cuda: "13.0",
        gpus: [
          { name: "Fake GPU Zero", memoryTotalMiB: 143771 },
          { name: "Fake GPU One", memoryTotalMiB: 143771 },
        ],
      },
    });
  });
});

describe.runIf(hasCompiler())("the local console's worker view on a GPU host", () => {
  let t: TestPlatform;
  beforeAll(async () => {
    // The platform reads the host's GPU facts once per process: this file's process is the GPU host.
    process.env.FLASH_GPU_LIBRARY_DIR = fakeDriverDir();
    t = await startTestPlatform({
      endpoints: [
        { id: "gpu-ep", command: [process.execPath, "-e", "setInterval(() => {}, 1000)"], workers: [1, 1] },
      ],
    });
  });
  afterAll(async () => {
    await t.platform.close();
    delete process.env.FLASH_GPU_LIBRARY_DIR;
  });

  it("each worker the platform spawned shows the GPUs it runs on", async () => {
    let endpoint: ConsoleEndpoint | undefined;
    for (let i = 0; i < 100 && !endpoint?.workerList.length; i++) {
      const response = await fetch(`${t.platform.url}/console/api/endpoints`, {
        headers: { authorization: `Bearer ${t.platform.apiKey}` },
      });
      const body = (await response.json()) as { endpoints: ConsoleEndpoint[] } | ConsoleEndpoint[];
      const list = Array.isArray(body) ? body : body.endpoints;
      endpoint = list.find((e) => e.id === "gpu-ep");
      if (!endpoint?.workerList.length) await new Promise((r) => setTimeout(r, 100));
    }
    expect(endpoint?.workerList[0]?.gpu).toBe("Fake GPU Zero, Fake GPU One");
  });
});
