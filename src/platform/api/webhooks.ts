// Webhook delivery: each finished job posted to its webhook URL with the platform's retry policy.
import { describeAnswer, describeFailure, HttpClient, type HttpRequest } from "../../http/client.js";
import { WEBHOOK_RETRY } from "../../http/retry.js";
import { type Logger, redactUrl } from "../../log/index.js";
import type { JobRecord } from "../state/jobs.js";

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
  private readonly http: HttpClient;

  constructor(
    private readonly options: WebhookOptions,
    private readonly log: Logger,
  ) {
    const { attempts, retryDelayMs } = options;
    this.http = new HttpClient({
      retry: { attempts, baseMs: retryDelayMs, maxMs: retryDelayMs },
      // The receiver must answer 2xx: any other answer is tried again.
      retryStatus: () => true,
      onRetry: (request, problem, attempt) => this.warn(request, problem, attempt, false),
    });
  }

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
    const request: HttpRequest = {
      method: "POST",
      url,
      headers: { "content-type": "application/json" },
      body,
      timeoutMs: this.options.timeoutMs,
      signal: this.closing.signal,
      what: "Webhook",
      id: jobId,
    };
    let problem: string;
    try {
      const answer = await this.http.send(request);
      if (answer.response.ok) {
        this.log.child({ requestId: jobId }).debug(`Webhook delivered to ${redactUrl(url)}`);
        return;
      }
      problem = describeAnswer(answer);
    } catch (err) {
      problem = describeFailure(err);
    }
    // Closing cut the retries short: not a delivery that gave up.
    if (!this.closing.signal.aborted) this.warn(request, problem, this.options.attempts, true);
  }

  private warn(request: HttpRequest, problem: string, attempt: number, last: boolean): void {
    this.log
      .child({ requestId: request.id })
      .warn(
        `Webhook to ${redactUrl(request.url)} failed (attempt ${attempt} of ${this.options.attempts}): ${problem}${last ? "; giving up" : ""}`,
      );
  }
}
