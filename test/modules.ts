// Which modules a `flash run` process resolves: proves a lazily loaded dependency (pino, OpenTelemetry) stays
// unloaded on the default path. A module hook in the child writes down every URL it resolves.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FLASH, ROOT } from "./process.js";

const HOOKS = `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  appendFileSync(process.env.MODULES_OUT, found.url + "\\n");
  return found;
}
`;

/** Runs `flash run <fixture>` with one empty job under `env` (PATH only besides); the module URLs it resolved, or throws on a failed run. */
export function modulesResolved(fixture: string, env: Record<string, string>): string[] {
  const dir = mkdtempSync(join(tmpdir(), "flash-modules-"));
  try {
    const out = join(dir, "resolved.txt");
    writeFileSync(join(dir, "hooks.mjs"), HOOKS);
    writeFileSync(
      join(dir, "preload.mjs"),
      'import { register } from "node:module";\nregister("./hooks.mjs", import.meta.url);\n',
    );
    const run = spawnSync(
      process.execPath,
      ["--import", join(dir, "preload.mjs"), FLASH, "run", fixture, "--test-input", '{"input":{}}'],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? "", MODULES_OUT: out, ...env }, encoding: "utf8" },
    );
    if (run.status !== 0) throw new Error(`flash run ${fixture} exited ${run.status}: ${run.stderr}`);
    return readFileSync(out, "utf8").split("\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
