// Throwaway projects for the toolkit tests: files in a temp folder, with flash-worker "installed" the way a
// user's `npm install flash-worker` would (node_modules/flash-worker, here a link to this checkout).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ROOT } from "../process.js";

export interface Project {
  dir: string;
  write(path: string, text: string): void;
  remove(): void;
}

export function makeProject(files: Record<string, string>, prefix = "flash-app-"): Project {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(ROOT, join(dir, "node_modules", "flash-worker"), "dir");
  write(
    "package.json",
    JSON.stringify({ name: "app", type: "module", dependencies: { "flash-worker": "*" } }),
  );
  for (const [path, text] of Object.entries(files)) write(path, text);
  return { dir, write, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A queue handler answering `{greeting}` through a local module, so the local-import closure is exercised. */
export const GREETER = {
  "handler.ts": [
    'import { handler } from "flash-worker";',
    'import { greet } from "./lib/greet.js";',
    "",
    "export default handler(async (job: { input: { name: string } }) => ({ greeting: greet(job.input.name) }));",
    "",
  ].join("\n"),
  "lib/greet.ts": 'export const greet = (name: string): string => "hello " + name;\n',
};
