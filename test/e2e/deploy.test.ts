// build → deploy → call against a real local platform: `flash deploy` run as a user runs it, the platform
// unpacking the artifact and running its workers, and the endpoint client calling the result by name.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CircuitBreakers, EndpointClient } from "../../src/client/index.js";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { GREETER, makeProject, type Project, vendorPackage } from "../cli/toolkit-project.js";
import { closedPortUrl } from "../client/servers.js";
import { flashRun } from "../process.js";

const KEY = "deploy-test-key";
let platform: Platform;
let home: string;
const platformLog: string[] = [];
let project: Project | undefined;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "flash-home-"));
  platform = await startPlatform({
    apiKey: KEY,
    workerStopGraceMs: 5_000,
    logger: createLogger({ level: "INFO", json: false, destination: { write: (l) => platformLog.push(l) } }),
  });
});
afterAll(async () => {
  await platform.close();
  rmSync(home, { recursive: true, force: true });
});
afterEach(() => {
  project?.remove();
  project = undefined;
});

const deploy = (dir: string, args: string[] = [], env: Record<string, string> = {}) =>
  flashRun(["deploy", "--url", platform.url, ...args], { HOME: home, RUNPOD_API_KEY: KEY, ...env }, dir);

function client(dir: string, name: string): EndpointClient {
  return new EndpointClient({
    name,
    cwd: dir,
    apiKey: KEY,
    timeoutMs: 60_000,
    breakers: new CircuitBreakers(),
    logger: createLogger({ level: "ERROR", json: false }),
  });
}

