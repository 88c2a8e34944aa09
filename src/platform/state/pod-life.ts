// A Pod's life on the platform: its image pulled into a working container, the container run with its ports
// exposed, stopped, started again, and remade when an update changes what it runs.
import type { Logger } from "../../log/index.js";
import type { WorkerLaunch } from "./endpoint.js";
import type { PodRecord } from "./pods.js";
import type { Registries } from "./registries.js";
import type { ImageRunner } from "./rest-workers.js";

/** What runs Pods' containers (workers/pod-runner.ts). */
export interface PodHost {
  /** Forwards its tcp ports and starts its container; resolves with each tcp port's public port once started. */
  run(
    pod: PodRecord,
    launch: WorkerLaunch,
    exited: (how: string, ok: boolean) => void,
  ): Promise<Map<number, number>>;
  /** Stops its container (SIGTERM, then SIGKILL after the grace period) and closes its forwards. */
  stop(pod: PodRecord): Promise<void>;
}

interface Prepared {
  launch: WorkerLaunch;
  container?: string;
}

export class PodLife {
  /** The prepared container of each Pod, kept while its settings stay: a start after a stop reuses it. */
  private readonly prepared = new Map<string, Prepared>();
  /** Bumped by each start and stop, so a slow pull that a later call overtook does nothing. */
  private readonly tickets = new Map<string, number>();
  private readonly containers = new Map<string, string[]>();

  constructor(
    private readonly host: PodHost,
    private readonly images: ImageRunner,
    private readonly registries: Registries,
    private readonly log: Logger,
  ) {}

  /** Pulls (unless its container is ready) and runs it in the background: PROVISIONING, STARTING, RUNNING. */
  start(pod: PodRecord): void {
    const ticket = this.ticket(pod);
    pod.status = "PROVISIONING";
    pod.error = undefined;
    this.boot(pod, ticket).catch((err: Error) => {
      if (this.tickets.get(pod.id) !== ticket) return;
      pod.status = "ERROR";
      pod.error = err.message;
      // Under the Pod's subject, so its logs (GET /v2/pods/{id}/logs) say why it is in ERROR.
      this.log
        .child({ subject: pod.id })
        .error(`Pod:${pod.id} | Pod ${pod.id} (${pod.name}): cannot run ${pod.image}: ${err.message}`);
    });
  }

  async stop(pod: PodRecord): Promise<void> {
    this.ticket(pod);
    await this.host.stop(pod);
    if (pod.status !== "TERMINATED") pod.status = "EXITED";
    pod.tcp.clear();
  }

  /** Settings its container is made from changed: it starts on them now, live, EXITED or in ERROR alike. */
  async remake(pod: PodRecord): Promise<void> {
    this.prepared.delete(pod.id);
    // As RunPod restarts a Pod whose image a PATCH changes: a redeploy is how a failed Pod is fixed.
    if (pod.status !== "EXITED" && pod.status !== "ERROR") await this.stop(pod);
    this.start(pod);
  }

  /** Stops it for good and removes its working containers. */
  async remove(pod: PodRecord): Promise<void> {
    await this.stop(pod);
    this.prepared.delete(pod.id);
    this.tickets.delete(pod.id);
    for (const container of this.containers.get(pod.id) ?? []) await this.images.remove(container);
    this.containers.delete(pod.id);
  }

  private ticket(pod: PodRecord): number {
    const ticket = (this.tickets.get(pod.id) ?? 0) + 1;
    this.tickets.set(pod.id, ticket);
    return ticket;
  }

  private async boot(pod: PodRecord, ticket: number): Promise<void> {
    let prepared = this.prepared.get(pod.id);
    if (!prepared) {
      prepared = await this.images.prepare({
        image: pod.image,
        args: pod.args,
        creds: this.registries.creds(pod.registry),
        name: `flash-pod-${pod.id}-${ticket}`,
      });
      if (prepared.container)
        this.containers.set(pod.id, [...(this.containers.get(pod.id) ?? []), prepared.container]);
      if (this.tickets.get(pod.id) !== ticket) return;
      this.prepared.set(pod.id, prepared);
    }
    pod.status = "STARTING";
    const tcp = await this.host.run(pod, prepared.launch, (how, ok) => {
      if (this.tickets.get(pod.id) !== ticket) return;
      // An exit nobody asked for: the Pod stops there, as a container with no restart policy does.
      pod.status = ok ? "EXITED" : "ERROR";
      if (!ok) pod.error = `its container exited with ${how}`;
      pod.tcp.clear();
      this.log.warn(`Pod ${pod.id} (${pod.name}): its container exited with ${how}`);
    });
    // Stopped while it was starting: what just started goes too.
    if (this.tickets.get(pod.id) !== ticket) return this.host.stop(pod);
    pod.tcp = tcp;
    pod.startedAt = Date.now();
    pod.status = "RUNNING";
    this.log.info(`Pod ${pod.id} (${pod.name}) running ${pod.image}`);
  }
}
