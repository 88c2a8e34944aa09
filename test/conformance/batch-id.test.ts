// batchId (RunPod's batch jobs, beta): a job that carries one has it in `job` and in every log line of the job,
// in the queue worker and in flash run (runpod-python 1.12's `[batchId=<id>] <message>`).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { flash, flashRun } from "../process.js";
import { RecordingPlatform } from "./recording-platform.js";

const FIXTURE = "test/fixtures/job-fields.ts";
let platform: RecordingPlatform;

beforeEach(async () => {
  platform = await new RecordingPlatform().start();
});
afterEach(async () => {
  await platform.close();
});

describe("batchId", () => {
  it("the queue worker hands it to the handler and puts it in the job's log lines", async () => {
    const worker = flash(["start", FIXTURE], { ...platform.env(), RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true" });
    platform.push({ id: "j-batch", input: 1, batchId: "batch_01j9abc123" });
    platform.push({ id: "j-plain", input: 2 });
    await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 2);
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    expect(platform.of("done").map((r) => JSON.parse(r.body))).toEqual([
      { output: { fields: { batchId: "batch_01j9abc123" } } },
      { output: { fields: {} } },
    ]);
    expect(worker.stdout.some((l) => / \| j-batch \| \[batchId=batch_01j9abc123\] Started\.$/.test(l))).toBe(
      true,
    );
    expect(worker.stdout.some((l) => / \| j-plain \| Started\.$/.test(l))).toBe(true);
  });

  it("flash run: a test input's batchId reaches the job and its log lines", async () => {
    const { code, stdout, stderr } = await flashRun([
      "run",
      FIXTURE,
      "--test-input",
      '{"input": 1, "batchId": "b-local"}',
    ]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ output: { fields: { batchId: "b-local" } } });
    expect(stderr).toMatch(/ \| local_test \| \[batchId=b-local\] Started\./);
  });
});
