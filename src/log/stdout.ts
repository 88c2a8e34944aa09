// Log lines to stdout, gathered for up to GATHER_MS into one write: each write to a pipe is a system call that
// wakes its reader, about a quarter of a --rp_serve_api job's CPU at four lines a job (docs/benchmarks-history.md),
// and a job's "Finished." then goes out with the next job's "Started." in one write instead of two.
// Nothing waits behind user code: flushLog() runs before every handler call, and any other write to stdout or
// stderr (console.log, a child's relayed output) first writes the lines before it, so the order stays as logged.
// The one module that replaces process.stdout.write: captureOutput taps it, the one-shot test redirects it.

type Write = (chunk: unknown, ...rest: unknown[]) => boolean;

/** A write larger than this goes out at once. */
const MAX_PENDING = 64 * 1024;
/** The longest a line waits for others to share its write (far below what a reader of logs notices). */
const GATHER_MS = 5;

let pending = "";
/** One timer, re-armed with refresh() (no new Timeout per write); unref'd, as process exit flushes. */
let timer: NodeJS.Timeout | undefined;
let scheduled = false;
let installed = false;
/** stdout whose reader went away (EPIPE) is dropped, instead of every failed write logging another error. */
let gone = false;
/** The streams' own writes, taken when this module wraps them. */
let rawStdout: Write = (chunk) => process.stdout.write(chunk as string);
let rawStderr: Write = (chunk) => process.stderr.write(chunk as string);
/** Set by stdoutToStderr(): what is written to stdout goes to stderr instead. */
let redirected = false;
/** Called with every chunk others write to stdout or stderr (captureOutput's). */
const taps: ((chunk: unknown) => void)[] = [];

/** Writes the lines gathered so far; a no-op when there are none. */
export function flushLog(): void {
  scheduled = false;
  if (pending.length === 0) return;
  const chunk = pending;
  pending = "";
  if (!gone) (redirected ? rawStderr : rawStdout)(chunk);
}

/**
 * The one place that replaces `process.stdout.write` and `process.stderr.write`, once: what others write comes
 * after the lines logged before it, is seen by the taps, and goes to stderr once stdout is the result's alone.
 */
function install(): void {
  if (installed) return;
  installed = true;
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE" || err.code === "ERR_STREAM_DESTROYED") gone = true;
  });
  rawStdout = process.stdout.write.bind(process.stdout) as Write;
  rawStderr = process.stderr.write.bind(process.stderr) as Write;
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    flushLog();
    for (const tap of taps) tap(chunk);
    return (redirected ? rawStderr : rawStdout)(chunk, ...rest);
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
    flushLog();
    for (const tap of taps) tap(chunk);
    return rawStderr(chunk, ...rest);
  }) as typeof process.stderr.write;
  // Writes to pipes and files are synchronous here, so lines logged just before an exit still go out.
  process.on("exit", flushLog);
}

/** Calls `tap` with every chunk written to stdout or stderr from now on (the log's own gathered lines aside). */
export function tapStdio(tap: (chunk: unknown) => void): void {
  install();
  taps.push(tap);
}

/** Sends everything written to stdout from now on to stderr, and returns the one way left to write to stdout. */
export function stdoutToStderr(): (text: string) => void {
  install();
  flushLog();
  redirected = true;
  return (text) => {
    flushLog();
    rawStdout(text);
  };
}

/** The logger's default destination: lines go out by the end of this turn of the event loop, in order. */
export const stdoutLines = {
  write(line: string): void {
    install();
    pending += line;
    if (pending.length > MAX_PENDING) flushLog();
    else if (!scheduled) {
      scheduled = true;
      if (timer) timer.refresh();
      else timer = setTimeout(flushLog, GATHER_MS).unref();
    }
  },
};
