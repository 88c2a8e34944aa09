import { WEBHOOK_RETRY, withRetry } from "../http/retry.js";
import { describeError, type Logger } from "../log/index.js";
import type { JobRecord } from "./jobs.js";

export interface WebhookOptions {
  /** Deliveries tried in all, the first included. */
  attempts: number;
  retryDelayMs: number;
  timeoutMs: number;
}

/** The platform's policy: the receiver must answer 200; WEBHOOK_RETRY's 2 more tries, 10 s apart (docs/protocol.md §16). */
export const WEBHOOK_DEFAULTS: WebhookOptions = {
  attempts: WEBHOOK_RETRY.attempts,
  retryDelayMs: WEBHOOK_RETRY.baseMs,
  timeoutMs: 10_000,
};

/** The body the platform posts: the job as /status shows it plus its input and the webhook URL (runpod-python#409). */
export function webhookBody(job: JobRecord): Record<string, unknown> {
  const body: Record<string, unknown> = { id: job.id, status: job.status, input: job.input };
  if (job.hasOutput) body.output = job.output;
  if (job.error !== undefined) body.error = job.error;
  body.delayTime = job.delayTime;
  body.executionTime = job.executionTime;
  if (job.workerId !== undefined) body.workerId = job.workerId;
  body.webhook = job.webhook;
  return body;
}

/** Posts each terminal job to its webhook, retrying failures; never blocks the job itself. */
export class WebhookSender {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly closing = new AbortController();

  constructor(
    private readonly options: WebhookOptions,
    private readonly log: Logger,
  ) {}

  send(job: JobRecord): void {
    if (!job.webhook) return;
    const delivery = this.deliver(job.webhook, job.id, JSON.stringify(webhookBody(job)));
    this.inFlight.add(delivery);
    void delivery.finally(() => this.inFlight.delete(delivery));
  }

  /** Waits for deliveries under way; `abort` gives up on pending retries first. */
  async close(abort = true): Promise<void> {
    if (abort) this.closing.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  private async deliver(url: string, jobId: string, body: string): Promise<void> {
    if (this.closing.signal.aborted) return;
    const log = this.log.child({ requestId: jobId });
    const { attempts, retryDelayMs } = this.options;
    const warn = (problem: string, attempt: number, last: boolean) =>
      log.warn(
        `Webhook to ${url} failed (attempt ${attempt} of ${attempts}): ${problem}${last ? "; giving up" : ""}`,
      );
    await withRetry(
      { attempts, baseMs: retryDelayMs, maxMs: retryDelayMs },
      async () => {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          signal: AbortSignal.any([this.closing.signal, AbortSignal.timeout(this.options.timeoutMs)]),
        });
        await response.body?.cancel();
        return response.status;
      },
      (outcome) => {
        if (!outcome.ok) return describeError(outcome.error);
        if (outcome.value >= 200 && outcome.value < 300) {
          log.debug(`Webhook delivered to ${url}`);
          return undefined;
        }
        return `HTTP ${outcome.value}`;
      },
      {
        signal: this.closing.signal,
        onRetry: (problem, attempt) => warn(problem, attempt, false),
        exhausted: (problem, attempt) => {
          if (attempt === attempts) warn(problem, attempt, true);
          return 0;
        },
      },
    );
  }
}
