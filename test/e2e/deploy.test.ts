// flash deploy for real, end to end on this machine: examples/echo and examples/load-balanced built into one
// image, pushed to a real OCI registry on loopback (Debian's docker-registry), deployed through the local
// platform's REST v2 (every exchange judged by the OpenAPI document), pulled and run there as buildah
// containers; then a redeploy (PATCH, a new image) and undeploy. Needs root, buildah and docker-registry
// (scripts/test-deps.sh); skipped, saying why, without them. The runtime image is built once on a debootstrap
// stand-in and kept in FLASH_DEPLOY_TEST_STORAGE (default /var/tmp/flash-deploy-storage) for later runs.
import { execFileSync, spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { list } from "tar";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CircuitBreakers, EndpointClient } from "../../src/client/index.js";
import { createLogger } from "../../src/log/index.js";
import type { Platform } from "../../src/platform/index.js";
import { makeProject, type Project, vendorPackage } from "../cli/toolkit-project.js";
import type { ConformanceProxy } from "../deploy/openapi.js";
import { flash, flashRun, freePort, ROOT } from "../process.js";
import {
  buildahIn,
  DEPLOY_STORAGE,
  describeWithImages,
  ensureStandin,
  type LocalCloud,
  type Registry,
  STANDIN,
  startLocalCloud,
  startRegistry,
} from "./registry.js";

const KEY = "e2e-deploy-key";
const STORAGE = DEPLOY_STORAGE;

const buildah = buildahIn(STORAGE);

