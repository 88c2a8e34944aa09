// The hook a tracer fills: JSON log records carry the active trace id when one is set (docs/design.md §4 item 9).

let source: (() => string | undefined) | undefined;

/** A tracer calls this once with a function returning the active span's trace id (or undefined outside a span). */
export function setTraceIdSource(read: (() => string | undefined) | undefined): void {
  source = read;
}

/** The active trace id, or undefined when no tracer is set or no span is active. */
export function activeTraceId(): string | undefined {
  return source?.();
}
