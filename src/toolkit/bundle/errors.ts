// The build's one error (BuildError) and the sizes its messages and `flash build` print.
import { FlashError } from "../../flash-error.js";
/** A build that cannot go on; the message says what to change (docs/design.md §4.4: tests assert it). */
export class BuildError extends FlashError {
  readonly code = "BUILD_FAILED";
  override name = "BuildError";
}

/** "812 B", "12.3 KB", "1.5 MB", "1.50 GB". */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}
