// `flash deploy --pod` for real, as the README's "Pods" section says (its commands and client snippet read from
// README.md, never copied here): examples/load-balanced built into an image, pushed to a real OCI registry on
// loopback, run as a Pod by the local platform (every API exchange judged by the OpenAPI document), called through
// its proxy URL (`/pods/<id>/<port>` on the platform) and, once redeployed with a tcp port (the same Pod, updated), through its tcp
// forward; listed, then undeployed. Needs root, buildah and docker-registry (scripts/test-deps.sh); run it under
// the buildah lock.
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Platform } from "../../src/platform/index.js";
import { makeProject, type Project } from "../cli/toolkit-project.js";
import type { ConformanceProxy } from "../deploy/openapi.js";
import { flashRun, freePort, ROOT } from "../process.js";
import {
  DEPLOY_STORAGE,
  describeWithImages,
  type LocalCloud,
  type Registry,
  STANDIN,
  startLocalCloud,
  viaHost,
} from "./registry.js";
import { snippets } from "./snippets.js";

const KEY = "e2e-pod-deploy-key";
const STORAGE = DEPLOY_STORAGE;

/** The README's "Pods" section: its shell commands (continuations joined) and its client snippet. */
const section = snippets("README.md").filter((s) => s.section === "Pods");
const commands = section
  .filter((s) => s.lang === "sh")
  .flatMap((s) => s.text.replace(/\\\n\s*/g, "").split("\n"))
  .filter((line) => line.startsWith("npx flash "));
const clientSnippet = section.find((s) => s.lang === "ts")?.text ?? "";

