// Global setup of the system project: its tests run the built CLI (dist/), so a build older than any source is
// rebuilt first — a test never runs a stale dist/, whether started by `npm test` or one `npx vitest run <file>`.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The build's last step writes it (package.json's build script): its time is the build's. */
const STAMP = join(ROOT, "dist", "package-lock.json");

function newestSource(): number {
  let newest = statSync(join(ROOT, "package.json")).mtimeMs;
  for (const file of readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" })) {
    newest = Math.max(newest, statSync(join(ROOT, "src", file)).mtimeMs);
  }
  return newest;
}

export function setup(): void {
  if (existsSync(STAMP) && statSync(STAMP).mtimeMs >= newestSource()) return;
  process.stderr.write("dist/ is older than src/: npm run build\n");
  execFileSync("npm", ["run", "build"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
}
