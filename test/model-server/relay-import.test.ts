// The relay's hop is undici's, imported while the model server loads (src/runtime/model-server/proxy.ts). Two paths
// the import's timing decides, each run through `flash start` with a resolve hook on `undici`: a request that
// arrives before the import ends waits for it and is relayed, and a failed import answers 502 naming the server,
// the worker staying up.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "../platform/helpers.js";
import { type Flash, flash, freePort, ROOT } from "../process.js";

const HOOK = join(ROOT, "test/fixtures/model-server/undici-hook.mjs");

describe("the relay while undici loads, and when it cannot", () => {
  let worker: Flash | undefined;
  let dir = "";
  afterEach(async () => {
    worker?.child.kill("SIGTERM");
    await worker?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  /** `flash start` on the raw server's endpoint with the hook in `mode`; its URL once /ping says ready. */
  async function start(mode: string): Promise<{ url: string; hookLog: () => string[] }> {
    dir = mkdtempSync(join(tmpdir(), "flash-relay-import-"));
    const log = join(dir, "hook.log");
    worker = flash(
      ["start", "test/fixtures/model-server/raw-endpoint.mjs", "--port", "0", "--host", "127.0.0.1"],
      {
        RAW_PORT: String(await freePort()),
        NODE_OPTIONS: `--import ${HOOK}`,
        UNDICI_HOOK: mode,
        UNDICI_HOOK_LOG: log,
      },
    );
    const line = await worker.waitForLine(/listening on http:\/\/\S+/, 30_000);
    const url = /listening on (http:\/\/\S+)/.exec(line)![1]!;
    await eventually(async () => (await fetch(`${url}/ping`)).status === 200, "/ping 200", 30_000);
    const hookLog = () => {
      try {
        return readFileSync(log, "utf8").trim().split("\n");
      } catch {
        return [];
      }
    };
    return { url, hookLog };
  }

  it("a request sent while undici's import is held waits for it, then reaches the server whole", async () => {
    const { url, hookLog } = await start("hold:8000");
    // The server is ready; the import is not.
    expect(hookLog()).toEqual(["held"]);
    const answer = await fetch(`${url}/echo?status=201`, { method: "POST", body: "sent early" });
    expect(hookLog()).toEqual(["held", "released"]);
    expect(answer.status).toBe(201);
    expect(await answer.json()).toMatchObject({
      method: "POST",
      url: "/echo?status=201",
      body: "sent early",
    });
  }, 60_000);

  it("an import that fails answers 502 naming the server, every time, and the worker stays up", async () => {
    const { url, hookLog } = await start("refuse");
    expect(hookLog()).toEqual(["refused"]);
    for (const path of ["/echo", "/v1/models"]) {
      const answer = await fetch(`${url}${path}`, { method: "POST", body: "x" });
      expect(answer.status).toBe(502);
      expect(((await answer.json()) as { error: string }).error).toBe(
        "Model server 'raw' could not be called: undici refused by the test's hook",
      );
    }
    expect((await fetch(`${url}/ping`)).status).toBe(200);
    const warned = (l: string) => l.includes("POST /echo answered 502: undici refused by the test's hook");
    await eventually(
      () => [...worker!.stdout, ...worker!.stderr].some(warned),
      `the warning in:\n${worker!.stdout.join("\n")}\n${worker!.stderr.join("\n")}`,
    );
  }, 60_000);
});
