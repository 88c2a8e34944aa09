// LOG_FORMAT=json's logger in process: pino's records with our keys, levels, redaction and the trace id hook.
import { afterEach, describe, expect, it } from "vitest";
import { addSecret, openLogger, pinoLogger, setTraceIdSource } from "../../../src/log/index.js";

async function capture(level: "DEBUG" | "INFO" = "DEBUG") {
  const lines: string[] = [];
  const log = await openLogger({
    level,
    json: false,
    format: "json",
    destination: { write: (l: string) => lines.push(l) },
  });
  return { log, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

afterEach(() => setTraceIdSource(undefined));

describe("LOG_FORMAT=json logger", () => {
  it("one JSON object per line: level label, ISO time, bindings, fields and message", async () => {
    const { log, lines, records } = await capture("INFO");
    log.child({ subject: "worker" }).child({ requestId: "job-1" }).warn("slow", { ms: 12 });
    log.debug("below the level");
    expect(lines).toHaveLength(1);
    expect(lines[0]?.endsWith("}\n")).toBe(true);
    const [record] = records();
    expect(record).toStrictEqual({
      level: "WARN",
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      subject: "worker",
      requestId: "job-1",
      ms: 12,
      message: "slow",
    });
  });

  it("a rebound key is written once; the job's pino logger is a child carrying its id", async () => {
    const { log, lines, records } = await capture();
    const job = log.child({ subject: "a" }).child({ subject: "b", requestId: "j" });
    job.info("x");
    expect(lines[0]?.match(/"subject"/g)).toHaveLength(1);
    pinoLogger(job)?.info({ k: 1 }, "from pino");
    expect(records()[1]).toMatchObject({ subject: "b", requestId: "j", k: 1, message: "from pino" });
  });

  it("the text logger has no pino behind it", async () => {
    const log = await openLogger({ level: "INFO", json: false, destination: { write: () => {} } });
    expect(pinoLogger(log)).toBeUndefined();
  });

  it("secrets are redacted, and the active trace id joins the record once a tracer sets its source", async () => {
    addSecret("sk-json-secret-123");
    const { log, records } = await capture();
    log.info("key sk-json-secret-123");
    let active: string | undefined = "4bf92f3577b34da6a3ce929d0e0e4736";
    setTraceIdSource(() => active);
    log.info("traced");
    active = undefined;
    log.info("outside a span");
    const [redacted, traced, untraced] = records();
    expect(redacted?.message).toBe("key ***");
    expect(redacted?.traceId).toBeUndefined();
    expect(traced?.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(untraced).not.toHaveProperty("traceId");
  });
});
