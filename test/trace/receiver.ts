// A real OTLP/HTTP trace receiver on 127.0.0.1 for the tests: it decodes the JSON bodies the exporter posts to
// /v1/traces (the OTLP JSON encoding: ids as hex strings, times as nanosecond strings) into flat spans.
import { createServer, type Server } from "node:http";

/** An OTLP AnyValue as the JSON encoding writes it. */
interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: KeyValue[];
  events?: { name: string; attributes?: KeyValue[] }[];
  status?: { code?: number; message?: string };
}
/** ExportTraceServiceRequest in the OTLP JSON encoding. */
interface ExportTraceServiceRequest {
  resourceSpans: { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans?: OtlpSpan[] }[] }[];
}

export type Attributes = Record<string, string | number | boolean>;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  durationMs: number;
  attributes: Attributes;
  events: { name: string; attributes: Attributes }[];
  statusCode: number;
  resource: Attributes;
}

function value(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  throw new Error(`unexpected OTLP value ${JSON.stringify(v)}`);
}

function attributes(list: KeyValue[] | undefined): Attributes {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every request's path and content type, to check what was posted where. */
  readonly posts: { path: string; contentType: string }[] = [];
  private server: Server | undefined;
  private readonly listeners = new Set<() => void>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.posts.push({ path: req.url ?? "", contentType: req.headers["content-type"] ?? "" });
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportTraceServiceRequest;
        for (const rs of body.resourceSpans) {
          const resource = attributes(rs.resource?.attributes);
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans ?? []) {
              this.spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId || undefined,
                name: s.name,
                kind: s.kind,
                durationMs: Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6,
                attributes: attributes(s.attributes),
                events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributes(e.attributes) })),
                statusCode: s.status?.code ?? 0,
                resource,
              });
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
        for (const listener of this.listeners) listener();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    return this;
  }

  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  get url(): string {
    const address = this.server?.address();
    if (!address || typeof address === "string") throw new Error("receiver not started");
    return `http://127.0.0.1:${address.port}`;
  }

  /** Resolves once `test` holds for the spans received so far. */
  waitFor(test: (spans: ReceivedSpan[]) => boolean, timeoutMs = 20_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!test(this.spans)) return;
        this.listeners.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`spans never matched; received:\n${spanTree(this.spans)}`));
      }, timeoutMs);
      this.listeners.add(check);
      check();
    });
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** The spans as an indented tree: name, duration, and the parent by nesting (an unknown parent at the root). */
export function spanTree(spans: readonly ReceivedSpan[]): string {
  const ids = new Set(spans.map((s) => s.spanId));
  const lines: string[] = [];
  const walk = (span: ReceivedSpan, depth: number) => {
    const parent = span.parentSpanId ? ` parent=${span.parentSpanId}` : "";
    lines.push(
      `${"  ".repeat(depth)}${span.name} ${span.durationMs.toFixed(1)} ms span=${span.spanId}${parent}`,
    );
    for (const child of spans.filter((s) => s.parentSpanId === span.spanId)) walk(child, depth + 1);
  };
  for (const root of spans.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId))) walk(root, 0);
  return lines.join("\n");
}
