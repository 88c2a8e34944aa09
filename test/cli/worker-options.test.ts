// Options per program: a worker reads only the worker's variables, so the toolkit's and the local platform's,
// even with values they would refuse, never stop it; a bad value of its own still does, naming the variable.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RecordingPlatform } from "../conformance/recording-platform.js";
import { flash, flashRun } from "../process.js";

/** Variables of the other programs, each with a value its own program would refuse. */
const OTHERS = {
  FLASH_CONTAINER_TOOL: "foo",
  FLASH_CONTAINER_STORAGE: " ",
  FLASH_WORKERS: "many",
  FLASH_NODE_VERSION: "",
  RUNPOD_API_URL: "ftp://nowhere",
};

describe("a queue worker among other programs' variables", () => {
  let platform: RecordingPlatform;
  beforeEach(async () => {
    platform = await new RecordingPlatform().start();
  });
  afterEach(async () => {
    await platform.close();
  });

  it("runs its jobs with FLASH_CONTAINER_TOOL=foo (and others it does not read) in its environment", async () => {
    const worker = flash(["start", "examples/echo/handler.ts"], { ...platform.env(), ...OTHERS });
    platform.push({ id: "job-1", input: { text: "hi" } });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    const done = platform.of("done")[0]!;
    expect(done.url).toContain("job-1");
    expect(JSON.parse(done.body)).toEqual({ output: { text: "hi" } });
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
  });

  it("still refuses a bad value of its own variables, naming it", async () => {
    const run = await flashRun(["start", "examples/echo/handler.ts"], {
      ...platform.env(),
      ...OTHERS,
      RUNPOD_PING_INTERVAL: "often",
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Invalid value "often" in environment variable RUNPOD_PING_INTERVAL');
    expect(run.stderr).not.toMatch(/FLASH_CONTAINER_TOOL|FLASH_WORKERS|RUNPOD_API_URL/);
  });
});

describe("the one-shot test among other programs' variables", () => {
  it("flash run answers with FLASH_CONTAINER_TOOL=foo set", async () => {
    const run = await flashRun(
      ["run", "examples/echo/handler.ts", "--test-input", '{"input":{"n":1}}'],
      OTHERS,
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ output: { n: 1 } });
  });
});
