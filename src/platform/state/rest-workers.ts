// The workers of REST-made endpoints: the platform side made (queue or load-balanced), the image pulled into a
// working container, the workers started from it, and replaced when a release changes what they run.
import type { Logger } from "../../log/index.js";
import type { EndpointConfig, WorkerLaunch } from "./endpoint.js";
import type { Registries } from "./registries.js";
import type { RestEndpointRecord, StoredEndpoint } from "./rest-endpoints.js";

export type WorkerStatus = "RUNNING" | "IDLE" | "INITIALIZING" | "THROTTLED" | "UNHEALTHY";

/** A worker of an API-made endpoint, as the platform knows it. */
export interface HostWorker {
  id: string;
  status: WorkerStatus;
  startedAt: number;
  /** A worker that exited on its own (listed as UNHEALTHY): its uptime ends here. */
  exitedAt?: number;
}

/** A load-balanced endpoint's settings, as the REST record gives them. */
export interface LbSettings {
  id: string;
  name: string;
  workers: [number, number];
  executionTimeoutMs: number;
  idleTimeoutMs: number;
  env: Record<string, string>;
}

/** What the platform does for REST-made endpoints (workers/rest-host.ts). */
export interface EndpointHost {
  /** Queue endpoint: scheduler entry and worker pool (no worker until a launch is set). */
  addQueue(config: EndpointConfig): void;
  /** Changes a queue endpoint's workers, timeouts and env in place. */
  updateQueue(config: EndpointConfig): void;
  /** Load-balanced endpoint: no worker until a launch is set. */
  addLb(settings: LbSettings): void;
  /** Runs the endpoint's workers as `launch`; running ones are replaced. */
  setLaunch(id: string, launch: WorkerLaunch): void;
  remove(id: string): Promise<boolean>;
  workers(id: string): HostWorker[];
}

/** One image to run: pulled with its credential into a working container of this name. */
export interface ImageRequest {
  image: string;
  /** Container arguments replacing the image's CMD. */
  args?: string;
  /** The registry credential's login. */
  creds?: { username: string; password: string };
  /** Names the working container. */
  name: string;
}

/** Pulls images and makes the containers their processes run in (rest/containers.ts). */
export interface ImageRunner {
  prepare(request: ImageRequest): Promise<{ container?: string; launch: WorkerLaunch }>;
  remove(container: string | undefined): Promise<void>;
}

export class RestWorkers {
  constructor(
    private readonly host: EndpointHost,
    private readonly images: ImageRunner,
    private readonly registries: Registries,
    /** Still the stored endpoint: a pull that ends after its delete or replacement launches nothing. */
    private readonly current: (stored: StoredEndpoint) => boolean,
    private readonly log: Logger,
  ) {}

  /** Creates the platform side, then pulls the image and starts its workers from it. */
  start(stored: StoredEndpoint): void {
    const { record } = stored;
    if (record.type === "QUEUE") this.host.addQueue(queueConfig(record));
    else this.host.addLb(lbSettings(record));
    this.prepare(stored);
  }

  /** Applies a changed record; true when its workers are replaced (they run a new container or settings). */
  async restart(stored: StoredEndpoint, before: RestEndpointRecord): Promise<boolean> {
    const { record } = stored;
    if (record.type === "QUEUE") {
      this.host.updateQueue(queueConfig(record));
    } else {
      await this.host.remove(record.id);
      this.host.addLb(lbSettings(record));
    }
    const sameContainer =
      before.image === record.image && before.args === record.args && before.registry === record.registry;
    // A queue endpoint's new env or settings reach new workers through the launch; LB ones were remade above.
    if (
      !sameContainer ||
      record.type === "LOAD_BALANCER" ||
      JSON.stringify(before.env) !== JSON.stringify(record.env)
    ) {
      this.prepare(stored);
      return true;
    }
    return false;
  }

  /** Stops its workers and removes its working containers. */
  async remove(stored: StoredEndpoint): Promise<void> {
    await this.host.remove(stored.record.id);
    for (const container of stored.containers) await this.images.remove(container);
  }

  workers(stored: StoredEndpoint): HostWorker[] {
    return this.host.workers(stored.record.id);
  }

  /** Pulls and makes the container in the background; the newest request wins. */
  private prepare(stored: StoredEndpoint): void {
    const ticket = ++stored.preparing;
    const { record } = stored;
    this.images
      .prepare({
        image: record.image,
        args: record.args,
        creds: this.registries.creds(record.registry),
        name: `flash-${record.id}-v${stored.releases.version}-${ticket}`,
      })
      .then((prepared) => {
        if (prepared.container) stored.containers.push(prepared.container);
        if (!this.current(stored) || ticket !== stored.preparing) return;
        this.host.setLaunch(record.id, prepared.launch);
      })
      .catch((err: Error) => {
        this.log.error(`Endpoint ${record.id} (${record.name}): cannot run ${record.image}: ${err.message}`);
      });
  }
}

function queueConfig(record: RestEndpointRecord): EndpointConfig {
  return {
    id: record.id,
    name: record.name,
    executionTimeoutMs: record.timeout,
    maxRetries: 3,
    workers: [record.workers.min, record.workers.max],
    idleTimeoutMs: record.workers.idleTimeout * 1000,
    env: record.env,
  };
}

function lbSettings(record: RestEndpointRecord): LbSettings {
  return {
    id: record.id,
    name: record.name,
    workers: [record.workers.min, record.workers.max],
    executionTimeoutMs: record.timeout,
    idleTimeoutMs: record.workers.idleTimeout * 1000,
    env: record.env,
  };
}
