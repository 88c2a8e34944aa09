// The heartbeat thread's lazy logger: the same lines as createLogger, in order, nothing below the level.
import { describe, expect, it } from "vitest";
import { lazyLogger } from "../../src/log/lazy.js";

const settle = () => new Promise((r) => setTimeout(r, 50));

describe("lazyLogger", () => {
  it("writes what createLogger(...).child(bindings) writes, in call order", async () => {
    const lines: string[] = [];
    const log = lazyLogger(
      { level: "DEBUG", json: true, destination: { write: (l: string) => lines.push(l) } },
      { subject: "heartbeat" },
    );
    log.debug("first");
    log.error("second", { status: 503 });
    log.child({ requestId: "j1" }).warn("third");
    expect(log.level).toBe("DEBUG");
    while (lines.length < 3) await settle();
    expect(lines.map((l) => JSON.parse(l))).toStrictEqual([
      { requestId: null, level: "DEBUG", message: "first" },
      { requestId: null, level: "ERROR", message: "second", status: 503 },
      { requestId: "j1", level: "WARN", message: "third" },
    ]);
  });

  it("text lines name the subject; lines below the level are never written", async () => {
    const lines: string[] = [];
    const log = lazyLogger(
      { level: "INFO", json: false, destination: { write: (l: string) => lines.push(l) } },
      { subject: "heartbeat" },
    );
    log.trace("hidden");
    log.debug("hidden too");
    log.info("shown");
    while (lines.length < 1) await settle();
    await settle();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\S+Z \| INFO \| heartbeat \| shown\n$/);
  });

  it("SILENT writes nothing at all", async () => {
    const lines: string[] = [];
    const log = lazyLogger(
      { level: "SILENT", json: false, destination: { write: (l: string) => lines.push(l) } },
      {},
    );
    log.error("nothing");
    await settle();
    expect(lines).toEqual([]);
  });
});
