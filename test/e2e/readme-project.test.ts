// The README's "Start a project", done as it says with its own snippets (read from README.md, never copied
// here): the package published to the release rehearsal's npm registry (test/release/rehearsal.ts), a fresh
// project made by the README's commands (`npm install flash-worker` from it), `npx tsc` with its tsconfig, the
// base image built by `flash image base --standin` from the installed package and pushed by the release's
// scripts/release/images.sh to a loopback registry as the published image the README's Dockerfile names, then
// `flash deploy` of that Dockerfile (its npm ci reaching the npm registry through the build secret) and
// .dockerignore to the local platform through the same registry, ending in a COMPLETED runsync.
// Every Dockerfile, .dockerignore and tsconfig snippet in README.md, docker/README.md and docs/ is accounted
// for here. Needs root, buildah and docker-registry, as test/e2e/deploy.test.ts; the buildah storage
// (FLASH_README_TEST_STORAGE, default /var/tmp/flash-readme-storage) keeps the stand-in base between runs.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { list } from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CircuitBreakers, EndpointClient } from "../../src/client/index.js";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { flashRun, freePort, ROOT } from "../process.js";
import { type Rehearsal, startRehearsal } from "../release/rehearsal.js";
import { buildahIn, describeWithImages, startRegistry } from "./registry.js";
import { type Snippet, snippets } from "./snippets.js";

const KEY = "e2e-readme-key";
const STORAGE = process.env.FLASH_README_TEST_STORAGE ?? "/var/tmp/flash-readme-storage";
/** The base image the release publishes (.github/workflows/release.yml), as the README's Dockerfile names it. */
const PUBLISHED = "ghcr.io/flash-worker/flash-worker";

const docs = [
  "README.md",
  "docker/README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const all = docs.flatMap(snippets);
const isDockerfile = (s: Snippet) => s.lang === "dockerfile";
/** A bare block whose lines are all ignore patterns naming node_modules: a .dockerignore. */
const isDockerignore = (s: Snippet) =>
  s.lang === "" &&
  /^node_modules$/m.test(s.text) &&
  s.text
    .trim()
    .split("\n")
    .every((l) => !/\s/.test(l));
const isTsconfig = (s: Snippet) => s.lang === "json" && s.text.includes('"compilerOptions"');
const start = all.filter((s) => s.file === "README.md" && s.section === "Start a project");
const one = (found: Snippet[], what: string) => {
  if (found.length !== 1)
    throw new Error(`README.md "Start a project": expected one ${what}, found ${found.length}`);
  return found[0]!.text;
};
const commands = one(
  start.filter((s) => s.lang === "sh" && s.text.includes("npm init")),
  "sh block that makes the project",
);
const handlerTs = one(
  start.filter((s) => s.lang === "ts"),
  "handler.ts",
);
const tsconfig = one(start.filter(isTsconfig), "tsconfig.json");
const dockerfile = one(start.filter(isDockerfile), "Dockerfile");
const dockerignore = one(start.filter(isDockerignore), ".dockerignore");
const testInput = /`test_input\.json`: `([^`]+)`/.exec(readFileSync(join(ROOT, "README.md"), "utf8"))?.[1];

/** The last lines of a command's output, for assertion messages. */
const tail = (r: { stdout: string; stderr: string }) => `${r.stdout}\n${r.stderr}`.slice(-4000);

describe("README: every Dockerfile, .dockerignore and tsconfig snippet", () => {
  it("is one this test exercises (a new one must be added here)", () => {
    const exercised = new Set([dockerfile, dockerignore, tsconfig]);
    for (const s of all.filter((s) => isDockerfile(s) || isDockerignore(s) || isTsconfig(s))) {
      // Fragments (no FROM) must be lines of the README Dockerfile that is built; whole Dockerfiles are built.
      if (isDockerfile(s) && !/^FROM /m.test(s.text)) {
        for (const line of s.text.split("\n").filter((l) => l && !l.startsWith("#"))) {
          expect(dockerfile.split("\n"), `${s.file}: ${line}`).toContain(line);
        }
        continue;
      }
      if (isDockerfile(s)) continue; // built below, each of them
      expect(exercised.has(s.text), `${s.file} (${s.section}):\n${s.text}`).toBe(true);
    }
    // A Dockerfile line has no trailing comments: `FROM x   # y` is `FROM requires either one argument, or three`.
    for (const s of all.filter(isDockerfile)) expect(s.text, s.file).not.toMatch(/^[A-Z]+ [^#\n]*[ \t]#/m);
    expect(testInput).toBeDefined();
  });
});

