// A generator handler whose input is typed on its job: its stream yields the chunks' type.
import { handler, type Job } from "flash-worker";

export default handler(async function* (job: Job<{ count: number }>) {
  for (let i = 0; i < job.input.count; i++) yield { token: `t${i}` };
});