/** The console's worker-log view as the page first gets it: the backlog event of /console/api/logs/events. */
async function consoleBacklog(url: string, token: string): Promise<string> {
  const controller = new AbortController();
  const res = await fetch(`${url}/console/api/logs/events?token=${encodeURIComponent(token)}`, {
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  let text = "";
  while (!text.includes("\n\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  controller.abort();
  return text;
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, tries = 240): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describeWithImages("flash deploy: build, push, deploy to the local platform, run, redeploy, undeploy", () => {
  let cloud: LocalCloud | undefined;
  let registry: Registry;
  let platform: Platform;
  let proxy: ConformanceProxy;
  let platformLog: string[];
  let project: Project;
  let home: string;

  beforeAll(async () => {
    ensureStandin(STORAGE);
    // The runtime images a previous run left hold that run's runtime: the first deploy builds them from this
    // checkout (on the kept stand-in base), so the workers run the code under test.
    for (const image of ["localhost/flash-worker:cpu", "localhost/flash-worker:cuda"])
      buildah(["rmi", "--force", image]);
    cloud = await startLocalCloud(KEY, 10_000);
    ({ registry, platform, proxy, platformLog } = cloud);
    home = mkdtempSync(join(tmpdir(), "flash-home-"));
    project = makeProject({});
    mkdirSync(join(project.dir, "echo"));
    mkdirSync(join(project.dir, "lb"));
    // echo needs its dependency at start (a worker without it crash-loops), and the README's .dockerignore
    // keeps the host's node_modules out: the image installs its own.
    writeFileSync(
      join(project.dir, "echo/handler.ts"),
      `import "shout";\n${readFileSync(join(ROOT, "examples/echo/handler.ts"), "utf8")}`,
    );
    project.write(".dockerignore", "node_modules\n.flash\n.env\n");
    copyFileSync(join(ROOT, "examples/load-balanced/handler.ts"), join(project.dir, "lb/handler.ts"));
    // Deploy proves each release with the app's test input (both endpoints scale to zero).
    copyFileSync(join(ROOT, "examples/echo/test_input.json"), join(project.dir, "echo/test_input.json"));
    copyFileSync(
      join(ROOT, "examples/load-balanced/test_input.json"),
      join(project.dir, "lb/test_input.json"),
    );
    const shout = await vendorPackage(
      project,
      "shout",
      "export const shout = (s) => s.toUpperCase() + '!';\n",
    );
    project.write(
      "package.json",
      JSON.stringify({ name: "app", type: "module", dependencies: { "flash-worker": "*", shout } }),
    );
  }, 20 * 60_000);

  afterAll(async () => {
    // The app images go with the cloud; the runtime and stand-in images stay for the next run.
    await cloud?.close();
    // Building a runtime image leaves its stages' working containers behind: a full copy each, too.
    buildah(["rm", "--all"]);
    buildah(["rmi", "--prune"]);
    project?.remove();
    if (home) rmSync(home, { recursive: true, force: true });
    // Removing several images from vfs storage takes longer than a hook's default 30 s on a busy machine.
  }, 5 * 60_000);

  const deploy = (image: string, env: Record<string, string> = {}) =>
    flashRun(
      ["deploy", "--image", image, "--api-url", proxy.url, "echo/handler.ts", "lb/handler.ts"],
      {
        HOME: home,
        RUNPOD_API_KEY: KEY,
        FLASH_CONTAINER_STORAGE: STORAGE,
        FLASH_NODE_BASE_IMAGE: STANDIN,
        ...env,
      },
      project.dir,
    );
  const cli = (args: string[]) =>
    flashRun(
      [...args, "--api-url", proxy.url],
      { HOME: home, RUNPOD_API_KEY: KEY, LOG_LEVEL: "ERROR" },
      project.dir,
    );
  const deployed = () =>
    JSON.parse(readFileSync(join(project.dir, ".flash/deployments.json"), "utf8")) as {
      endpoints: Record<string, { id: string; url: string }>;
    };

  it("examples/echo and examples/load-balanced: one image, two endpoints, running from the registry", {
    timeout: 30 * 60_000,
  }, async () => {
    const image = `${registry.host}/app:1`;
    const started = Date.now();
    const first = await deploy(image);
    const seconds = (Date.now() - started) / 1000;
    expect(first.code, first.stderr.slice(-3000)).toBe(0);
    // build + push + deploy, for the README's figures
    process.stdout.write(
      `[deploy e2e] first deploy ${seconds.toFixed(1)} s: ${first.stdout.split("\n")[1]}\n`,
    );
    expect(first.stdout).toMatch(
      /^✓ image 127\.0\.0\.1:\d+\/app:1 {2}[\d.]+ MB {2}built in [\d.]+s, pushed in [\d.]+s {2}sha256:[0-9a-f]{64}$/m,
    );
    expect(first.stdout).toMatch(
      /^ {2}echo {2}\w+ \(created\) {2}http:\/\/127\.0\.0\.1:\d+\/v2\/\w+\/runsync$/m,
    );
    expect(first.stdout).toMatch(
      /^ {2}lb-example {2}\w+ \(created\) {2}http:\/\/127\.0\.0\.1:\d+\/lb\/\w+\/<path>/m,
    );
    expect(first.stdout).toContain('-H "Authorization: Bearer $RUNPOD_API_KEY"');
    // Each release was proven before "deployed": a smoke job / request from test_input.json answered.
    expect(first.stdout).toMatch(/^✓ echo ready: smoke job \S+ from test_input\.json COMPLETED in [\d.]+s$/m);
    expect(first.stdout).toMatch(
      /^✓ lb-example ready: POST \/echo \(test_input\.json\) answered in [\d.]+s$/m,
    );
    expect(first.stdout).toMatch(/^✓ deployed to http:\/\/127\.0\.0\.1:\d+$/m);
    // The curl sends the test input, not an empty one.
    expect(first.stdout).toContain(`-d '{"input":{"name":"flash","message":"hello"}}'`);
    expect(first.stdout).toMatch(/curl -X POST '\S+\/echo' .* -d '\{"prompt":"hello","n":1\}'/);
    expect(first.stderr).toMatch(/\| INFO \| image \| STEP \d\/\d: RUN --mount=type=secret,id=npmrc/);
    expect(first.stderr).toMatch(/\| INFO \| image \| STEP \d\/\d: COPY app\/ \/app\//);
    expect(first.stderr).toMatch(/\| INFO \| image \| Copying blob sha256:/);

    // The pushed image, read back over the registry API: its top layer (buildah commits a build as one) is the
    // app as flash build ships it and its dependencies as npm ci installed them in the image from the lock.
    const accept =
      "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json";
    const manifest = (await (
      await fetch(`${registry.url}/v2/app/manifests/1`, { headers: { Accept: accept } })
    ).json()) as {
      layers: { digest: string; size: number }[];
    };
    const top = manifest.layers.at(-1)!;
    const blob = Buffer.from(await (await fetch(`${registry.url}/v2/app/blobs/${top.digest}`)).arrayBuffer());
    const layerFile = join(home, "layer.tar.gz");
    writeFileSync(layerFile, blob);
    const entries: string[] = [];
    await list({ file: layerFile, onReadEntry: (entry) => entries.push(entry.path) });
    for (const path of ["app/echo/handler.ts", "app/lb/handler.ts", "app/flash_manifest.json"]) {
      expect(entries).toContain(path);
    }
    expect(entries).toContain("app/.flash/.build/node_modules/shout/index.js");
    expect(entries).toContain("app/node_modules");
    expect(entries.filter((path) => path.startsWith("app/node_modules/"))).toEqual([]);

    const { endpoints } = deployed();
    const echo = endpoints.echo!;
    const lb = endpoints["lb-example"]!;
    const client = new EndpointClient({
      name: "echo",
      cwd: project.dir,
      apiKey: KEY,
      timeoutMs: 300_000,
      breakers: new CircuitBreakers(),
      logger: createLogger({ level: "ERROR", json: false }),
    });
    const done = await client.runsync({ hello: "deploy" });
    expect(done).toMatchObject({ status: "COMPLETED", output: { hello: "deploy" } });
    const routed = await eventually("the load-balanced route", async () => {
      const res = await fetch(`${lb.url}/hello/world`, { headers: { Authorization: `Bearer ${KEY}` } });
      return res.ok ? ((await res.json()) as unknown) : undefined;
    });
    expect(routed).toEqual({ hello: "world" });

    // No --api-url: the project's recorded deployment names the API.
    const listed = await flashRun(["endpoints"], { HOME: home, RUNPOD_API_KEY: KEY }, project.dir);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^echo {2}${echo.id} {2}QUEUE {2}gpu .* {2}${registry.host}/app:1$`, "m"),
    );
    expect(listed.stdout).toMatch(new RegExp(`^lb-example {2}${lb.id} {2}LOAD_BALANCER`, "m"));
    const logs = await cli(["logs", "echo"]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/Started\./);

    // Nothing changed: the image builds to the same digest (a fixed timestamp), and no endpoint is PATCHed.
    const digestOf = (out: string) => /^✓ image \S+ .* (sha256:[0-9a-f]{64})$/m.exec(out)?.[1];
    const exchangesBefore = proxy.exchanges.length;
    const same = await deploy(image);
    expect(same.code, same.stderr.slice(-3000)).toBe(0);
    expect(digestOf(same.stdout)).toBe(digestOf(first.stdout));
    for (const [name, id] of [
      ["echo", echo.id],
      ["lb-example", lb.id],
    ]) {
      expect(same.stdout).toContain(
        `unchanged: ${name} (${id}) already runs ${image}@${digestOf(first.stdout)}; not updated`,
      );
      expect(same.stdout).toContain(`  ${name}  ${id} (unchanged)`);
    }
    expect(proxy.exchanges.slice(exchangesBefore).filter((e) => e.method === "PATCH")).toEqual([]);
    const unchanged = (await (
      await fetch(`${proxy.url}/v2/serverless/${echo.id}/releases`, {
        headers: { Authorization: `Bearer ${KEY}` },
      })
    ).json()) as { endpointVersion: number };
    expect(unchanged.endpointVersion).toBe(1);

    // A change, a new tag: the endpoints are PATCHed in place (same ids) and new workers run the new image.
    const handler = join(project.dir, "echo/handler.ts");
    writeFileSync(
      handler,
      readFileSync(handler, "utf8").replace(
        'const output = "mock_return" in input ? input.mock_return : input;',
        'const output = "mock_return" in input ? input.mock_return : { ...input, release: 2 };',
      ),
    );
    const swapFrom = platformLog.length;
    const again = await deploy(`${registry.host}/app:2`);
    expect(again.code, again.stderr.slice(-3000)).toBe(0);
    expect(again.stdout).toContain(`  echo  ${echo.id} (updated)`);
    expect(again.stdout).toContain(`  lb-example  ${lb.id} (updated)`);
    expect(again.stdout).toMatch(/^✓ echo ready: smoke job/m);
    // Once deploy returns, requests go to the new release only (the old workers were stopped).
    const updated = await client.runsync({ hello: "again" });
    expect(updated.output).toEqual({ hello: "again", release: 2 });
    // A normal release swap warns about nothing.
    expect(platformLog.slice(swapFrom).filter((l) => / \| (WARN|ERROR) \| /.test(l))).toEqual([]);
    const releases = (await (
      await fetch(`${proxy.url}/v2/serverless/${echo.id}/releases`, {
        headers: { Authorization: `Bearer ${KEY}` },
      })
    ).json()) as { endpointVersion: number; releases: { diff: { field: string; new: unknown }[] }[] };
    expect(releases.endpointVersion).toBe(2);
    expect(releases.releases[0]?.diff).toContainEqual(
      expect.objectContaining({ field: "template.imageName", new: `${registry.host}/app:2` }),
    );

    // The key is in no log line: the platform's, the console's worker logs, deploy's and the logs command's.
    const token = (await (
      await fetch(`${platform.url}/console/api/token`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}` },
      })
    ).json()) as { token: string };
    const consoleLogs = await consoleBacklog(platform.url, token.token);
    // The worker's start line names the key's variable; its value reaches the container through the environment.
    expect(consoleLogs).toContain("--env RUNPOD_AI_API_KEY ");
    expect(platformLog.join("")).toContain("--env RUNPOD_AI_API_KEY ");
    for (const text of [platformLog.join(""), consoleLogs, first.stderr, again.stderr, logs.stdout]) {
      expect(text).not.toContain(KEY);
    }

    const removed = await flashRun(
      ["undeploy", "--all", "--yes"],
      { HOME: home, RUNPOD_API_KEY: KEY },
      project.dir,
    );
    expect(removed.code, removed.stderr).toBe(0);
    // One line per deletion as it finishes (in any order: four go at once), then the count.
    expect(removed.stdout).toContain(`  deleted endpoint echo (${echo.id})\n`);
    expect(removed.stdout).toContain(`  deleted endpoint lb-example (${lb.id})\n`);
    expect(removed.stdout).toMatch(/^Deleting 2 endpoints, 0 Pods on .*…$/m);
    expect(removed.stdout).toMatch(/^✓ deleted 2 of 2 \(2 endpoints, 0 Pods\)$/m);
    const after = (await (
      await fetch(`${proxy.url}/v2/serverless`, { headers: { Authorization: `Bearer ${KEY}` } })
    ).json()) as {
      endpoints: unknown[];
    };
    expect(after.endpoints).toEqual([]);
    expect(platform.pool(echo.id)).toBeUndefined();
    expect(platform.lb.get(lb.id)).toBeUndefined();
    // no container process of theirs is left on the machine
    const running = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .map((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").join(" ");
        } catch {
          return "";
        }
      });
    expect(
      running.filter((cmd) => /flash-worker\/dist\/cli\/main\.js start (echo|lb)\/handler\.ts/.test(cmd)),
    ).toEqual([]);
    expect(deployed().endpoints).toEqual({});

    expect(proxy.violations).toEqual([]);
    expect(proxy.requestViolations).toEqual([]);
    const calls = proxy.exchanges.map(
      (e) =>
        `${e.method} ${e.path.replace(/\/v2\/serverless\/\w+/, "/v2/serverless/{id}").split("?")[0]} ${e.status}`,
    );
    for (const call of [
      "POST /v2/serverless 201",
      "PATCH /v2/serverless/{id} 200",
      "DELETE /v2/serverless/{id} 204",
      "GET /v2/catalog/gpus 200",
    ]) {
      expect(calls).toContain(call);
    }
  });

  it("a worker that cannot start: deploy exits 1 with its last lines; endpoints and logs show it unhealthy", {
    timeout: 10 * 60_000,
  }, async () => {
    const broken = makeProject({});
    try {
      mkdirSync(join(broken.dir, "crash"));
      // Loads at build time (no RUNPOD_POD_ID there), then fails in the worker as a missing dependency does.
      broken.write(
        "crash/handler.ts",
        [
          'import { handler } from "flash-worker";',
          'if (process.env.RUNPOD_POD_ID) await import(["no", "such", "module"].join("-"));',
          "export default handler(async (job) => job.input);",
          "",
        ].join("\n"),
      );
      broken.write("crash/test_input.json", JSON.stringify({ input: { n: 1 } }));
      broken.write(
        "package.json",
        JSON.stringify({ name: "crash", type: "module", dependencies: { "flash-worker": "*" } }),
      );
      const env = {
        HOME: home,
        RUNPOD_API_KEY: KEY,
        FLASH_CONTAINER_STORAGE: STORAGE,
        FLASH_NODE_BASE_IMAGE: STANDIN,
      };
      const failed = await flashRun(
        ["deploy", "--image", `${registry.host}/crash:1`, "--api-url", proxy.url, "crash/handler.ts"],
        env,
        broken.dir,
      );
      expect(failed.code, failed.stdout + failed.stderr.slice(-3000)).toBe(1);
      expect(failed.stdout).not.toContain("✓ deployed");
      expect(failed.stderr).toMatch(
        /✗ crash \(\w+\): release 1 did not start: worker \w+ is unhealthy\. Its last log lines/,
      );
      expect(failed.stderr).toContain("Cannot find package 'no-such-module'");
      expect(failed.stderr).not.toContain(KEY);

      const listed = await flashRun(["endpoints"], { HOME: home, RUNPOD_API_KEY: KEY }, broken.dir);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(/worker\(s\): .* [1-9]\d* unhealthy/);
      expect(listed.stdout).toMatch(/^ {4}\w+ {2}UNHEALTHY/m);
      expect(listed.stdout).toMatch(/^ {6}\| .*(no-such-module|exited with code)/m);
      const logs = await flashRun(["logs", "crash"], { HOME: home, RUNPOD_API_KEY: KEY }, broken.dir);
      expect(logs.code, logs.stderr).toBe(0);
      expect(logs.stdout).toContain("no-such-module");
      expect(logs.stderr).toMatch(/^! worker \w+ of crash is UNHEALTHY/m);
      // --follow shows the dead workers' lines too (it used to say "has no workers now: nothing to show").
      const following = flash(["logs", "crash", "--follow"], { HOME: home, RUNPOD_API_KEY: KEY }, broken.dir);
      try {
        expect(await following.waitForLine(/^\w+ \| .*no-such-module/, 60_000)).toBeTruthy();
      } finally {
        following.child.kill("SIGINT");
        await following.exited;
      }

      const removed = await flashRun(
        ["undeploy", "--all", "--yes"],
        { HOME: home, RUNPOD_API_KEY: KEY },
        broken.dir,
      );
      expect(removed.code, removed.stderr).toBe(0);
    } finally {
      broken.remove();
    }
  });

  it("a registry that is down, or refuses the push: a clear message, and nothing created", {
    timeout: 10 * 60_000,
  }, async () => {
    const down = `127.0.0.1:${await freePort()}`;
    const unreachable = await deploy(`${down}/app:1`, { LOG_LEVEL: "ERROR" });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain(`✗ Pushing ${down}/app:1 to ${down} failed`);
    expect(unreachable.stderr).toContain(
      "The registry is not reachable: check the name and port, or start it.",
    );

    const readonly = await startRegistry(true);
    try {
      const refused = await deploy(`${readonly.host}/app:1`, { LOG_LEVEL: "ERROR" });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`✗ Pushing ${readonly.host}/app:1 to ${readonly.host} failed`);
    } finally {
      readonly.stop();
    }
    const left = (await (
      await fetch(`${proxy.url}/v2/serverless`, { headers: { Authorization: `Bearer ${KEY}` } })
    ).json()) as {
      endpoints: unknown[];
    };
    expect(left.endpoints).toEqual([]);
  });

  it("from the package as users install it (npm pack → npm install): the runtime image is built from its own Dockerfile", {
    timeout: 20 * 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-installed-"));
    // examples/echo is a GPU endpoint: its runtime image, set aside (restored at the end), so this deploy has
    // to build it from the package.
    const runtime = "localhost/flash-worker:cuda";
    const aside = "localhost/flash-worker-aside:cuda";
    const hadRuntime = buildah(["tag", runtime, aside]).status === 0;
    if (hadRuntime) buildah(["rmi", runtime]);
    try {
      mkdirSync(join(dir, "vendor"));
      const packed = JSON.parse(
        execFileSync(
          "npm",
          ["pack", "--json", "--ignore-scripts", "--pack-destination", join(dir, "vendor")],
          {
            cwd: ROOT,
            encoding: "utf8",
            stdio: ["ignore", "pipe", "ignore"],
          },
        ),
      ) as [{ filename: string }];
      writeFileSync(
        join(dir, "package.json"),
        JSON.stringify({
          name: "installed-app",
          type: "module",
          allowScripts: { esbuild: false, koffi: false },
        }),
      );
      const installed = spawnSync(
        "npm",
        ["install", "--no-audit", "--no-fund", "--prefer-offline", `./vendor/${packed[0].filename}`],
        { cwd: dir, encoding: "utf8" },
      );
      expect(installed.status, installed.stdout + installed.stderr).toBe(0);
      mkdirSync(join(dir, "echo"));
      copyFileSync(join(ROOT, "examples/echo/handler.ts"), join(dir, "echo/handler.ts"));
      const cliOfPackage = join(dir, "node_modules/flash-worker/dist/cli/main.js");
      const run = (args: string[]) =>
        flashRun(
          [...args, "--api-url", proxy.url],
          {
            HOME: home,
            RUNPOD_API_KEY: KEY,
            FLASH_CONTAINER_STORAGE: STORAGE,
            FLASH_NODE_BASE_IMAGE: STANDIN,
          },
          dir,
          cliOfPackage,
        );
      const deployedFromPackage = await run([
        "deploy",
        "--image",
        `${registry.host}/installed:1`,
        "echo/handler.ts",
      ]);
      expect(deployedFromPackage.code, deployedFromPackage.stderr.slice(-3000)).toBe(0);
      expect(deployedFromPackage.stderr).toContain(
        `building it first from ${join(dir, "node_modules/flash-worker/Dockerfile.gpu")}`,
      );
      expect(buildah(["inspect", "--type", "image", runtime]).status).toBe(0);
      const client = new EndpointClient({
        name: "echo",
        cwd: dir,
        apiKey: KEY,
        timeoutMs: 300_000,
        breakers: new CircuitBreakers(),
        logger: createLogger({ level: "ERROR", json: false }),
      });
      expect(await client.runsync({ from: "the installed package" })).toMatchObject({
        status: "COMPLETED",
        output: { from: "the installed package" },
      });
      const removed = await run(["undeploy", "--all", "--yes"]);
      expect(removed.code, removed.stderr).toBe(0);
    } finally {
      if (hadRuntime) {
        buildah(["rmi", "--force", runtime]);
        buildah(["tag", aside, runtime]);
        buildah(["rmi", aside]);
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
