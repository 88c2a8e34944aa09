// The REST v2 request bodies the local platform accepts, as JSON Schemas checked with ajv: the document's
// CreateEndpointRequest / UpdateEndpointRequest / CreateRegistryRequest flattened (nothing else may be sent).
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

const ajv = new Ajv({ allErrors: true, strict: false });
const validators = {
  create: ajv.compile(createEndpointSchema),
  update: ajv.compile(updateEndpointSchema),
  registry: ajv.compile(createRegistrySchema),
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
