// Compiles test/gpu/fake-driver.c into libcuda.so.1 and libnvidia-ml.so.1 in a temporary folder, for the
// tests of the real koffi bindings; undefined where no C compiler is installed (those tests then skip).
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SOURCE = fileURLToPath(new URL("./fake-driver.c", import.meta.url));

export function hasCompiler(): boolean {
  try {
    execFileSync("cc", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

let built: string | undefined;

/** The folder holding the fake libraries: point FLASH_GPU_LIBRARY_DIR at it. */
export function fakeDriverDir(): string {
  if (built) return built;
  const dir = mkdtempSync(join(tmpdir(), "flash-fake-gpu-"));
  execFileSync("cc", ["-shared", "-fPIC", "-O1", "-Wall", "-o", join(dir, "libcuda.so.1"), SOURCE, "-lm"]);
  copyFileSync(join(dir, "libcuda.so.1"), join(dir, "libnvidia-ml.so.1"));
  built = dir;
  return dir;
}
