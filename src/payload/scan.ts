// A first pass over a pickle that only skips arguments, to learn which memo entries are ever read.
// Pickle memoizes nearly every str and container, but plain data reads back few of them (dict keys,
// shared references); keeping only those spares the garbage collector a memo that points at everything.

/** Memo indices a pickle reads with BINGET / LONG_BINGET / GET. */
export class MemoReads {
  private readonly bits: Uint8Array;
  private far: Set<number> | undefined = undefined;

  constructor(size: number) {
    this.bits = new Uint8Array((size >> 3) + 1);
  }

  add(idx: number): void {
    if (idx < this.bits.length * 8) this.bits[idx >> 3]! |= 1 << (idx & 7);
    else {
      this.far ??= new Set();
      this.far.add(idx);
    }
  }

  has(idx: number): boolean {
    if (idx < this.bits.length * 8) return (this.bits[idx >> 3]! & (1 << (idx & 7))) !== 0;
    return this.far?.has(idx) ?? false;
  }
}

const TWO_32 = 4294967296;

/** Argument bytes of fixed-size opcodes (0 for none); -1 marks opcodes handled separately. */
const FIXED = new Int8Array(256).fill(-2);
for (const op of [
  0x28, 0x2e, 0x30, 0x31, 0x32, 0x4e, 0x88, 0x89, 0x5d, 0x7d, 0x8f, 0x29, 0x85, 0x86, 0x87, 0x74, 0x6c, 0x64,
]) {
  FIXED[op] = 0;
}
for (const op of [
  0x91, 0x61, 0x65, 0x73, 0x75, 0x90, 0x94, 0x93, 0x52, 0x81, 0x92, 0x6f, 0x62, 0x51, 0x97, 0x98,
])
  FIXED[op] = 0;
for (const op of [0x80, 0x4b, 0x71, 0x82]) FIXED[op] = 1;
for (const op of [0x4d, 0x83]) FIXED[op] = 2;
for (const op of [0x4a, 0x72, 0x84]) FIXED[op] = 4;
for (const op of [0x47, 0x95]) FIXED[op] = 8;

/**
 * Reads the opcode stream without building anything. Returns null when every memo put must be kept:
 * the stream mixes MEMOIZE with explicit PUT indices (their numbering interacts), or it is malformed
 * (the decoder will then report the error itself).
 */
export function scanMemoReads(buf: Uint8Array, dv: DataView): MemoReads | null {
  const end = buf.length;
  const reads = new MemoReads(end);
  let memoize = false;
  let put = false;
  let pos = 0;
  const line = (): boolean => {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) return false;
    pos = nl + 1;
    return true;
  };
  while (pos < end) {
    const op = buf[pos++]!;
    const fixed = FIXED[op]!;
    if (fixed >= 0) {
      if (op === 0x2e) return memoize && put ? null : reads;
      if (pos + fixed > end) return null;
      if (op === 0x94) memoize = true;
      else if (op === 0x71) put = true;
      else if (op === 0x72) put = true;
      pos += fixed;
      continue;
    }
    let n: number;
    switch (op) {
      case 0x68: // BINGET
        if (pos + 1 > end) return null;
        reads.add(buf[pos++]!);
        continue;
      case 0x6a: // LONG_BINGET
        if (pos + 4 > end) return null;
        reads.add(dv.getUint32(pos, true));
        pos += 4;
        continue;
      case 0x67: {
        // GET (text)
        const start = pos;
        if (!line()) return null;
        const idx = Number(String.fromCharCode(...buf.subarray(start, pos - 1)));
        if (!Number.isSafeInteger(idx) || idx < 0) return null;
        reads.add(idx);
        continue;
      }
      case 0x70: // PUT (text)
        put = true;
        if (!line()) return null;
        continue;
      case 0x49: // INT, LONG, FLOAT, STRING, UNICODE, PERSID: one text line
      case 0x4c:
      case 0x46:
      case 0x53:
      case 0x56:
      case 0x50:
        if (!line()) return null;
        continue;
      case 0x63: // GLOBAL, INST: two text lines
      case 0x69:
        if (!line() || !line()) return null;
        continue;
      case 0x8a: // LONG1, SHORT_BINUNICODE, SHORT_BINBYTES, SHORT_BINSTRING
      case 0x8c:
      case 0x43:
      case 0x55:
        if (pos + 1 > end) return null;
        n = 1 + buf[pos]!;
        break;
      case 0x8b: // LONG4, BINUNICODE, BINBYTES, BINSTRING
      case 0x58:
      case 0x42:
      case 0x54:
        if (pos + 4 > end) return null;
        n = 4 + dv.getUint32(pos, true);
        break;
      case 0x8d: // BINUNICODE8, BINBYTES8, BYTEARRAY8
      case 0x8e:
      case 0x96:
        if (pos + 8 > end) return null;
        n = 8 + dv.getUint32(pos, true) + dv.getUint32(pos + 4, true) * TWO_32;
        break;
      default:
        return null;
    }
    if (n > end - pos) return null;
    pos += n;
  }
  return null;
}
