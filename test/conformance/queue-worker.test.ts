// Exact URLs, headers and bodies the queue worker sends (docs/protocol.md §3, §15), against a recording server.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { VERSION } from "../../src/version.js";
import { doneFor, gate, type RunningWorker, startWorker } from "./harness.js";
import { type Recorded, RecordingPlatform } from "./recording-platform.js";

let platform: RecordingPlatform;
let running: RunningWorker | undefined;

beforeEach(async () => {
  platform = await new RecordingPlatform().start();
});

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await platform.close();
});

const path = (r: Recorded | undefined) => r?.url;

describe("job-take, job-done (docs/protocol.md §15)", () => {
  it("takes one job and posts its result with the exact URL, headers and body", async () => {
    running = startWorker(platform, () => "hello");
    platform.push({ id: "j1-e1", input: { prompt: "hi" } });
    await platform.waitFor(doneFor("j1-e1"));

    const take = platform.of("take")[0]!;
    expect(take.method).toBe("GET");
    expect(take.url).toBe("/v2/EP/job-take/w1?gpu=X&job_in_progress=0");
    expect(take.headers.authorization).toBe("K");
    expect(take.headers["content-type"]).toBe("application/json");
    expect(take.headers["user-agent"]).toMatch(/^flash-worker\/\d+\.\d+\.\d+ \(.+\) Language\/Node\.js /);

    const done = platform.of("done")[0]!;
    expect(done.method).toBe("POST");
    expect(done.url).toBe("/v2/EP/job-done/w1/j1-e1?gpu=X&isStream=false");
    expect(done.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(done.headers.charset).toBe("utf-8");
    expect(done.headers["x-request-id"]).toBe("j1-e1");
    expect(done.headers.authorization).toBe("K");
    expect(done.body).toBe('{"output":"hello"}');
  });

  it("sends non-ASCII output as raw UTF-8 (ensure_ascii=False)", async () => {
    running = startWorker(platform, () => ({ text: "héllo 世界" }));
    platform.push({ id: "u1", input: {} });
    await platform.waitFor(doneFor("u1"));
    expect(platform.of("done")[0]!.body).toBe('{"output":{"text":"héllo 世界"}}');
  });

  it("posts the result's bytes exactly as JSON.stringify gives them: escapes, numbers, toJSON, and a 12 MB output", async () => {
    const small = {
      text: 'héllo "q" \\ \u2028 世界 😀 \u0007',
      n: [1, 1.5, -0, 1e21, 2 ** 53],
      none: null,
      skipped: undefined,
      when: new Date(0),
    };
    // 12 MB of UTF-8: over the offload threshold (sized there), under the 20 MB limit, so posted as it is.
    const big = "é".repeat(6 * 1024 * 1024);
    running = startWorker(platform, (job) => (job.input === "big" ? { big } : small));
    platform.push({ id: "s1", input: "small" }, { id: "b1", input: "big" });
    await platform.waitFor((rs) => doneFor("s1")(rs) && doneFor("b1")(rs));
    const body = (id: string) => platform.of("done").find((r) => r.url.includes(`/${id}?`))!.body;
    expect(body("s1")).toBe(
      '{"output":{"text":"héllo \\"q\\" \\\\ \u2028 世界 😀 \\u0007","n":[1,1.5,0,1e+21,9007199254740992],"none":null,"when":"1970-01-01T00:00:00.000Z"}}',
    );
    const posted = body("b1");
    expect(Buffer.byteLength(posted)).toBe(12 * 1024 * 1024 + '{"output":{"big":""}}'.length);
    // Compared as a boolean: a 12 MB diff helps no one.
    expect(posted === `{"output":{"big":"${big}"}}`).toBe(true);
  });

  it("serializes a result once: the JSON sized against the limits is the body posted", async () => {
    let serialized = 0;
    const counted = { toJSON: () => ++serialized };
    running = startWorker(platform, () => ({ counted }));
    platform.push({ id: "once", input: {} });
    await platform.waitFor(doneFor("once"));
    expect(platform.of("done")[0]!.body).toBe('{"output":{"counted":1}}');
  });

  it("posts a handler exception as the error JSON string", async () => {
    running = startWorker(platform, () => {
      throw new Error("bad");
    });
    platform.push({ id: "j5-e1", input: {} });
    await platform.waitFor(doneFor("j5-e1"));
    const done = platform.of("done")[0]!;
    expect(done.url).toBe("/v2/EP/job-done/w1/j5-e1?gpu=X&isStream=false");
    const body = JSON.parse(done.body);
    expect(Object.keys(body)).toStrictEqual(["error"]);
    expect(JSON.parse(body.error)).toMatchObject({
      error_type: "<class 'Error'>",
      error_message: "bad",
      hostname: "unknown",
      worker_id: "w1",
      runpod_version: VERSION,
    });
  });

  it("X-Request-ID is per request, not sticky on later requests", async () => {
    running = startWorker(platform, () => 1);
    platform.push({ id: "a1", input: {} });
    await platform.waitFor(doneFor("a1"));
    const doneAt = platform.requests.findIndex((r) => r.route === "done");
    await platform.waitFor((rs) => rs.slice(doneAt).some((r) => r.route === "take"));
    const later = platform.requests.slice(doneAt + 1).filter((r) => r.route === "take" || r.route === "stop");
    expect(later.length).toBeGreaterThan(0);
    for (const r of later) expect(r.headers["x-request-id"]).toBeUndefined();
  });

  it("joins query strings properly when a template has no query", async () => {
    running = startWorker(
      platform,
      () => 1,
      {},
      {
        RUNPOD_WEBHOOK_GET_JOB: `${platform.base}/v2/EP/job-take/$ID`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${platform.base}/v2/EP/job-done/$RUNPOD_POD_ID/$ID`,
      },
    );
    platform.push({ id: "q1", input: {} });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    expect(path(platform.of("take")[0])).toBe("/v2/EP/job-take/w1?job_in_progress=0");
    expect(path(platform.of("done")[0])).toBe("/v2/EP/job-done/w1/q1?isStream=false");
  });
});

describe("batch take and concurrency", () => {
  it("asks for the free slots with job-take-batch and job_in_progress (§15)", async () => {
    const release = gate();
    running = startWorker(platform, () => release.promise, { concurrency: 3 });
    await platform.waitFor((rs) => rs.some((r) => r.route === "take-batch"));
    expect(path(platform.of("take-batch")[0])).toBe(
      "/v2/EP/job-take-batch/w1?gpu=X&batch_size=3&job_in_progress=0",
    );
    platform.push({ id: "j1-e1", input: {} });
    await platform.waitFor((rs) => rs.some((r) => r.url.includes("batch_size=2&job_in_progress=1")));
    platform.push({ id: "j2-e1", input: {} }, { id: "j3-e1", input: {} });
    // At capacity: with 3 running, no take is outstanding for more.
    await platform.waitFor(() => running!.worker.inFlight === 3);
    release.open();
    await platform.waitFor((rs) => ["j1-e1", "j2-e1", "j3-e1"].every((id) => doneFor(id)(rs)));
  });

  it("counts each running job once: concurrency 2 with one running asks for exactly 1", async () => {
    const release = gate();
    running = startWorker(platform, () => release.promise, { concurrency: 2 });
    platform.push({ id: "c1", input: {} });
    await platform.waitFor((rs) => rs.some((r) => r.route === "take" && r.url.endsWith("job_in_progress=1")));
    expect(platform.of("take").at(-1)!.url).toBe("/v2/EP/job-take/w1?gpu=X&job_in_progress=1");
    release.open();
  });

  it("applies a concurrency change at once, while jobs are still running", async () => {
    const release = gate();
    let wanted = 1;
    running = startWorker(platform, () => release.promise, { concurrency: () => wanted });
    platform.push({ id: "d1", input: {} });
    await platform.waitFor(() => running!.worker.inFlight === 1);
    wanted = 4;
    // No need to wait for the worker to go idle (runpod-python waits, docs/protocol.md §12.9).
    await platform.waitFor((rs) => rs.some((r) => r.url.includes("batch_size=3&job_in_progress=1")));
    release.open();
  });

  it("a concurrency function returning a bad value is logged and the worker keeps serving (runpod-python #458)", async () => {
    let calls = 0;
    running = startWorker(platform, () => "ok", {
      concurrency: (current) => (++calls > 1 ? (null as unknown as number) : current),
    });
    platform.push({ id: "n1", input: {} });
    await platform.waitFor(doneFor("n1"));
    platform.push({ id: "n2", input: {} });
    await platform.waitFor(doneFor("n2"));
    const errors = running.lines.filter((l) => l.includes("concurrency function returned null"));
    expect(errors.length).toBe(1);
    expect(errors[0]).toContain("Keeping concurrency 1");
  });

  it("a job id already running is not run twice", async () => {
    const release = gate();
    let runs = 0;
    running = startWorker(
      platform,
      async () => {
        runs++;
        await release.promise;
      },
      { concurrency: 2 },
    );
    platform.push({ id: "dup", input: {} });
    await platform.waitFor(() => running!.worker.inFlight === 1);
    platform.push({ id: "dup", input: {} });
    await platform.waitFor(() => running!.lines.some((l) => l.includes("ignoring the duplicate")));
    release.open();
    await platform.waitFor(doneFor("dup"));
    expect(runs).toBe(1);
  });
});

describe("job-take answers (docs/protocol.md §3.2)", () => {
  it("a 204 answered at once does not make a hot loop", async () => {
    platform.holdMs = 0;
    running = startWorker(platform, () => 1);
    await platform.waitFor((rs) => rs.filter((r) => r.route === "take").length >= 4);
    // Each empty take waits out the 250 ms floor, counted from when it was asked, before the next (a lower
    // bound, less the first answer's latency: a slow machine only adds);
    // runpod-python would make thousands a second.
    const at = platform.of("take").map((r) => r.at);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(200);
  });

  it("429 pauses taking for 5 s", async () => {
    platform.responders.push((r) => (r.route === "take" ? { status: 429, body: "{}" } : undefined));
    running = startWorker(platform, () => 1);
    await platform.waitFor((rs) => rs.filter((r) => r.route === "take").length >= 2, 30_000);
    expect(running.lines.some((l) => l.includes("429 Too Many Requests; waiting 5 s"))).toBe(true);
    const [first, second] = platform.of("take");
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(4_900);
  });

  it("400 means no job, and a 500 is logged and retried with backoff", async () => {
    let n = 0;
    platform.responders.push((r) => {
      if (r.route !== "take") return undefined;
      n++;
      if (n === 1) return { status: 400, body: "{}" };
      if (n === 2) return { status: 500, body: "oops" };
      return undefined;
    });
    running = startWorker(platform, () => "fine");
    platform.push({ id: "after", input: {} });
    await platform.waitFor(doneFor("after"));
    expect(
      running.lines.some((l) =>
        l.includes("Failed to get job. | Error Type: PlatformHttpError | Error Message: 500"),
      ),
    ).toBe(true);
  });

  it("malformed bodies are no job, and the worker keeps serving", async () => {
    const bad: Array<{ status: number; body: string; contentType?: string }> = [
      { status: 200, body: "not json" },
      { status: 200, body: '{"id": "x"', contentType: "application/json" },
      { status: 200, body: "", contentType: "application/json" },
      { status: 200, body: "hello", contentType: "text/plain" },
      { status: 200, body: "[]" },
      { status: 200, body: "42" },
    ];
    platform.responders.push((r) => (r.route === "take" ? bad.shift() : undefined));
    running = startWorker(platform, () => "served");
    platform.push({ id: "good", input: {} });
    await platform.waitFor(doneFor("good"));
    expect(JSON.parse(platform.of("done").at(-1)!.body)).toStrictEqual({ output: "served" });
  });

  it("a job without input is answered with an error result; one without id is logged", async () => {
    platform.push({ id: "no-input" }, { input: { a: 1 } });
    running = startWorker(platform, () => "never");
    await platform.waitFor(doneFor("no-input"));
    const done = platform.of("done").find((r) => r.url.includes("/no-input?"))!;
    expect(done.url).toBe("/v2/EP/job-done/w1/no-input?gpu=X&isStream=false");
    expect(JSON.parse(done.body)).toStrictEqual({ error: "Job has missing field(s): input." });
    await platform.waitFor(() =>
      running!.lines.some((l) => l.includes("cannot be answered: Job has missing field(s): id.")),
    );
  });

  it("a batch answer is validated item by item", async () => {
    const release = gate();
    running = startWorker(platform, async () => release.promise.then(() => "ok"), { concurrency: 3 });
    platform.responders.push((r) =>
      r.route === "take-batch" && !platform.of("done").length && platform.of("take-batch").length === 1
        ? { status: 200, body: JSON.stringify([{ id: "b1", input: 1 }, "junk", { id: "b2" }]) }
        : undefined,
    );
    await platform.waitFor(doneFor("b2"));
    release.open();
    await platform.waitFor(doneFor("b1"));
    expect(JSON.parse(platform.of("done").find((r) => r.url.includes("/b2?"))!.body)).toStrictEqual({
      error: "Job has missing field(s): input.",
    });
  });
});

describe("streaming (docs/protocol.md §3.5, §4.3)", () => {
  it("posts one chunk per yield, then the final result with isStream=true", async () => {
    running = startWorker(
      platform,
      function* () {
        yield "tok1";
        yield "tok2";
      },
      { returnAggregateStream: true },
    );
    platform.push({ id: "j4-e1", input: {} });
    await platform.waitFor(doneFor("j4-e1"));
    const streams = platform.of("stream");
    expect(streams.map((r) => [r.url, r.body])).toStrictEqual([
      ["/v2/EP/job-stream/w1/j4-e1?gpu=X&isStream=false", '{"output":"tok1"}'],
      ["/v2/EP/job-stream/w1/j4-e1?gpu=X&isStream=false", '{"output":"tok2"}'],
    ]);
    expect(streams[0]!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    const done = platform.of("done")[0]!;
    expect([done.url, done.body]).toStrictEqual([
      "/v2/EP/job-done/w1/j4-e1?gpu=X&isStream=true",
      '{"output":["tok1","tok2"]}',
    ]);
  });

  it("without returnAggregateStream the final output is []", async () => {
    running = startWorker(platform, async function* () {
      yield 1;
    });
    platform.push({ id: "s2", input: {} });
    await platform.waitFor(doneFor("s2"));
    expect(platform.of("done")[0]!.body).toBe('{"output":[]}');
  });

  it("a chunk over 1 MB fails the job with a message naming size and limit", async () => {
    running = startWorker(platform, function* () {
      yield "small";
      yield "x".repeat(1_500_000);
    });
    platform.push({ id: "big", input: {} });
    await platform.waitFor(doneFor("big"));
    expect(platform.of("stream").length).toBe(1);
    expect(JSON.parse(platform.of("done")[0]!.body)).toStrictEqual({
      error:
        "Stream chunk 1 could not be delivered: stream chunk is 1.4 MB, over the platform's limit of 1.0 MB",
    });
  });
});

describe("progress (docs/protocol.md §3.6)", () => {
  it("posts IN_PROGRESS bodies to the result URL", async () => {
    const release = gate();
    running = startWorker(platform, async (job) => {
      job.progress({ pct: 40 });
      await release.promise;
      return "done";
    });
    platform.push({ id: "p1", input: {} });
    await platform.waitFor((rs) => rs.some((r) => r.body.includes("IN_PROGRESS")));
    const progress = platform.of("done")[0]!;
    expect([progress.url, progress.body]).toStrictEqual([
      "/v2/EP/job-done/w1/p1?gpu=X&isStream=false",
      '{"status":"IN_PROGRESS","output":{"pct":40}}',
    ]);
    release.open();
    await platform.waitFor(doneFor("p1"));
  });

  it("progress is sent in order and never after the final result (runpod-python #250)", async () => {
    // Slow progress answers: updates pile up while one is in flight. Each is counted open until answered.
    let open = 0;
    let openAtFinal: number | undefined;
    platform.responders.push(async (r) => {
      if (!r.url.includes("/p2?")) return undefined;
      if (!r.body.includes("IN_PROGRESS")) {
        openAtFinal = open;
        return undefined;
      }
      open++;
      await new Promise((res) => setTimeout(res, 150));
      open--;
      return { status: 200, body: "{}" };
    });
    running = startWorker(platform, async (job) => {
      for (let i = 1; i <= 5; i++) job.progress(i);
      await new Promise((r) => setTimeout(r, 10));
      job.progress(6);
      return "final";
    });
    platform.push({ id: "p2", input: {} });
    await platform.waitFor(doneFor("p2"));
    // Updates go one at a time, each after the last was answered: none open when the result came means none
    // could follow it. The worker's full stop is the later event that closes the record.
    expect(openAtFinal).toBe(0);
    await running.stop();
    running = undefined;
    const forJob = platform.of("done").filter((r) => r.url.includes("/p2?"));
    const last = forJob.at(-1)!;
    expect(last.body).toBe('{"output":"final"}');
    const sent = forJob.slice(0, -1).map((r) => JSON.parse(r.body).output as number);
    expect(sent[0]).toBe(1);
    expect([...sent].sort((a, b) => a - b)).toStrictEqual(sent);
  });
});

describe("result delivery (docs/protocol.md §4.5; runpod-python #309)", () => {
  const donesFor = (id: string) => platform.of("done").filter((r) => r.url.includes(`/${id}?`));

  it("retries a result post on 5xx answers", async () => {
    let failures = 2;
    platform.responders.push((r) =>
      r.route === "done" && failures-- > 0 ? { status: 503, body: "busy" } : undefined,
    );
    running = startWorker(platform, () => "eventually");
    platform.push({ id: "r1", input: {} });
    await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 3);
    expect(platform.of("done").map((r) => r.body)).toStrictEqual(Array(3).fill('{"output":"eventually"}'));
    expect(running.lines.some((l) => l.includes("Result post failed (attempt 1): 503"))).toBe(true);
  });

  it("retries a result post on connection errors", async () => {
    let resets = 1;
    platform.responders.push((r) => (r.route === "done" && resets-- > 0 ? "reset" : undefined));
    running = startWorker(platform, () => "after reset");
    platform.push({ id: "r2", input: {} });
    await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 2);
    expect(platform.of("done")[1]!.body).toBe('{"output":"after reset"}');
  });

  it("keeps retrying through 10 failures in a row and delivers the computed output, never an error", async () => {
    const faults: Array<"reset" | { status: number; body: string }> = [
      { status: 503, body: "busy" },
      "reset",
      { status: 502, body: "" },
      { status: 429, body: "slow down" },
      { status: 500, body: "oops" },
      "reset",
      { status: 408, body: "" },
      { status: 504, body: "" },
      { status: 503, body: "busy" },
      "reset",
    ];
    platform.responders.push((r) => (r.route === "done" ? faults.shift() : undefined));
    running = startWorker(platform, () => ({ twice: 1330 }));
    platform.push({ id: "r5", input: {} });
    await platform.waitFor(() => donesFor("r5").length === 11);
    expect(donesFor("r5").map((r) => r.body)).toStrictEqual(Array(11).fill('{"output":{"twice":1330}}'));
    expect(running.lines.some((l) => l.includes("Result post failed (attempt 10): "))).toBe(true);
  });

  it("a result post that hangs is cut at its deadline and sent again", async () => {
    let hung = false;
    platform.responders.push((r) => {
      if (r.route !== "done" || hung) return undefined;
      hung = true;
      return new Promise<undefined>(() => {}); // never answered
    });
    running = startWorker(platform, () => "patient", {}, {}, { postTimeoutMs: 300 });
    platform.push({ id: "r11", input: {} });
    await platform.waitFor(() => donesFor("r11").length === 2);
    expect(donesFor("r11").map((r) => r.body)).toStrictEqual(Array(2).fill('{"output":"patient"}'));
    expect(running.lines.join("\n")).toMatch(/Result post failed \(attempt 1\): .*300 ms/);
  });

  it("a result refused with 4xx on its first attempt is replaced by a short error result so the job fails", async () => {
    platform.responders.push((r) =>
      r.route === "done" && r.body.includes("xxxx")
        ? { status: 400, body: "Bad Request: payload too large" }
        : undefined,
    );
    running = startWorker(platform, () => "x".repeat(3_000_000));
    platform.push({ id: "r3", input: {} });
    await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 2);
    const [first, second] = platform.of("done");
    expect(first!.body.length).toBeGreaterThan(3_000_000);
    expect(second!.url).toBe("/v2/EP/job-done/w1/r3?gpu=X&isStream=false");
    expect(JSON.parse(second!.body)).toStrictEqual({
      error:
        "Job result was not accepted: the platform refused the 2.9 MB result with 400 Bad Request: Bad Request: payload too large",
    });
  });

  it("a 413 after an earlier attempt whose answer was lost posts nothing else: that attempt may have been recorded", async () => {
    const answers: Array<"reset" | { status: number; body: string }> = ["reset", { status: 413, body: "" }];
    platform.responders.push((r) => (r.route === "done" ? answers.shift() : undefined));
    running = startWorker(platform, () => "maybe recorded");
    platform.push({ id: "r6", input: {} });
    await platform.waitFor(() => running!.lines.some((l) => l.includes("not posting an error in its place")));
    // A later job's result proves the worker went on without posting anything else for r6.
    platform.push({ id: "r6-next", input: {} });
    await platform.waitFor(doneFor("r6-next"));
    expect(donesFor("r6").map((r) => r.body)).toStrictEqual(Array(2).fill('{"output":"maybe recorded"}'));
    expect(running.lines.join("\n")).toMatch(
      /refused the 0\.0 MB result with 413 Payload Too Large; not posting an error in its place: an earlier attempt whose answer was lost may have been recorded/,
    );
  });

  it("a 409 (the platform holds another result, or no longer gives the job to this worker) posts nothing else", async () => {
    platform.responders.push((r) =>
      r.route === "done" && r.url.includes("/r7?") ? { status: 409, body: "not held" } : undefined,
    );
    running = startWorker(platform, () => "late");
    platform.push({ id: "r7", input: {} }, { id: "r7-next", input: {} });
    await platform.waitFor(doneFor("r7-next"));
    expect(donesFor("r7").map((r) => r.body)).toStrictEqual(['{"output":"late"}']);
  });

  it("stream chunks are retried until delivered too", async () => {
    let failures = 10;
    platform.responders.push((r) =>
      r.route === "stream" && failures-- > 0 ? { status: 503, body: "busy" } : undefined,
    );
    running = startWorker(
      platform,
      function* () {
        yield "a";
        yield "b";
      },
      { returnAggregateStream: true },
    );
    platform.push({ id: "r8", input: {} });
    await platform.waitFor(doneFor("r8"));
    expect(platform.of("stream").length).toBe(12);
    expect(donesFor("r8").map((r) => r.body)).toStrictEqual(['{"output":["a","b"]}']);
  });

  it("gives up after the delivery limit without posting an error in place of the result", async () => {
    platform.responders.push((r) =>
      r.route === "done" && r.url.includes("/r9?") ? { status: 503, body: "down" } : undefined,
    );
    running = startWorker(platform, () => "undeliverable", {}, { FLASH_DELIVERY_TIMEOUT: "0.3" });
    platform.push({ id: "r9", input: {} });
    await platform.waitFor(() => running!.lines.some((l) => l.includes("within the delivery limit")));
    platform.push({ id: "r9-next", input: {} });
    await platform.waitFor(doneFor("r9-next"));
    const bodies = new Set(donesFor("r9").map((r) => r.body));
    expect([...bodies]).toStrictEqual(['{"output":"undeliverable"}']);
    expect(donesFor("r9").length).toBeGreaterThan(3);
  });

  it("on shutdown, a result still being retried stops at the grace's end and nothing else is posted", async () => {
    platform.responders.push((r) => (r.route === "done" ? { status: 503, body: "down" } : undefined));
    const w = startWorker(platform, () => "computed", {}, { FLASH_GRACE_PERIOD: "1" });
    platform.push({ id: "r10", input: {} });
    await platform.waitFor(() => donesFor("r10").length >= 3);
    w.worker.shutdown("SIGTERM received");
    await w.finished;
    const bodies = new Set(donesFor("r10").map((r) => r.body));
    expect([...bodies]).toStrictEqual(['{"output":"computed"}']);
    expect(w.lines.join("\n")).toMatch(/could not be delivered before the shutdown grace ran out/);
  });
});

describe("stop channel (docs/protocol.md §3.3)", () => {
  it("long-polls job-stop, aborts that job's signal and posts nothing for it", async () => {
    let sawAbort = false;
    running = startWorker(
      platform,
      (job) =>
        new Promise((resolve) => {
          if (job.id === "keep") return resolve("kept");
          job.signal.addEventListener("abort", () => {
            sawAbort = true;
          });
        }),
      { concurrency: 2 },
    );
    platform.push({ id: "j2-e1", input: {} });
    await platform.waitFor(() => running!.worker.inFlight === 1);
    expect(path(platform.of("stop")[0])).toBe("/v2/EP/job-stop/w1?gpu=X");
    expect(platform.of("stop")[0]!.headers.authorization).toBe("K");
    platform.stop("j2-e1", "unknown-job");
    await platform.waitFor(() => running!.worker.inFlight === 0);
    expect(sawAbort).toBe(true);
    platform.push({ id: "keep", input: {} });
    await platform.waitFor(doneFor("keep"));
    expect(platform.of("done").some((r) => r.url.includes("j2-e1"))).toBe(false);
    expect(running.lines.some((l) => l.includes("| j2-e1 | Stopping job."))).toBe(true);
  });

  it("is off, with a warning, when the take URL has no /job-take/ segment", async () => {
    running = startWorker(
      platform,
      () => 1,
      {},
      { RUNPOD_WEBHOOK_GET_JOB: `${platform.base}/v2/EP/take/$ID?gpu=X` },
    );
    await platform.waitFor((rs) => rs.length > 0);
    expect(running.lines.some((l) => l.includes("stop channel is off"))).toBe(true);
    expect(platform.of("stop").length).toBe(0);
  });
});

describe("refresh_worker and shutdown", () => {
  it("refresh_worker sets stopPod and the worker exits after the job", async () => {
    const w = startWorker(platform, () => "once", { refreshWorker: true });
    platform.push({ id: "rw", input: {} });
    await w.finished;
    expect(platform.of("done")[0]!.body).toBe('{"output":"once","stopPod":true}');
    expect(platform.of("done").length).toBe(1);
  });

  it("a returned refresh_worker key does the same", async () => {
    const w = startWorker(platform, () => ({ refresh_worker: true, a: 1 }));
    platform.push({ id: "rw2", input: {} });
    await w.finished;
    expect(platform.of("done")[0]!.body).toBe('{"output":{"a":1},"stopPod":true}');
  });

  it("shutdown lets running jobs finish within the grace period, then fails the rest", async () => {
    const w = startWorker(
      platform,
      (job) =>
        new Promise((resolve) =>
          job.id === "quick" ? setTimeout(() => resolve("made it"), 200) : undefined,
        ),
      { concurrency: 2 },
      { FLASH_GRACE_PERIOD: "1" },
    );
    platform.push({ id: "quick", input: {} }, { id: "stuck", input: {} });
    await platform.waitFor(() => w.worker.inFlight === 2);
    const takesBefore = platform.of("take").length + platform.of("take-batch").length;
    w.worker.shutdown("SIGTERM received");
    await w.finished;
    expect(platform.of("take").length + platform.of("take-batch").length).toBe(takesBefore);
    const bodies = Object.fromEntries(
      platform.of("done").map((r) => [r.url.split("/")[5]!.split("?")[0]!, JSON.parse(r.body)]),
    );
    expect(bodies.quick).toStrictEqual({ output: "made it" });
    expect(bodies.stuck).toStrictEqual({
      error: "Worker shut down before the job finished (grace period of 1 s ran out).",
    });
  });
});
