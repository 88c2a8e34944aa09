import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/tick-shapes.ts", import.meta.url));

/** The feedback states of nextTick's record-literal stores after a full collection and new tick shapes. */
function literalStores(mode: "keep" | "control"): string[] {
  // V8 prints to stdout with blocking C writes; a non-blocking pipe would drop most of it, a file keeps all.
  const dir = mkdtempSync(join(tmpdir(), "tick-shapes-"));
  const out = openSync(join(dir, "stdout"), "w");
  try {
    const run = spawnSync(
      process.execPath,
      ["--allow-natives-syntax", "--expose-gc", "--import", "tsx", FIXTURE, mode],
      { stdio: ["ignore", out, "pipe"], encoding: "utf8" },
    );
    expect(run.status, run.stderr).toBe(0);
    const printed = readFileSync(join(dir, "stdout"), "utf8");
    return [...printed.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1] ?? "");
  } finally {
    closeSync(out);
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("keepTickShapes", () => {
  it("keeps every store in nextTick's record literal monomorphic across full collections", () => {
    const states = literalStores("keep");
    // async_id, trigger_async_id, callback and args: the four stores of the record.
    expect(states.length).toBeGreaterThanOrEqual(4);
    expect(states).toEqual(states.map(() => "MONOMORPHIC"));
  });

  // The failure it prevents, as Node 20's V8 shows it; other V8s reach it on other paths (a real server's first requests).
  it.runIf(process.versions.node.startsWith("20."))(
    "without it, the same run leaves nextTick's stores megamorphic (Node 20)",
    () => {
      expect(literalStores("control")).toContain("MEGAMORPHIC");
    },
  );
});
