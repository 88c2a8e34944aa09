// REST v2 Pods on the local platform: /v2/pods (create, list), /v2/pods/{id} (get, update, delete), its actions
// and logs. Each Pod runs as a container (state/pod-life.ts, workers/pod-runner.ts); its http ports are reached
// through the proxy at `/pods/<pod_id>/<port>` (or `<pod_id>-<port>.localhost`), its tcp ports through forwards reported in `runtime.ports`.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "../../log/index.js";
import type { LogBook } from "../console/logs.js";
import type { PodLife } from "../state/pod-life.js";
import {
  type CreatePodBody,
  type PodAction,
  type PodRecord,
  type Pods,
  podActions,
  podPorts,
  type UpdatePodBody,
} from "../state/pods.js";
import { invalidBody } from "../state/problem.js";
import { violations } from "./schemas.js";
import { streamLogs } from "./worker-logs.js";

export interface PodRoutes {
  pods: Pods;
  life: PodLife;
  logs: LogBook;
  log: Logger;
  /** The address tcp forwards are reached at (a Pod's public IP). */
  publicIp(): string;
}

/** The Pod schema: its settings, the actions its status allows, and while it runs, its ports. */
export function podView(pod: PodRecord, publicIp: string) {
  const running = pod.status === "RUNNING";
  const ports = podPorts(pod);
  const ssh = running && pod.tcp.has(22) ? pod.tcp.get(22) : undefined;
  return {
    id: pod.id,
    name: pod.name,
    status: pod.status,
    actions: podActions(pod.status),
    image: pod.image,
    args: pod.args,
    disk: pod.disk,
    mounts: pod.mounts,
    ports: pod.ports,
    env: pod.env,
    registry: pod.registry,
    // A GPU Pod has no cpu block and a CPU Pod no gpu block.
    ...(pod.gpu ? { gpu: pod.gpu } : { cpu: pod.cpu }),
    cloud: pod.cloud,
    dataCenterId: "local",
    cudaVersion: null,
    ssh: {
      proxy: null,
      direct:
        ssh === undefined
          ? null
          : { host: publicIp, port: ssh, username: "root", command: `ssh root@${publicIp} -p ${ssh}` },
    },
    template: null,
    // Nothing is billed on the local platform.
    cost: 0,
    locked: pod.locked,
    globalNetworking: { enabled: false },
    runtime: running
      ? {
          uptime: Math.floor((Date.now() - (pod.startedAt ?? Date.now())) / 1000),
          gpus: [],
          ports: ports.map((p) =>
            p.type === "tcp"
              ? { private: p.private, public: pod.tcp.get(p.private) ?? null, type: "tcp", ip: publicIp }
              : { private: p.private, public: null, type: "http", ip: null },
          ),
        }
      : null,
    createdAt: pod.createdAt,
    startedAt: pod.startedAt === null ? null : new Date(pod.startedAt).toISOString(),
  };
}

function validate(kind: "pod-create" | "pod-update" | "pod-action", body: unknown): void {
  const invalid = violations(kind, body);
  if (invalid.length > 0) throw invalidBody(invalid);
}

/** The routes, in the REST plugin's scope (its key check and problem answers). */
export function podRoutes(app: FastifyInstance, options: PodRoutes): void {
  const { pods, life } = options;
  const { log } = options;
  const found = (request: FastifyRequest) => pods.get((request.params as { id: string }).id);
  const view = (pod: PodRecord) => podView(pod, options.publicIp());
  const terminate = async (pod: PodRecord) => {
    pods.delete(pod);
    await life.remove(pod);
    log.info(`Pod ${pod.id} (${pod.name}) deleted with its container`);
  };

  app.get("/v2/pods", async () => ({ pods: pods.list().map(view) }));
  app.get("/v2/pods/:id", async (request) => view(found(request)));

  app.post("/v2/pods", async (request, reply) => {
    validate("pod-create", request.body ?? null);
    const pod = pods.create(request.body as CreatePodBody);
    life.start(pod);
    log.info(`Pod ${pod.id} (${pod.name}) created from ${pod.image}`);
    return reply.code(201).send(view(pod));
  });

  app.patch("/v2/pods/:id", async (request) => {
    const pod = found(request);
    const body = (request.body ?? {}) as UpdatePodBody;
    validate("pod-update", body);
    if (pods.update(pod, body)) await life.remake(pod);
    return view(pod);
  });

  app.delete("/v2/pods/:id", async (request, reply) => {
    await terminate(found(request));
    return reply.code(204).send();
  });

  app.post("/v2/pods/:id/action", async (request, reply) => {
    const pod = found(request);
    validate("pod-action", request.body ?? null);
    const { action } = request.body as { action: PodAction };
    pods.checkAction(pod, action);
    if (action === "terminate") {
      await terminate(pod);
      return reply.code(204).send();
    }
    if (action !== "start") await life.stop(pod);
    if (action !== "stop") life.start(pod);
    return view(pod);
  });

  app.get("/v2/pods/:id/logs", async (request, reply) => {
    const pod = found(request);
    streamLogs(request, reply, options.logs, pod.id, {
      live: true,
      missing: `pod ${pod.id} not found`,
      systemPrefix: "Pod:",
    });
  });
}
