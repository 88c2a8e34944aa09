// The in-flight job ids shared with the heartbeat thread through memory: written per job, read per ping.

/** Bytes before the ids: a sequence number (odd while a write is under way) and the ids' length. */
const HEADER_BYTES = 8;
/** Room for a few hundred job ids; a longer list moves to a larger board. */
const INITIAL_BYTES = 16 * 1024;

/** The ids as a JSON array: any character an id holds (a line break, a comma) reads back as it was. */
const listText = (ids: string[]): string => (ids.length === 0 ? "" : JSON.stringify(ids));

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A seqlock over a SharedArrayBuffer: the main thread writes without waking the heartbeat thread (a
 * message per job start and end cost more than the job), and the thread reads a consistent copy.
 */
export class JobBoard {
  private header: Int32Array;
  private data: Uint8Array;

  constructor(readonly buffer = new SharedArrayBuffer(HEADER_BYTES + INITIAL_BYTES)) {
    this.header = new Int32Array(buffer, 0, 2);
    this.data = new Uint8Array(buffer, HEADER_BYTES);
  }

  /** Writes the ids; false when they need a larger board (see `grown`), leaving this one as it was. */
  write(ids: Iterable<string>): boolean {
    return this.writeText(listText([...ids]));
  }

  private writeText(text: string): boolean {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (text.length * 3 > this.data.length) return false;
    Atomics.add(this.header, 0, 1);
    const { written } = encoder.encodeInto(text, this.data);
    Atomics.store(this.header, 1, written);
    Atomics.add(this.header, 0, 1);
    return true;
  }

  /** A board large enough for these ids, holding them. */
  static grown(ids: Iterable<string>): JobBoard {
    const text = listText([...ids]);
    const needed = text.length * 3;
    const board = new JobBoard(new SharedArrayBuffer(HEADER_BYTES + Math.max(INITIAL_BYTES, 2 * needed)));
    board.writeText(text);
    return board;
  }

  /** The ids as last written, never a half-written list. */
  read(): string[] {
    for (;;) {
      const before = Atomics.load(this.header, 0);
      if (before % 2 === 1) continue;
      const bytes = this.data.slice(0, Atomics.load(this.header, 1));
      if (Atomics.load(this.header, 0) !== before) continue;
      const text = decoder.decode(bytes);
      return text.length === 0 ? [] : (JSON.parse(text) as string[]);
    }
  }
}
