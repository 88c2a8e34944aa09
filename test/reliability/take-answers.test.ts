// The real worker (`flash start`, the echo example) against a raw-socket stand-in platform that answers job-take
// with malformed and unusual HTTP (issue 43, case 4). For each answer the job is either run and its result posted,
// or the failure is logged at ERROR naming it and the worker asks again: never a hang, a crash or a silent loss.
// The same run on node:http (FLASH_HTTP_TRANSPORT=node) must end each answer the same way.
import { once } from "node:events";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type Flash, flash } from "../process.js";

/** A request as the stand-in read it off the socket. */
interface Request {
  method: string;
  path: string;
  body: string;
}

/** What an answer must come to: the job run and its result posted, or a logged failure naming `failure`. */
type Expected = { run: true } | { run: false; failure: RegExp };

interface Case {
  what: string;
  /** The answer's bytes for a job whose JSON is `job`; `close` ends the connection after them. */
  answer: (job: string) => string;
  /** Pieces the answer is written in, each in its own read (one piece when absent). */
  pieces?: number;
  close?: boolean;
  expected: Expected;
}

const json = (job: string, extra = "") =>
  `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(job)}\r\n\r\n${job}`;
const chunked = (job: string, end = "\r\n") =>
  `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(job).toString(16)}${end}${job}${end}0${end}${end}`;
const malformed = (llhttp: string): Expected => ({
  run: false,
  failure: new RegExp(
    `Error Type: MalformedAnswerError \\| Error Message: malformed HTTP answer: .*\\(${llhttp}\\)`,
  ),
});

