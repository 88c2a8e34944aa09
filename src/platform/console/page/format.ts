// How times, durations and statuses read on the page.
import type { JobStatus, WorkerState } from "../wire.js";

export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined) return "–";
  if (value < 1_000) return `${Math.round(value)} ms`;
  if (value < 60_000) return `${(value / 1_000).toFixed(value < 10_000 ? 2 : 1)} s`;
  return `${(value / 60_000).toFixed(1)} min`;
}

export function clock(time: number | undefined): string {
  if (time === undefined) return "–";
  return new Date(time).toLocaleTimeString(undefined, { hour12: false });
}

export function clockMs(time: number): string {
  const d = new Date(time);
  return `${d.toLocaleTimeString(undefined, { hour12: false })}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

export const STATUS_CLASS: Record<JobStatus, string> = {
  IN_QUEUE: "queued",
  IN_PROGRESS: "progress",
  COMPLETED: "ok",
  FAILED: "bad",
  CANCELLED: "muted",
  TIMED_OUT: "bad",
};

export const WORKER_CLASS: Record<WorkerState, string> = {
  starting: "queued",
  idle: "ok",
  running: "progress",
  unhealthy: "bad",
  stopping: "muted",
  exited: "muted",
};

export function pretty(value: unknown): string {
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
