// The rest of a Pod's life through REST v2, beside endpoints': find what a name means (an endpoint, a Pod, or
// both), delete them (a few at a time) and forget them in .flash/deployments.json, list Pods with their
// addresses, read a Pod's logs.

import { readDeployments, writeDeployments } from "../../project/deployments.js";
import type { RestClient } from "../rest/client.js";
import type { RestEndpoint, RestPod } from "../rest/types.js";
import { LifecycleError, withApi } from "./lifecycle.js";
import { podAddresses } from "./pod.js";

/** What `flash undeploy` deletes. */
export interface Doomed {
  endpoints: RestEndpoint[];
  pods: RestPod[];
}

/** The endpoints and Pods `flash undeploy` deletes: those named (by name or id), or every one this app recorded. */
export async function resourcesToDelete(
  api: RestClient,
  root: string,
  names: readonly string[],
  all: boolean,
): Promise<Doomed> {
  if (!all && names.length === 0) {
    throw new LifecycleError("Name the endpoints or Pods to delete (flash undeploy NAME...), or pass --all");
  }
  const recorded = readDeployments(root);
  const mine = recorded?.platform === api.url ? recorded : undefined;
  if (all && Object.keys({ ...mine?.endpoints, ...mine?.pods }).length === 0) {
    throw new LifecycleError(
      `No endpoints or Pods of this app are recorded for ${api.url} in ${root}/.flash/deployments.json; name them: flash undeploy NAME...`,
    );
  }
  const endpoints = await withApi(api, "the endpoint list", () => api.listEndpoints());
  const pods = await withApi(api, "the Pod list", () => api.listPods());
  if (all) {
    const endpointIds = new Set(Object.values(mine?.endpoints ?? {}).map((e) => e.id));
    const podIds = new Set(Object.values(mine?.pods ?? {}).map((p) => p.id));
    return {
      endpoints: endpoints.filter((e) => endpointIds.has(e.id)),
      pods: pods.filter((p) => podIds.has(p.id)),
    };
  }
  const doomed: Doomed = { endpoints: [], pods: [] };
  for (const ref of names) {
    const endpoint = oneNamed(endpoints, ref, "endpoints");
    const pod = oneNamed(pods, ref, "Pods");
    if (!endpoint && !pod) {
      const there = [...endpoints.map((e) => e.name), ...pods.map((p) => `${p.name} (Pod)`)];
      throw new LifecycleError(
        `No endpoint or Pod named ${ref} on ${api.url}${there.length ? ` (there: ${there.join(", ")})` : " (it has none)"}`,
      );
    }
    if (endpoint) doomed.endpoints.push(endpoint);
    if (pod) doomed.pods.push(pod);
  }
  return doomed;
}

/** The one resource with this id, else this name; a name two share is refused. */
function oneNamed<T extends { id: string; name: string }>(
  all: readonly T[],
  ref: string,
  what: string,
): T | undefined {
  const byId = all.find((r) => r.id === ref);
  if (byId) return byId;
  const named = all.filter((r) => r.name === ref);
  if (named.length > 1) {
    throw new LifecycleError(
      `${named.length} ${what} are named ${ref} (${named.map((r) => r.id).join(", ")}): name one by its id`,
    );
  }
  return named[0];
}

/** At most this many DELETEs at once: `--all` of a large app is not one call after another, nor a burst. */
export const DELETE_CONCURRENCY = 4;

/** One endpoint's or Pod's deletion, reported as it ends: `error` says why it failed. */
export interface Deletion {
  kind: "endpoint" | "Pod";
  name: string;
  id: string;
  error?: Error;
}

/**
 * Deletes the endpoints and Pods, DELETE_CONCURRENCY at a time, telling `done` of each as it ends; then forgets those
 * deleted in .flash/deployments.json. A failure does not stop the others: every deletion is in the result.
 */
export async function deleteResources(
  api: RestClient,
  root: string,
  doomed: Doomed,
  done: (deletion: Deletion) => void = () => {},
): Promise<Deletion[]> {
  const work = [
    ...doomed.endpoints.map((e) => ({ kind: "endpoint" as const, name: e.name, id: e.id })),
    ...doomed.pods.map((p) => ({ kind: "Pod" as const, name: p.name, id: p.id })),
  ];
  const results: Deletion[] = [];
  let next = 0;
  const lane = async () => {
    while (next < work.length) {
      const item = work[next++]!;
      const deletion: Deletion = { ...item };
      try {
        await withApi(api, `${item.kind} ${item.name}`, () =>
          item.kind === "endpoint" ? api.deleteEndpoint(item.id) : api.deletePod(item.id),
        );
      } catch (err) {
        deletion.error = err as Error;
      }
      results.push(deletion);
      done(deletion);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, work.length) }, lane));
  } finally {
    forget(root, api.url, new Set(results.filter((d) => !d.error).map((d) => d.id)));
  }
  return results;
}

/** Drops the deleted endpoints and Pods from .flash/deployments.json. */
function forget(root: string, apiUrl: string, deleted: ReadonlySet<string>): void {
  const recorded = readDeployments(root);
  if (!recorded || recorded.platform !== apiUrl || deleted.size === 0) return;
  const endpoints = Object.fromEntries(
    Object.entries(recorded.endpoints).filter(([, e]) => !deleted.has(e.id)),
  );
  const pods = Object.entries(recorded.pods ?? {}).filter(([, p]) => !deleted.has(p.id));
  writeDeployments(root, {
    ...recorded,
    endpoints,
    pods: pods.length > 0 ? Object.fromEntries(pods) : undefined,
  });
}

/** The Pods as a table: name, id, status, compute, cost, uptime, then each port's address. */
export function formatPods(apiUrl: string, pods: readonly RestPod[]): string {
  if (pods.length === 0) return "No Pods.";
  const lines: string[] = [];
  for (const pod of pods) {
    const compute = pod.gpu
      ? `gpu ${pod.gpu.count}x ${pod.gpu.id}`
      : `cpu ${pod.cpu?.id}x${pod.cpu?.vcpuCount} ${pod.cpu?.memory} GB`;
    const uptime = pod.runtime?.uptime != null ? `  up ${pod.runtime.uptime}s` : "";
    lines.push(
      `${pod.name}  ${pod.id}  ${pod.status}  ${compute}  $${pod.cost.toFixed(2)}/hr${uptime}  ${pod.image}`,
    );
    const { http, tcp } = podAddresses(apiUrl, pod);
    for (const exposed of pod.ports) {
      const [port, type] = exposed.split("/");
      const where =
        type === "http"
          ? http[port!]
          : (tcp[port!] ?? (pod.status === "RUNNING" ? "(no public port)" : "(once it runs)"));
      lines.push(`  ${port}/${type}  ${where}`);
    }
  }
  return lines.join("\n");
}

/** The Pod named `ref` (its name or id), or undefined. */
export async function findPod(api: RestClient, ref: string): Promise<RestPod | undefined> {
  const pods = await withApi(api, "the Pod list", () => api.listPods());
  return oneNamed(pods, ref, "Pods");
}

/** A Pod's log lines; with `follow`, until `signal` aborts. */
export async function podLogs(
  api: RestClient,
  pod: RestPod,
  options: { follow: boolean; signal: AbortSignal; write(line: string): void },
): Promise<void> {
  await withApi(api, `the logs of Pod ${pod.name}`, () =>
    api.podLogs(pod.id, {
      follow: options.follow,
      signal: options.signal,
      onEvent: (event) => options.write(event.line),
    }),
  );
}
