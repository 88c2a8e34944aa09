// Job ids a platform should never send, against a real worker and a recording platform on 127.0.0.1: an id that
// cannot travel in a header, a log line or the ping's list is refused and answered at once; one no URL can name
// is logged and dropped; any other id, however odd, runs and its result reaches its own URL.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { readWorkerConfig } from "../../../../src/runtime/config/options.js";
import { HttpPlatformClient } from "../../../../src/runtime/queue/http-client.js";
import { JOB_ID_MAX_CHARS, refusedJobId } from "../../../../src/runtime/queue/job-ids.js";
import { doneFor, type RunningWorker, startWorker } from "../../../conformance/harness.js";
import { type Recorded, RecordingPlatform } from "../../../conformance/recording-platform.js";

let platform: RecordingPlatform;
let running: RunningWorker | undefined;
const ran: string[] = [];

beforeEach(async () => {
  platform = await new RecordingPlatform().start();
  ran.length = 0;
});

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await platform.close();
});

/** A worker whose handler records each job it runs; a refused post gives up within a second, not an hour. */
function start(): RunningWorker {
  running = startWorker(
    platform,
    (job) => {
      ran.push(job.id);
      return "ran";
    },
    {},
    { FLASH_DELIVERY_TIMEOUT: "1" },
  );
  return running;
}

const dones = () => platform.of("done");
const DONE_PATH = "/v2/EP/job-done/w1/";
/** The job id a result post's URL names, decoded as the platform's router decodes it. */
const idOf = (r: Recorded) => decodeURIComponent(r.url.slice(DONE_PATH.length, r.url.indexOf("?")));

describe("an id that cannot travel in a header, a log line or the ping", () => {
  for (const [what, id, reason] of [
    [
      "CR/LF (header injection)",
      "bad\r\nX-Injected: 1",
      'Job id "bad\\r\\nX-Injected: 1" holds a control character (U+000D), which no header or log line can carry; the job is not run.',
    ],
    [
      "a NUL",
      "nul\u0000id",
      'Job id "nul\\u0000id" holds a control character (U+0000), which no header or log line can carry; the job is not run.',
    ],
    [
      "a comma",
      "a-1,b-2",
      `Job id "a-1,b-2" holds a comma, which the heartbeat's comma-separated job_id list cannot carry; the job is not run.`,
    ],
  ] as const) {
    it(`${what}: not run, answered once with the reason, then the next job runs`, async () => {
      platform.push({ id, input: {} }, { id: "after", input: {} });
      const w = start();
      await platform.waitFor(doneFor("after"));
      await platform.waitFor(() => w.worker.inFlight === 0);
      expect(ran).toStrictEqual(["after"]);
      const answers = dones().filter((r) => idOf(r) === id);
      expect(answers).toHaveLength(1);
      expect(JSON.parse(answers[0]!.body)).toStrictEqual({ error: reason });
      expect(answers[0]!.url).toBe(`${DONE_PATH}${encodeURIComponent(id)}?gpu=X&isStream=false`);
      // A header carries printable ASCII only: the comma's id goes in it, a control character's is left out.
      expect(answers[0]!.headers["x-request-id"]).toBe(id.includes(",") ? id : undefined);
      expect(answers[0]!.headers["x-injected"]).toBeUndefined();
      // Every log line is one line of the worker's format: the id forged none.
      for (const line of w.lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[^\n\r]* \| [A-Z]+ \| [^\n\r]*\n$/);
      expect(w.lines.some((l) => l.includes("| ERROR |") && l.includes(reason.slice(0, 30)))).toBe(true);
      expect(w.lines.some((l) => l.includes("Failed to return job results"))).toBe(false);
    });
  }
});

describe("an id no URL can name", () => {
  for (const [what, id, reason] of [
    ["'..'", "..", 'Job id ".." is a dot segment, which no URL path can carry.'],
    ["'.'", ".", 'Job id "." is a dot segment, which no URL path can carry.'],
    [
      `over ${JOB_ID_MAX_CHARS} characters`,
      "x".repeat(JOB_ID_MAX_CHARS + 1),
      `Job id "${"x".repeat(64)}…" is ${JOB_ID_MAX_CHARS + 1} characters long, over the limit of ${JOB_ID_MAX_CHARS}.`,
    ],
  ] as const) {
    it(`${what}: not run, nothing posted anywhere for it, logged at error; the next job runs`, async () => {
      platform.push({ id, input: {} }, { id: "after", input: {} });
      const w = start();
      await platform.waitFor(doneFor("after"));
      expect(ran).toStrictEqual(["after"]);
      // Every post names the job it is for: none went to /job-done/ without one (the collapsed "..").
      expect(dones().map(idOf)).toStrictEqual(["after"]);
      expect(
        w.lines.some((l) =>
          l.includes(`| ERROR | flash-worker | job-take returned an item that cannot be answered: ${reason}`),
        ),
      ).toBe(true);
    });
  }
});

describe("any other id", () => {
  it("runs, and its result reaches its own URL; X-Request-ID carries a printable ASCII id and is left out otherwise", async () => {
    const odd = ["a/b?c#d%e f", "...", "./x", "作业-é-1", "sync-0f9a-e1"];
    platform.push(...odd.map((id) => ({ id, input: {} })));
    const w = start();
    await platform.waitFor(() => dones().length === odd.length);
    await platform.waitFor(() => w.worker.inFlight === 0);
    expect(ran).toStrictEqual(odd);
    expect(dones().map(idOf)).toStrictEqual(odd);
    expect(dones().map((r) => JSON.parse(r.body))).toStrictEqual(odd.map(() => ({ output: "ran" })));
    expect(dones().map((r) => r.headers["x-request-id"])).toStrictEqual([
      "a/b?c#d%e f",
      "...",
      "./x",
      undefined,
      "sync-0f9a-e1",
    ]);
  });

  it("the ping names every id in flight so that splitting job_id on commas gives them back", async () => {
    const { config } = readWorkerConfig([], platform.env());
    const log = createLogger({ level: "INFO", json: false, destination: { write: () => {} } });
    const client = new HttpPlatformClient({ platform: config.platform, log });
    const ids = ["a b/é", "x?y#z", "%41", "0f9a-e1"];
    await client.ping(ids, 5_000);
    const ping = platform.of("ping")[0]!;
    expect(new URL(ping.url, platform.base).searchParams.get("job_id")?.split(",")).toStrictEqual(ids);
  });
});

describe("refusedJobId", () => {
  it("passes the platform's ids and any printable text without a comma", () => {
    for (const id of [
      "0f9a8b7c-1d2e-3f4a-5b6c-7d8e9f0a1b2c-e1",
      "sync-x-u1",
      "作业",
      "a b",
      "...",
      "x".repeat(256),
    ]) {
      expect(refusedJobId(id)).toBeUndefined();
    }
  });

  it("answers what it can: a control character or a comma is answerable, a dot segment or a lone surrogate is not", () => {
    expect(refusedJobId("a\u0085b")?.answerable).toBe(true);
    expect(refusedJobId("a\u007fb")?.reason).toContain("(U+007F)");
    expect(refusedJobId(",")?.answerable).toBe(true);
    expect(refusedJobId("..")?.answerable).toBe(false);
    expect(refusedJobId("a\ud800")?.answerable).toBe(false);
  });
});
