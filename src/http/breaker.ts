// The circuit breaker outgoing calls share: one per target URL, opened by consecutive failures.
import type { Logger } from "../log/index.js";

/** Milliseconds since an epoch; tests pass a fake one to move time by hand. */
export type Clock = () => number;

export type CircuitState = "CLOSED" | "OPEN" | "HALF_OPEN";

export interface BreakerOptions {
  /** Consecutive failed calls that open the circuit. */
  failureThreshold: number;
  /** Successful calls in HALF_OPEN that close it again. */
  successThreshold: number;
  /** How long it stays open before letting calls test recovery (the interface document's ~60 s). */
  recoveryMs: number;
}

/** docs/toolkit.md §7: 5 failures open it, 60 s later it half-opens, 2 successes close it. */
export const BREAKER_DEFAULTS: BreakerOptions = {
  failureThreshold: 5,
  successThreshold: 2,
  recoveryMs: 60_000,
};

/** What a call may do now: go ahead, or fail fast for this many more ms. */
export type Admission = { allowed: true } | { allowed: false; retryInMs: number; failures: number };

/**
 * One endpoint's circuit: CLOSED counts consecutive failures; OPEN rejects calls until `recoveryMs`
 * has passed; HALF_OPEN lets calls through, closing after enough successes and reopening on a failure.
 */
export class CircuitBreaker {
  private current: CircuitState = "CLOSED";
  private failures = 0;
  private successes = 0;
  private openedAt = 0;

  constructor(
    readonly url: string,
    private readonly options: BreakerOptions,
    private readonly clock: Clock,
    private readonly log?: Logger,
  ) {}

  get state(): CircuitState {
    return this.current;
  }

  /** Consecutive failures counted so far (the number that opened it, while open). */
  get failureCount(): number {
    return this.failures;
  }

  admit(): Admission {
    if (this.current !== "OPEN") return { allowed: true };
    const left = this.openedAt + this.options.recoveryMs - this.clock();
    if (left > 0) return { allowed: false, retryInMs: left, failures: this.failures };
    this.current = "HALF_OPEN";
    this.successes = 0;
    this.log?.info(`Circuit breaker HALF_OPEN for ${this.url}, testing recovery`);
    return { allowed: true };
  }

  success(): void {
    if (this.current === "HALF_OPEN") {
      this.successes++;
      if (this.successes < this.options.successThreshold) return;
      this.current = "CLOSED";
      this.log?.info(`Circuit breaker CLOSED for ${this.url}, recovered`);
    }
    this.failures = 0;
  }

  failure(): void {
    this.failures++;
    if (this.current === "OPEN") return;
    if (this.current === "CLOSED" && this.failures < this.options.failureThreshold) return;
    this.current = "OPEN";
    this.openedAt = this.clock();
    this.log?.warn(`Circuit breaker OPEN for ${this.url} after ${this.failures} failures`);
  }
}

/** The breakers of every endpoint a process calls, one per endpoint URL, shared by its clients. */
export class CircuitBreakers {
  private readonly byUrl = new Map<string, CircuitBreaker>();

  constructor(
    private readonly options: Partial<BreakerOptions> = {},
    private readonly clock: Clock = Date.now,
  ) {}

  for(url: string, log?: Logger): CircuitBreaker {
    let breaker = this.byUrl.get(url);
    if (!breaker) {
      breaker = new CircuitBreaker(url, { ...BREAKER_DEFAULTS, ...this.options }, this.clock, log);
      this.byUrl.set(url, breaker);
    }
    return breaker;
  }
}

/** The process-wide breakers clients use unless given their own. */
export const DEFAULT_BREAKERS = new CircuitBreakers();
