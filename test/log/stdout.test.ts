// Log lines are gathered into one write per turn of the event loop, yet stay in order with everything else
// written to stdout, go out before a handler runs, and are not lost to process.exit.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/lines.ts", import.meta.url));

/** Runs the fixture; resolves with its stdout, each stdout chunk's arrival time, and its exit code. */
function run(scenario: string) {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, scenario], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const arrivals: { at: number; text: string }[] = [];
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
    arrivals.push({ at: performance.now(), text: chunk.toString("utf8") });
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
  });
  return new Promise<{
    out: string;
    err: string;
    arrivals: typeof arrivals;
    code: number | null;
    exitedAt: number;
  }>((resolve) =>
    child.once("close", (code) => resolve({ out, err, arrivals, code, exitedAt: performance.now() })),
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
    const { out, arrivals, exitedAt, code } = await run("blocked");
    expect(code).toBe(0);
    expect(messages(out)[0]).toBe("Started.");
    const started = arrivals.find((a) => a.text.includes("Started."));
    // The handler holds the thread for 3 s after the line: it must have arrived well before the exit.
    expect(exitedAt - started!.at).toBeGreaterThan(2000);
  });

  it("are written when the process exits straight after logging them", async () => {
    const { out, code } = await run("exit");
    expect(code).toBe(3);
    expect(messages(out)).toEqual(["last words"]);
  });
});
