// Which job ids the worker runs: an id must travel everywhere the protocol names it (a result URL's path, the ping's
// comma-separated list, log lines), and the platform makes them (`<uuid>-e1`), so any other id is a broken platform's.

/** The longest job id the worker runs: every ping names each id in flight in its URL (RunPod's ids: 39–44 characters). */
export const JOB_ID_MAX_CHARS = 256;

/** Why a job is not run, and whether its id can still be answered with an error (its result URL can name it). */
export interface RefusedJobId {
  reason: string;
  answerable: boolean;
}

const LONE_SURROGATE = /\p{Surrogate}/u;
const CONTROL = /\p{Cc}/u;
/** What X-Request-ID carries as it is: printable ASCII, as every platform id is. */
const HEADER_SAFE = /^[\x20-\x7e]+$/;

/** The id as a log line or an error shows it: JSON-escaped, cut at 64 characters. */
export function shownJobId(id: string): string {
  return JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id);
}

/** Why no URL can name this id, or undefined: too long, a lone surrogate (no UTF-8 for it), or a dot segment. */
function unaddressable(id: string): string | undefined {
  if (id.length > JOB_ID_MAX_CHARS) {
    return `Job id ${shownJobId(id)} is ${id.length} characters long, over the limit of ${JOB_ID_MAX_CHARS}.`;
  }
  if (LONE_SURROGATE.test(id)) {
    return `Job id ${shownJobId(id)} holds a lone UTF-16 surrogate, which no URL can carry.`;
  }
  // URL parsers remove "." and ".." (even as %2E%2E, RFC 3986 §6.2.2.2) from a path: the result would reach no job.
  if (id === "." || id === "..")
    return `Job id ${shownJobId(id)} is a dot segment, which no URL path can carry.`;
  return undefined;
}

/** Why the worker will not run a job with this id, or undefined for an id it can name everywhere. */
export function refusedJobId(id: string): RefusedJobId | undefined {
  const unaddressed = unaddressable(id);
  if (unaddressed) return { reason: unaddressed, answerable: false };
  const control = CONTROL.exec(id)?.[0];
  if (control !== undefined) {
    const code = control.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    const reason = `Job id ${shownJobId(id)} holds a control character (U+${code}), which no header or log line can carry; the job is not run.`;
    return { reason, answerable: true };
  }
  if (id.includes(",")) {
    const reason = `Job id ${shownJobId(id)} holds a comma, which the heartbeat's comma-separated job_id list cannot carry; the job is not run.`;
    return { reason, answerable: true };
  }
  return undefined;
}

/** Whether X-Request-ID can carry the id as it is; a header past printable ASCII is left out (the URL names the job). */
export function fitsRequestIdHeader(id: string): boolean {
  return HEADER_SAFE.test(id);
}
