import type { FastifyInstance } from "fastify";
import { artifactRoutes } from "./artifacts.js";
import type { PlatformContext } from "./context.js";
import { addJsonParser, checkKey, HttpError } from "./http.js";
import { newShortId } from "./ids.js";

/** What POST /endpoints accepts: a handler file or a worker command, and how the endpoint runs. */
export interface EndpointInit {
  id?: string;
  /** "load-balanced": workers serve the app's routes behind /lb/<id>/ instead of taking jobs. */
  kind?: "queue" | "load-balanced";
  name?: string;
  /** Handler file: workers are `flash start <file>` processes. */
  file?: string;
  /** Worker argv, instead of `file`. */
  command?: string[];
  /** Working directory of the workers (the app directory). */
  cwd?: string;
  workers?: [number, number];
  executionTimeoutMs?: number;
  idleTimeoutMs?: number;
  maxRetries?: number;
  env?: Record<string, string>;
}

/** An endpoint as GET /endpoints lists it. */
export interface EndpointInfo {
  id: string;
  kind: "queue" | "load-balanced";
  name: string;
  url: string;
  workers: [number, number];
  executionTimeoutMs: number;
  idleTimeoutMs: number;
  maxRetries: number;
  command?: string[];
  cwd?: string;
  /** Worker processes the platform runs for it now. */
  workersRunning: number;
}

export interface EndpointManager {
  has(id: string): boolean;
  create(init: EndpointInit): EndpointInfo;
  remove(id: string): Promise<boolean>;
  list(): EndpointInfo[];
}

const endpointSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    id: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$" },
    kind: { type: "string", enum: ["queue", "load-balanced"] },
    name: { type: "string", minLength: 1, maxLength: 200 },
    file: { type: "string", minLength: 1 },
    command: { type: "array", minItems: 1, items: { type: "string" } },
    cwd: { type: "string", minLength: 1 },
    appDir: { type: "string", minLength: 1 },
    /** An id from POST /artifacts: unpacked into the endpoint's own directory, its workers' cwd. */
    artifact: { type: "string", minLength: 1 },
    workers: {
      type: "array",
      minItems: 2,
      maxItems: 2,
      items: { type: "integer", minimum: 0, maximum: 1000 },
    },
    executionTimeoutMs: { type: "integer", minimum: 1 },
    idleTimeoutMs: { type: "integer", minimum: 0 },
    maxRetries: { type: "integer", minimum: 0, maximum: 100 },
    env: { type: "object", additionalProperties: { type: "string" } },
  },
} as const;

/** The management API: POST/GET /endpoints, DELETE /endpoints/<id>. */
export async function managementApi(
  app: FastifyInstance,
  options: { ctx: PlatformContext; manager: EndpointManager },
): Promise<void> {
  const { ctx, manager } = options;
  addJsonParser(app, "application/json");
  app.addHook("onRequest", async (request) => checkKey(request, ctx.apiKey, false));
  const artifacts = await artifactRoutes(app, ctx);

  app.post("/endpoints", { schema: { body: endpointSchema } }, async (request, reply) => {
    const body = (request.body ?? {}) as EndpointInit & { appDir?: string; artifact?: string };
    const { appDir, artifact, ...init } = body;
    if (appDir !== undefined && init.cwd === undefined) init.cwd = appDir;
    if (init.id !== undefined && manager.has(init.id)) {
      throw new HttpError(409, `Endpoint ${init.id} already exists`);
    }
    if (artifact !== undefined) {
      init.id ??= newShortId();
      init.cwd = await artifacts.unpack(artifact, init.id);
    }
    try {
      return reply.code(201).send(manager.create(init));
    } catch (err) {
      throw new HttpError(400, (err as Error).message);
    }
  });

  app.get("/endpoints", async () => manager.list());

  app.delete("/endpoints/:id", async (request) => {
    const { id } = request.params as { id: string };
    if (!(await manager.remove(id))) throw new HttpError(404, `Endpoint ${id} not found`);
    return { id, deleted: true };
  });
}