/** A command line's words, "double quoted" ones kept whole. */
const words = (line: string) => [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(2);

describeWithImages("flash deploy --pod: the README's Pods section against the local platform", () => {
  let cloud: LocalCloud | undefined;
  let registry: Registry;
  let platform: Platform;
  let proxy: ConformanceProxy;
  let project: Project;
  let home: string;

  beforeAll(async () => {
    cloud = await startLocalCloud(KEY, 5_000);
    ({ registry, platform, proxy } = cloud);
    home = mkdtempSync(join(tmpdir(), "flash-home-"));
    project = makeProject({});
    for (const file of ["handler.ts", "test_input.json"]) {
      copyFileSync(join(ROOT, "examples/load-balanced", file), join(project.dir, file));
    }
  }, 20 * 60_000);

  afterAll(async () => {
    await cloud?.close();
    project?.remove();
    if (home) rmSync(home, { recursive: true, force: true });
  }, 5 * 60_000);

  it("deploys, answers through the proxy URL, redeploys onto a tcp port (same Pod), lists, undeploys", {
    timeout: 30 * 60_000,
  }, async () => {
    expect(commands.map((c) => words(c)[0])).toEqual(["deploy", "deploy", "pods", "undeploy"]);
    const [httpPort, tcpPort] = [await freePort(), await freePort()];
    // The README's commands as they are, with this run's registry, API and free ports in place of its examples.
    const run = (line: string) =>
      flashRun(
        words(
          line
            .replaceAll("127.0.0.1:5000", registry.host)
            .replaceAll("http://127.0.0.1:8000", proxy.url)
            .replace("8080/http", `${httpPort}/http`)
            .replace("9000/tcp", `${tcpPort}/tcp`),
        ),
        {
          HOME: home,
          RUNPOD_API_KEY: KEY,
          FLASH_CONTAINER_STORAGE: STORAGE,
          FLASH_NODE_BASE_IMAGE: STANDIN,
        },
        project.dir,
      );
    const tail = (r: { stdout: string; stderr: string }) => `${r.stdout}\n${r.stderr}`.slice(-4000);
    const pods = async () =>
      (
        (await (
          await fetch(`${platform.url}/v2/pods`, { headers: { Authorization: `Bearer ${KEY}` } })
        ).json()) as {
          pods: { id: string; name: string; image: string }[];
        }
      ).pods;

    // 1. Created: ready once /ping answered through the proxy URL, which it prints.
    const timed = async (line: string, what: string) => {
      const started = Date.now();
      const result = await run(line);
      // build + push + create or update + until the app answers, for the report
      process.stdout.write(`[pod e2e] ${what} ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
      return result;
    };
    const first = await timed(commands[0]!, "deploy --pod (create)");
    expect(first.code, tail(first)).toBe(0);
    const id = /^ {2}lb-example {2}Pod (\w+) \(created\) {2}GPU NVIDIA L4 {2}RUNNING$/m.exec(
      first.stdout,
    )?.[1];
    expect(id, first.stdout).toBeDefined();
    const proxyUrl = `${proxy.url}/pods/${id}/${httpPort}`;
    expect(first.stdout).toContain(
      `✓ deployed to ${proxy.url}: Pod ready (GET ${proxyUrl}/ping answered 200)`,
    );
    expect(first.stdout).toContain(`    ${httpPort}/http  ${proxyUrl}\n`);
    expect(first.stdout).toContain(`    curl -X GET '${proxyUrl}/greet'`);
    const [created] = await pods();
    expect(created?.image).toMatch(new RegExp(`^${registry.host}/lb-example@sha256:[0-9a-f]{64}$`));
    // A route through the platform's proxy, as a browser sends it to the .localhost URL.
    const routed = await viaHost(
      platform.port,
      `${id}-${httpPort}.localhost:${platform.port}`,
      "/hello/pods",
    );
    expect(routed).toEqual({ status: 200, body: JSON.stringify({ hello: "pods" }) });

    // The README's client snippet, by the name deploy recorded.
    writeFileSync(join(project.dir, "pod.mjs"), clientSnippet);
    // Run apart (the platform answers from this process meanwhile).
    const client = await promisify(execFile)("node", ["pod.mjs"], {
      cwd: project.dir,
      env: { ...process.env, HOME: home, RUNPOD_API_KEY: KEY, LOG_LEVEL: "ERROR" },
      encoding: "utf8",
    });
    expect(client.stdout).toBe("{ hello: 'pods' }\n");

    // 2. The same Pod updated (PATCH): the app now on a tcp port, called through its forward.
    const second = await timed(commands[1]!, "deploy --pod (update)");
    expect(second.code, tail(second)).toBe(0);
    expect(second.stdout).toMatch(
      new RegExp(`^ {2}lb-example {2}Pod ${id} \\(updated\\) {2}GPU NVIDIA L4 {2}RUNNING$`, "m"),
    );
    const address = new RegExp(`^ {4}${tcpPort}/tcp {2}(127\\.0\\.0\\.1:\\d+)$`, "m").exec(
      second.stdout,
    )?.[1];
    expect(address, second.stdout).toBeDefined();
    expect(second.stdout).toContain(`Pod ready (GET http://${address}/ping answered 200)`);
    const overTcp = await fetch(`http://${address}/hello/tcp`);
    expect(await overTcp.json()).toEqual({ hello: "tcp" });
    expect((await pods()).map((p) => p.id)).toEqual([id]);
    const recorded = JSON.parse(readFileSync(join(project.dir, ".flash/deployments.json"), "utf8"));
    expect(recorded.pods["lb-example"]).toMatchObject({
      id,
      url: `http://${address}`,
      tcp: { [tcpPort]: address },
    });

    // 3. Listed, with the tcp port's address.
    const listed = await run(commands[2]!);
    expect(listed.code, tail(listed)).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^lb-example {2}${id} {2}RUNNING {2}gpu 1x NVIDIA L4 {2}\\$0\\.00/hr`, "m"),
    );
    expect(listed.stdout).toContain(`  ${tcpPort}/tcp  ${address}`);

    // 4. Undeployed: gone from the platform and from the record; its forward is closed.
    const removed = await run(commands[3]!);
    expect(removed.code, tail(removed)).toBe(0);
    expect(removed.stdout).toMatch(
      new RegExp(
        `^Deleting 0 endpoints, 1 Pod on .*…\\n  deleted Pod lb-example \\(${id}\\)\\n✓ deleted 1 of 1 \\(0 endpoints, 1 Pod\\)$`,
      ),
    );
    expect(await pods()).toEqual([]);
    expect(
      JSON.parse(readFileSync(join(project.dir, ".flash/deployments.json"), "utf8")).pods,
    ).toBeUndefined();
    await expect(fetch(`http://${address}/hello/tcp`)).rejects.toThrow();

    expect(proxy.violations).toEqual([]);
    expect(proxy.requestViolations).toEqual([]);
  });

  it("a Pod in ERROR is fixed by a redeploy: its new container starts, and a failure shows only its own lines", {
    timeout: 20 * 60_000,
  }, async () => {
    const app = makeProject({});
    // Release N: a load-balanced app on CPUs that fails at start in the Pod (not at build time) while `broken`.
    const release = (n: number, broken: boolean) =>
      app.write(
        "handler.ts",
        [
          'import { Endpoint } from "flash-worker";',
          'const api = new Endpoint({ name: "pod-fix", cpu: "cpu3c-2-4" });',
          `if (process.env.RUNPOD_POD_ID && ${broken}) throw new Error("release ${n} is broken");`,
          `api.get("/release", () => ({ release: ${n} }));`,
          "export default api;",
          "",
        ].join("\n"),
      );
    const port = await freePort();
    const deploy = (n: number) =>
      flashRun(
        [
          ...["deploy", "--pod", "--port", `${port}/http`],
          ...["--image", `${registry.host}/pod-fix:${n}`, "--api-url", proxy.url],
        ],
        {
          HOME: home,
          RUNPOD_API_KEY: KEY,
          FLASH_CONTAINER_STORAGE: STORAGE,
          FLASH_NODE_BASE_IMAGE: STANDIN,
        },
        app.dir,
      ).then((r) => ({ ...r, all: `${r.stdout}\n${r.stderr}` }));
    try {
      release(1, true);
      const first = await deploy(1);
      expect(first.code, first.all.slice(-3000)).toBe(1);
      expect(first.stderr).toMatch(
        /✗ Pod pod-fix \(\w+\) did not start: the Pod is ERROR\. Its last log lines/,
      );
      expect(first.stderr).toContain("release 1 is broken");

      // Still broken, differently: the failure shows the new container's lines, none of the old one's.
      release(2, true);
      const second = await deploy(2);
      expect(second.code, second.all.slice(-3000)).toBe(1);
      expect(second.all).toContain("Updated pod");
      expect(second.stderr).toContain("release 2 is broken");
      expect(second.stderr).not.toContain("release 1 is broken");

      // Fixed: the same Pod runs the new image and answers.
      release(3, false);
      const fixed = await deploy(3);
      expect(fixed.code, fixed.all.slice(-3000)).toBe(0);
      const id = /^ {2}pod-fix {2}Pod (\w+) \(updated\) {2}CPU .* {2}RUNNING$/m.exec(fixed.stdout)?.[1];
      expect(id, fixed.stdout).toBeDefined();
      const answered = await viaHost(platform.port, `${id}-${port}.localhost:${platform.port}`, "/release");
      expect(answered).toEqual({ status: 200, body: JSON.stringify({ release: 3 }) });
    } finally {
      await flashRun(
        ["undeploy", "pod-fix", "--yes", "--api-url", proxy.url],
        { HOME: home, RUNPOD_API_KEY: KEY },
        app.dir,
      );
      app.remove();
    }
  });
});
