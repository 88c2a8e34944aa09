// Every folder in examples/ run the way docker/README.md tells users to run it, through the real `flash`
// command (npm run build first), plus the shape every example folder must have to be copied and built.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { inflateSync, crc32 as zlibCrc32 } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { crc32 } from "../../examples/image-endpoint/png.js";
import { type Flash, flash, flashRun, ROOT } from "../process.js";

const EXAMPLES = join(ROOT, "examples");
const names = readdirSync(EXAMPLES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

/** The result a one-shot run printed: its stdout is the result body alone. */
function jobResult(stdout: string): { output?: unknown; error?: unknown } {
  return JSON.parse(stdout);
}

async function runExample(name: string, testInput?: unknown) {
  const args = ["run", `examples/${name}/handler.ts`];
  if (testInput !== undefined) args.push("--test-input", JSON.stringify(testInput));
  return flashRun(args);
}

describe("every example folder can be copied and built on its own", () => {
  it("there are examples", () => {
    expect(names).toEqual(expect.arrayContaining(["concurrency", "echo", "image-endpoint", "stream"]));
  });

  for (const name of names) {
    it(`examples/${name}: handler, test_input.json, and a Dockerfile FROM the base image`, () => {
      const dir = join(EXAMPLES, name);
      expect(existsSync(join(dir, "handler.ts")) || existsSync(join(dir, "handler.js"))).toBe(true);
      expect(() => JSON.parse(readFileSync(join(dir, "test_input.json"), "utf8"))).not.toThrow();
      const dockerfile = join(dir, "Dockerfile");
      expect(existsSync(dockerfile), `examples/${name}/Dockerfile is missing`).toBe(true);
      const instructions = readFileSync(dockerfile, "utf8")
        .split("\n")
        .filter((line) => line.trim() !== "" && !line.trimStart().startsWith("#"));
      // The first stage is the flash-worker image (model-server copies the runtime from it into a vLLM image).
      const from = instructions.find((line) => line.startsWith("FROM"));
      expect(from).toMatch(
        name === "model-server" ? /^FROM flash-worker:cuda AS runtime$/ : /^FROM flash-worker:(cpu|cuda)$/,
      );
      expect(instructions.some((line) => /^CMD \["handler\.(ts|js|mjs)"\]$/.test(line))).toBe(true);
      // The examples import only flash-worker and node:*: the base image has everything they need.
      expect(existsSync(join(dir, "node_modules"))).toBe(false);
    });
  }
});

describe("flash run examples/<name>/handler.ts (the one-shot local test)", () => {
  it("echo answers test_input.json, and --test-input", async () => {
    const file = await runExample("echo");
    expect(file.code).toBe(0);
    expect(jobResult(file.stdout)).toEqual({ output: { name: "flash", message: "hello" } });
    const flag = await runExample("echo", { input: { from: "the command line" } });
    expect(flag.code).toBe(0);
    expect(jobResult(flag.stdout)).toEqual({ output: { from: "the command line" } });
  });

  it("stream shows every chunk the generator yields", async () => {
    const { code, stdout } = await runExample("stream", { input: { text: "one two three" } });
    expect(code).toBe(0);
    expect(jobResult(stdout)).toEqual({ output: [{ token: "one" }, { token: "two" }, { token: "three" }] });
  });

  it("concurrency looks up every word of the job", async () => {
    const { code, stdout } = await runExample("concurrency");
    expect(code).toBe(0);
    expect(jobResult(stdout)).toEqual({
      output: {
        results: [
          { word: "many", length: 4 },
          { word: "jobs", length: 4 },
          { word: "at", length: 2 },
          { word: "once", length: 4 },
        ],
        total_length: 14,
      },
    });
    const bad = await runExample("concurrency", { input: { words: "not a list" } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("input.words must be a list of strings");
  });

  it("image-endpoint returns {image_url, cost} with a real PNG of the requested size", async () => {
    const { code, stdout } = await runExample("image-endpoint");
    expect(code).toBe(0);
    const { output } = jobResult(stdout) as { output: { image_url: string; cost: number } };
    expect(Object.keys(output).sort()).toEqual(["cost", "image_url"]);
    expect(output.cost).toBeCloseTo(((256 * 192) / 1e6) * 0.02, 6);
    expect(output.image_url).toMatch(/^data:image\/png;base64,/);
    const png = decodePng(Buffer.from(output.image_url.slice(output.image_url.indexOf(",") + 1), "base64"));
    expect([png.width, png.height]).toEqual([256, 192]);
    // The pixels are exactly the picture the example draws for that prompt.
    const { draw } = await import("../../examples/image-endpoint/handler.js");
    expect(Buffer.from(png.pixels).equals(Buffer.from(draw("a lighthouse at dusk", 256, 192)))).toBe(true);
  });

  it("image-endpoint: the same prompt gives the same image, another prompt another one; bad sizes fail", async () => {
    const input = (prompt: string) => ({ input: { prompt, width: 64, height: 48 } });
    const url = async (prompt: string) => {
      const { code, stdout } = await runExample("image-endpoint", input(prompt));
      expect(code).toBe(0);
      return (jobResult(stdout).output as { image_url: string }).image_url;
    };
    const [a, again, b] = await Promise.all([url("a red fox"), url("a red fox"), url("a blue whale")]);
    expect(again).toBe(a);
    expect(b).not.toBe(a);
    const bad = await runExample("image-endpoint", { input: { prompt: "x", width: 4 } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("input.width must be a whole number of pixels from 16 to 2048, got 4");
  });

  it("gpu, on a host without an NVIDIA GPU: the job fails with a plain error naming CUDA", async () => {
    const { code, stderr } = await runExample("gpu");
    expect(code).toBe(1);
    expect(stderr).toContain(
      "Job local_test failed with error: NoGpuError: CUDA is not available on this host: no NVIDIA driver (libcuda.so.1) was found.",
    );
    const bad = await runExample("gpu", { input: { n: 0 } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("input.n must be a whole number from 1 to 268435456, got 0");
  });

  it("image-endpoint's CRC-32 agrees with zlib's", () => {
    for (const text of ["", "IEND", "a lighthouse at dusk", "x".repeat(1000)]) {
      expect(crc32(Buffer.from(text))).toBe(zlibCrc32(Buffer.from(text)));
    }
    expect(crc32(Buffer.from("IEND"))).toBe(0xae426082);
  });

  it.runIf(names.includes("load-balanced"))(
    "load-balanced answers the requests in test_input.json",
    async () => {
      const { code, stdout, stderr } = await runExample("load-balanced");
      expect(code).toBe(0);
      expect(stderr).toContain("POST /echo -> 200");
      expect(stdout.split("\n")).toContain('{"prompt":"hello","n":1}');
      expect(stderr).toContain("Local testing complete: 3 of 3 request(s) succeeded.");
    },
  );

  it.runIf(names.includes("model-server"))(
    "model-server runs its test_input.json against MODEL_SERVER_COMMAND (the vLLM-shaped FastAPI fixture)",
    async () => {
      const port = await freePort();
      const { code, stdout, stderr } = await flashRun(["run", "examples/model-server/handler.ts"], {
        MODEL_SERVER_COMMAND: `/usr/bin/python3 test/fixtures/model-server/openai_server.py ${port}`,
        MODEL_SERVER_PORT: String(port),
        FIXTURE_LOAD_SECONDS: "0.5",
      });
      expect(code, stderr).toBe(0);
      expect(jobResult(stdout)).toMatchObject({
        output: {
          object: "chat.completion",
          choices: [{ message: { content: "echo: hello from the local test" } }],
        },
      });
      expect(stderr).toMatch(/\| vllm \| fixture: loading fixture-model/);
      expect(stderr).toMatch(/Model server 'vllm' is ready\./);
      // Without MODEL_SERVER_PORT, the example's port: 0: a free port, told to the command as {port}.
      const native = await flashRun(
        [
          "run",
          "examples/model-server/handler.ts",
          "--test-input",
          '{"input":{"messages":[{"role":"user","content":"native"}]}}',
        ],
        { MODEL_SERVER_COMMAND: "/usr/bin/python3 test/fixtures/model-server/openai_server.py {port}" },
      );
      expect(native.code, native.stderr).toBe(0);
      expect(jobResult(native.stdout)).toMatchObject({
        output: { choices: [{ message: { content: "echo: native" } }] },
      });
    },
  );

  it.runIf(names.includes("openai-compatible"))("openai-compatible answers a chat completion", async () => {
    const { code, stdout } = await runExample("openai-compatible");
    expect(code).toBe(0);
    const { output } = jobResult(stdout) as { output: { object: string; choices: unknown[] } };
    expect(output.object).toBe("chat.completion");
    expect(output.choices).toEqual([
      {
        finish_reason: "stop",
        index: 0,
        message: { role: "assistant", content: "hello from the local test" },
      },
    ]);
  });

  // Examples written later still get the basic check: their own test_input.json runs and exits 0.
  const covered = new Set([
    "echo",
    "stream",
    "concurrency",
    "image-endpoint",
    "load-balanced",
    "openai-compatible",
    // Covered above on this CPU host; on a GPU by test/gpu/device-check.sh.
    "gpu",
    "model-server",
  ]);
  for (const name of names.filter((n) => !covered.has(n))) {
    it(`${name} runs its test_input.json`, async () => {
      const { code, stdout, stderr } = await runExample(name);
      expect(code, `${stdout}\n${stderr}`).toBe(0);
    });
  }
});

describe("flash dev examples/concurrency/handler.ts (the local platform, one worker)", () => {
  let dev: Flash | undefined;
  afterEach(async () => {
    if (dev && dev.child.exitCode === null && dev.child.signalCode === null) {
      dev.child.kill("SIGTERM");
      await dev.exited;
    }
  });

  it("one worker runs several jobs at once as the concurrency function ramps up", async () => {
    const port = await freePort();
    dev = flash([
      "dev",
      "examples/concurrency/handler.ts",
      "--port",
      String(port),
      "--api-key",
      "k",
      "--workers",
      "1,1",
    ]);
    await dev.waitForLine(/Concurrency 1 -> 2/);
    const base = `http://127.0.0.1:${port}/v2/concurrency`;
    const headers = { authorization: "Bearer k", "content-type": "application/json" };
    const post = async (path: string, body: unknown) =>
      (await (
        await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) })
      ).json()) as {
        id: string;
      };
    const status = async (id: string) =>
      (await (await fetch(`${base}/status/${id}`, { headers })).json()) as {
        status: string;
        output?: unknown;
      };
    const settled = async (id: string) => {
      for (;;) {
        const job = await status(id);
        if (!["IN_QUEUE", "IN_PROGRESS"].includes(job.status)) return job;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    // Jobs that wait until cancelled: four of them in progress at once on the one worker is the overlap,
    // whatever the machine's speed; the fifth waits because MAX_CONCURRENCY is 4.
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await post("/run", { input: { words: [`w${i}`], delay_ms: 600_000 } })).id);
    for (;;) {
      const states = await Promise.all(ids.map(async (id) => (await status(id)).status));
      if (states.filter((s) => s === "IN_PROGRESS").length === 4) {
        expect(states.filter((s) => s === "IN_QUEUE")).toHaveLength(1);
        break;
      }
      expect(states.filter((s) => s === "IN_PROGRESS").length).toBeLessThan(4);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (const id of ids) await post(`/cancel/${id}`, {});
    expect((await Promise.all(ids.map(settled))).map((job) => job.status)).toEqual(
      Array(5).fill("CANCELLED"),
    );
    const done = await settled((await post("/run", { input: { words: ["w3", "abc"], delay_ms: 10 } })).id);
    expect(done).toMatchObject({
      status: "COMPLETED",
      output: {
        results: [
          { word: "w3", length: 2 },
          { word: "abc", length: 3 },
        ],
        total_length: 5,
      },
    });
    expect(dev.stdout.join("\n")).toContain("Concurrency 3 -> 4");
  }, 120_000);
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** A PNG decoder for 8-bit RGB, independent of the example's encoder: chunk CRCs, zlib, all five filters. */
function decodePng(bytes: Buffer): { width: number; height: number; pixels: Uint8Array } {
  expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  let offset = 8;
  let width = 0;
  let height = 0;
  const idat: Buffer[] = [];
  const types: string[] = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString("latin1", offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    expect(bytes.readUInt32BE(offset + 8 + length), `${type} CRC`).toBe(
      zlibCrc32(bytes.subarray(offset + 4, offset + 8 + length)),
    );
    types.push(type);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect([...data.subarray(8)]).toEqual([8, 2, 0, 0, 0]); // 8-bit RGB, deflate, no interlace
    }
    if (type === "IDAT") idat.push(data);
    offset += 12 + length;
  }
  expect(types[0]).toBe("IHDR");
  expect(types.at(-1)).toBe("IEND");
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * 3;
  expect(raw.length).toBe((stride + 1) * height);
  const pixels = new Uint8Array(stride * height);
  const at = (row: number, x: number) => (row < 0 || x < 0 ? 0 : (pixels[row * stride + x] ?? 0));
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const value = raw[y * (stride + 1) + 1 + x] ?? 0;
      const a = at(y, x - 3);
      const b = at(y - 1, x);
      const c = at(y - 1, x - 3);
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter ?? 0] ?? 0;
      pixels[y * stride + x] = (value + predictor) & 0xff;
    }
  }
  return { width, height, pixels };
}
