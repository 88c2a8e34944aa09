// `npm run bench`: runs every test/bench/*.bench.ts (or those named on the command line) and prints one table.
import { readdirSync } from "node:fs";
import { type Bench, type BenchRow, toMarkdown } from "./report.js";

const dir = new URL(".", import.meta.url);
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

const rows: BenchRow[] = [];
for (const file of files) {
  process.stderr.write(`bench: ${file}\n`);
  const mod = (await import(new URL(file, dir).href)) as { default: Bench };
  rows.push(...(await mod.default()));
}
process.stdout.write(`${toMarkdown(rows)}\n`);
