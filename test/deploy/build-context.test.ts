// What `flash deploy` puts into an image's build context (issue 43: 11, 12): no well-known credential file and no
// content from a link out of the project, whether the project has its own Dockerfile or deploy generates one. Each
// image is built by buildah FROM scratch into a storage of the test's own and read back from that storage; no
// registry is needed, since the image is stored before the push, which goes to a closed port and fails.
import { spawnSync } from "node:child_process";
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { buildArtifact } from "../../src/toolkit/bundle/index.js";
import { generatedContext } from "../../src/toolkit/image/build.js";
import { GREETER, makeProject, type Project } from "../cli/toolkit-project.js";
import { snippets } from "../e2e/snippets.js";
import { flashRun, freePort } from "../process.js";

const KEY = "build-context-key";
const marker = `flash-context-secret-${process.pid}`;
/** One of each kind of credential file the defaults leave out (docs/toolkit.md §8.1 has the list). */
const CREDENTIALS = [
  ".npmrc",
  ".pypirc",
  ".git-credentials",
  ".aws/credentials",
  "id_ed25519",
  "lib/.npmrc",
  ".env",
];

let outside = "";
let project: Project | undefined;
beforeAll(() => {
  outside = mkdtempSync(join(tmpdir(), "flash-outside-"));
  writeFileSync(join(outside, "secret.txt"), `${marker}\n`);
  mkdirSync(join(outside, "keys"));
  writeFileSync(join(outside, "keys", "id"), `${marker}\n`);
});
afterAll(() => rmSync(outside, { recursive: true, force: true }));
afterEach(() => {
  project?.remove();
  project = undefined;
});

/** A project holding the credential files, links out of it (a file and a folder) and one within it. */
function hostileProject(files: Record<string, string> = {}): Project {
  const made = makeProject({
    ...GREETER,
    ...Object.fromEntries(CREDENTIALS.map((path) => [path, `token=${marker}\n`])),
    "common/words.json": '["shared"]\n',
    ...files,
  });
  symlinkSync(join(outside, "secret.txt"), join(made.dir, "leak.txt"));
  symlinkSync(join(outside, "keys"), join(made.dir, "keys"), "dir");
  symlinkSync("common", join(made.dir, "shared"), "dir");
  return made;
}

/** Every path under `dir`: a link as `path -> target`, a file with the marker as `path: SECRET`. */
function contents(dir: string, prefix = ""): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    const path = `${prefix}${name}`;
    const stat = lstatSync(full);
    if (stat.isSymbolicLink()) return [`${path} -> ${readlinkSync(full)}`];
    if (stat.isDirectory()) return [`${path}/`, ...contents(full, `${path}/`)];
    return [readFileSync(full, "utf8").includes(marker) ? `${path}: SECRET` : path];
  });
}

describe("flash deploy's generated context: the file: packages it copies keep their links and leave credentials out", () => {
  it("a folder package of the project is copied without its credential files and links out; links within stay as written", async () => {
    project = hostileProject({
      "vendor/dirpkg/package.json": JSON.stringify({ name: "dirpkg", version: "1.0.0", main: "index.js" }),
      "vendor/dirpkg/index.js": "module.exports = 1;\n",
      "vendor/dirpkg/.npmrc": `//registry.example/:_authToken=${marker}\n`,
      "vendor/dirpkg/.aws/credentials": `aws_secret_access_key=${marker}\n`,
    });
    symlinkSync(join(outside, "secret.txt"), join(project.dir, "vendor/dirpkg/leak.txt"));
    symlinkSync("index.js", join(project.dir, "vendor/dirpkg/within"));
    project.write(
      "package.json",
      JSON.stringify({
        name: "app",
        type: "module",
        dependencies: { "flash-worker": "*", dirpkg: "file:vendor/dirpkg" },
      }),
    );
    const built = await buildArtifact({ root: project.dir, entries: ["handler.ts"] });
    const context = join(project.dir, ".flash", "image");
    expect(await generatedContext(project.dir, built.artifact, context)).toEqual({ lock: true, files: true });
    const copied = contents(join(context, "files"));
    expect(copied).toEqual([
      "vendor/",
      "vendor/dirpkg/",
      "vendor/dirpkg/index.js",
      "vendor/dirpkg/package.json",
      "vendor/dirpkg/within -> index.js",
    ]);
    const app = contents(join(context, "app"));
    expect(app.filter((line) => line.includes("SECRET") || line.includes(outside))).toEqual([]);
    expect(app).toContain("shared -> common");
  });
});

/** Whether buildah can build here: it needs root for its vfs storage with chroot isolation. */
function buildahGate(): string | undefined {
  if (process.getuid?.() !== 0) return "not root (buildah's vfs storage with chroot isolation needs it)";
  if (spawnSync("buildah", ["--version"]).status !== 0) return "missing";
  return undefined;
}

