// HTTP/1.1 answers read from raw bytes the way node:http reads them: llhttp 9 in its strict mode (node:http's default)
// under node:http's client rules. The same bytes are accepted or refused alike, at the same byte, whatever the reads'
// boundaries; test/unit/http/h1-llhttp.test.ts holds the two side by side. A byte machine rather than a split on CRLF:
// llhttp ends a status line at "\r\r", refuses a bare CR or LF where it meets one instead of waiting for a blank line,
// and counts a head's size by its status text, names and values, none of which a line split sees.
import { FlashError } from "../flash-error.js";

/** node:http's --max-http-header-size: the reason phrase, header names and values of one head, together. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** node:http's limit on one chunk's extensions (their names and values). */
const MAX_CHUNK_EXTENSION_BYTES = 16 * 1024;
/** node:http keeps an answer's first 1,000 header lines (maxHeadersCount 2000 counts names and values). */
const MAX_HEADER_LINES = 1000;

/** An answer the parser refuses, with llhttp's reason and code (HPE_…) for the same bytes. */
export class MalformedAnswerError extends FlashError {
  readonly code = "HTTP_MALFORMED_ANSWER";
  override name = "MalformedAnswerError";
  constructor(
    /** What node:http's error would carry as its code: HPE_INVALID_STATUS, HPE_CR_EXPECTED… */
    readonly llhttpCode: string,
    reason: string,
    near?: string,
  ) {
    super(`malformed HTTP answer: ${reason} (${llhttpCode})${near ? ` near ${JSON.stringify(near)}` : ""}`);
  }
}

/** One whole answer: informational ones too, which the caller skips. */
export interface ParsedAnswer {
  status: number;
  statusText: string;
  /** Names in lower case, values trimmed of spaces and tabs, repeats joined as node:http joins them. */
  headers: Record<string, string>;
  body: Buffer[];
  /** Whether the connection may carry another exchange (llhttp_should_keep_alive). */
  keepAlive: boolean;
  /** 101 Switching Protocols: what follows on the connection is not HTTP. */
  switched: boolean;
  /** Upgrade and Connection: upgrade both present (node:http then hands the socket to an 'upgrade' listener). */
  upgrade: boolean;
}

// Byte classes (RFC 9110 tokens, field values, quoted strings), as llhttp's tables have them.
const TOKEN = byteClass("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
const VALUE = byteClass("\t", [0x20, 0x7e], [0x80, 0xff]);
const QDTEXT = byteClass("\t !", [0x23, 0x5b], [0x5d, 0x7e], [0x80, 0xff]);
const QUOTED_PAIR = byteClass("\t", [0x20, 0x7e], [0x80, 0xff]);
const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++)
  HEX["0123456789abcdef".charCodeAt(i)] = HEX["0123456789ABCDEF".charCodeAt(i)] = i;

function byteClass(chars: string, ...ranges: [number, number][]): Uint8Array {
  const table = new Uint8Array(256);
  for (const c of chars) table[c.charCodeAt(0)] = 1;
  for (const [from, to] of ranges) table.fill(1, from, to + 1);
  return table;
}

const CR = 13;
const LF = 10;
const SP = 32;
const HTAB = 9;
const HTTP_SLASH = "HTTP/";

/** Header lines whose repeats node:http drops (the first one stands). */
const FIRST_ONLY = new Set([
  "age",
  "authorization",
  "content-length",
  "content-type",
  "etag",
  "expires",
  "from",
  "host",
  "if-modified-since",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "proxy-authorization",
  "referer",
  "retry-after",
  "server",
  "user-agent",
]);

enum S {
  Start,
  Protocol,
  Major,
  Dot,
  Minor,
  VersionSpace,
  Code,
  AfterCode,
  Reason,
  StatusCr,
  HeadersStart,
  FieldStart,
  Field,
  ValueWs,
  ValueWsCr,
  ValueWsLf,
  Value,
  ValueCr,
  ValueLf,
  HeadCr,
  BodyLength,
  BodyUntilClose,
  ChunkSizeStart,
  ChunkSize,
  ChunkSizeCr,
  ExtensionStart,
  ExtensionName,
  ExtensionValue,
  ExtensionQuoted,
  ExtensionQuotedPair,
  ExtensionQuotedDone,
  ChunkData,
  ChunkDataCr,
  ChunkDataLf,
  Closed,
  Switched,
}

