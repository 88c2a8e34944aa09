// How a thrown value reads in a log line.

/** Formats an unknown thrown value for a log line. */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? ` (cause: ${err.cause.message})` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}
