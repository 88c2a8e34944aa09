// What the platform's HTTP routes share: scheduler, API key, logger and long-poll hold time.
import type { Logger } from "../../log/index.js";
import type { EndpointState } from "../state/endpoint.js";
import type { Scheduler } from "../state/scheduler.js";

/** What the HTTP routes share: the scheduler, the key, and how long long-polls are held. */
export interface PlatformContext {
  scheduler: Scheduler;
  apiKey: string;
  log: Logger;
  /** How long job-take, job-stop and /stream hold a request open waiting for something to say. */
  longPollMs: number;
  /** Workers the pool has started that have not yet called in (health's `initializing`). */
  initializingWorkers(endpoint: EndpointState): number;
  /** Workers that exited on their own, not yet followed by a healthy one (counted in health's `unhealthy`). */
  deadWorkers(endpoint: EndpointState): number;
}