/**
 * Reads the answers on one connection from its bytes, in any cuts; `onAnswer` is told of each whole one. `feed`
 * throws a MalformedAnswerError at the first byte llhttp would refuse; the bytes of an answer nobody asked for
 * (after the one awaited) are read as strictly, since node:http fails its exchange on them too.
 */
export class AnswerParser {
  /** The method of the request whose answer comes next: a HEAD answer has no body. */
  method = "GET";
  private state = S.Start;
  private matched = 0;
  private major = 0;
  private minor = 0;
  private status = 0;
  private statusText = "";
  private headers: Record<string, string> = Object.create(null);
  private lines = 0;
  private body: Buffer[] = [];
  private field = "";
  /** The part of a reason phrase, name or value that an earlier read left. */
  private partial = "";
  /** Bytes of reason phrase, names and values so far, as node:http counts them against MAX_HEAD_BYTES. */
  private headBytes = 0;
  private extensionBytes = 0;
  /** Body bytes left: of the Content-Length, or of the chunk. */
  private left = 0;
  private sizeDigits = 0;
  private trailers = false;
  private contentLength = false;
  private transferEncoding = false;
  private chunked = false;
  private close = false;
  private keepAliveToken = false;
  private connectionUpgrade = false;
  private upgradeHeader = false;

  constructor(private readonly onAnswer: (answer: ParsedAnswer) => void) {}

  /** Between answers with nothing of the next one read (CR and LF between answers are skipped, as llhttp does). */
  get between(): boolean {
    return this.state === S.Start || this.state === S.Closed;
  }

  /** A request went out: its answer comes next, with a fresh count of head bytes (node:http takes a fresh parser). */
  expect(method: string): void {
    this.method = method;
    this.headBytes = 0;
  }

  /** The connection ended: a body read until the close is whole (true); any other answer in the middle is cut off. */
  end(): boolean {
    if (this.state !== S.BodyUntilClose) return false;
    this.complete(false);
    return true;
  }

  /** Reads `data` on from where the last read stopped; throws at the first byte llhttp refuses. */
  feed(data: Buffer): void {
    let i = 0;
    while (i < data.length) {
      // llhttp pauses after a 101: node:http reads no further, and the connection is not HTTP any more.
      if (this.state === S.Switched) return;
      i = this.step(data, i);
    }
  }

  /** Reads on from `data[i]`; returns where the next step starts. */
  private step(data: Buffer, i: number): number {
    switch (this.state) {
      case S.BodyLength:
      case S.ChunkData:
      case S.BodyUntilClose:
        return this.readBody(data, i);
      case S.Reason:
      case S.Field:
      case S.Value:
        return this.readText(data, i);
      case S.Start:
        if (data[i] === CR || data[i] === LF) return i + 1;
        this.begin();
        this.state = S.Protocol;
        return this.step(data, i);
      case S.HeadersStart:
        if (data[i] === SP) this.fail("HPE_UNEXPECTED_SPACE", "Unexpected space after start line", data, i);
        this.state = S.FieldStart;
        return this.step(data, i);
      case S.FieldStart:
        return this.fieldStart(data, i);
      case S.ValueWs:
        return this.valueStart(data, i);
      case S.ValueWsLf:
      case S.ValueLf:
        return this.lineEnd(data, i);
      default:
        if (this.state >= S.ChunkSizeStart && this.state <= S.ChunkDataLf) this.chunkStep(data, i, data[i]!);
        else this.lineStep(data, i, data[i]!);
        return i + 1;
    }
  }

