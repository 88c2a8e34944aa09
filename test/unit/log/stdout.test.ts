// Log lines are gathered into one write per turn of the event loop, yet stay in order with everything else
// written to stdout, go out before a handler runs, and are not lost to process.exit.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/lines.ts", import.meta.url));

/** Runs the fixture; resolves with its stdout and exit code. `onOut` sees each stdout chunk as it arrives. */
function run(scenario: string, args: string[] = [], onOut: (text: string) => void = () => {}) {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, scenario, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
    onOut(out);
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
  });
  return new Promise<{ out: string; err: string; code: number | null }>((resolve) =>
    child.once("close", (code) => resolve({ out, err, code })),
  );
}

const messages = (out: string) =>
  out
    .trim()
    .split("\n")
    .map((line) => line.split(" | ").at(-1));

describe("log lines on stdout", () => {
  it("keep their order with console.log and stderr writes around them", async () => {
    const { out, err, code } = await run("order");
    expect(code).toBe(0);
    expect(messages(out)).toEqual(["one", "two", "three", "five", "six"]);
    expect(err).toBe("four\n");
  });

  it("go out before a handler that blocks the thread, not after it", async () => {
    // The handler holds the thread until the line has reached us: a line kept back until it returns means
    // no release, and the fixture exits 2 after 20 s.
    const release = join(mkdtempSync(join(tmpdir(), "flash-log-")), "release");
    const { out, code } = await run("blocked", [release], (text) => {
      if (text.includes("Started.") && !existsSync(release)) writeFileSync(release, "");
    });
    expect(code).toBe(0);
    expect(messages(out)).toEqual(["Started."]);
  });

  it("are written when the process exits straight after logging them", async () => {
    const { out, code } = await run("exit");
    expect(code).toBe(3);
    expect(messages(out)).toEqual(["last words"]);
  });
});
