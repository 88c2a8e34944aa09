// GET /v2/serverless/{id}/workers/{workerId}/logs and /v2/pods/{id}/logs: a worker's or a Pod's log lines as Server-Sent Events, backlog then live.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { LogBook } from "../console/logs.js";
import { SseStream } from "../console/sse.js";
import type { LogLine } from "../console/wire.js";
import { Problem } from "../state/problem.js";

/**
 * Streams the lines about `subject` (a worker or a Pod): the platform's own (`systemPrefix`) as `system`, the rest
 * as `container`; `known` says whether it exists when no line does.
 */
export function streamLogs(
  request: FastifyRequest,
  reply: FastifyReply,
  logs: LogBook,
  subject: string,
  known: { live: boolean; missing: string; systemPrefix: string },
): void {
  const query = request.query as { tail?: string; source?: string };
  const tail = query.tail === undefined ? 100 : Number(query.tail);
  if (!Number.isInteger(tail) || tail < 0 || tail > 5000) {
    throw new Problem(400, `tail must be a whole number from 0 to 5000, got ${query.tail}`);
  }
  if (query.source !== undefined && query.source !== "container" && query.source !== "system") {
    throw new Problem(400, `source must be container or system, got ${query.source}`);
  }
  const about = (line: LogLine) => line.subject === subject || line.workerId === subject;
  const backlog = logs.recent(about, 5000);
  if (!known.live && backlog.length === 0) throw new Problem(404, known.missing);
  const source = (line: LogLine) =>
    line.subject === subject && !line.message.startsWith(known.systemPrefix) ? "container" : "system";
  const wanted = (line: LogLine) =>
    about(line) && (query.source === undefined || source(line) === query.source);
  const stream = new SseStream(reply);
  const send = (line: LogLine) => {
    const ts = new Date(line.time).toISOString();
    stream.sendRaw(
      `id: ${ts}/${String(line.seq).padStart(12, "0")}\ndata: ${JSON.stringify({ ts, source: source(line), line: line.message })}\n\n`,
    );
  };
  for (const line of backlog.filter(wanted).slice(-tail || backlog.length)) if (tail > 0) send(line);
  const off = logs.onLine((line) => {
    if (wanted(line)) send(line);
  });
  stream.onClose(off);
}