describe("flash deploy to the local platform", () => {
  it("builds, uploads, creates the endpoint, prints its URL; the client then calls it by name", async () => {
    project = makeProject({
      ...GREETER,
      "handler.ts": [
        'import { Endpoint } from "flash-worker";',
        'import { greet } from "./lib/greet.js";',
        'const ep = new Endpoint({ name: "greeter", workers: [0, 2] });',
        "export default ep.handler(async (job) => ({ greeting: greet((job.input as { name: string }).name) }));",
      ].join("\n"),
    });
    const { code, stdout, stderr } = await deploy(project.dir);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^✓ built flash-app-\S+ {2}3 files, 1 endpoint\(s\), \d+ B$/m);
    expect(stdout).toMatch(/^✓ uploaded {2}\d+ B {2}\d+\.\ds$/m);
    expect(stdout).toContain(`✓ deployed to ${platform.url}`);
    expect(stdout).toContain(`  greeter  ${platform.url}/v2/greeter/runsync`);
    expect(stderr).toMatch(/\| INFO \| Endpoint:greeter \| Created endpoint: greeter - greeter$/m);

    const info = platform.listEndpoints().find((e) => e.id === "greeter");
    expect(info).toMatchObject({ name: "greeter", workers: [0, 2] });
    // The workers run the unpacked copy, not the project folder.
    expect(info?.cwd).toMatch(/flash-platform-[^/]+\/endpoints\/greeter-\d+$/);
    expect(info?.cwd?.startsWith(project.dir)).toBe(false);

    const done = await client(project.dir, "greeter").runsync({ name: "deploy" });
    expect(done).toMatchObject({ status: "COMPLETED", output: { greeting: "hello deploy" } });
    expect(done.delayTime).toBeGreaterThanOrEqual(0);
    expect(done.executionTime).toBeGreaterThanOrEqual(0);

    // A second deploy updates the endpoint in place: same id and URL, the new code.
    project.write("lib/greet.ts", 'export const greet = (name: string): string => "bonjour " + name;\n');
    const again = await deploy(project.dir);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/\| Endpoint:greeter \| Updated endpoint: greeter - greeter$/m);
    const updated = await client(project.dir, "greeter").runsync({ name: "deploy" });
    expect(updated.output).toEqual({ greeting: "bonjour deploy" });
  });

  it("the app's npm dependencies ship in the artifact: the deployed workers import them without an install", async () => {
    project = makeProject({
      "handler.ts": [
        'import { Endpoint } from "flash-worker";',
        'import { shout } from "shout";',
        'const ep = new Endpoint({ name: "loud", workers: [0, 1] });',
        "export default ep.handler(async (job) => shout((job.input as { text: string }).text));",
      ].join("\n"),
    });
    const shout = await vendorPackage(
      project,
      "shout",
      "export const shout = (s) => s.toUpperCase() + '!';\n",
    );
    project.write(
      "package.json",
      JSON.stringify({ name: "app", type: "module", dependencies: { "flash-worker": "*", shout } }),
    );
    const { code, stderr } = await deploy(project.dir);
    expect(code, stderr).toBe(0);
    // a platform on this machine: the packages are chosen for this machine
    expect(stderr).toContain(`Installing dependencies for ${process.platform}-${process.arch}: [shout]`);
    const cwd = platform.listEndpoints().find((e) => e.id === "loud")?.cwd;
    expect(cwd && existsSync(join(cwd, "node_modules", "shout", "index.js"))).toBe(true);
    const done = await client(project.dir, "loud").runsync({ text: "deployed" });
    expect(done).toMatchObject({ status: "COMPLETED", output: "DEPLOYED!" });
  });

  it("Failed to provision resources, with the platform's details, when it refuses the endpoint", async () => {
    project = makeProject({
      "handler.ts": [
        'import { Endpoint } from "flash-worker";',
        'const ep = new Endpoint({ name: "no-workers", workers: [0, 0] });',
        "export default ep.handler(() => 1);",
      ].join("\n"),
    });
    const { code, stderr } = await deploy(project.dir);
    expect(code).toBe(1);
    expect(stderr).toContain(
      "✗ Failed to provision resources for endpoint no-workers: 400 Bad Request: Invalid workers [0, 0]: expected 0 <= min <= max and max >= 1",
    );
  });

  it("deploys a load-balanced endpoint: its routes answer behind /lb/<id>/ on the platform", async () => {
    project = makeProject({
      "api.ts": [
        'import { Endpoint } from "flash-worker";',
        'const api = new Endpoint({ name: "lb-api", workers: [1, 1] });',
        'api.post("/generate", (body) => ({ echoed: body }));',
        "export default api;",
      ].join("\n"),
    });
    const { code, stdout, stderr } = await deploy(project.dir, ["api.ts"]);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain(`lb-api  ${platform.url}/lb/`);
    expect(stdout).toContain("(routes: POST /generate)");
    const listed = (await (
      await fetch(`${platform.url}/endpoints`, { headers: { Authorization: `Bearer ${KEY}` } })
    ).json()) as Array<{ name: string; kind: string; url: string }>;
    const lb = listed.find((e) => e.name === "lb-api");
    expect(lb?.kind).toBe("load-balanced");
    let answer: unknown;
    for (let i = 0; i < 300 && answer === undefined; i++) {
      const res = await fetch(`${lb!.url}/generate`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ prompt: "hi" }),
      });
      if (res.ok) answer = await res.json();
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(answer).toStrictEqual({ echoed: { prompt: "hi" } });
  });

  it("a platform that is not there: the message says how to start one", async () => {
    project = makeProject(GREETER);
    const url = await closedPortUrl();
    const { code, stderr } = await flashRun(
      ["deploy", "--url", url],
      { HOME: home, RUNPOD_API_KEY: KEY, LOG_LEVEL: "ERROR" },
      project.dir,
    );
    expect(code).toBe(1);
    expect(stderr).toMatch(
      new RegExp(
        `✗ Failed to connect to the platform at ${url}: .*\\. Start one with "flash serve", or pass --url\\.`,
      ),
    );
  });

  it("a wrong key is refused by the platform", async () => {
    project = makeProject(GREETER);
    const { code, stderr } = await deploy(project.dir, [], { RUNPOD_API_KEY: "wrong" });
    expect(code).toBe(1);
    expect(stderr).toContain(
      "✗ The platform refused the deployment: 401 Unauthorized: Unauthorized: invalid API key",
    );
  });
});
