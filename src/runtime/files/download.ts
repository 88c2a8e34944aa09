// download(): a file named by URL fetched into the job's folder, behind the address guard, size cap and timeout.

// node:crypto, node:dns and node:fs/promises load on the first download (process.getBuiltinModule, the global
// crypto): `import "flash-worker"` is on every worker's start path, and most workers never download.
import type { lookup as dnsLookup, LookupAddress } from "node:dns";
import { createWriteStream } from "node:fs";
import { isIP, type LookupFunction } from "node:net";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Agent, buildConnector } from "undici";
import { ArgumentError, FlashError, isFlashError } from "../../flash-error.js";
import { currentJob } from "../../job/scope.js";
import { redactUrl } from "../../log/index.js";
import { tracing } from "../../trace/index.js";
import { VERSION } from "../../version.js";
import { readFilesConfig } from "../config/options.js";
import { type AddressPolicy, ANY_ADDRESS, PUBLIC_ONLY } from "./address.js";

export interface DownloadOptions {
  /** Largest body accepted, in bytes; RUNPOD_MAX_DOWNLOAD_BYTES (default 5 GiB) when not given. */
  maxBytes?: number;
  /** Longest wait for the connection, the headers, or the next body bytes (default 30 s). */
  timeoutMs?: number;
  /** Redirects followed, each hop checked again (default 5). */
  maxRedirects?: number;
  /** Folder to save in; default the job's folder (removed when the job ends), or outside a job a new temp folder. */
  dir?: string;
  headers?: Record<string, string>;
  /** Stops the download; the job's own signal always does. */
  signal?: AbortSignal;
}

export interface DownloadedFile {
  /** Absolute path of the saved file: a random name with the extension the server or URL gave. */
  path: string;
  size: number;
  /** The Content-Type header, or application/octet-stream when the server sent none. */
  contentType: string;
}

export class DownloadError extends FlashError {
  readonly code = "DOWNLOAD_FAILED";
  override name = "DownloadError";
}

