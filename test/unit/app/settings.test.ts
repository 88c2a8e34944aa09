import { describe, expect, it } from "vitest";
import { declarationOf } from "../../../src/app/endpoint.js";
import { parseEndpointOptions } from "../../../src/app/settings.js";
import {
  Endpoint,
  EndpointConfigError,
  type EndpointOptions,
  GpuGroup,
  GpuType,
} from "../../../src/index.js";

const make = (options: Record<string, unknown>) => () => new Endpoint(options as EndpointOptions);

describe("Endpoint configuration (interface document: Toolkit endpoint configuration)", () => {
  it("defaults: GpuGroup.ANY, workers [0, 1], no timeout, Node 24, concurrency 1", () => {
    const api = new Endpoint({ name: "my-api" });
    expect(api.name).toBe("my-api");
    expect(api.gpu).toEqual(["any"]);
    expect(api.cpu).toBeUndefined();
    expect(api.workers).toEqual([0, 1]);
    expect(api.executionTimeoutMs).toBe(0);
    expect(api.nodeVersion).toBe("24");
    expect(api.dependencies).toEqual([]);
    expect(declarationOf(api).settings.maxConcurrency).toBe(1);
  });

  it("keeps every field it is given", () => {
    const api = new Endpoint({
      name: "full",
      gpu: GpuType.NVIDIA_A100_80GB_PCIe,
      workers: [1, 5],
      volume: "vol-123",
      dependencies: ["zod==3.23.8", "lodash>=4", "@scope/pkg@^1.2.0", "left-pad"],
      executionTimeoutMs: 60_000,
      nodeVersion: 20,
      maxConcurrency: 4,
    });
    expect(api.gpu).toEqual(["NVIDIA A100 80GB PCIe"]);
    expect(api.workers).toEqual([1, 5]);
    expect(api.volume).toBe("vol-123");
    expect(api.dependencies).toEqual(["zod==3.23.8", "lodash>=4", "@scope/pkg@^1.2.0", "left-pad"]);
    expect(api.executionTimeoutMs).toBe(60_000);
    expect(api.nodeVersion).toBe("20");
  });

  it("a GPU list is a set: order is not kept, repeats collapse", () => {
    const a = new Endpoint({ gpu: [GpuType.NVIDIA_RTX_A6000, GpuType.NVIDIA_GEFORCE_RTX_4090] });
    const b = new Endpoint({
      gpu: [GpuType.NVIDIA_GEFORCE_RTX_4090, GpuType.NVIDIA_RTX_A6000, GpuType.NVIDIA_RTX_A6000],
    });
    expect(a.gpu).toEqual(b.gpu);
    expect(a.gpu).toHaveLength(2);
    expect(new Endpoint({ gpu: GpuGroup.ADA_24 }).gpu).toEqual(["ADA_24"]);
  });

  it("cpu takes instance type names, instead of a GPU", () => {
    const api = new Endpoint({ name: "cpu", cpu: "cpu5c-4-8" });
    expect(api.cpu).toEqual(["cpu5c-4-8"]);
    expect(api.gpu).toBeUndefined();
    expect(new Endpoint({ cpu: ["cpu3g-2-8", "cpu3c-1-2"] }).cpu).toEqual(["cpu3c-1-2", "cpu3g-2-8"]);
  });

  it("workers as a number n means [0, n]", () => {
    expect(new Endpoint({ workers: 3 }).workers).toEqual([0, 3]);
  });

  it("accepts Node versions as numbers, strings, v-prefixed or .x", () => {
    for (const v of [22, "22", "v22", "22.x"]) {
      expect(new Endpoint({ nodeVersion: v as 22 }).nodeVersion).toBe("22");
    }
    expect(new Endpoint({ nodeVersion: "24" }).nodeVersion).toBe("24");
  });

  const errors: [string, Record<string, unknown>, string][] = [
    [
      "gpu and cpu together",
      { gpu: GpuGroup.ANY, cpu: "cpu5c-4-8" },
      "gpu and cpu are mutually exclusive. specify one or neither.",
    ],
    ["gpu of the wrong type", { gpu: 4090 }, "gpu must be a GpuGroup, GpuType, or list, got number"],
    [
      "an unknown GPU name",
      { gpu: "RTX 9999" },
      "gpu must be a GpuGroup, GpuType, or list, got string: RTX 9999. e.g. GpuGroup.ANY or GpuType.NVIDIA_RTX_A6000",
    ],
    ["an empty GPU list", { gpu: [] }, "gpu list must not be empty"],
    [
      "cpu not an instance type",
      { cpu: "big" },
      "cpu must be an instance type name like 'cpu5c-4-8', got: big",
    ],
    ["cpu of the wrong type", { cpu: 8 }, "cpu must be an instance type name or list, got number"],
    [
      "workers not a pair",
      { workers: [1, 2, 3] },
      "workers must be an int or (min, max) tuple, got array: [1,2,3]",
    ],
    ["workers as a string", { workers: "3" }, "workers must be an int or (min, max) tuple, got string: 3"],
    [
      "workers not whole numbers",
      { workers: [0.5, 2] },
      "workers must be an int or (min, max) tuple, got array: [0.5,2]",
    ],
    ["negative workers", { workers: [-1, 2] }, "workers cannot be negative: (-1, 2)"],
    ["a negative worker count", { workers: -2 }, "workers cannot be negative: (0, -2)"],
    ["min above max", { workers: [3, 1] }, "workers min (3) cannot exceed max (1)"],
    [
      "an empty volume id",
      { volume: "" },
      "volume must be a network volume id (a non-empty string), got string: ",
    ],
    [
      "dependencies not a list",
      { dependencies: "zod" },
      "dependencies must be a list of package specs, got string: zod",
    ],
    [
      "a bad dependency spec",
      { dependencies: ["zod", "not a package"] },
      "invalid dependency spec not a package: expected a package name with an optional version, e.g. 'zod', 'zod@^3', 'zod==3.23.8' or 'zod>=3'",
    ],
    [
      "a negative timeout",
      { executionTimeoutMs: -1 },
      "executionTimeoutMs must be a whole number of milliseconds >= 0 (0 = no limit), got -1",
    ],
    [
      "a fractional timeout",
      { executionTimeoutMs: 1.5 },
      "executionTimeoutMs must be a whole number of milliseconds >= 0 (0 = no limit), got 1.5",
    ],
    [
      "an unsupported Node.js",
      { nodeVersion: 18 },
      "Node.js 18 is not supported. Supported versions: 20, 22, 24",
    ],
    [
      "a Python version where Node's goes",
      { nodeVersion: "3.12" },
      "Node.js 3.12 is not supported. Supported versions: 20, 22, 24",
    ],
    ["maxConcurrency below 1", { maxConcurrency: 0 }, "maxConcurrency must be >= 1, got 0"],
    ["an empty name", { name: " " }, "name must be a non-empty string, got string:  "],
    [
      "a snake_case option",
      { execution_timeout_ms: 5 },
      "Endpoint() got unknown option: 'execution_timeout_ms' (Did you mean 'executionTimeoutMs'?)",
    ],
    [
      "several unknown options",
      { worker: 2, colour: "red" },
      "Endpoint() got unknown options: 'worker' (Did you mean 'workers'?), 'colour'",
    ],
  ];

  it.each(errors)("rejects %s with the toolkit's message", (_, options, message) => {
    expect(make(options)).toThrow(EndpointConfigError);
    expect(make(options)).toThrow(message);
    try {
      make(options)();
    } catch (err) {
      expect((err as Error).message).toBe(message);
    }
  });
});

