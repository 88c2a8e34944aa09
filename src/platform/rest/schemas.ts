// The REST v2 request bodies the local platform accepts, as JSON Schemas checked with ajv: the document's
// CreateEndpointRequest / UpdateEndpointRequest / CreateRegistryRequest / CreatePodRequest / UpdatePodRequest /
// PodActionRequest flattened (nothing else may be sent).
import { Ajv, type ErrorObject } from "ajv";

const stringMap = { type: "object", additionalProperties: { type: "string" } } as const;
const strings = { type: "array", items: { type: "string" } } as const;
const cuda = { type: "string", pattern: "^\\d+\\.\\d+$" } as const;
const scaling = {
  oneOf: [
    {
      type: "object",
      additionalProperties: false,
      required: ["type", "queueDelay"],
      properties: { type: { const: "QUEUE_DELAY" }, queueDelay: { type: "number", minimum: 0.5 } },
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["type", "requestCount"],
      properties: { type: { const: "REQUEST_COUNT" }, requestCount: { type: "integer", minimum: 1 } },
    },
  ],
} as const;
const workers = {
  type: "object",
  additionalProperties: false,
  properties: {
    min: { type: "integer", minimum: 0 },
    max: { type: "integer", minimum: 0 },
    idleTimeout: { type: "integer", minimum: 1, maximum: 3600 },
  },
} as const;
const cpu = {
  type: "array",
  minItems: 1,
  uniqueItems: true,
  items: {
    type: "object",
    additionalProperties: false,
    required: ["id", "vcpuCount"],
    properties: { id: { type: "string", minLength: 1 }, vcpuCount: { type: "integer", minimum: 2 } },
  },
} as const;
const gpuProperties = {
  pools: { type: "array", minItems: 1, items: { type: "string" } },
  excludedTypes: { type: "array", uniqueItems: true, items: { type: "string", pattern: "^\\s*[^-\\s]" } },
  count: { type: "integer", minimum: 1 },
  allowedCudaVersions: { type: "array", items: cuda },
} as const;
const container = {
  args: { type: "string" },
  disk: { type: "integer", minimum: 1 },
  env: stringMap,
  image: { type: "string" },
  ports: strings,
  registry: { type: ["string", "null"] },
  dataCenterIds: strings,
  flashboot: { enum: ["OFF", "FLASHBOOT", "PRIORITY_FLASHBOOT"] },
  networkVolumes: strings,
  scaling,
  templateId: { type: "string", minLength: 1 },
  timeout: { type: "integer" },
  cpu,
} as const;

export const createEndpointSchema = {
  type: "object",
  additionalProperties: false,
  required: ["name", "type", "scaling"],
  properties: {
    ...container,
    name: { type: "string", minLength: 1 },
    type: { enum: ["QUEUE", "LOAD_BALANCER"] },
    workers,
    gpu: {
      type: "object",
      additionalProperties: false,
      required: ["pools"],
      properties: { ...gpuProperties, minCudaVersion: cuda },
    },
  },
} as const;

export const updateEndpointSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...container,
    name: { type: "string", minLength: 1 },
    workers,
    gpu: {
      type: "object",
      additionalProperties: false,
      dependentRequired: { excludedTypes: ["pools"] },
      properties: { ...gpuProperties, minCudaVersion: { type: "string", pattern: "^$|^\\d+\\.\\d+$" } },
    },
  },
} as const;

export const createRegistrySchema = {
  type: "object",
  additionalProperties: false,
  required: ["name", "username", "password"],
  properties: {
    name: { type: "string", minLength: 1 },
    username: { type: "string", minLength: 1 },
    password: { type: "string", minLength: 1 },
  },
} as const;

const podContainer = {
  args: { type: "string" },
  disk: { type: "integer", minimum: 1 },
  env: stringMap,
  image: { type: "string" },
  ports: strings,
  registry: { type: ["string", "null"] },
} as const;
const mounts = {
  type: "object",
  additionalProperties: false,
  properties: {
    persistent: {
      type: "object",
      additionalProperties: false,
      required: ["size", "path"],
      properties: { size: { type: "integer", minimum: 10 }, path: { type: "string" } },
    },
    network: {
      type: "array",
      maxItems: 1,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["volumeId", "path"],
        properties: { volumeId: { type: "string" }, path: { type: "string" } },
      },
    },
  },
} as const;

/** CreatePodRequest: image unless templateId, one of gpu or cpu (that rule is the state's, a 400). */
export const createPodSchema = {
  type: "object",
  additionalProperties: false,
  required: ["name"],
  properties: {
    ...podContainer,
    name: { type: "string", minLength: 1 },
    cloud: { enum: ["SECURE", "COMMUNITY"] },
    cpu: {
      type: "object",
      additionalProperties: false,
      required: ["id", "vcpuCount"],
      properties: { id: { type: "string", minLength: 1 }, vcpuCount: { type: "integer", minimum: 2 } },
    },
    dataCenterIds: strings,
    globalNetworking: { type: "boolean" },
    gpu: {
      type: "object",
      additionalProperties: false,
      required: ["id"],
      properties: {
        id: { type: "string" },
        count: { type: "integer", minimum: 1 },
        allowedCudaVersions: { type: "array", items: cuda },
        minCudaVersion: cuda,
      },
    },
    mounts,
    startJupyter: { type: "boolean" },
    startSsh: { type: "boolean" },
    templateId: { type: "string", minLength: 1 },
  },
  // image, unless templateId stands for it
  anyOf: [{ required: ["image"] }, { required: ["templateId"] }],
} as const;

export const updatePodSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...podContainer,
    globalNetworking: { type: "boolean" },
    locked: { type: "boolean" },
    mounts,
    name: { type: "string", minLength: 1 },
    templateId: { type: "string" },
  },
} as const;

export const podActionSchema = {
  type: "object",
  additionalProperties: false,
  required: ["action"],
  properties: { action: { enum: ["start", "stop", "restart", "terminate"] } },
} as const;

const ajv = new Ajv({ allErrors: true, strict: false });
const validators = {
  create: ajv.compile(createEndpointSchema),
  update: ajv.compile(updateEndpointSchema),
  registry: ajv.compile(createRegistrySchema),
  "pod-create": ajv.compile(createPodSchema),
  "pod-update": ajv.compile(updatePodSchema),
  "pod-action": ajv.compile(podActionSchema),
};

/** The body's violations as the API words them (`$.gpu.pools: must NOT have fewer than 1 items`); empty when valid. */
export function violations(kind: keyof typeof validators, body: unknown): string[] {
  const validate = validators[kind];
  if (validate(body)) return [];
  return (validate.errors ?? []).map(describe);
}

function describe(error: ErrorObject): string {
  const at = `$${error.instancePath.replace(/\//g, ".")}`;
  if (error.keyword === "additionalProperties") {
    return `${at}: additional properties '${(error.params as { additionalProperty: string }).additionalProperty}' not allowed`;
  }
  if (error.keyword === "enum") {
    return `${at}: must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.join(", ")}`;
  }
  return `${at}: ${error.message ?? error.keyword}`;
}
