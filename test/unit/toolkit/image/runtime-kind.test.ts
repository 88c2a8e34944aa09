// Which runtime image an app's generated Dockerfile starts FROM: cpu, or the CUDA flavor its endpoints ask for.
import { describe, expect, it } from "vitest";
import {
  appRuntimeKind,
  generatedDockerfile,
  nvidiaFlavor,
  RUNTIME_IMAGES,
} from "../../../../src/toolkit/image/build.js";

describe("appRuntimeKind", () => {
  it("cpu when every endpoint runs on CPUs; flash-worker:cuda (base) for GPU endpoints that ask nothing", () => {
    expect(appRuntimeKind([{ cpu: ["cpu5c-4-8"] }])).toBe("cpu");
    expect(appRuntimeKind([{ cpu: ["cpu5c-4-8"] }, {}])).toBe("cuda");
    expect(RUNTIME_IMAGES[appRuntimeKind([{}])]).toBe("localhost/flash-worker:cuda");
  });

  it("the heaviest flavor any endpoint asks for: one image serves them all", () => {
    expect(appRuntimeKind([{ cudaFlavor: "runtime" }, {}])).toBe("cuda-runtime");
    expect(appRuntimeKind([{ cudaFlavor: "runtime" }, { cudaFlavor: "cudnn" }, {}])).toBe("cuda-cudnn");
    expect(appRuntimeKind([{ cudaFlavor: "base" }, { cpu: ["cpu5c-4-8"] }])).toBe("cuda");
  });

  it("the generated Dockerfile starts FROM that flavor's image, built on nvidia/cuda's tag of the same flavor", () => {
    const kind = appRuntimeKind([{ cudaFlavor: "cudnn" }]);
    expect(generatedDockerfile(RUNTIME_IMAGES[kind], "handler.ts").split("\n")[1]).toBe(
      "FROM localhost/flash-worker:cuda-cudnn",
    );
    expect(nvidiaFlavor(kind)).toBe("cudnn-runtime");
    expect(nvidiaFlavor("cuda")).toBe("base");
    expect(nvidiaFlavor("cuda-runtime")).toBe("runtime");
    expect(nvidiaFlavor("cpu")).toBeUndefined();
  });
});
