// Server-Sent Events read from a body as it arrives: eventsource-parser frames them (LF, CRLF or CR line ends,
// split anywhere), the one SSE parser in the tree.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { FlashError } from "../flash-error.js";

/** One event: its `data` lines joined by "\n", its `event` type and `id` when the server gave them. */
export type SseEvent = EventSourceMessage;

/**
 * What one event may hold, in characters: its unfinished line and the data lines not yet ended by a blank line.
 * A server that never ends an event is cut off here instead of taking the memory.
 */
export const SSE_EVENT_LIMIT_CHARS = 4 * 1024 * 1024;

/** An SSE event grew past its limit without ending. */
export class SseEventTooLarge extends FlashError {
  readonly code = "SSE_EVENT_TOO_LARGE";
  override name = "SseEventTooLarge";
}

/**
 * Each event of an SSE body as soon as its blank line arrives; an event the body ends in the middle of is
 * handed over too (a server that closes without the last blank line loses nothing). Comments are skipped.
 */
export async function* readSse(
  body: AsyncIterable<Uint8Array>,
  limitChars = SSE_EVENT_LIMIT_CHARS,
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  const ready: SseEvent[] = [];
  let tooLarge = false;
  const parser = createParser({
    onEvent: (event) => ready.push(event),
    onError: (error) => {
      tooLarge ||= error.type === "max-buffer-size-exceeded";
    },
    maxBufferSize: limitChars,
  });
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (tooLarge) {
      throw new SseEventTooLarge(
        `An SSE event grew past ${limitChars} characters without ending (a blank line); the stream was cut off.`,
      );
    }
    yield* ready.splice(0);
  }
  // Ends the last line and the last event, as a blank line would.
  parser.feed(`${decoder.decode()}\n\n`);
  yield* ready.splice(0);
}

/** An event written back as SSE text (`event:`, `id:`, one `data:` per line, then a blank line), LF-framed. */
export function formatSse({ event, id, data }: SseEvent): string {
  const head = `${event === undefined ? "" : `event: ${event}\n`}${id === undefined ? "" : `id: ${id}\n`}`;
  return `${head}data: ${data.replaceAll("\n", "\ndata: ")}\n\n`;
}
