// One endpoint's job queue and its waiting job-takes, handing each job to exactly one worker.
import type { JobRecord } from "./jobs.js";

/** A job-take long-poll waiting for work. */
export interface Taker {
  workerId: string;
  max: number;
  deliver(jobs: JobRecord[]): void;
}

/**
 * One endpoint's queue: jobs waiting for a worker, and job-takes waiting for a job. A job leaves the
 * queue only through `assign`, called synchronously, so no job is ever between two owners.
 */
export class JobQueue {
  private pending: JobRecord[] = [];
  private takers: Taker[] = [];

  constructor(private readonly assign: (job: JobRecord, workerId: string) => void) {}

  get size(): number {
    return this.pending.length;
  }

  /** Queued jobs that ask for a worker (all but `policy.lowPriority` ones): what the pool scales on. */
  get scaling(): number {
    let n = 0;
    for (const job of this.pending) if (!job.lowPriority) n++;
    return n;
  }

  /** Job-takes currently parked here: workers ready for a job right now. */
  get waitingTakers(): number {
    return this.takers.length;
  }

  /** Queues a job; `front` is for jobs coming back from a lost worker, which keep their place. */
  push(job: JobRecord, front = false): void {
    if (front) this.pending.unshift(job);
    else this.pending.push(job);
    this.drain();
  }

  /** Takes a queued job out without running it (cancel); false when it was not queued. */
  remove(job: JobRecord): boolean {
    const index = this.pending.indexOf(job);
    if (index < 0) return false;
    this.pending.splice(index, 1);
    return true;
  }

  /** Empties the queue (purge-queue) and returns what was in it. */
  purge(): JobRecord[] {
    const removed = this.pending;
    this.pending = [];
    return removed;
  }

  /** Up to `max` jobs at once, assigned to the worker; empty when none wait. */
  takeNow(workerId: string, max: number): JobRecord[] {
    const jobs = this.pending.splice(0, Math.max(0, max));
    for (const job of jobs) this.assign(job, workerId);
    return jobs;
  }

  /** Parks a job-take until a job arrives; returns the function that unparks it. */
  wait(taker: Taker): () => void {
    this.takers.push(taker);
    this.drain();
    return () => {
      const index = this.takers.indexOf(taker);
      if (index >= 0) this.takers.splice(index, 1);
    };
  }

  /** Answers a worker's parked job-takes with nothing (the worker is being stopped). */
  release(workerId: string): void {
    const released = this.takers.filter((t) => t.workerId === workerId);
    this.takers = this.takers.filter((t) => t.workerId !== workerId);
    for (const taker of released) taker.deliver([]);
  }

  private drain(): void {
    while (this.pending.length > 0 && this.takers.length > 0) {
      const taker = this.takers.shift()!;
      taker.deliver(this.takeNow(taker.workerId, taker.max));
    }
  }
}