describe("flash deploy's image holds no credential file and no content from a link out of the project", () => {
  const gate = buildahGate();
  if (gate === "missing") {
    it("has buildah", () => {
      throw new Error(
        "buildah is not installed (apt-get install buildah, or run scripts/test-deps.sh as root)",
      );
    });
    return;
  }
  if (gate !== undefined) {
    it.skip(`skipped: ${gate}`, () => {});
    return;
  }

  let platform: Platform;
  let storage = "";
  let home = "";
  beforeAll(async () => {
    storage = mkdtempSync(join(tmpdir(), "flash-context-storage-"));
    home = mkdtempSync(join(tmpdir(), "flash-home-"));
    platform = await startPlatform({
      apiKey: KEY,
      logger: createLogger({ level: "SILENT", json: false }),
      containers: { tool: "podman", env: { PATH: "/nonexistent" } },
    });
  });
  afterAll(async () => {
    await platform?.close();
    spawnSync("buildah", [...storageFlags(), "rm", "--all"]);
    spawnSync("buildah", [...storageFlags(), "rmi", "--all", "--force"]);
    rmSync(storage, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });
  const storageFlags = () => [
    "--root",
    join(storage, "storage"),
    "--runroot",
    join(storage, "run"),
    "--storage-driver",
    "vfs",
  ];
  const buildah = (args: string[]) => {
    const run = spawnSync("buildah", [...storageFlags(), ...args], { encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    return run.stdout.trim();
  };

  /** `flash deploy` to a closed registry port: the image is built and stored, then its push fails. */
  async function deploy(args: string[] = []) {
    const image = `127.0.0.1:${await freePort()}/context:1`;
    const run = await flashRun(
      ["deploy", "--image", image, "--api-url", platform.url, "--no-wait", ...args],
      {
        HOME: home,
        RUNPOD_API_KEY: KEY,
        FLASH_CONTAINER_TOOL: "buildah",
        FLASH_CONTAINER_STORAGE: storage,
        LOG_LEVEL: "INFO",
      },
      project!.dir,
    );
    expect(run.stderr).toContain(`Pushing ${image} to`);
    expect(run.code).toBe(1);
    return { ...run, image };
  }

  /** The image's /app, read from its mounted root. */
  function appOf(image: string): string[] {
    const container = buildah(["from", image]);
    try {
      return contents(join(buildah(["mount", container]), "app"));
    } finally {
      buildah(["rm", container]);
    }
  }

  it("the project's Dockerfile: its context leaves the credential files out, the log names them; links are copied as links, as Docker does", async () => {
    project = hostileProject({ Dockerfile: "FROM scratch\nCOPY . /app/\n" });
    const { stderr, image } = await deploy();
    expect(stderr).toContain(
      "Left out of the build context as credentials (a ! line in .dockerignore keeps one): .aws/, .env, .git-credentials, .npmrc, .pypirc, id_ed25519, lib/.npmrc",
    );
    const app = appOf(image);
    expect(app.filter((line) => line.includes("SECRET"))).toEqual([]);
    for (const path of CREDENTIALS) expect(app, path).not.toContain(path);
    expect(app).toEqual(
      expect.arrayContaining([
        `leak.txt -> ${join(outside, "secret.txt")}`,
        `keys -> ${join(outside, "keys")}`,
        "shared -> common",
        "common/words.json",
        "handler.ts",
      ]),
    );
  });

  it("the project's .dockerignore comes after the defaults: its `!` line keeps one credential file", async () => {
    project = hostileProject({
      Dockerfile: "FROM scratch\nCOPY . /app/\n",
      ".dockerignore": "node_modules\n!.pypirc\n",
    });
    const { stderr, image } = await deploy();
    expect(stderr).toContain(
      "Left out of the build context as credentials (a ! line in .dockerignore keeps one): .aws/, .env, .git-credentials, .npmrc, id_ed25519, lib/.npmrc",
    );
    const app = appOf(image);
    expect(app).toContain(".pypirc: SECRET");
    expect(app.filter((line) => line.startsWith("node_modules"))).toEqual([]);
    expect(app.filter((line) => line.includes("SECRET"))).toEqual([".pypirc: SECRET"]);
  });

  it("the README's .dockerignore keeps the credential files out of a plain `buildah bud` too", async () => {
    const [dockerignore, ...more] = snippets("README.md").filter(
      (s) => s.section === "Start a project" && s.lang === "" && /^node_modules$/m.test(s.text),
    );
    expect(more).toEqual([]);
    project = hostileProject({
      Dockerfile: "FROM scratch\nCOPY . /app/\n",
      ".dockerignore": dockerignore!.text,
    });
    const image = "localhost/flash-readme-dockerignore:1";
    buildah(["bud", "--isolation", "chroot", "-t", image, project.dir]);
    const app = appOf(image);
    expect(app.filter((line) => line.includes("SECRET"))).toEqual([]);
    expect(app.filter((line) => line.startsWith("node_modules"))).toEqual([]);
    expect(app).toContain("handler.ts");
  });

  it("the generated Dockerfile: /app holds what flash build ships: links within the project as links, none out, no credential file", async () => {
    project = hostileProject();
    const { stdout, image } = await deploy(["--base-image", "scratch"]);
    expect(stdout).toContain(
      "  Left out as credentials (a !pattern in .flashignore ships one): .aws/, .env, .git-credentials, .npmrc, .pypirc, id_ed25519, lib/.npmrc",
    );
    expect(stdout).toContain(
      `  Links left out, not followed: keys → ${join(outside, "keys")} (outside the project), leak.txt → ${join(outside, "secret.txt")} (outside the project)`,
    );
    const app = appOf(image);
    expect(app.filter((line) => line.includes("SECRET"))).toEqual([]);
    // flash build's OpenAPI document of the endpoint ships beside the manifest (docs/design.md §4.12).
    expect(app.filter((line) => line.startsWith("openapi/")).sort()).toEqual([
      "openapi/",
      expect.stringMatching(/^openapi\/[a-z0-9-]+\.json$/),
    ]);
    expect(app.filter((line) => !line.startsWith("openapi/")).sort()).toEqual(
      [
        "common/",
        "common/words.json",
        "flash_manifest.json",
        "handler.ts",
        "lib/",
        "lib/greet.ts",
        "package.json",
        "shared -> common",
      ].sort(),
    );
  });
});
