// The echo worker: returns its input. It also follows runpod's mock-worker conventions, so the same
// file exercises delays, errors, cancellation and worker refresh in tests.
import { handler, type Job } from "flash-worker";

interface EchoInput {
  mock_return?: unknown;
  mock_delay?: number;
  mock_error?: string;
  mock_refresh?: boolean;
  [key: string]: unknown;
}

function delay(seconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

export default handler(async (job: Job<EchoInput>) => {
  const input = job.input;
  if (input.mock_delay) {
    job.progress({ status: "sleeping", seconds: input.mock_delay });
    await delay(input.mock_delay, job.signal);
  }
  if (input.mock_error) throw new Error(input.mock_error);
  const output = "mock_return" in input ? input.mock_return : input;
  return input.mock_refresh ? { output, refresh_worker: true } : output;
});
