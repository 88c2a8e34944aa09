// cachedModelPath() against a folder laid out as RunPod's model cache (serverless/endpoints/model-caching).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isFlashError } from "../../src/index.js";
import { cachedModelPath, modelCachePath, volumePath } from "../../src/runtime/files/index.js";
import { flashRun } from "../process.js";

let volume: string;
const saved = process.env.FLASH_VOLUME_PATH;

/** Lays out models--{org}--{name}/refs/main and snapshots/{hash}/config.json as Hugging Face's cache does. */
function cache(model: string, snapshots: string[], main?: string): string {
  const root = join(volume, "huggingface-cache", "hub", `models--${model.replace("/", "--")}`);
  for (const hash of snapshots) {
    mkdirSync(join(root, "snapshots", hash), { recursive: true });
    writeFileSync(join(root, "snapshots", hash, "config.json"), JSON.stringify({ hash }));
  }
  if (main !== undefined) {
    mkdirSync(join(root, "refs"), { recursive: true });
    writeFileSync(join(root, "refs", "main"), `${main}\n`);
  }
  return root;
}

beforeEach(() => {
  volume = mkdtempSync(join(tmpdir(), "flash-volume-"));
  process.env.FLASH_VOLUME_PATH = volume;
});
afterEach(() => {
  rmSync(volume, { recursive: true, force: true });
  if (saved === undefined) delete process.env.FLASH_VOLUME_PATH;
  else process.env.FLASH_VOLUME_PATH = saved;
});

describe("cachedModelPath", () => {
  it("/runpod-volume unless FLASH_VOLUME_PATH says otherwise", () => {
    expect(volumePath()).toBe(volume);
    expect(modelCachePath()).toBe(join(volume, "huggingface-cache", "hub"));
    delete process.env.FLASH_VOLUME_PATH;
    expect(volumePath()).toBe("/runpod-volume");
    expect(modelCachePath()).toBe("/runpod-volume/huggingface-cache/hub");
  });

  it("follows refs/main to its snapshot", () => {
    const root = cache("Qwen/Qwen2.5-0.5B-Instruct", ["aaa111", "bbb222"], "bbb222");
    expect(cachedModelPath("Qwen/Qwen2.5-0.5B-Instruct")).toBe(`${root}/snapshots/bbb222/`);
  });

  it("without refs/main (or one naming no snapshot), the first snapshot, as RunPod's own helper does", () => {
    const root = cache("org/a", ["ccc", "bbb"]);
    expect(cachedModelPath("org/a")).toBe(`${root}/snapshots/bbb/`);
    const other = cache("org/b", ["ddd"], "gone");
    expect(cachedModelPath("org/b")).toBe(`${other}/snapshots/ddd/`);
  });

  it("a revision: a ref under refs/, or a snapshot hash; never a fallback", () => {
    const root = cache("org/m", ["h1", "h2"], "h1");
    writeFileSync(join(root, "refs", "v2"), "h2");
    expect(cachedModelPath("org/m", { revision: "v2" })).toBe(`${root}/snapshots/h2/`);
    expect(cachedModelPath("org/m", { revision: "h2" })).toBe(`${root}/snapshots/h2/`);
    expect(() => cachedModelPath("org/m", { revision: "h9" })).toThrow(
      `Cached model "org/m" at revision "h9" not found: no ${root}/snapshots/h9/.`,
    );
  });

  it("an absent model is a CachedModelError that says where it looked and the way out", () => {
    let caught: unknown;
    try {
      cachedModelPath("gensyn/missing");
    } catch (err) {
      caught = err;
    }
    expect(isFlashError(caught, "MODEL_NOT_CACHED")).toBe(true);
    expect((caught as Error).message).toBe(
      `Cached model "gensyn/missing" not found: no ${volume}/huggingface-cache/hub/models--gensyn--missing/snapshots/<hash>/. ` +
        "Select it as the endpoint's cached model (the Model field; serverless/endpoints/model-caching), " +
        "or point FLASH_VOLUME_PATH at a folder holding huggingface-cache/hub/models--gensyn--missing.",
    );
  });

  it("refuses an id that is not org/name", () => {
    for (const bad of ["gpt2", "a/b/c", "/x", "../x", "a/.."]) {
      expect(() => cachedModelPath(bad)).toThrow(`Invalid model id "${bad}": expected "org/name"`);
    }
  });

  it("in a real worker run (flash run), at the handler's start", async () => {
    const root = cache("gensyn/qwen2.5-0.5b-instruct", ["abcdef1234567890"], "abcdef1234567890");
    const { code, stdout } = await flashRun(
      ["run", "test/fixtures/cached-model.ts", "--test-input", '{"input":1}'],
      {
        FLASH_VOLUME_PATH: volume,
      },
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      output: {
        volume,
        model: `${root}/snapshots/abcdef1234567890/`,
        config: { hash: "abcdef1234567890" },
      },
    });
    const missing = await flashRun(["run", "test/fixtures/cached-model.ts", "--test-input", '{"input":1}'], {
      FLASH_VOLUME_PATH: join(volume, "empty"),
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Cached model "gensyn/qwen2.5-0.5b-instruct" not found');
  });
});
