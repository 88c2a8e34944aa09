// Log lines to stdout, gathered for up to GATHER_MS into one write: each write to a pipe is a system call that
// wakes its reader, about a quarter of a --rp_serve_api job's CPU at four lines a job (docs/benchmarks.md), and a
// job's "Finished." then goes out with the next job's "Started." in one write instead of two.
// Nothing waits behind user code: flushLog() runs before every handler call, and any other write to stdout or
// stderr (console.log, a child's relayed output) first writes the lines before it, so the order stays as logged.

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
let writeStdout: Write = (chunk) => process.stdout.write(chunk as string);

/** Writes the lines gathered so far; a no-op when there are none. */
export function flushLog(): void {
  scheduled = false;
  if (pending.length === 0) return;
  const chunk = pending;
  pending = "";
  if (!gone) writeStdout(chunk);
}

/** Wraps stdout's and stderr's write once, so what others write comes after the lines logged before it. */
function install(): void {
  installed = true;
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE" || err.code === "ERR_STREAM_DESTROYED") gone = true;
  });
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write.bind(stream) as Write;
    if (stream === process.stdout) writeStdout = original;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      flushLog();
      return original(chunk, ...rest);
    }) as typeof stream.write;
  }
  // Writes to pipes and files are synchronous here, so lines logged just before an exit still go out.
  process.on("exit", flushLog);
}

/** The logger's default destination: lines go out by the end of this turn of the event loop, in order. */
export const stdoutLines = {
  write(line: string): void {
    if (!installed) install();
    pending += line;
    if (pending.length > MAX_PENDING) flushLog();
    else if (!scheduled) {
      scheduled = true;
      if (timer) timer.refresh();
      else timer = setTimeout(flushLog, GATHER_MS).unref();
    }
  },
};
