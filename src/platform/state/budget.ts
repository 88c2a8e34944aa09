// The platform's memory budget for job payloads: what a request is refused with when unfinished jobs fill it.
import { getHeapStatistics } from "node:v8";
import { FlashError } from "../../flash-error.js";

/**
 * The default budget: a quarter of V8's heap limit (1036 MB under Node 20's default on a 23 GB host). Payloads are
 * counted by their size and shape (src/http/json.ts jsonCost); the rest of the heap is for bodies being parsed,
 * answers being written and the platform itself.
 */
export function defaultMemoryBudget(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 4);
}

/** `12.3 MB`, `4.0 KB` or `512 bytes`. */
function size(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${bytes} bytes`;
}

/** A request refused because the jobs not yet finished hold the budget (answered 429). */
export class PlatformMemoryFull extends FlashError {
  readonly code = "PLATFORM_MEMORY_FULL";
  override name = "PlatformMemoryFull";
  constructor(
    readonly needed: number,
    readonly unfinished: number,
    readonly budget: number,
  ) {
    super(
      `The platform's memory budget for job payloads is full: this request needs ${size(needed)}, and jobs not yet finished hold ${size(unfinished)} of ${size(budget)} (FLASH_PLATFORM_MEMORY_MB). Retry when jobs finish, or give the platform more`,
    );
  }
}
