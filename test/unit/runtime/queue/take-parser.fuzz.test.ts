// Property test: whatever job-take answers, the parser returns jobs with an id and input, or rejects
// them with a reason, or throws one of the two documented errors. It never crashes or invents a job.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { PlatformHttpError, TooManyRequests } from "../../../../src/runtime/queue/client.js";
import { HttpPlatformClient } from "../../../../src/runtime/queue/http-client.js";

const platform = {
  getJobUrl: "http://platform.invalid/v2/EP/job-take/$ID?gpu=X",
  postOutputUrl: "http://platform.invalid/done/$ID",
  postStreamUrl: "http://platform.invalid/stream/$ID",
  pingIntervalMs: 10_000,
  workerId: "w1",
  workerIdFromEnv: true,
  hostname: "h",
  apiKey: "K",
};
const log = createLogger({ level: "SILENT", json: false });

const json = fc.jsonValue();
const body = fc.oneof(
  json.map((v) => JSON.stringify(v)),
  fc
    .array(
      fc.record(
        { id: fc.oneof(fc.string(), fc.integer(), fc.constant(null)), input: json },
        { requiredKeys: [] },
      ),
    )
    .map((v) => JSON.stringify(v)),
  fc
    .record({ id: fc.string(), input: json, extra: json }, { requiredKeys: ["id"] })
    .map((v) => JSON.stringify(v)),
  fc.string(),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString("latin1")),
);
const answer = fc.record({
  status: fc.constantFrom(200, 201, 204, 400, 404, 429, 500, 503),
  contentType: fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", ""),
  body,
});

describe("job-take parser under generated answers", () => {
  it("never crashes and only returns well-formed jobs", async () => {
    await fc.assert(
      fc.asyncProperty(answer, fc.integer({ min: 1, max: 8 }), async (a, count) => {
        const fetchStub: typeof fetch = async () =>
          new Response(a.status === 204 ? null : a.body, {
            status: a.status,
            headers: a.contentType ? { "content-type": a.contentType } : {},
          });
        const client = new HttpPlatformClient({ platform, log, fetch: fetchStub });
        try {
          const taken = await client.take(count, false, new AbortController().signal);
          for (const job of taken.jobs) {
            expect(typeof job.id).toBe("string");
            expect(job.id.length).toBeGreaterThan(0);
            expect("input" in job).toBe(true);
          }
          for (const r of taken.rejected) expect(r.reason.length).toBeGreaterThan(0);
          if (a.status !== 200 && a.status !== 201) expect(taken.jobs.length).toBe(0);
        } catch (err) {
          expect(err instanceof TooManyRequests || err instanceof PlatformHttpError).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("the stop-channel parser keeps only string ids, whatever comes back", async () => {
    await fc.assert(
      fc.asyncProperty(answer, async (a) => {
        const fetchStub: typeof fetch = async () =>
          new Response(a.status === 204 ? null : a.body, {
            status: a.status,
            headers: a.contentType ? { "content-type": a.contentType } : {},
          });
        const client = new HttpPlatformClient({ platform, log, fetch: fetchStub });
        try {
          const ids = await client.stopSignals(new AbortController().signal);
          for (const id of ids) expect(typeof id).toBe("string");
        } catch (err) {
          expect(err instanceof TooManyRequests || err instanceof PlatformHttpError).toBe(true);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
