// `flash deploy --pod`: the app's image built and pushed as for endpoints, then run as a Pod (POST /v2/pods, or
// PATCH the Pod of the same name), recorded in .flash/deployments.json, and followed until the app answers.

import { nodeTransport } from "../../http/wire.js";
import type { Logger } from "../../log/index.js";
import { readDeployments, writeDeployments } from "../../project/deployments.js";
import type { ManifestEndpoint } from "../bundle/index.js";
import { checkImageName } from "../image/build.js";
import { isApiError, type RestClient } from "../rest/client.js";
import { apiErrorSentence } from "../rest/errors.js";
import type { CreatePodRequest, GpuCatalogType, RestPod, WorkerLogEvent } from "../rest/types.js";
import {
  asDeployError,
  buildApp,
  DeployError,
  type DeployOptions,
  pushAppImage,
  registryCredential,
} from "./deploy.js";
import { EndpointMappingError } from "./mapping.js";
import {
  appPort,
  deployedPod,
  POD_API_ENDPOINT,
  type PodPort,
  pinnedImage,
  podAddresses,
  podRequest,
  podUpdate,
} from "./pod.js";

export interface PodDeployOptions extends DeployOptions {
  /** --gpu: a GPU type id. */
  gpu?: string;
  /** --port, in order. */
  ports: readonly PodPort[];
}

export interface DeployedPodEntry {
  endpoint: ManifestEndpoint;
  pod: RestPod;
  action: "created" | "updated";
  /** The port the app listens on. */
  app: PodPort;
  /** Time of the Pod's last log line before this deploy changed it: older lines are its previous container's. */
  logsAfter?: string;
}

export async function deployPod(options: PodDeployOptions): Promise<DeployedPodEntry> {
  const { api, log } = options;
  checkImageName(options.image);
  // The key and the API first: a refused key should not cost a build.
  let existing: RestPod[];
  let catalog: GpuCatalogType[];
  try {
    existing = await api.listPods();
    catalog = await api.gpuTypes();
  } catch (err) {
    throw asDeployError(err, api.url);
  }
  const built = await buildApp(options);
  const endpoints = built.manifest.endpoints;
  const endpoint = endpoints[0];
  if (!endpoint || endpoints.length > 1) {
    throw new EndpointMappingError(
      `A Pod runs one endpoint, and this app has ${endpoints.length} (${endpoints.map((e) => e.file).join(", ")}): name the one to run, e.g. flash deploy --pod ${endpoints[0]?.file ?? "handler.ts"}`,
    );
  }
  const same = existing.filter((p) => p.name === endpoint.name);
  if (same.length > 1) {
    throw new EndpointMappingError(
      `Pod ${endpoint.name}: ${same.length} Pods on ${api.url} have this name (${same.map((p) => p.id).join(", ")}), so flash deploy cannot tell which to update. Delete the extra ones (flash undeploy <id>), or rename this endpoint.`,
    );
  }
  const current = same[0];
  const mapping = {
    endpoint,
    gpu: options.gpu,
    ports: options.ports,
    catalog,
    apiKey: api.apiKey,
  };
  // Mapped before the image is built: a bad GPU, port or compute change fails in seconds.
  const planned = podRequest({ ...mapping, image: options.image });
  if (current) podUpdate(current, planned);

  const image = await pushAppImage(options, built);
  const registry = options.registryAuth ? await registryCredential(options) : undefined;
  const body: CreatePodRequest = podRequest({
    ...mapping,
    image: pinnedImage(image.image, image.digest),
    registry,
  });
  const podLog = log.child({ subject: `Pod:${endpoint.name}` });
  const logsAfter = current ? await lastLogTime(api, current.id) : undefined;
  let pod: RestPod;
  try {
    if (current) {
      pod = await api.updatePod(current.id, podUpdate(current, body));
      podLog.info(`Updated pod: ${pod.id} - ${pod.name}`);
    } else {
      pod = await api.createPod(body);
      podLog.info(`Created pod: ${pod.id} - ${pod.name}`);
    }
  } catch (err) {
    const sentence = isApiError(err)
      ? apiErrorSentence(err, `pod ${endpoint.name}`, api.url)
      : asDeployError(err, api.url).message;
    throw new DeployError(
      `Failed to provision the Pod ${endpoint.name}: ${sentence}. ${current ? `Pod ${current.id} keeps what it ran.` : "No Pod was created."}`,
    );
  }
  const entry: DeployedPodEntry = {
    endpoint,
    pod,
    action: current ? "updated" : "created",
    app: appPort(endpoint, options.ports),
    logsAfter,
  };
  recordPod(options.root, api.url, entry);
  return entry;
}