  /** One byte of a status line or a head's line ends. */
  private lineStep(data: Buffer, i: number, c: number): void {
    switch (this.state) {
      case S.Protocol:
        if (c !== HTTP_SLASH.charCodeAt(this.matched))
          this.fail("HPE_INVALID_CONSTANT", "Expected HTTP/", data, i);
        if (++this.matched === HTTP_SLASH.length) this.state = S.Major;
        return;
      case S.Major:
        if (c < 0x30 || c > 0x39) this.fail("HPE_INVALID_VERSION", "Invalid major version", data, i);
        this.major = c - 0x30;
        this.state = S.Dot;
        return;
      case S.Dot:
        if (c !== 0x2e) this.fail("HPE_INVALID_VERSION", "Expected dot", data, i);
        this.state = S.Minor;
        return;
      case S.Minor:
        if (c < 0x30 || c > 0x39) this.fail("HPE_INVALID_VERSION", "Invalid minor version", data, i);
        this.minor = c - 0x30;
        if (!knownVersion(this.major, this.minor))
          this.fail("HPE_INVALID_VERSION", "Invalid HTTP version", data, i);
        this.state = S.VersionSpace;
        return;
      case S.VersionSpace:
        if (c !== SP) this.fail("HPE_INVALID_VERSION", "Expected space after version", data, i);
        this.state = S.Code;
        this.matched = 0;
        return;
      case S.Code:
        if (c < 0x30 || c > 0x39) this.fail("HPE_INVALID_STATUS", "Invalid status code", data, i);
        this.status = this.status * 10 + c - 0x30;
        if (++this.matched === 3) this.state = S.AfterCode;
        return;
      case S.AfterCode:
        if (c === CR) this.state = S.StatusCr;
        else if (c !== SP) this.fail("HPE_INVALID_STATUS", "Invalid response status", data, i);
        else {
          this.state = S.Reason;
          this.partial = "";
        }
        return;
      case S.StatusCr:
        // llhttp takes a second CR as the line's end too.
        if (c !== LF && c !== CR) this.fail("HPE_STRICT", "Expected LF after CR", data, i);
        this.state = S.HeadersStart;
        return;
      case S.ValueWsCr:
        if (c !== LF) this.fail("HPE_STRICT", "Expected LF after CR", data, i);
        this.state = S.ValueWsLf;
        return;
      case S.ValueCr:
        if (c !== LF) this.fail("HPE_LF_EXPECTED", "Missing expected LF after header value", data, i);
        this.state = S.ValueLf;
        return;
      case S.HeadCr:
        if (c !== LF) this.fail("HPE_STRICT", "Expected LF after headers", data, i);
        if (this.trailers) this.complete(this.keepAlive());
        else this.headComplete();
        return;
      default:
        // Closed: only CR and LF may follow an answer after which the connection is done.
        if (c !== CR && c !== LF)
          this.fail("HPE_CLOSED_CONNECTION", "Data after `Connection: close`", data, i);
    }
  }

  private fieldStart(data: Buffer, i: number): number {
    const c = data[i]!;
    if (c === CR) {
      this.state = S.HeadCr;
      return i + 1;
    }
    if (c === LF) this.fail("HPE_INVALID_HEADER_TOKEN", "Invalid header field char", data, i);
    if (c === 0x3a) this.fail("HPE_INVALID_HEADER_TOKEN", "Invalid header token", data, i);
    this.state = S.Field;
    this.partial = "";
    return this.readText(data, i);
  }

  /** Spaces and tabs before a value are no part of it; a CRLF right after the colon is an empty value. */
  private valueStart(data: Buffer, i: number): number {
    const c = data[i]!;
    if (c === SP || c === HTAB) return i + 1;
    if (c === CR) {
      this.state = S.ValueWsCr;
      return i + 1;
    }
    if (c === LF) this.fail("HPE_INVALID_HEADER_TOKEN", "Invalid header value char", data, i);
    this.state = S.Value;
    this.partial = "";
    return this.readText(data, i);
  }

  /** After a header line's CRLF: a space or tab would fold the next line onto it (obs-fold), which llhttp 9 refuses. */
  private lineEnd(data: Buffer, i: number): number {
    const c = data[i]!;
    if (c === SP || c === HTAB) {
      if (this.state === S.ValueWsLf)
        this.fail("HPE_INVALID_HEADER_TOKEN", "Invalid header value char", data, i);
      this.fail("HPE_INVALID_HEADER_TOKEN", "Unexpected whitespace after header value", data, i);
    }
    this.headerLine(this.state === S.ValueLf ? this.partial : "", data, i);
    this.state = S.FieldStart;
    return this.step(data, i);
  }

