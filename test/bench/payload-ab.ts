// `node --import tsx test/bench/payload-ab.ts <checkout>`: pickle decode and encode time of this checkout's src/
// beside another's, in two processes at once, round after round. How src/payload/buffer-internals.ts was measured
// (docs/benchmarks-history.md, "Oddities, measured"): the other checkout's buffer-internals.ts used stringMethods({}).
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROUNDS = 7;

if (process.argv[2] === "--child") {
  const { decode, encode } = await import(`${process.argv[3]}/src/payload/index.ts`);
  const records = Array.from({ length: 100_000 }, (_, i) => ({
    id: i,
    name: `user${i}`,
    email: `user${i}@example.com`,
    score: i / 7,
    active: i % 2 === 0,
    group: `g${i % 100}`,
    note: "x".repeat(20 + (i % 40)),
  }));
  const texts = Array.from({ length: 2000 }, (_, i) => `héllo ${i} `.repeat(40 + (i % 200)));
  const bytes = encode(records);
  const decodes: number[] = [];
  const encodes: number[] = [];
  for (let run = 0; run < 15; run++) {
    let at = performance.now();
    decode(bytes);
    decodes.push(performance.now() - at);
    at = performance.now();
    encode(texts);
    encode(records);
    encodes.push(performance.now() - at);
  }
  const mid = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
  console.log(JSON.stringify({ decode: mid(decodes), encode: mid(encodes) }));
} else {
  const dirs = [fileURLToPath(new URL("../..", import.meta.url)), resolve(process.argv[2] ?? ".")];
  const run = (dir: string) =>
    new Promise<{ decode: number; encode: number }>((done, fail) => {
      const args = ["--import", "tsx", fileURLToPath(import.meta.url), "--child", dir];
      execFile(process.execPath, args, { encoding: "utf8" }, (err, out) =>
        err ? fail(err) : done(JSON.parse(out)),
      );
    });
  const ratios = { decode: [] as number[], encode: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const [a, b] = await Promise.all(dirs.map(run));
    ratios.decode.push(a!.decode / b!.decode);
    ratios.encode.push(a!.encode / b!.encode);
  }
  for (const [what, list] of Object.entries(ratios)) {
    const sorted = [...list].sort((x, y) => x - y);
    console.log(
      `${what}: this ÷ that median ${sorted[sorted.length >> 1]!.toFixed(3)} [${list.map((r) => r.toFixed(3)).join(" ")}]`,
    );
  }
}
