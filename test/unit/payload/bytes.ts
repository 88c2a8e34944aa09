// Builds hand-made pickles: numbers are opcode / argument bytes, strings are ASCII text.
export type Part = number | string | Uint8Array | readonly Part[];

export function pk(...parts: Part[]): Uint8Array {
  const out: number[] = [];
  const add = (p: Part): void => {
    if (typeof p === "number") out.push(p);
    else if (typeof p === "string") for (let i = 0; i < p.length; i++) out.push(p.charCodeAt(i));
    else if (p instanceof Uint8Array) for (const b of p) out.push(b);
    else for (const q of p) add(q);
  };
  for (const p of parts) add(p);
  return Uint8Array.from(out);
}

/** A 4-byte little-endian unsigned int. */
export const u32 = (n: number): number[] => [
  n & 0xff,
  (n >>> 8) & 0xff,
  (n >>> 16) & 0xff,
  (n >>> 24) & 0xff,
];

/** SHORT_BINUNICODE of an ASCII string. */
export const sbu = (s: string): (number | string)[] => [0x8c, s.length, s];