  /** The size line of a chunk and the CRLF after its data (RFC 9112 §7.1). */
  private chunkStep(data: Buffer, i: number, c: number): void {
    switch (this.state) {
      case S.ChunkSizeStart:
        if (HEX[c]! < 0) this.fail("HPE_INVALID_CHUNK_SIZE", "Invalid character in chunk size", data, i);
        this.left = 0;
        this.sizeDigits = 0;
        this.state = S.ChunkSize;
        this.chunkStep(data, i, c);
        return;
      case S.ChunkSize:
        if (HEX[c]! >= 0) {
          if (this.left > 0 || c !== 0x30) this.sizeDigits++;
          // Past 16 hex digits the size overflows llhttp's 64 bits.
          if (this.sizeDigits > 16) this.fail("HPE_INVALID_CHUNK_SIZE", "Chunk size overflow", data, i);
          this.left = this.left * 16 + HEX[c]!;
        } else if (c === CR) this.state = S.ChunkSizeCr;
        else if (c === LF) this.fail("HPE_CR_EXPECTED", "Missing expected CR after chunk size", data, i);
        else if (c === 0x3b) this.state = S.ExtensionStart;
        else this.fail("HPE_INVALID_CHUNK_SIZE", "Invalid character in chunk size", data, i);
        return;
      case S.ChunkSizeCr:
        if (c !== LF) this.fail("HPE_STRICT", "Expected LF after chunk size", data, i);
        // node:http counts each chunk's trailer lines and extensions afresh.
        this.headBytes = 0;
        this.extensionBytes = 0;
        if (this.left === 0) {
          this.trailers = true;
          this.state = S.FieldStart;
        } else this.state = S.ChunkData;
        return;
      case S.ChunkDataCr:
        if (c === LF) this.fail("HPE_CR_EXPECTED", "Missing expected CR after chunk data", data, i);
        if (c !== CR) this.fail("HPE_STRICT", "Expected LF after chunk data", data, i);
        this.state = S.ChunkDataLf;
        return;
      case S.ChunkDataLf:
        if (c !== LF) this.fail("HPE_STRICT", "Expected LF after chunk data", data, i);
        this.headBytes = 0;
        this.state = S.ChunkSizeStart;
        return;
      default:
        this.extensionStep(data, i, c);
        return;
    }
  }

  /** Chunk extensions: `;name`, `;name=token` or `;name="quoted"`, as strictly as llhttp reads them. */
  private extensionStep(data: Buffer, i: number, c: number): void {
    const state = this.state;
    if (state === S.ExtensionStart) {
      if (c === SP || c === CR) this.fail("HPE_STRICT", "Invalid character in chunk extensions", data, i);
      this.state = S.ExtensionName;
      this.extensionStep(data, i, c);
      return;
    }
    if (state === S.ExtensionQuoted) {
      if (c === 0x22) this.state = S.ExtensionQuotedDone;
      else if (c === 0x5c) this.state = S.ExtensionQuotedPair;
      else if (!QDTEXT[c])
        this.fail("HPE_STRICT", "Invalid character in chunk extensions quoted value", data, i);
      this.countExtension(data, i);
      return;
    }
    if (state === S.ExtensionQuotedPair) {
      if (!QUOTED_PAIR[c])
        this.fail("HPE_STRICT", "Invalid quoted-pair in chunk extensions quoted value", data, i);
      this.state = S.ExtensionQuoted;
      this.countExtension(data, i);
      return;
    }
    if (c === 0x3b) this.state = S.ExtensionStart;
    else if (c === CR) this.state = S.ChunkSizeCr;
    else if (c === LF) this.fail("HPE_CR_EXPECTED", "Missing expected CR after chunk extension", data, i);
    else if (state === S.ExtensionQuotedDone)
      this.fail("HPE_STRICT", "Invalid character in chunk extensions quote value", data, i);
    else if (state === S.ExtensionName && c === 0x3d) this.state = S.ExtensionValue;
    else if (state === S.ExtensionValue && c === 0x22) {
      this.state = S.ExtensionQuoted;
      this.countExtension(data, i);
    } else if (TOKEN[c]) this.countExtension(data, i);
    else this.fail("HPE_STRICT", "Invalid character in chunk extensions", data, i);
  }

  private countExtension(data: Buffer, i: number): void {
    if (++this.extensionBytes > MAX_CHUNK_EXTENSION_BYTES)
      this.fail("HPE_CHUNK_EXTENSIONS_OVERFLOW", "Chunk extensions overflow", data, i);
  }

