// A job's progress updates to the platform: in order, latest wins, never after the result.
import { findUnsafeJson } from "../../job/json-safe.js";
import type { Logger } from "../../log/index.js";
import type { PlatformClient } from "./client.js";

const SETTLED = Promise.resolve();

/**
 * Sends one job's progress updates in order, one at a time; an update that arrives while another is
 * in flight replaces any still waiting (latest wins). Once closed, nothing more is sent, so an update
 * can never land after the final result (runpod-python #250).
 */
export class ProgressSender {
  private pending: { value: unknown } | undefined;
  private sending: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly client: PlatformClient,
    private readonly jobId: string,
    private readonly log: Logger,
  ) {}

  send(value: unknown): void {
    if (this.closed) {
      this.log.debug("Progress update after the job ended; dropped.");
      return;
    }
    const problem = findUnsafeJson(value, "progress");
    if (problem) {
      this.log.warn(`Progress update cannot be sent as JSON: ${problem}; dropped.`);
      return;
    }
    this.pending = { value };
    this.sending ??= this.pump();
  }

  private async pump(): Promise<void> {
    while (this.pending && !this.closed) {
      const { value } = this.pending;
      this.pending = undefined;
      try {
        await this.client.progress(this.jobId, value);
      } catch (err) {
        this.log.warn(`Progress update not delivered: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.sending = undefined;
  }

  /** Drops updates not yet sent and waits for the one in flight, so the final result goes out last. */
  close(): Promise<void> {
    this.closed = true;
    this.pending = undefined;
    // Most jobs send no progress: nothing to wait for, and no promise made per job.
    return this.sending ?? SETTLED;
  }
}