/** The time of the Pod's last log line, if it has any (and the API serves them). */
async function lastLogTime(api: RestClient, id: string): Promise<string | undefined> {
  let last: string | undefined;
  await api.podLogs(id, { tail: 1, follow: false, onEvent: (e) => (last = e.ts) }).catch(() => undefined);
  return last;
}

/** Writes the Pod into .flash/deployments.json beside the endpoints this app deployed to the same API. */
export function recordPod(root: string, apiUrl: string, entry: DeployedPodEntry): void {
  const previous = readDeployments(root);
  const same = previous?.platform === apiUrl ? previous : undefined;
  writeDeployments(root, {
    platform: apiUrl,
    deployedAt: new Date().toISOString(),
    image: same?.image,
    endpoints: same?.endpoints ?? {},
    pods: { ...same?.pods, [entry.endpoint.name]: deployedPod(apiUrl, entry.pod, entry.endpoint, entry.app) },
  });
}

export interface PodWaitOptions {
  api: RestClient;
  timeoutMs: number;
  log: Logger;
  /** Between two looks. */
  pollMs?: number;
}

/** Log lines of a failing Pod shown with the error. */
const LAST_LINES = 20;

/**
 * Follows the Pod until it runs and its app answers (`/ping` 200 for a load-balanced app, the test API's
 * `/health` for a queue app); resolves with the Pod as it then is and how it was proven, throws DeployError
 * when the Pod fails or the time runs out.
 */
export async function waitForPod(
  entry: DeployedPodEntry,
  options: PodWaitOptions,
): Promise<{ pod: RestPod; how: string }> {
  const { api } = options;
  const name = entry.endpoint.name;
  const id = entry.pod.id;
  const deadline = Date.now() + options.timeoutMs;
  const pollMs = options.pollMs ?? 1_000;
  let last = "";
  for (;;) {
    let pod: RestPod;
    try {
      pod = await api.getPod(id);
    } catch (err) {
      throw asDeployError(err, api.url);
    }
    if (pod.status === "ERROR" || pod.status === "EXITED" || pod.status === "TERMINATED") {
      throw await failed(api, pod, `the Pod is ${pod.status}`, entry.logsAfter);
    }
    if (pod.status === "RUNNING") {
      const target = appTarget(api, pod, entry);
      if (target) {
        const answer = await nodeTransport({ method: "GET", ...target, timeoutMs: 10_000 }).catch(
          (err: Error) => err,
        );
        if (!(answer instanceof Error) && answer.response.status === 200) {
          return { pod, how: `GET ${target.url} answered 200` };
        }
        last =
          answer instanceof Error
            ? `GET ${target.url}: ${answer.message}`
            : `GET ${target.url} answered ${answer.response.status}`;
      }
    } else last = `the Pod is ${pod.status}`;
    if (Date.now() >= deadline) {
      throw new DeployError(
        `Pod ${name} (${id}): its app did not answer within ${Math.round(options.timeoutMs / 1000)} s (--wait-timeout); last: ${last}. It is deployed: flash logs ${name} shows what it says; flash undeploy ${name} removes it.`,
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(0, deadline - Date.now()))));
  }
}

/** What proves the app: its /ping, or the test API's health (the key the Pod was given). */
function appTarget(
  api: RestClient,
  pod: RestPod,
  entry: DeployedPodEntry,
): { url: string; headers: Record<string, string> } | undefined {
  const { http, tcp } = podAddresses(api.url, pod);
  const port = String(entry.app.port);
  const base = entry.app.type === "http" ? http[port] : tcp[port] && `http://${tcp[port]}`;
  if (!base) return undefined;
  if (entry.endpoint.kind === "load-balanced") return { url: `${base}/ping`, headers: {} };
  return {
    url: `${base}/v2/${POD_API_ENDPOINT}/health`,
    headers: { Authorization: `Bearer ${api.apiKey}` },
  };
}

/** The DeployError of a Pod that stopped, with its last log lines since `after` (this deploy's container's). */
async function failed(
  api: RestClient,
  pod: RestPod,
  cause: string,
  after: string | undefined,
): Promise<DeployError> {
  const lines: string[] = [];
  const onEvent = (e: WorkerLogEvent) => {
    if (after === undefined || e.ts > after) lines.push(e.line);
  };
  await api.podLogs(pod.id, { tail: LAST_LINES, follow: false, onEvent }).catch(() => undefined);
  const shown = lines.length
    ? ` Its last log lines:\n${lines
        .slice(-LAST_LINES)
        .map((l) => `    ${l}`)
        .join("\n")}\n`
    : " ";
  return new DeployError(
    `Pod ${pod.name} (${pod.id}) did not start: ${cause}.${shown}It is deployed but not working: fix the cause and deploy again, or flash undeploy ${pod.name}.`,
  );
}