describeWithImages(
  "README: Start a project, from npm pack to a COMPLETED runsync on a deployed endpoint",
  () => {
    let parent = "";
    let dir = "";
    let home = "";
    let registry: Awaited<ReturnType<typeof startRegistry>>;
    let rehearsal: Rehearsal;
    let platform: Platform;
    const built: string[] = [];
    const buildah = buildahIn(STORAGE);
    const workingContainers = () =>
      buildah(["containers", "--format", "{{.ContainerName}}"])
        .stdout.split("\n")
        .filter((n) => n.includes("working-container"));
    // The installed CLI, as `npx flash` runs it in the project.
    const flash = (args: string[], env: Record<string, string> = {}) =>
      flashRun(
        args,
        { HOME: home, FLASH_CONTAINER_STORAGE: STORAGE, RUNPOD_API_KEY: KEY, ...env },
        dir,
        join(dir, "node_modules/flash-worker/dist/cli/main.js"),
      );
    /** Path, size and mtime of every file of the installed package: nothing may write there. */
    const packageState = () => {
      const root = join(dir, "node_modules/flash-worker");
      return readdirSync(root, { recursive: true })
        .map(String)
        .sort()
        .map((p) => {
          const st = statSync(join(root, p));
          return `${p} ${st.size} ${st.mtimeMs}`;
        });
    };

    beforeAll(async () => {
      parent = mkdtempSync(join(tmpdir(), "flash-readme-"));
      home = join(parent, "home");
      mkdirSync(home);
      rehearsal = await startRehearsal();
      // The README's commands as they are, npm pointed at the rehearsal's registry.
      const made = spawnSync("bash", ["-euo", "pipefail", "-c", commands], {
        cwd: parent,
        encoding: "utf8",
        env: { ...rehearsal.env, npm_config_prefer_offline: "true", npm_config_audit: "false" },
      });
      expect(made.status, tail(made)).toBe(0);
      const name = /mkdir (\S+) && cd \1/.exec(commands)?.[1];
      expect(name).toBeDefined();
      dir = join(parent, name!);
      writeFileSync(join(dir, "handler.ts"), handlerTs);
      writeFileSync(join(dir, "test_input.json"), testInput!);
      writeFileSync(join(dir, "tsconfig.json"), tsconfig);
      writeFileSync(join(dir, ".dockerignore"), dockerignore);
      registry = await startRegistry();
      // The published base image, as the release pushes it, from the loopback registry.
      expect(dockerfile).toMatch(new RegExp(`^FROM ${PUBLISHED}:cpu$`, "m"));
      writeFileSync(
        join(dir, "Dockerfile"),
        dockerfile.replace(PUBLISHED, `${registry.host}/flash-worker/flash-worker`),
      );
    }, 10 * 60_000);

    afterAll(async () => {
      await platform?.close();
      registry?.stop();
      await rehearsal?.stop();
      // The app images built here; the stand-in and runtime images stay for the next run.
      const names = buildah(["images", "--format", "{{.Name}}:{{.Tag}}"]).stdout.split("\n");
      const apps = names.filter((n) => n.startsWith("127.0.0.1:") || built.includes(n));
      if (apps.length > 0) buildah(["rmi", "--force", ...apps]);
      buildah(["rmi", "--prune"]);
      if (parent) rmSync(parent, { recursive: true, force: true });
    }, 5 * 60_000);

    it("npx tsc passes with the README's tsconfig.json", () => {
      const tsc = spawnSync("npx", ["tsc"], { cwd: dir, encoding: "utf8" });
      expect(tsc.status, tail(tsc)).toBe(0);
    });

    it("flash image base: a pull failure names --standin; --standin builds flash-worker:cpu; nothing writes in the package", {
      timeout: 15 * 60_000,
    }, async () => {
      const before = packageState();
      // A node base that cannot be pulled (nothing listens there): the error says what to do.
      const nowhere = `127.0.0.1:${await freePort()}/node:24-bookworm-slim`;
      const failed = await flash(["image", "base", "--cpu"], { FLASH_NODE_BASE_IMAGE: nowhere });
      expect(failed.code, tail(failed)).toBe(1);
      expect(failed.stderr).toContain("flash image base --standin");
      expect(workingContainers()).toEqual([]);

      const base = await flash(["image", "base", "--cpu", "--standin"]);
      expect(base.code, tail(base)).toBe(0);
      expect(base.stdout).toContain("✓ localhost/flash-worker:cpu");
      expect(buildah(["inspect", "--type", "image", "localhost/flash-worker:cpu"]).status).toBe(0);
      expect(workingContainers()).toEqual([]);

      // The repository's build script, run from the installed package, refuses instead of rebuilding dist/.
      const script = spawnSync("bash", [join(dir, "node_modules/flash-worker/docker/build.sh")], {
        cwd: dir,
        encoding: "utf8",
      });
      expect(script.status).not.toBe(0);
      expect(script.stderr).toContain("npx flash image base");
      expect(packageState()).toEqual(before);
    });

    it("flash deploy with the README's Dockerfile: npm ci gets the host's npm setup as a secret in no layer; runsync COMPLETED", {
      timeout: 20 * 60_000,
    }, async () => {
      // A marker only the build secret can carry: a registry credential in the user's npm config.
      const marker = `flash-readme-secret-${process.pid}-${Date.now()}`;
      const userrc = join(home, ".npmrc");
      const hostrc = spawnSync("npm", ["config", "get", "userconfig"], { encoding: "utf8" }).stdout.trim();
      writeFileSync(
        userrc,
        `${(() => {
          try {
            return readFileSync(hostrc, "utf8");
          } catch {
            return "";
          }
        })()}\nregistry=${rehearsal.url}/\n//registry.invalid.example/:_authToken=${marker}\n`,
      );
      // The release's push of the base image (scripts/release/images.sh), here to the loopback registry: the
      // Dockerfile's FROM pulls it from there.
      const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
      const repo = `${registry.host}/flash-worker/flash-worker`;
      const pushed = spawnSync(
        "bash",
        [join(ROOT, "scripts/release/images.sh"), "push", repo, version, "cpu"],
        {
          encoding: "utf8",
          env: { ...process.env, FLASH_IMAGE_WORK: STORAGE },
        },
      );
      expect(pushed.status, tail(pushed)).toBe(0);
      expect(pushed.stdout.trim()).toMatch(new RegExp(`^${repo}@sha256:[0-9a-f]{64}$`));
      const tags = (await (await fetch(`${registry.url}/v2/flash-worker/flash-worker/tags/list`)).json()) as {
        tags: string[];
      };
      expect(tags.tags.sort()).toEqual([`${version}-cpu`, "cpu"]);
      platform = await startPlatform({
        apiKey: KEY,
        workerStopGraceMs: 10_000,
        containers: { tool: "buildah", storage: STORAGE },
        logger: createLogger({ level: "ERROR", json: false }),
      });
      const image = `${registry.host}/summarizer:1`;
      // The loopback registry speaks plain HTTP: containers' registries.conf says so for the FROM pull, as a user
      // of an insecure registry would (flash passes --tls-verify=false for a loopback push only).
      const registriesConf = join(parent, "registries.conf");
      writeFileSync(registriesConf, `[[registry]]\nlocation = "${registry.host}"\ninsecure = true\n`);
      const deployed = await flash(["deploy", "--image", image, "--api-url", platform.url], {
        npm_config_userconfig: userrc,
        CONTAINERS_REGISTRIES_CONF: registriesConf,
      });
      expect(deployed.code, tail(deployed)).toBe(0);
      expect(deployed.stderr).toContain("from the project's Dockerfile");
      expect(deployed.stderr).not.toContain("Installing dependencies");

      // Every layer of the pushed image, read back from the registry: the secret is in none of them.
      const accept =
        "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json";
      const manifest = (await (
        await fetch(`${registry.url}/v2/summarizer/manifests/1`, { headers: { Accept: accept } })
      ).json()) as { config: { digest: string }; layers: { digest: string }[] };
      const appFiles: string[] = [];
      for (const [i, layer] of manifest.layers.entries()) {
        const blob = Buffer.from(
          await (await fetch(`${registry.url}/v2/summarizer/blobs/${layer.digest}`)).arrayBuffer(),
        );
        const file = join(parent, `layer-${i}.tar.gz`);
        writeFileSync(file, blob);
        let found = "";
        await list({
          file,
          onReadEntry: (entry) => {
            if (i === manifest.layers.length - 1) appFiles.push(entry.path);
            if (entry.path === "root/.npmrc") found = entry.path;
            let last: Buffer = Buffer.alloc(0);
            entry.on("data", (chunk: Buffer) => {
              // the marker may straddle two chunks
              if (Buffer.concat([last, chunk]).includes(marker)) found ||= entry.path;
              last = chunk.subarray(-marker.length);
            });
          },
        });
        expect(found, `layer ${i} holds the npm secret`).toBe("");
      }
      const config = await (
        await fetch(`${registry.url}/v2/summarizer/blobs/${manifest.config.digest}`)
      ).text();
      expect(config).not.toContain(marker);
      // npm ci ran in the image: the app's own flash-worker, from the npm registry, and no host node_modules copied.
      expect(appFiles).toContain("app/node_modules/flash-worker/package.json");
      expect(appFiles).toContain("app/handler.ts");

      const ids = JSON.parse(readFileSync(join(dir, ".flash/deployments.json"), "utf8")) as {
        endpoints: Record<string, { id: string }>;
      };
      expect(Object.keys(ids.endpoints)).toHaveLength(1);
      const client = new EndpointClient({
        name: Object.keys(ids.endpoints)[0]!,
        cwd: dir,
        apiKey: KEY,
        timeoutMs: 300_000,
        breakers: new CircuitBreakers(),
        logger: createLogger({ level: "ERROR", json: false }),
      });
      const input = (JSON.parse(testInput!) as { input: { text: string } }).input;
      const done = await client.runsync(input);
      expect(done).toMatchObject({
        status: "COMPLETED",
        output: { words: input.text.split(/\s+/).length },
      });
      const removed = await flash(["undeploy", "--all", "--yes", "--api-url", platform.url]);
      expect(removed.code, tail(removed)).toBe(0);
    });

    it("the Dockerfiles of Images and examples and docker/README.md build on flash-worker:cpu and run test_input.json", {
      timeout: 10 * 60_000,
    }, async () => {
      // "Wrap a model server"'s two-endpoint Dockerfile is deployed by test/e2e/own-dockerfile-deploy.test.ts.
      const others = all.filter(
        (s) =>
          isDockerfile(s) &&
          /^FROM /m.test(s.text) &&
          s.text !== dockerfile &&
          s.section !== "Wrap a model server",
      );
      expect(others.length).toBeGreaterThan(0);
      for (const [i, s] of others.entries()) {
        const file = join(parent, `Dockerfile.${i}`);
        writeFileSync(file, s.text);
        const tag = `localhost/flash-readme-snippet:${i}`;
        built.push(tag);
        const image = await flash(["image", "build", "-f", file, "-t", tag, "."]);
        expect(image.code, `${s.file} (${s.section})\n${tail(image)}`).toBe(0);
        const ran = await flash(["image", "run", tag]);
        expect(ran.code, `${s.file}\n${tail(ran)}`).toBe(0);
        expect(`${ran.stdout}\n${ran.stderr}`).toContain('"words":3');
      }
    });
  },
);