/** How a download connects: which addresses it may reach, and the resolver (tests stand in for DNS). */
export interface Connection {
  policy: AddressPolicy;
  resolve?: typeof dnsLookup;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const ALLOW_HINT = "set RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS=true to allow private addresses";

/** A refusal found while connecting; the download turns it into a DownloadError naming the URL. */
class Refused extends FlashError {
  readonly code = "DOWNLOAD_REFUSED";
  override name = "Refused";
}

/**
 * Fetches `url` (http or https) to a local file, as runpod-python's rp_download does: loopback, private,
 * link-local and metadata addresses are refused unless RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS=true, checked
 * on the address actually connected to, on every redirect hop.
 */
export async function download(url: string | URL, options: DownloadOptions = {}): Promise<DownloadedFile> {
  const config = readFilesConfig();
  const given = { maxBytes: config.maxDownloadBytes, ...options };
  const connection = { policy: config.allowPrivateDownloads ? ANY_ADDRESS : PUBLIC_ONLY };
  // Tracing on: a "download" span, a child of the handler's.
  if (!tracing) return downloadWith(url, given, connection);
  return tracing.span("download", { "url.full": redactUrl(url) }, () => downloadWith(url, given, connection));
}

/** download() with the address policy given: the guard's own tests use it. */
export async function downloadWith(
  url: string | URL,
  options: DownloadOptions,
  connection: Connection,
): Promise<DownloadedFile> {
  const maxBytes = positive(options.maxBytes ?? readFilesConfig().maxDownloadBytes, "maxBytes");
  const timeoutMs = positive(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const scope = currentJob();
  const signals = [options.signal, scope?.signal].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
  // Loaded on first use: workers that never download should not pay undici's import (docs/design.md §4.8).
  const undici = await import("undici");
  const agent = guardedAgent(undici, connection, timeoutMs);
  let current = httpUrl(String(url));
  try {
    for (let hop = 0; ; hop++) {
      refuseLiteral(current, connection.policy);
      const response = await undici.request(current, {
        dispatcher: agent,
        method: "GET",
        headers: { "user-agent": `flash-worker/${VERSION}`, ...options.headers },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      const { statusCode, headers, body } = response;
      if (REDIRECT_STATUSES.has(statusCode)) {
        await body.dump();
        const location = first(headers.location);
        if (!location)
          throw new DownloadError(`download: ${redactUrl(current)} redirected without a Location header`);
        if (hop >= maxRedirects) {
          throw new DownloadError(
            `download: more than ${maxRedirects} redirects, starting from ${redactUrl(url)}`,
          );
        }
        current = httpUrl(new URL(location, current).href);
        continue;
      }
      if (statusCode < 200 || statusCode >= 300) {
        await body.dump();
        throw new DownloadError(`download: ${redactUrl(current)} answered HTTP ${statusCode}`);
      }
      const declared = Number(first(headers["content-length"]));
      if (Number.isFinite(declared) && declared > maxBytes) {
        // Dropping the body aborts the request; its abort error is expected, not news.
        body.once("error", () => undefined).destroy();
        throw tooLarge(current, maxBytes, `${declared} bytes declared`);
      }
      const folder =
        options.dir ??
        (scope ? await scope.folder() : await fsPromises().mkdtemp(join(tmpdir(), "flash-download-")));
      const path = join(
        folder,
        `${crypto.randomUUID()}${extension(current, first(headers["content-disposition"]))}`,
      );
      const size = await save(body, path, maxBytes, current);
      return { path, size, contentType: first(headers["content-type"]) ?? "application/octet-stream" };
    }
  } catch (err) {
    throw explain(err, current, timeoutMs, signal);
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ArgumentError(`download: ${name} must be a whole number >= 1, got ${String(value)}`);
  }
  return value;
}

/** The URL, checked whole before any request: a URL, http or https, every % of its path starting an escape. */
function httpUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DownloadError(`download: not a URL: ${JSON.stringify(redactUrl(text))}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new DownloadError(
      `download: blocked URL scheme "${url.protocol}" in ${redactUrl(url)}: only http and https`,
    );
  }
  const stray = badEscape(url.pathname);
  if (stray !== undefined) {
    throw new DownloadError(
      `download: ${redactUrl(url)}: malformed percent-escape "${stray}" in its path (a % starts two hex digits)`,
    );
  }
  return url;
}

/** The first `%` in `path` that does not start a %XX escape (RFC 3986 §2.1), as written. */
function badEscape(path: string): string | undefined {
  return /%(?![0-9A-Fa-f]{2}).{0,2}/.exec(path)?.[0];
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A host written as an IP address is never looked up: it is checked here, before connecting. */
function refuseLiteral(url: URL, policy: AddressPolicy): void {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) === 0) return;
  const kind = policy(host);
  if (kind) {
    throw new DownloadError(`download: refused ${redactUrl(url)}: ${host} is ${kind} address; ${ALLOW_HINT}`);
  }
}

/**
 * Connections that may only reach allowed addresses: every address a name resolves to is checked
 * before connecting (a name with any refused address is refused, as runpod-python), and the address
 * the socket actually connected to is checked again before a byte is sent.
 */
function guardedAgent(
  { Agent, buildConnector }: typeof import("undici"),
  { policy, resolve = process.getBuiltinModule("node:dns").lookup }: Connection,
  timeoutMs: number,
): Agent {
  const lookup = ((hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, []);
      for (const { address } of addresses) {
        const kind = policy(address);
        if (kind) return callback(new Refused(`${hostname} resolves to ${address}, ${kind} address`), []);
      }
      if (options.all) return callback(null, addresses);
      const [chosen] = addresses;
      return chosen
        ? callback(null, chosen.address, chosen.family)
        : callback(new Error(`${hostname}: no address`), []);
    });
  }) as unknown as LookupFunction;
  const connector = buildConnector({ timeout: timeoutMs, lookup } as buildConnector.BuildOptions);
  return new Agent({
    connect(options, callback) {
      connector(options, (err, socket) => {
        if (err || !socket) return callback(err ?? new Error("no socket"), null);
        const address = socket.remoteAddress ?? "";
        const kind = policy(address);
        if (!kind) return callback(null, socket);
        socket.destroy();
        return callback(new Refused(`connected to ${address}, ${kind} address`), null);
      });
    },
  });
}

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/** Writes the body to `path`, stopping (and removing the part written) past `maxBytes`. */
async function save(body: NodeJS.ReadableStream, path: string, maxBytes: number, url: URL): Promise<number> {
  let size = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > maxBytes) callback(tooLarge(url, maxBytes, "the body went past it"));
      else callback(null, chunk);
    },
  });
  try {
    await pipeline(body, cap, createWriteStream(path));
  } catch (err) {
    await fsPromises().rm(path, { force: true });
    throw err;
  }
  return size;
}

function tooLarge(url: URL, maxBytes: number, detail: string): DownloadError {
  return new DownloadError(
    `download: ${redactUrl(url)} exceeds the size cap of ${maxBytes} bytes (${detail}); raise RUNPOD_MAX_DOWNLOAD_BYTES or pass maxBytes`,
  );
}

/** The file's extension, from Content-Disposition's filename or else the URL's path, when it looks like one. */
function extension(url: URL, disposition: string | undefined): string {
  const named = disposition ? /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition)?.[1] : undefined;
  const ext = extname(named ?? "") || extname(decoded(url.pathname));
  return /^\.[A-Za-z0-9]{1,12}$/.test(ext) ? ext : "";
}

/** The path percent-decoded, or as written where its escapes are not UTF-8 (a Latin-1 file name). */
function decoded(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** Every failure becomes a DownloadError that names the URL and says what to do. */
function explain(err: unknown, url: URL, timeoutMs: number, signal: AbortSignal | undefined): Error {
  if (isFlashError(err, "DOWNLOAD_FAILED")) return err;
  const cause = (err as { cause?: unknown })?.cause;
  const refusal = isFlashError(err, "DOWNLOAD_REFUSED")
    ? err
    : isFlashError(cause, "DOWNLOAD_REFUSED")
      ? cause
      : undefined;
  const shown = redactUrl(url);
  if (refusal) return new DownloadError(`download: refused ${shown}: ${refusal.message}; ${ALLOW_HINT}`);
  if (signal?.aborted) {
    const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
    return new DownloadError(`download: ${shown} stopped: ${reason}`);
  }
  const code = (err as { code?: unknown })?.code;
  if (
    code === "UND_ERR_HEADERS_TIMEOUT" ||
    code === "UND_ERR_BODY_TIMEOUT" ||
    code === "UND_ERR_CONNECT_TIMEOUT"
  ) {
    return new DownloadError(`download: ${shown} timed out: nothing received for ${timeoutMs / 1000} s`);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new DownloadError(`download: ${shown} failed: ${message}`);
}

function fsPromises(): typeof import("node:fs/promises") {
  return process.getBuiltinModule("node:fs/promises");
}
