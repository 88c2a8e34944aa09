// Error stacks as they leave the process (results, logs): no frame may carry a module's source text.

/** A stack frame in a module run from a data: URL, which holds the module's whole source text. */
const DATA_URL_FRAME = /^(\s+at .*?)(data:[^,\s]*,).*?(:\d+:\d+)?(\)?)$/gm;

/** The error's stack (else `fallback`), with data: URL frames cut to their type and position. */
export function stackText(err: unknown, fallback: string): string {
  if (!(err instanceof Error) || !err.stack) return fallback;
  return err.stack.replace(
    DATA_URL_FRAME,
    (_m, at: string, scheme: string, position: string | undefined, close: string) =>
      `${at}${scheme}…${position ?? ""}${close}`,
  );
}