  /**
   * The text of a reason phrase, a name or a value from `from`, to its end or the read's (then kept for the next
   * read); counted against MAX_HEAD_BYTES as node:http counts it. Returns where the next step starts.
   */
  private readText(data: Buffer, from: number): number {
    const state = this.state;
    const n = data.length;
    let i = from;
    if (state === S.Reason) while (i < n && data[i] !== CR && data[i] !== LF) i++;
    else if (state === S.Field) while (i < n && TOKEN[data[i]!]) i++;
    else while (i < n && VALUE[data[i]!]) i++;
    if (i > from) this.partial += data.toString("latin1", from, i);
    this.countHead(i - from, data, Math.max(from, i - 1));
    if (i === n) return n;
    const c = data[i]!;
    if (state === S.Reason) {
      if (c === LF) this.fail("HPE_CR_EXPECTED", "Missing expected CR after response line", data, i);
      this.statusText = this.partial;
      this.state = S.StatusCr;
    } else if (state === S.Field) {
      if (c !== 0x3a) this.fail("HPE_INVALID_HEADER_TOKEN", "Invalid header token", data, i);
      this.fieldNamed(this.partial.toLowerCase(), data, i);
    } else {
      if (c === LF) this.fail("HPE_CR_EXPECTED", "Missing expected CR after header value", data, i);
      if (c !== CR) this.fail("HPE_INVALID_HEADER_TOKEN", "Invalid header value char", data, i);
      this.state = S.ValueCr;
    }
    return i + 1;
  }

  private countHead(bytes: number, data: Buffer, i: number): void {
    this.headBytes += bytes;
    if (this.headBytes >= MAX_HEAD_BYTES) this.fail("HPE_HEADER_OVERFLOW", "Header overflow", data, i);
  }

  /** A header's name is read: llhttp refuses Content-Length beside Transfer-Encoding here, before the value. */
  private fieldNamed(name: string, data: Buffer, i: number): void {
    if (name === "content-length" && this.transferEncoding)
      this.fail(
        "HPE_INVALID_CONTENT_LENGTH",
        "Content-Length can't be present with Transfer-Encoding",
        data,
        i,
      );
    if (name === "transfer-encoding" && this.contentLength)
      this.fail(
        "HPE_INVALID_TRANSFER_ENCODING",
        "Transfer-Encoding can't be present with Content-Length",
        data,
        i,
      );
    this.field = name;
    this.partial = "";
    this.state = S.ValueWs;
  }

  /** A whole header line: its framing meaning (llhttp's flags), then its place among the answer's headers. */
  private headerLine(raw: string, data: Buffer, i: number): void {
    const name = this.field;
    if (name === "content-length") this.readContentLength(raw, data, i);
    else if (name === "transfer-encoding") {
      if (raw !== "") {
        this.transferEncoding = true;
        this.chunked = /^chunked *$/i.test(lastElement(raw));
      }
    } else if (name === "connection" || name === "proxy-connection") this.readConnection(raw);
    else if (name === "upgrade" && raw !== "") this.upgradeHeader = true;
    if (this.trailers || ++this.lines > MAX_HEADER_LINES) return;
    this.addHeader(name, trimEnd(raw));
  }

  private readContentLength(raw: string, data: Buffer, i: number): void {
    if (raw === "") this.fail("HPE_INVALID_CONTENT_LENGTH", "Empty Content-Length", data, i);
    if (this.contentLength) this.fail("HPE_UNEXPECTED_CONTENT_LENGTH", "Duplicate Content-Length", data, i);
    const digits = /^(\d+) *$/.exec(raw)?.[1];
    if (digits === undefined)
      this.fail("HPE_INVALID_CONTENT_LENGTH", "Invalid character in Content-Length", data, i);
    // llhttp keeps the length in 64 bits.
    if (digits.length > 15 && BigInt(digits) > 0xffff_ffff_ffff_ffffn)
      this.fail("HPE_INVALID_CONTENT_LENGTH", "Content-Length overflow", data, i);
    this.contentLength = true;
    this.left = Number(digits);
  }

  /** Connection's tokens close, keep-alive and upgrade, each alone between commas (trailing spaces allowed). */
  private readConnection(raw: string): void {
    for (const element of raw.split(",")) {
      const token = /^[ \t]*([^ \t]*) *$/.exec(element)?.[1]?.toLowerCase();
      if (token === "close") this.close = true;
      else if (token === "keep-alive") this.keepAliveToken = true;
      else if (token === "upgrade") this.connectionUpgrade = true;
    }
  }

