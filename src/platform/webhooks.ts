import { describeError, type Logger } from "../log/index.js";
import type { JobRecord } from "./jobs.js";

export interface WebhookOptions {
  /** Deliveries tried in all, the first included. */
  attempts: number;
  retryDelayMs: number;
  timeoutMs: number;
}

/** The platform's policy: the receiver must answer 200; 2 more tries, 10 s apart (peers §E.3). */
export const WEBHOOK_DEFAULTS: WebhookOptions = { attempts: 3, retryDelayMs: 10_000, timeoutMs: 10_000 };

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
    const log = this.log.child({ requestId: jobId });
    for (let attempt = 1; attempt <= this.options.attempts; attempt++) {
      if (this.closing.signal.aborted) return;
      let problem: string;
      try {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          signal: AbortSignal.any([this.closing.signal, AbortSignal.timeout(this.options.timeoutMs)]),
        });
        await response.body?.cancel();
        if (response.ok) {
          log.debug(`Webhook delivered to ${url}`);
          return;
        }
        problem = `HTTP ${response.status}`;
      } catch (err) {
        problem = describeError(err);
      }
      const last = attempt === this.options.attempts;
      log.warn(
        `Webhook to ${url} failed (attempt ${attempt} of ${this.options.attempts}): ${problem}${last ? "; giving up" : ""}`,
      );
      if (!last) await this.pause(this.options.retryDelayMs);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const signal = this.closing.signal;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
