// Throwaway projects for the toolkit tests: files in a temp folder, with flash-worker "installed" the way a
// user's `npm install flash-worker` would (node_modules/flash-worker, here a link to this checkout).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { create } from "tar";
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

/**
 * Packs a one-file npm package (`index.js` exporting `source`) as <project>/vendor/<name>-1.0.0.tgz and returns
 * its `file:` spec, so dependency installs need no registry. It is also put in the project's node_modules/,
 * as the user's own `npm install` would have.
 */
export async function vendorPackage(project: Project, name: string, source: string): Promise<string> {
  const src = mkdtempSync(join(tmpdir(), "flash-pkg-"));
  try {
    writeFileSync(
      join(src, "package.json"),
      JSON.stringify({ name, version: "1.0.0", type: "module", main: "index.js" }),
    );
    writeFileSync(join(src, "index.js"), source);
    mkdirSync(join(project.dir, "vendor"), { recursive: true });
    const file = `vendor/${name}-1.0.0.tgz`;
    await create({ gzip: true, file: join(project.dir, file), cwd: src, prefix: "package" }, [
      "package.json",
      "index.js",
    ]);
    project.write(`node_modules/${name}/package.json`, readFileSync(join(src, "package.json"), "utf8"));
    project.write(`node_modules/${name}/index.js`, source);
    return `file:${file}`;
  } finally {
    rmSync(src, { recursive: true, force: true });
  }
}
