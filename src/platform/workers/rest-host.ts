// What the REST v2 routes ask of the platform (state/rest-workers.ts EndpointHost), done with its endpoints: queue
// ones through the scheduler and their pools, load-balanced ones through the load balancer.
import type { EndpointConfig, WorkerLaunch } from "../state/endpoint.js";
import type { EndpointHost, HostWorker, LbSettings } from "../state/rest-workers.js";
import type { Scheduler } from "../state/scheduler.js";
import type { PlatformEndpoints } from "./endpoints.js";
import type { LbEndpoints } from "./lb-proxy.js";
import type { DeadWorker } from "./pool.js";

export class RestEndpointHost implements EndpointHost {
  constructor(
    private readonly endpoints: PlatformEndpoints,
    private readonly scheduler: Scheduler,
    private readonly lb: LbEndpoints,
  ) {}

  addQueue(config: EndpointConfig): void {
    this.endpoints.addQueue(config);
  }

  updateQueue(config: EndpointConfig): void {
    const endpoint = this.scheduler.endpoint(config.id);
    // The launch stays: the image did not change (a new one comes through setLaunch).
    if (endpoint) endpoint.config = { ...config, launch: endpoint.config.launch };
    this.endpoints.pools.get(config.id)?.scale();
  }

  addLb(settings: LbSettings): void {
    this.endpoints.createLb({ ...settings, awaitLaunch: true });
  }

  setLaunch(id: string, launch: WorkerLaunch): void {
    const endpoint = this.scheduler.endpoint(id);
    if (endpoint) {
      endpoint.config.launch = launch;
      this.endpoints.pools.get(id)?.restartAll();
    }
    this.lb.get(id)?.setLaunch(launch);
  }

  remove(id: string): Promise<boolean> {
    return this.endpoints.remove(id);
  }

  /** Live workers by what they are doing, then those that exited on their own (unhealthy). */
  workers(id: string): HostWorker[] {
    const lbEndpoint = this.lb.get(id);
    if (lbEndpoint) {
      const live: HostWorker[] = lbEndpoint.workerList().map((w) => ({
        id: w.id,
        startedAt: w.startedAt,
        status:
          w.state === "unhealthy"
            ? "UNHEALTHY"
            : w.state !== "ready"
              ? "INITIALIZING"
              : w.inFlight > 0
                ? "RUNNING"
                : "IDLE",
      }));
      return [...live, ...lbEndpoint.dead.map(deadWorker)];
    }
    const endpoint = this.scheduler.endpoint(id);
    const pool = this.endpoints.pools.get(id);
    if (!endpoint || !pool) return [];
    const live = pool.processList
      .filter((p) => !p.stopping)
      .map((p): HostWorker => {
        const record = endpoint.workers.get(p.id);
        return {
          id: p.id,
          startedAt: p.startedAt,
          status: !record
            ? "INITIALIZING"
            : record.unhealthy !== undefined
              ? "UNHEALTHY"
              : record.readyAt === undefined
                ? "INITIALIZING"
                : record.jobs.size > 0
                  ? "RUNNING"
                  : "IDLE",
        };
      });
    return [...live, ...pool.dead.map(deadWorker)];
  }
}

/** A worker that exited on its own, as the REST API lists it: unhealthy. */
function deadWorker(dead: DeadWorker): HostWorker {
  return { id: dead.id, startedAt: dead.startedAt, exitedAt: dead.exitedAt, status: "UNHEALTHY" };
}
