// A streaming worker: each yielded value is one stream chunk, visible at /stream/<job_id> while it runs.
import { handler, type Job } from "flash-worker";

export default handler(
  async function* (job: Job<{ text: string; delay_ms?: number }>) {
    for (const word of job.input.text.split(/\s+/).filter(Boolean)) {
      if (job.input.delay_ms) await new Promise((r) => setTimeout(r, job.input.delay_ms));
      yield { token: word };
    }
  },
  { returnAggregateStream: true },
);
