// Reads `buildah inspect --type image` JSON on stdin (docker/build.sh runs it with tsx).
//   image-config.ts argv               prints ENTRYPOINT + CMD, NUL-separated: what `docker run IMAGE` runs
//   image-config.ts check <cpu|cuda>   asserts the base image's contract (docker/README.md) and prints it
//   image-config.ts size <layers.json> prints the uncompressed size of each layer in bytes, base first
import { readFileSync } from "node:fs";

interface DockerConfig {
  Env?: string[];
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  WorkingDir?: string;
  ExposedPorts?: Record<string, unknown>;
  Healthcheck?: { Test?: string[] };
}

const inspected = JSON.parse(readFileSync(0, "utf8")) as {
  Docker?: { config?: DockerConfig };
  OCIv1?: { rootfs?: { diff_ids?: string[] } };
};
const config: DockerConfig = inspected.Docker?.config ?? {};
const [mode, flavour] = process.argv.slice(2);

if (mode === "argv") {
  for (const word of [...(config.Entrypoint ?? []), ...(config.Cmd ?? [])]) process.stdout.write(`${word}\0`);
  process.exit(0);
}

if (mode === "size") {
  // vfs storage records each layer's uncompressed size in layers.json, keyed by the same diff digest.
  const layers = JSON.parse(readFileSync(flavour ?? "", "utf8")) as {
    "diff-digest"?: string;
    "diff-size"?: number;
  }[];
  const sizes = (inspected.OCIv1?.rootfs?.diff_ids ?? []).map(
    (digest) => layers.find((layer) => layer["diff-digest"] === digest)?.["diff-size"] ?? 0,
  );
  console.log(sizes.join(" "));
  process.exit(0);
}

const env = new Map(
  (config.Env ?? []).map((line): [string, string] => {
    const at = line.indexOf("=");
    return [line.slice(0, at), line.slice(at + 1)];
  }),
);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const expectations: [string, boolean][] = [
  ["ENV PORT=80", env.get("PORT") === "80"],
  ["EXPOSE 80", Object.hasOwn(config.ExposedPorts ?? {}, "80/tcp")],
  ["WORKDIR /app", config.WorkingDir === "/app"],
  [
    'ENTRYPOINT ["/usr/bin/tini", "--", "flash-entrypoint"]',
    same(config.Entrypoint, ["/usr/bin/tini", "--", "flash-entrypoint"]),
  ],
  ['CMD ["flash", "start"]', same(config.Cmd, ["flash", "start"])],
  ['HEALTHCHECK CMD ["flash-healthcheck"]', same(config.Healthcheck?.Test, ["CMD", "flash-healthcheck"])],
];
if (flavour === "cuda") {
  const capabilities = env.get("NVIDIA_DRIVER_CAPABILITIES") ?? "";
  expectations.push(
    ["ENV NVIDIA_VISIBLE_DEVICES=all", env.get("NVIDIA_VISIBLE_DEVICES") === "all"],
    [
      "ENV NVIDIA_DRIVER_CAPABILITIES has compute and utility",
      capabilities.includes("compute") && capabilities.includes("utility"),
    ],
  );
}
let ok = true;
for (const [what, holds] of expectations) {
  console.log(`${holds ? "ok     " : "MISSING"} ${what}`);
  ok &&= holds;
}
if (!ok) console.log(JSON.stringify(config, null, 2));
process.exit(ok ? 0 : 1);
