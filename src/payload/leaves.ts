// The encoder's memo for records: dicts whose values are all scalars, found again by a fingerprint of their
// values instead of by V8's identity hash. A Map insert per record cost about as much as writing the record
// (a random access into a table of several MB for every one of them); here a Bloom filter over fingerprints,
// a small bit array, answers "not seen" for a new record, and only its rare "maybe" looks for the record itself.

/** Bloom filter bits per recorded dict at full capacity (twice that right after growing): ~2e-4 false "maybe"s. */
const BITS_PER_ENTRY = 32;
const PROBES = 4;
const FIRST_CAPACITY = 64;
/**
 * Entries compared after "maybe"s before the Map takes over: false ones cost a pass each (~20 over 165k
 * records), and many equal or repeated dicts stop here, after work linear in the dicts met.
 */
const SCAN_BUDGET_PER_ENTRY = 64;
const SCAN_BUDGET = 1 << 20;

/** Murmur3's finalizer: spreads every input bit over the whole word. */
function mix(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return x ^ (x >>> 16);
}

/** A number standing for a scalar in a fingerprint: equal values give equal numbers. */
export function scalarHash(x: unknown): number {
  switch (typeof x) {
    case "number":
      return (x | 0) === x ? x : (x * 1e9) | 0;
    case "string": {
      const len = x.length;
      let h = len;
      if (len <= 32) for (let i = 0; i < len; i++) h = Math.imul(h ^ x.charCodeAt(i), 0x01000193);
      else h ^= x.charCodeAt(0) ^ (x.charCodeAt(len >> 1) << 8) ^ (x.charCodeAt(len - 1) << 16);
      return h;
    }
    case "boolean":
      return x ? 1 : 2;
    default:
      return 3;
  }
}

/** Folds one scalar's hash into a record's running fingerprint. */
export function addToFingerprint(fp: number, h: number): number {
  return Math.imul(fp ^ h, 0x9e3779b1) + 1;
}

/**
 * Dicts of scalars met so far, with their memo indices. A dict's fingerprint depends only on its values, so
 * the same dict met again has the same one; two different dicts may share one, and are told apart by
 * identity. When "maybe"s cost too much (many dicts with equal values, or many dicts met twice), every
 * entry moves to the encoder's Map, which from then on holds every dict.
 */
export class LeafMemo {
  private cap = FIRST_CAPACITY;
  private count = 0;
  private fps = new Int32Array(FIRST_CAPACITY);
  private idxs = new Uint32Array(FIRST_CAPACITY);
  private objs: object[] = [];
  private bits = new Int32Array((FIRST_CAPACITY * BITS_PER_ENTRY) / 32);
  /** Entries compared in the searches after "maybe"s. */
  private scanned = 0;
  private handedOver = false;

  constructor(private readonly map: Map<object, number>) {}

  /** The memo index `v` was recorded with, or -1 having recorded it now with `idx`. */
  add(v: object, fingerprint: number, idx: number): number {
    if (this.handedOver) {
      // the encoder looks every dict up in the Map before writing it, so a repeat never gets here
      this.map.set(v, idx);
      return -1;
    }
    // grown first: the filter is rebuilt from the entries, and this dict's bits must survive that
    if (this.count === this.cap) this.grow();
    const fp = mix(fingerprint);
    if (this.setBits(fp)) {
      const earlier = this.search(v, fp);
      if (earlier >= 0) return earlier;
      if (this.scanned > SCAN_BUDGET_PER_ENTRY * this.count + SCAN_BUDGET) {
        this.handOver();
        this.map.set(v, idx);
        return -1;
      }
    }
    this.fps[this.count] = fp;
    this.idxs[this.count] = idx;
    this.objs.push(v);
    this.count++;
    return -1;
  }

  /** Sets fp's bits; true if they were all set already (the dict may have been seen). */
  private setBits(fp: number): boolean {
    const bits = this.bits;
    const mask = bits.length * 32 - 1;
    // double hashing, the step taken from the high bits (the mask keeps only low ones)
    const step = (fp >>> 15) | (fp << 17) | 1;
    let seen = true;
    for (let j = 0, h = fp; j < PROBES; j++, h = (h + step) | 0) {
      const b = h & mask;
      const m = 1 << (b & 31);
      if ((bits[b >>> 5]! & m) === 0) {
        seen = false;
        bits[b >>> 5]! |= m;
      }
    }
    return seen;
  }

  /** The newest entry holding v itself (repeats are usually near), or -1. */
  private search(v: object, fp: number): number {
    const fps = this.fps;
    for (let e = this.count - 1; e >= 0; e--) {
      if (fps[e] === fp && this.objs[e] === v) {
        this.scanned += this.count - e;
        return this.idxs[e]!;
      }
    }
    this.scanned += this.count;
    return -1;
  }

  private grow(): void {
    this.cap *= 2;
    const fps = new Int32Array(this.cap);
    fps.set(this.fps);
    this.fps = fps;
    const idxs = new Uint32Array(this.cap);
    idxs.set(this.idxs);
    this.idxs = idxs;
    this.bits = new Int32Array((this.cap * BITS_PER_ENTRY) / 32);
    for (let e = 0; e < this.count; e++) this.setBits(fps[e]!);
  }

  private handOver(): void {
    for (let e = 0; e < this.count; e++) this.map.set(this.objs[e]!, this.idxs[e]!);
    this.handedOver = true;
    this.objs = [];
    this.count = 0;
  }
}
