// A queue worker for the typed-client tests: a zod-checked handler and a remote function.
import { handler, remote } from "flash-worker";
import { z } from "zod";

const Input = z.object({ text: z.string(), words: z.number().int().default(20) });

export default handler(
  async (job) => ({ summary: job.input.text.slice(0, job.input.words), words: job.input.words }),
  {
    input: Input,
  },
);

export const scale = remote("scale", (values: number[], factor: number) => values.map((v) => v * factor));
