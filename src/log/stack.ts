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

/** This package's own folder (dist/ or src/): frames there are the runtime's, not the user's. */
const RUNTIME_DIR = new URL("..", import.meta.url).pathname;
/** Frames of Node itself, of the TypeScript loaders (esbuild, tsx) and of this runtime. */
const INTERNAL_FRAME = /^\s+at .*?(node:|\/node_modules\/(esbuild|tsx)\/)/;

/** A stack as the user reads it: their frames, without the runtime's, Node's or the TypeScript loaders'. */
export function userStack(text: string): string {
  return text
    .split("\n")
    .filter((line) => !(INTERNAL_FRAME.test(line) || (/^\s+at /.test(line) && line.includes(RUNTIME_DIR))))
    .join("\n");
}
