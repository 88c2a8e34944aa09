// Every payload that real Python wrote (our generator's file and the design's set) decodes to its typed
// expected value, and re-encoding at every protocol decodes to the same value again.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decode, encode } from "../../../src/payload/index.js";
import { fromTyped, mismatch, type VectorFile } from "./typed.js";

const files: [string, URL][] = [
  ["own (gen_vectors.py, protocols 0-5)", new URL("./vectors.json", import.meta.url)],
  [
    "design (test/fixtures/pickle/design-vectors.json)",
    new URL("../../fixtures/pickle/design-vectors.json", import.meta.url),
  ],
];

for (const [label, url] of files) {
  const file = JSON.parse(readFileSync(url, "utf8")) as VectorFile;

  describe(`vectors: ${label}`, () => {
    it("has a wide value set", () => {
      expect(file.vectors.length).toBeGreaterThan(100);
    });

    for (const vec of file.vectors) {
      it(`${vec.name}: every payload decodes to the expected value`, () => {
        for (const p of vec.payloads) {
          const bytes = Buffer.from(p.b64, "base64");
          const got = decode(bytes);
          const m = mismatch(vec.expected, got);
          expect(m, `${p.producer} protocol ${p.protocol}`).toBeNull();
        }
      });

      it(`${vec.name}: decode → encode → decode keeps value and type at protocols 2-5`, () => {
        const first = vec.payloads.at(-1)!;
        const decoded = decode(Buffer.from(first.b64, "base64"));
        const built = fromTyped(vec.expected);
        for (const protocol of [2, 3, 4, 5] as const) {
          expect(
            mismatch(vec.expected, decode(encode(decoded, { protocol }))),
            `re-encoded p${protocol}`,
          ).toBeNull();
          expect(
            mismatch(vec.expected, decode(encode(built, { protocol }))),
            `built p${protocol}`,
          ).toBeNull();
        }
      });
    }
  });
}
