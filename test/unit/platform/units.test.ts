// Small pure pieces: relaying worker output, endpoint ids from file names, dev/serve flags.
import { describe, expect, it } from "vitest";
import { endpointIdFor } from "../../../src/app/load.js";
import { spec as dev } from "../../../src/cli/dev.js";
import { parseCommandArgs } from "../../../src/cli/options.js";
import { createLogger } from "../../../src/log/index.js";
import { ConfigError } from "../../../src/options/index.js";
import type { Platform } from "../../../src/platform/index.js";
import { curlCommand } from "../../../src/platform/index.js";
import { relayLine } from "../../../src/platform/workers/pool.js";
import { localPlatform } from "../../../src/toolkit/dev/local-platform.js";

function capture() {
  const lines: string[] = [];
  const log = createLogger({
    level: "DEBUG",
    json: false,
    destination: { write: (l) => lines.push(l) },
  }).child({
    subject: "w1",
  });
  return { lines, log };
}

describe("relayLine", () => {
  it("keeps a text line's level and drops only its timestamp", () => {
    const { lines, log } = capture();
    relayLine("2026-01-01T00:00:00.000Z | ERROR | job-1 | Captured Handler Exception", "info", log);
    expect(lines[0]).toMatch(/ \| ERROR \| w1 \| job-1 \| Captured Handler Exception\n$/);
  });

  it("reads the platform's JSON lines", () => {
    const { lines, log } = capture();
    relayLine('{"requestId":"job-2","level":"WARN","message":"slow"}', "info", log);
    expect(lines[0]).toMatch(/ \| WARN \| w1 \| job-2 \| slow\n$/);
  });

  it("relays anything else as it is, at the stream's level", () => {
    const { lines, log } = capture();
    relayLine("--- Starting Serverless Worker |  Version 1 ---", "info", log);
    relayLine("{not json", "warn", log);
    expect(lines[0]).toMatch(/ \| INFO \| w1 \| --- Starting Serverless Worker \| {2}Version 1 ---\n$/);
    expect(lines[1]).toMatch(/ \| WARN \| w1 \| \{not json\n$/);
  });
});

describe("flash dev arguments", () => {
  it("names the endpoint after the handler, or its folder for handler.ts", () => {
    expect(endpointIdFor("/x/examples/echo/handler.ts")).toBe("echo");
    expect(endpointIdFor("/x/My Worker.ts")).toBe("my-worker");
    expect(endpointIdFor("/x/src/index.js")).toBe("src");
  });

  it("defaults to 127.0.0.1:8000, the key left to the platform to generate", async () => {
    const { options, positional } = parseCommandArgs(dev, ["handler.ts"], {});
    const { settings, keyGenerated } = await localPlatform(options, {});
    expect(settings).toMatchObject({ host: "127.0.0.1", port: 8000, apiKey: undefined });
    expect([keyGenerated, positional]).toEqual([true, ["handler.ts"]]);
  });

  it("reads --host, --port, --api-key and --workers, flags over the environment", async () => {
    const { options } = parseCommandArgs(
      dev,
      ["h.ts", "--host=0.0.0.0", "--port", "9000", "--api-key", "k1", "--workers", "2,5"],
      {
        FLASH_API_KEY: "from-env",
        FLASH_WORKERS: "1",
        PORT: "1234",
      },
    );
    const { settings, keyGenerated } = await localPlatform(options, {});
    expect(settings).toMatchObject({ host: "0.0.0.0", port: 9000, apiKey: "k1" });
    expect(keyGenerated).toBe(false);
    expect(options.workers).toEqual([2, 5]);
    expect(parseCommandArgs(dev, [], { FLASH_API_KEY: "from-env" }).options.apiKey).toBe("from-env");
    // n means [0, n], as an Endpoint's `workers: n` does.
    expect(parseCommandArgs(dev, [], { FLASH_WORKERS: "3" }).options.workers).toEqual([0, 3]);
  });

  it("refuses bad values with a ConfigError naming the flag", () => {
    expect(() => parseCommandArgs(dev, ["--workers", "3,1"], {})).toThrow(ConfigError);
    expect(() => parseCommandArgs(dev, ["--workers", "0,0"], {})).toThrow(/--workers/);
    expect(() => parseCommandArgs(dev, ["--port", "70000"], {})).toThrow(ConfigError);
    expect(() => parseCommandArgs(dev, ["--nope"], {})).toThrow("Unknown option --nope");
  });

  it("prints a curl call that survives shell quoting", () => {
    const platform = { url: "http://127.0.0.1:8000", apiKey: "k" } as Platform;
    expect(curlCommand(platform, "echo", `{"input":{"q":"it's"}}`)).toBe(
      `curl -s -X POST http://127.0.0.1:8000/v2/echo/runsync -H 'Authorization: Bearer k' -H 'Content-Type: application/json' -d '{"input":{"q":"it'\\''s"}}'`,
    );
  });
});
