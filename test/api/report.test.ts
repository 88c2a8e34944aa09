// The committed API report matches the public surface of the package's entry points (what `npm run api:check` checks in CI).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script, without declarations.
import { apiReport, REPORT } from "../../scripts/api-report.mjs";

describe("API report", () => {
  const report = (apiReport as () => string)();

  it("is current: a change to the public surface comes with its reviewed report", () => {
    expect(report).toBe(readFileSync(REPORT as string, "utf8"));
  });

  it("covers every entry point, and flash-worker/client only what users call", () => {
    const sections = report.split(/^## /m).slice(1);
    expect(sections.map((s) => s.split("\n")[0])).toEqual([
      "flash-worker",
      "flash-worker/client",
      "flash-worker/testing",
      "flash-worker/gpu",
      "flash-worker/files",
    ]);
    const client = sections[1]!;
    for (const name of [
      "EndpointClient",
      "endpoint",
      "pod",
      "isFlashError",
      "ExecutionTimeoutError",
      "resolveApiKey",
    ]) {
      expect(client).toMatch(new RegExp(`^(class|function|const|interface|type) ${name}\\b`, "m"));
    }
    for (const name of ["CONNECT_RETRY", "saveApiKey", "DEFAULT_BREAKERS", "readDeployments"]) {
      expect(client).not.toContain(name);
    }
  });

  // Issue 45: the main entry is what a handler author calls; the CUDA binding and the file helpers have subpaths.
  const section = (name: string) => report.split(/^## /m).find((s) => s.split("\n")[0] === name)!;
  const declarations = (text: string) => text.match(/^(class|interface|type|function|const) \w+/gm) ?? [];

  it("flash-worker: at most 60 declarations, none of them the CUDA binding or the file helpers", () => {
    const main = section("flash-worker");
    expect(declarations(main).length).toBeLessThanOrEqual(60);
    const gpu = [
      "Cuda",
      "CudaContext",
      "Kernel",
      "pointerParam",
      "SAXPY_PTX",
      "runSaxpy",
      "CudaError",
      "NvmlError",
    ];
    const files = ["download", "upload", "cachedModelPath", "DownloadError", "UploadError"];
    for (const name of [...gpu, ...files, "gpuFacts", "GpuInventory", "SERVER_CONCURRENCY"]) {
      expect(main).not.toMatch(new RegExp(`^(class|function|const|interface|type) ${name}\\b`, "m"));
    }
    for (const name of gpu) {
      expect(section("flash-worker/gpu")).toMatch(
        new RegExp(`^(class|function|const|interface|type) ${name}\\b`, "m"),
      );
    }
    for (const name of files) {
      expect(section("flash-worker/files")).toMatch(
        new RegExp(`^(class|function|const|interface|type) ${name}\\b`, "m"),
      );
    }
  });

  it("Endpoint: the methods a handler author calls, no runtime internals, no unexported base class", () => {
    const main = section("flash-worker");
    const endpoint = main.slice(
      main.indexOf("class Endpoint "),
      main.indexOf("\n}", main.indexOf("class Endpoint ")),
    );
    expect(endpoint.split("\n")[0]).toBe("class Endpoint {");
    for (const member of [
      "assertRoutes",
      "isLoadBalanced",
      "queueHandler",
      "startHooks",
      "sockets",
      "routes",
      "declared",
      "settings",
    ]) {
      expect(endpoint).not.toMatch(new RegExp(`^  ${member}\\??:`, "m"));
    }
    for (const member of ["get", "post", "route", "websocket", "handler", "onStart", "name"]) {
      expect(endpoint).toMatch(new RegExp(`^  ${member}:`, "m"));
    }
  });

  it("flash-worker: at most 30 runtime values", async () => {
    const main = await import("../../src/index.js");
    expect(Object.keys(main).length).toBeLessThanOrEqual(30);
    expect(Object.keys(main)).not.toContain("Cuda");
  });
});