const CASES: Case[] = [
  { what: "a stray CRLF after the body", answer: (job) => `${json(job)}\r\n`, expected: { run: true } },
  { what: "a stray LF after the body", answer: (job) => `${json(job)}\n`, expected: { run: true } },
  {
    what: "a stray CRLF after the last chunk",
    answer: (job) => `${chunked(job)}\r\n`,
    expected: { run: true },
  },
  {
    what: "CRLFs and a 100 Continue before the answer",
    answer: (job) => `\r\nHTTP/1.1 100 Continue\r\n\r\n\r\n${json(job)}`,
    expected: { run: true },
  },
  {
    what: "the start of another answer after it",
    answer: (job) => `${json(job)}HTTP/1.1 2`,
    expected: { run: true },
  },
  {
    what: "the answer a byte at a time",
    answer: json,
    pieces: Number.POSITIVE_INFINITY,
    expected: { run: true },
  },
  {
    what: "a latin1 header value and a status line ended by CR CR",
    answer: (job) => json(job, "X-Note: caf\xe9\r\n").replace("200 OK\r\n", "200 OK\r\r"),
    expected: { run: true },
  },
  {
    what: "Connection: close, the connection then closed",
    answer: (job) => json(job, "Connection: close\r\n"),
    close: true,
    expected: { run: true },
  },
  {
    what: "a body read until the connection closes",
    answer: (job) => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n${job}`,
    close: true,
    expected: { run: true },
  },
  {
    what: "a status line ended by LF alone",
    answer: (job) => json(job).replace("200 OK\r\n", "200 OK\n"),
    expected: malformed("HPE_CR_EXPECTED"),
  },
  {
    what: "chunk lines ended by LF alone",
    answer: (job) => chunked(job, "\n"),
    expected: malformed("HPE_CR_EXPECTED"),
  },
  {
    what: "a bare CR in a header value",
    answer: (job) => json(job, "X-Note: a\rb\r\n"),
    expected: malformed("HPE_LF_EXPECTED"),
  },
  {
    what: "a NUL in a header value",
    answer: (job) => json(job, "X-Note: a\0b\r\n"),
    expected: malformed("HPE_INVALID_HEADER_TOKEN"),
  },
  {
    what: "a folded header line",
    answer: (job) => json(job, "X-Note: a\r\n b\r\n"),
    expected: malformed("HPE_INVALID_HEADER_TOKEN"),
  },
  {
    what: "Content-Length beside chunked",
    answer: (job) => chunked(job).replace("\r\n\r\n", "\r\nContent-Length: 3\r\n\r\n"),
    expected: malformed("HPE_INVALID_CONTENT_LENGTH"),
  },
  {
    what: "two Content-Lengths",
    answer: (job) => json(job, `Content-Length: ${Buffer.byteLength(job)}\r\n`),
    expected: malformed("HPE_UNEXPECTED_CONTENT_LENGTH"),
  },
  {
    what: "bytes after the answer that cannot start another",
    answer: (job) => `${json(job)}X`,
    expected: malformed("HPE_INVALID_CONSTANT"),
  },
  {
    what: "a head over 16 KiB",
    answer: (job) => json(job, `X-Big: ${"b".repeat(16 * 1024)}\r\n`),
    expected: malformed("HPE_HEADER_OVERFLOW"),
  },
  {
    what: "half a body, then the connection closed",
    answer: (job) => json(job).slice(0, -5),
    close: true,
    expected: { run: false, failure: /Failed to get job\..*(socket hang up|ECONNRESET|aborted)/ },
  },
];

/** A raw TCP stand-in for the platform: job-take gets the next scripted answer (204 when none), the rest 200. */
async function standIn(): Promise<{
  url: string;
  requests: Request[];
  script: Array<{ bytes: Buffer; pieces: number; close: boolean }>;
  close(): Promise<void>;
}> {
  const requests: Request[] = [];
  const script: Array<{ bytes: Buffer; pieces: number; close: boolean }> = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffered.subarray(0, end).toString("latin1");
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? "0");
        if (buffered.length < end + 4 + length) return;
        const [method = "", path = ""] = head.split(" ");
        const body = buffered.subarray(end + 4, end + 4 + length).toString("utf8");
        buffered = buffered.subarray(end + 4 + length);
        requests.push({ method, path, body });
        void answer(socket, path);
      }
    });
  });
  async function answer(socket: net.Socket, path: string): Promise<void> {
    if (path.includes("/job-take/")) {
      const next = script.shift();
      if (next) return writeInPieces(socket, next.bytes, next.pieces, next.close);
    }
    // An empty long-poll held a moment, as the platform holds it; every other call is answered at once.
    if (path.includes("/job-take/") || path.includes("/job-stop/"))
      await new Promise((r) => setTimeout(r, 100));
    if (!socket.destroyed) socket.write("HTTP/1.1 204 No Content\r\n\r\n");
  }
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    requests,
    script,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Writes `bytes` in `pieces` reads (one byte each at most), then ends the connection when `close`. */
async function writeInPieces(
  socket: net.Socket,
  bytes: Buffer,
  pieces: number,
  close: boolean,
): Promise<void> {
  const size = Math.max(1, Math.ceil(bytes.length / Math.min(pieces, bytes.length)));
  for (let at = 0; at < bytes.length && !socket.destroyed; at += size) {
    await new Promise<void>((resolve) => socket.write(bytes.subarray(at, at + size), () => resolve()));
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
  }
  if (close) socket.end();
}

let worker: Flash | undefined;
let platform: Awaited<ReturnType<typeof standIn>> | undefined;
afterEach(async () => {
  worker?.child.kill("SIGKILL");
  await worker?.exited;
  await platform?.close();
});

/** Waits, by events (the stand-in's requests, the worker's lines), until `done` holds; fails the test past its timeout. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe.each(["h1", "node"])(
  "the worker (FLASH_HTTP_TRANSPORT=%s) on unusual and malformed job-take answers",
  (transport) => {
    it("runs and reports each job whose answer node:http accepts, logs each failure by name and keeps polling", async () => {
      platform = await standIn();
      const base = `${platform.url}/v2/EP`;
      worker = flash(["start", "examples/echo/handler.ts"], {
        RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=X`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=X`,
        RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=X`,
        RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=X`,
        RUNPOD_POD_ID: "w1",
        RUNPOD_AI_API_KEY: "K",
        RUNPOD_PING_INTERVAL: "60000",
        FLASH_HTTP_TRANSPORT: transport,
      });
      const stand = platform;
      const takes = () => stand.requests.filter((r) => r.path.includes("/job-take/")).length;
      const done = (id: string) => stand.requests.find((r) => r.path.includes(`/job-done/w1/${id}?`));
      for (const [index, { what, answer, pieces = 1, close = false, expected }] of CASES.entries()) {
        const id = `case-${index}`;
        const job = JSON.stringify({ id, input: { case: what } });
        const linesBefore = worker.stdout.length;
        stand.script.push({ bytes: Buffer.from(answer(job), "latin1"), pieces, close });
        const takenBefore = takes();
        // The worker takes it, then either posts its result or logs the failure and asks again: wait for either.
        const logged = () =>
          worker!.stdout.slice(linesBefore).find((line) => line.includes("Failed to get job."));
        await until(() => done(id) !== undefined || (logged() !== undefined && takes() > takenBefore + 1));
        const posted = done(id);
        const outcome = posted
          ? { run: true, body: JSON.parse(posted.body) }
          : { run: false, line: logged() };
        if (expected.run) {
          expect({ what, ...outcome }).toEqual({ what, run: true, body: { output: { case: what } } });
          continue;
        }
        expect({ what, run: outcome.run }).toEqual({ what, run: false });
        const line = logged()!;
        expect(line, what).toMatch(/\| ERROR \|/);
        // node:http's own errors under the switch: proof the worker's calls went over node:http.
        if (transport === "node") {
          expect(line, what).not.toContain("MalformedAnswerError");
          continue;
        }
        expect(line, what).toMatch(expected.failure);
        if (/Malformed/.test(expected.failure.source))
          expect(line, what).toContain("the platform hands it out again once no ping names it");
      }
      // Still serving: a last ordinary job runs, and SIGTERM ends the worker cleanly.
      const last = JSON.stringify({ id: "last", input: { case: "last" } });
      stand.script.push({ bytes: Buffer.from(json(last)), pieces: 1, close: false });
      await until(() => done("last") !== undefined);
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe(0);
    });
  },
);
