// The REST API v2 subset on the local platform (test/fixtures/runpod-rest-v2.openapi.json): serverless endpoints
// made from images, their workers, logs and releases, Pods (rest/pods.ts), registry credentials and the GPU
// catalog. Same paths, bodies and status codes as RunPod's, so `flash deploy --api-url http://127.0.0.1:8000`
// takes the path it takes there.
// The routes parse, call the state (src/platform/state/: rest-endpoints, releases, registries, rest-workers, pods,
// pod-life) and answer.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "../../log/index.js";
import { addJsonParser, checkKey } from "../api/http.js";
import type { LogBook } from "../console/logs.js";
import type { PodLife } from "../state/pod-life.js";
import type { Pods } from "../state/pods.js";
import { invalidBody } from "../state/problem.js";
import type { Registries } from "../state/registries.js";
import {
  type CreateEndpointBody,
  RestEndpoints,
  type StoredEndpoint,
  type UpdateEndpointBody,
} from "../state/rest-endpoints.js";
import { type EndpointHost, type ImageRunner, RestWorkers } from "../state/rest-workers.js";
import { type CatalogGpu, catalogEntry, DEFAULT_GPU_CATALOG } from "./catalog.js";
import { podRoutes } from "./pods.js";
import { problemHandler } from "./problem.js";
import { violations } from "./schemas.js";
import { endpointView, releasesView, workersView } from "./views.js";
import { streamLogs } from "./worker-logs.js";

export type { HostWorker } from "../state/rest-workers.js";

/** What the REST routes need from the platform they are part of (src/platform/server.ts). */
export interface RestHost {
  /** The platform side of each endpoint: its scheduler entry or load balancer, and its workers. */
  endpoints: EndpointHost;
  /** Registry credentials, which endpoints and Pods pull with. */
  registries: Registries;
  /** The Pods, and what runs their containers. */
  pods: Pods;
  podLife: PodLife;
  /** The address a Pod's tcp forwards are reached at. */
  publicIp(): string;
  baseUrl(): string;
  logs: LogBook;
  containers: ImageRunner;
  log: Logger;
  apiKey: string;
  catalog?: readonly CatalogGpu[];
}

/** Throws the 422 naming each violation when the body breaks the schema. */
function validate(kind: Parameters<typeof violations>[0], body: unknown): void {
  const invalid = violations(kind, body);
  if (invalid.length > 0) throw invalidBody(invalid);
}

const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

/** The routes; the host's endpoints made here are listed, changed and deleted here. */
export async function restApi(app: FastifyInstance, options: { host: RestHost }): Promise<void> {
  const { host } = options;
  const catalog = host.catalog ?? DEFAULT_GPU_CATALOG;
  const log = host.log.child({ subject: "rest" });
  const { registries, pods } = host;
  const endpoints = new RestEndpoints(catalog, registries);
  const workers = new RestWorkers(
    host.endpoints,
    host.containers,
    registries,
    (s) => endpoints.holds(s),
    log,
  );
  const view = (stored: StoredEndpoint) => endpointView(stored, host.baseUrl());

  addJsonParser(app, "application/json");
  app.setErrorHandler(problemHandler(log));
  app.addHook("onRequest", async (request) => checkKey(request, host.apiKey, false));

  app.get("/v2/serverless", async () => ({ endpoints: endpoints.list().map(view) }));
  app.get("/v2/serverless/:id", async (request) => view(endpoints.get(idOf(request))));

  app.post("/v2/serverless", async (request, reply) => {
    validate("create", request.body ?? null);
    const stored = endpoints.create(request.body as CreateEndpointBody);
    workers.start(stored);
    const { record } = stored;
    log.info(`Endpoint ${record.id} (${record.name}) created from ${record.image}`);
    return reply.code(201).send(view(stored));
  });

  app.patch("/v2/serverless/:id", async (request) => {
    const stored = endpoints.get(idOf(request));
    const body = (request.body ?? {}) as UpdateEndpointBody;
    validate("update", body);
    const { before, diff } = endpoints.update(stored, body);
    if (diff.length > 0) {
      // Workers that keep running (nothing about their container changed) run the new release too.
      if (await workers.restart(stored, before)) stored.releases.rolledOut();
      const { record } = stored;
      log.info(
        `Endpoint ${record.id} (${record.name}) updated to version ${stored.releases.version}: ${diff.map((d) => d.field).join(", ")}`,
      );
    }
    return view(stored);
  });

  app.delete("/v2/serverless/:id", async (request, reply) => {
    const stored = endpoints.get(idOf(request));
    endpoints.delete(stored);
    await workers.remove(stored);
    log.info(`Endpoint ${stored.record.id} (${stored.record.name}) deleted with its workers`);
    return reply.code(204).send();
  });

  app.get("/v2/serverless/:id/workers", async (request) => {
    const stored = endpoints.get(idOf(request));
    return workersView(stored, workers.workers(stored));
  });

  app.get("/v2/serverless/:id/releases", async (request) => {
    const stored = endpoints.get(idOf(request));
    return releasesView(stored, workers.workers(stored));
  });

  app.get("/v2/serverless/:id/workers/:workerId/logs", async (request, reply) => {
    const stored = endpoints.get(idOf(request));
    const { workerId } = request.params as { workerId: string };
    streamLogs(request, reply, host.logs, workerId, {
      live: workers.workers(stored).some((w) => w.id === workerId),
      missing: `worker ${workerId} of endpoint ${stored.record.id} not found`,
      systemPrefix: "Worker:",
    });
  });

  app.get("/v2/registries", async () => ({ registries: registries.list() }));
  app.post("/v2/registries", async (request, reply) => {
    validate("registry", request.body ?? null);
    const body = request.body as { name: string; username: string; password: string };
    return reply.code(201).send(registries.add(body));
  });
  app.get("/v2/registries/:id", async (request) => registries.get(idOf(request)));
  app.delete("/v2/registries/:id", async (request, reply) => {
    const id = idOf(request);
    registries.remove(id, endpoints.usingRegistry(id) ?? pods.usingRegistry(id));
    return reply.code(204).send();
  });

  app.get("/v2/catalog/gpus", async () => ({ gpus: catalog.map(catalogEntry) }));

  podRoutes(app, { pods, life: host.podLife, logs: host.logs, log, publicIp: () => host.publicIp() });
}
