import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { decode } from "../../src/payload/index.js";

const b = new Uint8Array(readFileSync("/tmp/prof/records.pkl"));
const med = (ts: number[]) => ts.sort((a, b) => a - b)[Math.floor(ts.length / 2)]!;
const node: number[] = [];
const py: number[] = [];
for (let i = 0; i < 3; i++) decode(b);
for (let round = 0; round < 4; round++) {
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    decode(b);
    node.push(performance.now() - t);
  }
  const r = spawnSync(
    "/usr/bin/python3",
    [
      "-c",
      "import pickle,time,sys\nb=open('/tmp/prof/records.pkl','rb').read()\nfor i in range(7):\n  t=time.perf_counter(); pickle.loads(b); print((time.perf_counter()-t)*1000)",
    ],
    { encoding: "utf8" },
  );
  py.push(...r.stdout.trim().split("\n").slice(2).map(Number));
}
console.log(
  `node median ${med(node).toFixed(0)} ms  python median ${med(py).toFixed(0)} ms  ratio ${(med(py) / med(node)).toFixed(2)}×`,
);
