// The platform's memory budget for job payloads (issue 43, case 6: 270 queued 9 MB jobs exhausted the heap and
// lost every job). A small budget here: a job that does not fit while unfinished jobs hold it is a 429 naming the
// budget, before its body is read; every job accepted completes; finished jobs make room oldest first.
import { afterEach, describe, expect, it } from "vitest";
import { startFlash } from "./cli.js";
import { type JobJson, startTestPlatform, type TestPlatform } from "./helpers.js";

const MB = 1024 * 1024;
const TIMEOUT = 120_000;
/** A job body of just over 1 MB: one string, so it costs its size and a little more (src/http/json.ts jsonCost). */
const megabyteJob = (tag: string) => ({ input: { tag, blob: "x".repeat(MB) } });

let t: TestPlatform | undefined;
afterEach(() => t?.platform.close(), TIMEOUT);

async function submit(
  path: string,
  body: unknown,
): Promise<{ status: number; json: JobJson & { error?: unknown } }> {
  const res = await t!.client(path, { body });
  return { status: res.status, json: (await res.json()) as JobJson };
}

const status = async (id: string) => (await t!.client(`/status/${id}`)).status;

describe("the memory budget for job payloads", { timeout: TIMEOUT }, () => {
  it("refuses with 429 while unfinished jobs fill it; every job it accepted completes; finished ones go oldest first", async () => {
    t = await startTestPlatform({ memoryBytes: 4 * MB });
    const accepted: string[] = [];
    for (const tag of ["a", "b", "c"]) {
      const sent = await submit("/run", megabyteJob(tag));
      expect(sent.status).toBe(200);
      accepted.push(sent.json.id);
    }
    // The fourth does not fit beside three unfinished ones: refused by its Content-Length, on every submit route.
    const refused = await submit("/run", megabyteJob("d"));
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatch(
      /^The platform's memory budget for job payloads is full: this request needs 1\.0 MB, and jobs not yet finished hold 3\.0 MB of 4\.0 MB \(FLASH_PLATFORM_MEMORY_MB\)\. Retry when jobs finish, or give the platform more$/,
    );
    expect((await submit("/runsync", megabyteJob("d"))).status).toBe(429);
    const chat = await t.client("/openai/v1/chat/completions", {
      body: { messages: [{ role: "user", content: "x".repeat(MB) }] },
    });
    expect(chat.status).toBe(429);
    expect(await chat.json()).toMatchObject({ error: { message: expect.stringContaining("memory budget") } });
    expect(t.platform.scheduler.jobs.size).toBe(3);

    // Every accepted job is run and completes: none was lost.
    const worker = t.worker("w1");
    for (const id of accepted) {
      const job = await worker.takeOne();
      expect(job.id).toBe(id);
      expect((await worker.done(id, { output: (job.input as { tag: string }).tag })).status).toBe(200);
    }
    for (const [i, id] of accepted.entries()) {
      expect(await (await t.client(`/status/${id}`)).json()).toMatchObject({
        status: "COMPLETED",
        output: ["a", "b", "c"][i],
      });
    }

    // New jobs take the finished ones' room, oldest first: one goes per new megabyte.
    for (const [i, tag] of ["e", "f", "g"].entries()) {
      expect((await submit("/run", megabyteJob(tag))).status).toBe(200);
      const kept = await Promise.all(accepted.map(status));
      expect(kept).toEqual(accepted.map((_, j) => (j <= i ? 404 : 200)));
    }
    expect(t.lines.filter((l) => l.includes("Job forgotten before its retention ended"))).toHaveLength(3);
  });

  it("flash serve --memory-mb sets it", async () => {
    const serve = await startFlash("serve", ["budget", "--port", "0", "--api-key", "k", "--memory-mb", "2"]);
    try {
      const run = (tag: string) =>
        fetch(`${serve.endpointUrl}/run`, {
          method: "POST",
          headers: { authorization: "Bearer k", "content-type": "application/json" },
          body: JSON.stringify(megabyteJob(tag)),
        });
      expect((await run("a")).status).toBe(200);
      const refused = await run("b");
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: string }).error).toContain("of 2.0 MB");
    } finally {
      await serve.stop();
    }
  });
});
