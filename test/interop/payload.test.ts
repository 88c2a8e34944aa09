// Live interop with real Python (cloudpickle): TypeScript encodes → Python decodes and compares, and Python
// encodes → TypeScript decodes and compares, on the vector values and on fast-check-generated values.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decode,
  encode,
  type Protocol,
  RemoteDispatcher,
  type RemoteTarget,
} from "../../src/payload/index.js";
import { pyValue } from "../unit/payload/arbitraries.js";
import { findPython, PythonPeer } from "../unit/payload/python.js";
import { fromTyped, mismatch, toTyped, type VectorFile } from "../unit/payload/typed.js";

const python = findPython();
const b64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");
const fromB64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64"));
const PROTOCOLS: Protocol[] = [2, 3, 4, 5];

if (python.path === null) {
  describe("payload interop with Python", () => {
    it("needs Debian's python3 with cloudpickle", () => {
      throw new Error(python.reason);
    });
  });
} else {
  const pythonPath = python.path;
  describe(`payload interop with Python (${python.reason})`, () => {
    let peer: PythonPeer;
    beforeAll(() => {
      peer = new PythonPeer(pythonPath);
    });
    afterAll(() => peer.close());

    const canonOf = async (payload: Uint8Array): Promise<string> => {
      const a = await peer.request("loads_canon", { b64: b64(payload) });
      if (a.error !== undefined) throw new Error(`Python could not load our pickle: ${a.error}`);
      return a.canon!;
    };

    it("Python reads every vector value encoded by TypeScript at protocols 2-5 as the original value", async () => {
      const file = JSON.parse(
        readFileSync(new URL("../unit/payload/vectors.json", import.meta.url), "utf8"),
      ) as VectorFile;
      const checks = file.vectors.map(async (vec) => {
        const want = await canonOf(fromB64(vec.payloads.at(-1)!.b64));
        for (const protocol of PROTOCOLS) {
          const got = await canonOf(encode(fromTyped(vec.expected), { protocol }));
          expect(got, `${vec.name} p${protocol}`).toBe(want);
        }
      });
      await Promise.all(checks);
    });

    it("TS → Python: generated values arrive with the same value and type", async () => {
      await fc.assert(
        fc.asyncProperty(pyValue, fc.constantFrom(...PROTOCOLS), async (v, protocol) => {
          const got = await canonOf(encode(v, { protocol }));
          const want = await peer.request("canon_typed", { typed: toTyped(v) });
          expect(want.error).toBeUndefined();
          expect(got).toBe(want.canon);
        }),
        { numRuns: 300 },
      );
    });

    it("Python → TS: generated values pickled by cloudpickle decode to the same value and type", async () => {
      await fc.assert(
        fc.asyncProperty(pyValue, fc.constantFrom<Protocol | null>(2, 3, 4, 5, null), async (v, protocol) => {
          const typed = toTyped(v);
          const a = await peer.request("dumps_typed", { typed, protocol });
          expect(a.error).toBeUndefined();
          expect(mismatch(typed, decode(fromB64(a.b64!)))).toBeNull();
        }),
        { numRuns: 300 },
      );
    });

    it("Python → TS → Python: echoing a decoded value gives Python back what it sent", async () => {
      await fc.assert(
        fc.asyncProperty(pyValue, async (v) => {
          const a = await peer.request("dumps_typed", { typed: toTyped(v), protocol: null });
          const sent = fromB64(a.b64!);
          expect(await canonOf(encode(decode(sent)))).toBe(await canonOf(sent));
        }),
        { numRuns: 200 },
      );
    });

    it("a FunctionRequest with cloudpickle args reaches registered functions and Python reads the result", async () => {
      const remote = new RemoteDispatcher(
        new Map<string, RemoteTarget>([
          ["echo", (v: unknown) => v],
          ["add", (a: number, b: number) => a + b],
        ]),
      );
      const arg = async (typed: unknown): Promise<string> =>
        (await peer.request("dumps_typed", { typed, protocol: null })).b64!;
      const sum = await remote.dispatch({
        function_name: "add",
        function_code: "def add(a, b):\n    return a + b",
        args: [await arg({ t: "int", v: "40" }), await arg({ t: "int", v: "2" })],
      });
      expect(sum.success).toBe(true);
      expect((await peer.request("loads_canon", { b64: sum.result })).canon).toBe("int:42");
      await fc.assert(
        fc.asyncProperty(pyValue, async (v) => {
          const sent = await arg(toTyped(v));
          const res = await remote.dispatch({ function_name: "echo", args: [sent] });
          expect(res.success).toBe(true);
          expect((await peer.request("loads_canon", { b64: res.result })).canon).toBe(
            (await peer.request("loads_canon", { b64: sent })).canon,
          );
        }),
        { numRuns: 100 },
      );
    });

    it("shared and recursive references survive TS → Python", async () => {
      const shared = [1];
      const rec: unknown[] = [];
      rec.push(rec);
      const d: Record<string, unknown> = {};
      d.self = d;
      const got = await canonOf(encode([shared, shared, rec, d]));
      expect(got).toBe('#0list[#1list[int:1],@1,#2list[@2],#3dict{str:"self":@3}]');
    });
  });
}