  /** Repeats joined as node:http's IncomingMessage joins them (Set-Cookie's list is read back joined with ", "). */
  private addHeader(name: string, value: string): void {
    const seen = this.headers[name];
    if (seen === undefined) this.headers[name] = value;
    else if (name === "cookie") this.headers[name] = `${seen}; ${value}`;
    else if (!FIRST_ONLY.has(name)) this.headers[name] = `${seen}, ${value}`;
  }

  /** The head is read: the body's framing, as llhttp and node:http choose it. */
  private headComplete(): void {
    this.headBytes = 0;
    const status = this.status;
    if (status === 101) {
      this.complete(false);
      return;
    }
    const noBody =
      Math.floor(status / 100) === 1 || status === 204 || status === 304 || this.method === "HEAD";
    if (noBody) this.complete(this.keepAlive());
    else if (this.chunked) this.state = S.ChunkSizeStart;
    else if (this.transferEncoding || !this.contentLength) this.state = S.BodyUntilClose;
    else if (this.left === 0) this.complete(this.keepAlive());
    else this.state = S.BodyLength;
  }

  /** llhttp_should_keep_alive: HTTP/1.1 unless Connection: close, earlier ones only with keep-alive; framed bodies only. */
  private keepAlive(): boolean {
    const persistent = this.major > 0 && this.minor > 0 ? !this.close : this.keepAliveToken;
    return persistent && this.state !== S.BodyUntilClose;
  }

  private readBody(data: Buffer, from: number): number {
    const n = data.length;
    if (this.state === S.BodyUntilClose) {
      this.body.push(from === 0 ? data : data.subarray(from));
      return n;
    }
    const take = Math.min(n - from, this.left);
    if (take > 0) this.body.push(take === n ? data : data.subarray(from, from + take));
    this.left -= take;
    if (this.left === 0) {
      if (this.state === S.ChunkData) this.state = S.ChunkDataCr;
      else this.complete(this.keepAlive());
    }
    return from + take;
  }

  /** An answer is whole: tell it, then wait for the next (or, the connection being done, only CR and LF). */
  private complete(keepAlive: boolean): void {
    const status = this.status;
    const answer: ParsedAnswer = {
      status,
      statusText: this.statusText,
      headers: this.headers,
      body: this.body,
      keepAlive,
      switched: status === 101,
      upgrade: this.upgradeHeader && this.connectionUpgrade,
    };
    this.state = status === 101 ? S.Switched : keepAlive ? S.Start : S.Closed;
    this.onAnswer(answer);
  }

  /** A new answer starts: nothing of the last one carries over. */
  private begin(): void {
    this.matched = 0;
    this.status = 0;
    this.statusText = "";
    this.headers = Object.create(null);
    this.lines = 0;
    this.body = [];
    this.trailers = false;
    this.contentLength = false;
    this.transferEncoding = false;
    this.chunked = false;
    this.close = false;
    this.keepAliveToken = false;
    this.connectionUpgrade = false;
    this.upgradeHeader = false;
  }

  private fail(llhttpCode: string, reason: string, data: Buffer, i: number): never {
    const near = data.toString("latin1", Math.max(0, i - 40), Math.min(data.length, i + 1));
    throw new MalformedAnswerError(llhttpCode, reason, near);
  }
}

/** The versions llhttp takes: 0.9, 1.0, 1.1 and 2.0. */
function knownVersion(major: number, minor: number): boolean {
  return (major === 1 && minor <= 1) || (major === 0 && minor === 9) || (major === 2 && minor === 0);
}

/** A Transfer-Encoding value's last coding, without the spaces and tabs before it. */
function lastElement(raw: string): string {
  return raw.slice(raw.lastIndexOf(",") + 1).replace(/^[ \t]+/, "");
}

/** node:http trims a value's trailing spaces and tabs (its leading ones llhttp never reads into the value). */
function trimEnd(value: string): string {
  let end = value.length;
  while (end > 0 && (value.charCodeAt(end - 1) === SP || value.charCodeAt(end - 1) === HTAB)) end--;
  return end === value.length ? value : value.slice(0, end);
}
