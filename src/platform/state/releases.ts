// An endpoint's releases: its version, the change each version made, and which workers run an older one.
import { newShortId } from "./ids.js";

export interface DiffEntry {
  field: string;
  old: unknown;
  new: unknown;
}

export interface Release {
  id: string;
  version: number;
  createdAt: string;
  diff: DiffEntry[];
}

/** Record fields as releases name them (template.* for the container's). */
const FIELD_NAMES: Record<string, string> = {
  image: "template.imageName",
  args: "template.dockerArgs",
  env: "template.env",
  disk: "template.containerDiskInGb",
};

/** Changed fields between two versions of a record, named as releases name them. */
export function differences(before: object, after: object): DiffEntry[] {
  const was = before as Record<string, unknown>;
  const out: DiffEntry[] = [];
  for (const [key, value] of Object.entries(after)) {
    if (JSON.stringify(was[key]) !== JSON.stringify(value)) {
      out.push({ field: FIELD_NAMES[key] ?? key, old: was[key] ?? null, new: value ?? null });
    }
  }
  return out;
}

export class Releases {
  /** Newest first. */
  readonly list: Release[] = [];
  version = 1;
  /** When the current version took effect: workers started before it are stale. */
  private since = Date.now();

  /** Version 1, made by `first` (the image it was created from). */
  constructor(first: DiffEntry[]) {
    this.list.push(release(1, first));
  }

  /** A new version making `diff`; no version for an empty one. */
  next(diff: DiffEntry[]): void {
    if (diff.length === 0) return;
    this.version++;
    this.list.unshift(release(this.version, diff));
  }

  /** The workers were replaced: only those started from now on run the current version. */
  rolledOut(at = Date.now()): void {
    this.since = at;
  }

  /** A worker started before the current version took effect. */
  isStale(startedAt: number): boolean {
    return startedAt < this.since;
  }

  /** The version a worker started at `startedAt` runs (one back when it is stale). */
  versionAt(startedAt: number): number {
    return this.isStale(startedAt) ? this.version - 1 : this.version;
  }

  /** How far the current version has reached the workers started at these times. */
  rollout(startedAt: number[]) {
    const onLatest = startedAt.filter((t) => !this.isStale(t)).length;
    const total = startedAt.length;
    return {
      inProgress: onLatest < total,
      workersOnLatest: onLatest,
      workersTotal: total,
      percentOnLatest: total === 0 ? 0 : Math.round((onLatest * 100) / total),
    };
  }
}

function release(version: number, diff: DiffEntry[]): Release {
  return { id: newShortId(8), version, createdAt: new Date().toISOString(), diff };
}
