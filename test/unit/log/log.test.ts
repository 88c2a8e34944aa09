import { describe, expect, it } from "vitest";
import {
  addSecret,
  createLogger,
  formatRecord,
  MAX_MESSAGE_LENGTH,
  truncateMessage,
} from "../../../src/log/index.js";

function capture(json: boolean, level: "DEBUG" | "INFO" | "SILENT" = "DEBUG") {
  const lines: string[] = [];
  const log = createLogger({ level, json, destination: { write: (l: string) => lines.push(l) } });
  return { log, lines };
}

describe("logger", () => {
  it("text lines: <timestamp> | <LEVEL> | <subject> | <message>", () => {
    const { log, lines } = capture(false);
    log.child({ subject: "worker" }).info("ready");
    log.child({ requestId: "job-1" }).warn("slow");
    log.error("plain");
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \| INFO \| worker \| ready\n$/);
    expect(lines[1]).toMatch(/ \| WARN \| job-1 \| slow\n$/);
    expect(lines[2]).toMatch(/ \| ERROR \| flash-worker \| plain\n$/);
  });

  it("JSON lines with requestId (null without a job), level and message", () => {
    const { log, lines } = capture(true);
    log.child({ requestId: "j1" }).info("Started.");
    log.debug("idle");
    expect(JSON.parse(lines[0]!)).toStrictEqual({ requestId: "j1", level: "INFO", message: "Started." });
    expect(JSON.parse(lines[1]!)).toStrictEqual({ requestId: null, level: "DEBUG", message: "idle" });
  });

  it("adds [batchId=…] and extra fields", () => {
    const { log, lines } = capture(false);
    log.child({ requestId: "j1", batchId: "b7" }).info("hi", { attempt: 2 });
    expect(lines[0]).toMatch(/ \| j1 \| \[batchId=b7\] hi \| \{"attempt":2\}\n$/);
  });

  it("a line without fields is byte for byte what formatRecord writes for its record", () => {
    const bindings = [
      {},
      { subject: "worker" },
      { requestId: 'j "1" \u2028' },
      { requestId: "j1", batchId: "b7" },
      { requestId: "j1", extra: 1 } as { requestId: string },
    ];
    const messages = ["Started.", 'quote " and \n newline', "x".repeat(5000)];
    for (const json of [false, true]) {
      for (const bound of bindings) {
        for (const msg of messages) {
          const { log, lines } = capture(json);
          log.child(bound).warn(msg);
          const expected = formatRecord({ ...bound, level: 40, time: Date.now(), msg }, json);
          // The timestamp is the one part that may differ between the two calls.
          const stamp = /^\d{4}-\d\d-\d\dT[\d:.]+Z/;
          expect(lines[0]!.replace(stamp, "T")).toBe(expected.replace(stamp, "T"));
        }
      }
    }
  });

  it("honours the level; SILENT prints nothing", () => {
    const info = capture(false, "INFO");
    info.log.debug("hidden");
    info.log.info("shown");
    expect(info.lines.length).toBe(1);
    const silent = capture(false, "SILENT");
    silent.log.error("nothing");
    expect(silent.lines.length).toBe(0);
  });

  it("cuts messages over 4096 characters in the middle, as runpod-python does", () => {
    const long = `${"a".repeat(3000)}${"b".repeat(3000)}`;
    const cut = truncateMessage(long);
    expect(cut).toBe(
      `${"a".repeat(2048)}\n...TRUNCATED ${6000 - MAX_MESSAGE_LENGTH} CHARACTERS...\n${"b".repeat(2048)}`,
    );
    expect(truncateMessage("short")).toBe("short");
    expect(JSON.parse(formatRecord({ level: 30, msg: long }, true)).message).toBe(cut);
  });

  it("fields: undefined ones dropped, cycles and bigints never make a log call throw", () => {
    const { log, lines } = capture(false);
    log.warn("retrying", { jobId: undefined });
    const cyclic: Record<string, unknown> = { name: "a" };
    cyclic.self = cyclic;
    log.info("odd", { cyclic, big: 2n ** 70n, err: new TypeError("bad") });
    expect(lines[0]).toMatch(/ \| WARN \| flash-worker \| retrying\n$/);
    expect(lines[1]).toMatch(
      / \| odd \| \{"cyclic":\{"name":"a","self":"\[Circular\]"\},"big":"1180591620717411303424","err":\{"type":"TypeError","message":"bad"\}\}\n$/,
    );
    const json = capture(true);
    json.log.child({ requestId: "j1" }).info("x", { cyclic });
    expect(JSON.parse(json.lines[0]!)).toStrictEqual({
      requestId: "j1",
      level: "INFO",
      message: "x",
      cyclic: { name: "a", self: "[Circular]" },
    });
  });

  it("a child's bindings add up; a call's fields win over them", () => {
    const { log, lines } = capture(true);
    const child = log.child({ subject: "worker" }).child({ requestId: "j1" });
    child.info("a");
    child.info("b", { requestId: "j2" });
    expect(child.level).toBe("DEBUG");
    expect(lines.map((l) => JSON.parse(l).requestId)).toEqual(["j1", "j2"]);
  });
});

describe("redaction (src/log/redact.ts)", () => {
  it("no line carries a registered secret, a secret NAME=value, --creds or a Bearer token; placeholders stay", () => {
    addSecret("sk-registered-0123456789");
    const { log, lines } = capture(false);
    log.info("worker said sk-registered-0123456789 twice: sk-registered-0123456789");
    log.info(
      "buildah run -e RUNPOD_AI_API_KEY=abc123def456 -e BUCKET_SECRET_ACCESS_KEY='s3 cr3t' -e PORT=8000 ctr",
    );
    log.info('pull --creds user:pa55word-long img; {"secretAccessKey":"AKIA-long-secret","name":"x"}');
    log.info("GET / with Authorization: Bearer rpa_0123456789abcdef");
    log.info("export RUNPOD_API_KEY=<your-api-key> or RUNPOD_API_KEY=$KEY");
    const text = lines.join("");
    for (const secret of ["sk-registered", "abc123def456", "s3 cr3t", "pa55word", "AKIA-long", "rpa_0123"]) {
      expect(text).not.toContain(secret);
    }
    expect(lines[0]).toContain("worker said *** twice: ***");
    expect(lines[1]).toContain("-e RUNPOD_AI_API_KEY=*** -e BUCKET_SECRET_ACCESS_KEY=*** -e PORT=8000 ctr");
    expect(lines[2]).toContain('--creds *** img; {"secretAccessKey":"***","name":"x"}');
    expect(lines[3]).toContain("Authorization: Bearer ***");
    expect(lines[4]).toContain("export RUNPOD_API_KEY=<your-api-key> or RUNPOD_API_KEY=$KEY");
    // A model's tokens and token counts are not secrets; auth tokens are.
    log.info('Stream chunk: {"token":"in"} MAX_TOKENS=512 {"max_tokens":16}');
    expect(lines.at(-1)).toContain('Stream chunk: {"token":"in"} MAX_TOKENS=512 {"max_tokens":16}');
    log.info('HF_TOKEN=hf_abcdefgh {"access_token":"ya29-long","authToken":"npm_long"}');
    expect(lines.at(-1)).toContain('HF_TOKEN=*** {"access_token":"***","authToken":"***"}');
    // Short values are not registered: they would blank ordinary words.
    addSecret("short");
    log.info("a short word");
    expect(lines.at(-1)).toContain("a short word");
  });
});
