// No secret in any process's arguments during a deploy to the local platform (issue 43, case 7): an endpoint made
// through REST v2 with a registry login and a secret env var, its image pulled through a registry that demands the
// login and run as a buildah container, while every process's argv (what `ps -eo args` shows every local user) is
// sampled. Needs root, buildah, docker-registry and a C compiler (scripts/test-deps.sh); skipped without root.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { flash } from "../process.js";
import { buildahIn, describeWithImages, type Registry, startRegistry } from "./registry.js";

const KEY = "ps-test-platform-key-4f9a7c";
const USER = "ps-test-user";
const PASSWORD = "ps-test-password-8d2e61";
const SECRET = "ps-test-secret-value-c3b5a0";
const NEVER_SHOWN = [KEY, PASSWORD, SECRET];

/** The worker: prints each variable reversed (logs redact the value itself), then waits to be stopped. */
const WORKER_C = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void show(const char *name) {
  const char *value = getenv(name);
  printf("%s reversed: ", name);
  for (size_t i = value ? strlen(value) : 0; i > 0; i--) putchar(value[i - 1]);
  putchar('\\n');
}
int main(void) {
  show("MY_SECRET_TOKEN");
  show("RUNPOD_AI_API_KEY");
  show("RUNPOD_POD_ID");
  fflush(stdout);
  pause();
  return 0;
}
`;

const reversed = (text: string) => [...text].reverse().join("");

/** Every process's argv now, as `ps -eo args` shows them (/proc/<pid>/cmdline, NULs as spaces). */
function processArgs(): string[] {
  const args: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      args.push(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim());
    } catch {
      // It ended while we looked.
    }
  }
  return args.filter((line) => line.length > 0);
}

/** A registry in front of `registry` that answers 401 without the login (Basic), as a private registry does. */
function loginProxy(registry: Registry, onAuthorized: () => void): Promise<{ server: Server; host: string }> {
  const expected = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString("base64")}`;
  const [registryHost, registryPort] = registry.host.split(":");
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="ps-test"', "content-type": "application/json" });
      res.end('{"errors":[{"code":"UNAUTHORIZED","message":"login required"}]}');
      return;
    }
    onAuthorized();
    const upstream = httpRequest(
      { host: registryHost, port: registryPort, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, host: `127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

describeWithImages("no secret in `ps` during a deploy to the local platform", () => {
  let work: string;
  let storage: string;
  let registry: Registry;
  let proxy: { server: Server; host: string };
  let platform: Platform | undefined;
  const lines: string[] = [];
  const samples: string[][] = [];
  /** Auth files seen on pull command lines while the pull ran, with their modes and their folders'. */
  const authFiles: { file: string; fileMode: number; folderMode: number }[] = [];
  const sample = () => {
    const args = processArgs();
    samples.push(args);
    return args;
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "flash-ps-test-"));
    storage = join(work, "containers");
    const buildah = buildahIn(storage);
    registry = await startRegistry();
    // The image: one static binary, FROM scratch, pushed to the registry without a login (the test's own argv).
    writeFileSync(join(work, "worker.c"), WORKER_C);
    execFileSync("cc", ["-static", "-O2", "-o", join(work, "worker"), join(work, "worker.c")]);
    const step = (args: string[]) => {
      const run = buildah(args);
      if (run.status !== 0) throw new Error(`buildah ${args[0]} failed: ${run.stderr}`);
      return run.stdout.trim();
    };
    const container = step(["from", "scratch"]);
    step(["copy", container, join(work, "worker"), "/worker"]);
    step(["config", "--entrypoint", '["/worker"]', container]);
    step(["commit", container, "localhost/ps-secret-app:1"]);
    step([
      "push",
      "--tls-verify=false",
      "localhost/ps-secret-app:1",
      `docker://${registry.host}/ps-secret-app:1`,
    ]);
    // Gone from the storage the platform pulls into: its pull fetches the image through the login.
    step(["rm", container]);
    step(["rmi", "--all", "--force"]);
    proxy = await loginProxy(registry, () => {
      // A request with the login is a pull under way: its process and auth file are there now.
      for (const args of sample()) {
        const file = / pull .*--authfile (\S+)/.exec(args)?.[1];
        if (file && !authFiles.some((seen) => seen.file === file)) {
          authFiles.push({
            file,
            fileMode: statSync(file).mode & 0o777,
            folderMode: statSync(dirname(file)).mode & 0o777,
          });
        }
      }
    });
    platform = await startPlatform({
      apiKey: KEY,
      workerStopGraceMs: 2_000,
      containers: { tool: "buildah", storage },
      logger: createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } }),
    });
  }, 5 * 60_000);

  afterAll(async () => {
    await platform?.close();
    await new Promise((resolve) => proxy?.server.close(resolve));
    registry?.stop();
    if (work) {
      buildahIn(join(work, "containers"))(["rm", "--all"]);
      rmSync(work, { recursive: true, force: true });
    }
  }, 2 * 60_000);

  it("an endpoint with a registry login and a secret env var: pulled, run, and no argv ever holds a secret", {
    timeout: 5 * 60_000,
  }, async () => {
    const p = platform!;
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${p.url}${path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(201);
      return (await res.json()) as { id: string };
    };
    const authBefore = readdirSync(tmpdir()).filter((name) => name.startsWith("flash-auth-"));
    // Sampled all along too, beside the samples taken at the moments that must be seen.
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        sample();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();

    const login = await api("/v2/registries", { name: "private", username: USER, password: PASSWORD });
    await api("/v2/serverless", {
      name: "secret-app",
      type: "QUEUE",
      image: `${proxy.host}/ps-secret-app:1`,
      registry: login.id,
      gpu: { pools: ["ADA_24"], count: 1 },
      workers: { min: 1, max: 1, idleTimeout: 5 },
      scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      env: { MY_SECRET_TOKEN: SECRET },
      timeout: 60_000,
    });
    // The container ran and printed what it got: buildah run is alive (the worker waits to be stopped).
    let shown = "";
    while (!shown.includes("RUNPOD_POD_ID reversed:")) {
      const failed = lines.find((l) => / \| ERROR \| /.test(l));
      if (failed) throw new Error(`the deploy failed:\n${lines.join("")}`);
      shown = lines.filter((l) => l.includes(" reversed: ")).join("\n");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const running = sample();
    const ps = spawnSync("ps", ["-eo", "args"], { encoding: "utf8" }).stdout;
    sampling = false;
    await sampler;

    // The values reached the container.
    expect(shown).toContain(`MY_SECRET_TOKEN reversed: ${reversed(SECRET)}`);
    expect(shown).toContain(`RUNPOD_AI_API_KEY reversed: ${reversed(KEY)}`);
    // No argv, at any sample, held the platform's key, the registry password or the secret env value.
    for (const args of [...samples.flat(), ...ps.split("\n")]) {
      for (const secret of NEVER_SHOWN) expect(args).not.toContain(secret);
    }
    // The check is not vacuous: the pull (with its auth file) and the run were seen.
    expect(samples.flat().some((args) => / pull .*--authfile /.test(args) && args.includes(proxy.host))).toBe(
      true,
    );
    expect(running.some((args) => /buildah .* run .*--isolation chroot/.test(args))).toBe(true);
    expect(ps).toMatch(/buildah .* run /);
    // The auth file was private while it existed and is gone now.
    expect(authFiles.length).toBeGreaterThan(0);
    for (const seen of authFiles) {
      expect(seen).toMatchObject({ fileMode: 0o600, folderMode: 0o700 });
      expect(() => statSync(dirname(seen.file))).toThrow();
    }
    expect(readdirSync(tmpdir()).filter((name) => name.startsWith("flash-auth-"))).toEqual(authBefore);
    // Nor does the platform's log show them.
    for (const secret of NEVER_SHOWN) expect(lines.join("")).not.toContain(secret);
  });

  it("flash image run -e NAME: the value goes to the container through buildah's environment, not its argv", {
    timeout: 5 * 60_000,
  }, async () => {
    const image = `${registry.host}/ps-secret-app:1`;
    const pulled = buildahIn(storage)(["pull", "--tls-verify=false", `docker://${image}`]);
    expect(pulled.status, pulled.stderr).toBe(0);
    samples.length = 0;
    // `-e NAME` as with docker run: the value is this process's, and must reach no argv on the way.
    const run = flash(["image", "run", "-e", "MY_SECRET_TOKEN", "-e", "RUNPOD_AI_API_KEY", image], {
      MY_SECRET_TOKEN: SECRET,
      RUNPOD_AI_API_KEY: KEY,
      FLASH_CONTAINER_STORAGE: storage,
      FLASH_CONTAINER_TOOL: "buildah",
    });
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        sample();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    try {
      const token = await run.waitForLine(/^MY_SECRET_TOKEN reversed: /, 120_000);
      const key = await run.waitForLine(/^RUNPOD_AI_API_KEY reversed: /);
      const running = sample();
      sampling = false;
      await sampler;
      expect(token).toBe(`MY_SECRET_TOKEN reversed: ${reversed(SECRET)}`);
      expect(key).toBe(`RUNPOD_AI_API_KEY reversed: ${reversed(KEY)}`);
      for (const args of samples.flat()) {
        for (const secret of NEVER_SHOWN) expect(args).not.toContain(secret);
      }
      expect(running.some((args) => /buildah .* run .*--isolation chroot/.test(args))).toBe(true);
    } finally {
      sampling = false;
      await sampler;
      run.child.kill("SIGTERM");
      await run.exited;
    }
  });
});