describe("deploy settings: idleTimeout, flashboot, minCudaVersion, cudaFlavor, env", () => {
  it("are checked and normalised, each with a message naming it", () => {
    expect(
      parseEndpointOptions({
        idleTimeout: 30,
        flashboot: true,
        minCudaVersion: "12.4",
        env: { MODEL: "small" },
      }),
    ).toMatchObject({
      idleTimeout: 30,
      flashboot: "FLASHBOOT",
      minCudaVersion: "12.4",
      env: { MODEL: "small" },
    });
    expect(parseEndpointOptions({ flashboot: false }).flashboot).toBe("OFF");
    expect(() => parseEndpointOptions({ idleTimeout: 0 })).toThrow(
      "idleTimeout must be whole seconds from 1 to 3600, got 0",
    );
    expect(() => parseEndpointOptions({ minCudaVersion: "12" })).toThrow(
      'minCudaVersion must be "major.minor" such as "12.1", got 12',
    );
    expect(() => parseEndpointOptions({ cpu: "cpu5c-4-8", minCudaVersion: "12.1" })).toThrow(
      "minCudaVersion applies to GPU endpoints only, not cpu ones",
    );
    expect(parseEndpointOptions({ cudaFlavor: "cudnn" }).cudaFlavor).toBe("cudnn");
    expect(parseEndpointOptions({}).cudaFlavor).toBeUndefined();
    expect(() => parseEndpointOptions({ cudaFlavor: "devel" as "base" })).toThrow(
      'cudaFlavor must be one of "base", "runtime", "cudnn", got devel',
    );
    expect(() => parseEndpointOptions({ cpu: "cpu5c-4-8", cudaFlavor: "runtime" })).toThrow(
      "cudaFlavor applies to GPU endpoints only, not cpu ones",
    );
    expect(() => parseEndpointOptions({ env: { "BAD-NAME": "x" } })).toThrow(
      "env: invalid variable name BAD-NAME",
    );
    expect(() => parseEndpointOptions({ env: { N: 1 as unknown as string } })).toThrow(
      "env.N must be a string, got number: 1",
    );
  });
});
