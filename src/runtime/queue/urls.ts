// The platform URLs a worker calls, built from the RUNPOD_WEBHOOK_* templates.
import type { ProtocolConfig } from "../config/options.js";

/**
 * Appends query parameters without re-encoding the template's own query (which the platform wrote),
 * and with `?` when the template has none, where runpod-python blindly appends `&` (docs/protocol.md §12.4).
 */
export function appendQuery(url: string, params: Record<string, string | number | undefined>): string {
  const pairs = Object.entries(params)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  if (pairs.length === 0) return url;
  const hash = url.indexOf("#");
  const base = hash >= 0 ? url.slice(0, hash) : url;
  const separator = !base.includes("?") ? "?" : base.endsWith("?") || base.endsWith("&") ? "" : "&";
  return `${base}${separator}${pairs.join("&")}${hash >= 0 ? url.slice(hash) : ""}`;
}

/** runpod-python cuts the fitness-failure reason to this many characters (docs/protocol.md §3.8). */
export const UNHEALTHY_REASON_MAX = 256;

/** The platform URLs a worker calls, built from the env templates exactly as docs/protocol.md §2.1 says. */
export interface PlatformUrls {
  take(count: number, jobInProgress: boolean): string;
  /** undefined when the take URL has no `/job-take/` segment: the stop channel is then off (docs/protocol.md §3.3). */
  stop: string | undefined;
  done(jobId: string, isStream: boolean): string;
  stream(jobId: string): string;
  ping(jobIds: readonly string[], version: string): string | undefined;
  /** The fitness-failure report: the ping URL with status=unhealthy, the check and its reason (§3.8). */
  unhealthy(check: string, reason: string, version: string): string | undefined;
}

export function platformUrls(platform: ProtocolConfig): PlatformUrls {
  // job-take substitutes only $ID; the others substitute $RUNPOD_POD_ID, then $ID per job (docs/protocol.md §2.1, §12.5).
  const takeUrl = (platform.getJobUrl ?? "").replaceAll("$ID", platform.workerId);
  const doneTemplate = platform.postOutputUrl.replaceAll("$RUNPOD_POD_ID", platform.workerId);
  const streamTemplate = platform.postStreamUrl.replaceAll("$RUNPOD_POD_ID", platform.workerId);
  const pingUrl = platform.pingUrl?.replaceAll("$RUNPOD_POD_ID", platform.workerId);
  const forJob = (template: string, jobId: string) => template.replaceAll("$ID", encodeURIComponent(jobId));
  const inProgress = (busy: boolean) => (busy ? 1 : 0);
  // Built once: the query goes on the template, as an encoded id holds no `?`, `#` or `&` to change where it goes.
  const doneUrls = {
    true: appendQuery(doneTemplate, { isStream: "true" }),
    false: appendQuery(doneTemplate, { isStream: "false" }),
  };
  // Stream posts always say isStream=false, as runpod-python sends them (docs/protocol.md §3.5, §12.2).
  const streamUrl = appendQuery(streamTemplate, { isStream: "false" });
  const singleTake = [
    appendQuery(takeUrl, { job_in_progress: 0 }),
    appendQuery(takeUrl, { job_in_progress: 1 }),
  ];
  return {
    take: (count, busy) =>
      count > 1
        ? appendQuery(takeUrl.replace("/job-take/", "/job-take-batch/"), {
            batch_size: count,
            job_in_progress: inProgress(busy),
          })
        : singleTake[inProgress(busy)]!,
    stop: takeUrl.includes("/job-take/") ? takeUrl.replace("/job-take/", "/job-stop/") : undefined,
    done: (jobId, isStream) => forJob(doneUrls[`${isStream}`], jobId),
    stream: (jobId) => forJob(streamUrl, jobId),
    ping: (jobIds, version) =>
      pingUrl === undefined
        ? undefined
        : appendQuery(pingUrl, {
            job_id: jobIds.length > 0 ? jobIds.join(",") : undefined,
            runpod_version: version,
          }),
    unhealthy: (check, reason, version) =>
      pingUrl === undefined || pingUrl === "PING_NOT_SET"
        ? undefined
        : appendQuery(pingUrl, {
            status: "unhealthy",
            check,
            reason: reason.slice(0, UNHEALTHY_REASON_MAX),
            runpod_version: version,
          }),
  };
}
