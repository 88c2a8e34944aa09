// docs/toolkit.md §3: the per-argument base64 limit, the 30 s budget and the exact message texts.
import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lenientB64decode, strictB64decode } from "../../../src/payload/base64.js";
import {
  b64decode,
  DeserializeTimeoutError,
  deserializeArg,
  deserializeArgs,
  deserializeKwargs,
  MAX_PAYLOAD_BASE64_CHARS,
  PayloadTooLargeError,
  SerializationError,
  serializeArg,
} from "../../../src/payload/index.js";

/** A valid pickle whose base64 text is exactly `chars` long (a multiple of 4): one BINBYTES8. */
function payloadOfLength(chars: number): string {
  const total = (chars / 4) * 3;
  const n = total - 12; // PROTO 5 (2) + BINBYTES8 header (9) + STOP (1)
  const b = Buffer.alloc(total, 0x61);
  b[0] = 0x80;
  b[1] = 5;
  b[2] = 0x8e;
  b.writeBigUInt64LE(BigInt(n), 3);
  b[total - 1] = 0x2e;
  return b.toString("base64");
}

describe("base64 argument limits", () => {
  it("the limit is 10 MiB of base64 text", () => {
    expect(MAX_PAYLOAD_BASE64_CHARS).toBe(10_485_760);
  });

  it("exactly 10,485,760 characters decode", () => {
    const text = payloadOfLength(MAX_PAYLOAD_BASE64_CHARS);
    expect(text.length).toBe(MAX_PAYLOAD_BASE64_CHARS);
    expect((deserializeArg(text) as Uint8Array).length).toBe(7_864_308);
  });

  it("one character more fails with the interface document's message", () => {
    const text = `${payloadOfLength(MAX_PAYLOAD_BASE64_CHARS)}=`;
    expect(() => deserializeArg(text)).toThrow(PayloadTooLargeError);
    expect(() => deserializeArg(text)).toThrow(/^Payload size 10\.0 MB exceeds limit of 10\.0 MB$/);
  });

  it("12 MiB reads as 12.0 MB, and limit errors pass through the args / kwargs wrappers unchanged", () => {
    const text = "A".repeat(12 * 1024 * 1024);
    expect(() => deserializeArg(text)).toThrow("Payload size 12.0 MB exceeds limit of 10.0 MB");
    let err: unknown;
    try {
      deserializeArgs(["gAVLKi4=", text]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as Error).message).toBe("Payload size 12.0 MB exceeds limit of 10.0 MB");
    expect(() => deserializeKwargs({ a: text })).toThrow(/^Payload size 12\.0 MB exceeds limit of 10\.0 MB$/);
  });

  it("the timeout passes through unchanged with its exact text", () => {
    let t = 0;
    const now = (): number => (t += 60_000);
    const big = serializeArg(Array.from({ length: 50_000 }, (_, i) => i));
    let err: unknown;
    try {
      deserializeArgs([big], { now });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DeserializeTimeoutError);
    expect((err as Error).message).toBe("Deserialization timed out after 30s");
  });
});

describe("decoding messages", () => {
  it("decodes the worker fixtures of docs/toolkit.md §2.3", () => {
    expect(deserializeArg("gAVLKi4=")).toBe(42);
    expect(deserializeArg("gAVLBS4=")).toBe(5);
    expect(deserializeArg("gAWVDwAAAAAAAACMC2hlbGxvIHdvcmxklC4=")).toBe("hello world");
  });

  it("reads canonical text without the stray-character scan, and gives back to it everything else", () => {
    // characters of the alphabet, padding in and out of place, and what Node would read but Python drops
    const char = fc.constantFrom(
      ..."ABCXYZabcxyz0189+/",
      "=",
      "-",
      "_",
      " ",
      "\n",
      "*",
      "é",
      "Ł",
      "\u{1F600}",
    );
    const text = fc.oneof(
      fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString("base64")),
      fc.array(char, { maxLength: 24 }).map((cs) => cs.join("")),
      fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 30 }), fc.nat(60), char).map(([b, at, c]) => {
        const t = Buffer.from(b).toString("base64");
        const i = at % t.length;
        return t.slice(0, i) + c + t.slice(i + 1);
      }),
    );
    let strict = 0;
    fc.assert(
      fc.property(text, (t) => {
        const fast = strictB64decode(t);
        let slow: Buffer | Error;
        try {
          slow = lenientB64decode(t);
        } catch (e) {
          slow = e as Error;
        }
        if (fast === null) return;
        strict++;
        expect(slow, JSON.stringify(t)).toBeInstanceOf(Buffer);
        expect([...fast], JSON.stringify(t)).toEqual([...(slow as Buffer)]);
      }),
      { numRuns: 3000 },
    );
    expect(strict).toBeGreaterThan(500);
    for (const t of ["QUJD", "QUI=", "QQ==", ""]) expect(strictB64decode(t), t).not.toBeNull();
    for (const t of ["QU-D", "QU_D", "QUI", "Q===", "QQ=A", "Q\u0141JD", "QU JD"])
      expect(strictB64decode(t), t).toBeNull();
  });

  it("b64decode's bytes are their own, never a window onto Node's shared buffer pool", () => {
    for (const size of [0, 3, 100, 4095, 4096, 100_000]) {
      const data = new Uint8Array(size).map((_, i) => (i * 7) & 0xff);
      const bytes = b64decode(Buffer.from(data).toString("base64"));
      expect(bytes, String(size)).toEqual(data);
      expect(bytes.byteOffset).toBe(0);
      expect(bytes.buffer.byteLength, String(size)).toBe(size);
    }
  });

  it("invalid base64 → Failed to deserialize argument: <reason>", () => {
    expect(() => deserializeArg("gAVLKi4")).toThrow("Failed to deserialize argument: Incorrect padding");
    expect(() => deserializeArg("gAVLK")).toThrow(
      "Failed to deserialize argument: Invalid base64-encoded string: number of data characters (5) cannot be 1 more than a multiple of 4",
    );
    expect(() => deserializeArg(42)).toThrow(
      "Failed to deserialize argument: expected a base64 string, got number",
    );
  });

  it("invalid pickle → Failed to deserialize argument: <reason>", () => {
    expect(() => deserializeArg(Buffer.from("xyz").toString("base64"))).toThrow(
      "Failed to deserialize argument: invalid load key, 'x'.",
    );
    expect(() => deserializeArg("")).toThrow("Failed to deserialize argument: Ran out of input");
    expect(() => deserializeArg("gAWMBXBvc2l4lIwGc3lzdGVtlJMu")).toThrow(
      /^Failed to deserialize argument: refusing global 'posix.system'/,
    );
  });

  it("the args and kwargs wrappers say which part failed", () => {
    expect(() => deserializeArgs(["gAVLKi4=", "!!!"])).toThrow(/^Failed to deserialize args: /);
    expect(() => deserializeKwargs({ a: "gAVLKi4" })).toThrow(
      "Failed to deserialize kwargs: Incorrect padding",
    );
    expect(() => deserializeArgs("x")).toThrow(SerializationError);
  });

  it("kwargs keys stay own data properties", () => {
    const kw = deserializeKwargs(JSON.parse('{"__proto__": "gAVLKi4=", "x": "gAVLBS4="}'));
    expect(Object.getPrototypeOf(kw)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(kw, "__proto__")?.value).toBe(42);
    expect(kw.x).toBe(5);
  });

  it("serializeArg wraps encoder failures", () => {
    expect(serializeArg(42)).toBe("gAVLKi4=");
    expect(() => serializeArg(() => 1)).toThrow(/^Failed to serialize argument: cannot pickle a function/);
  });
});
