// Each command's option table: strict parsing for toolkit commands, lenient for the worker's, help generated from it.
import { describe, expect, it } from "vitest";
import { spec as build } from "../../../src/cli/build.js";
import { spec as deploy } from "../../../src/cli/deploy.js";
import { spec as dev } from "../../../src/cli/dev.js";
import { spec as login } from "../../../src/cli/login.js";
import { commandHelp, commandsHelp, parseCommandArgs } from "../../../src/cli/options.js";
import { spec as run } from "../../../src/cli/run.js";
import { spec as serve } from "../../../src/cli/serve.js";
import { spec as start } from "../../../src/cli/start.js";
import { spec as undeploy } from "../../../src/cli/undeploy.js";
import { ConfigError } from "../../../src/options/index.js";

const ALL = [run, start, dev, serve, login, build, deploy, undeploy];

describe("parseCommandArgs", () => {
  it("refuses a flag another command takes, naming the command's own", () => {
    expect(() => parseCommandArgs(build, ["--workers", "3", "--port", "9", "x.ts"], {})).toThrow(
      new ConfigError("Unknown option --workers (flash build takes --node-version)"),
    );
    expect(() => parseCommandArgs(login, ["--url", "http://x"], {})).toThrow(
      "Unknown option --url (flash login takes --api-key, --api-url, --no-verify)",
    );
  });

  it("says which flag lacks its value", () => {
    expect(() => parseCommandArgs(build, ["--node-version"], {})).toThrow(
      "Flag --node-version needs a value",
    );
  });

  it("feeds values through the one config parser, which validates them", () => {
    const { config, positional } = parseCommandArgs(deploy, ["a.ts", "--api-url=http://h:1/", "b.ts"], {});
    expect(config.apiUrl).toBe("http://h:1");
    expect(positional).toEqual(["a.ts", "b.ts"]);
    expect(() => parseCommandArgs(deploy, ["--api-url", "ftp://h"], {})).toThrow(
      /Invalid URL "ftp:\/\/h" in flag --api-url/,
    );
  });

  it("takes short aliases and values that may be left out", () => {
    expect(parseCommandArgs(deploy, ["--tls-verify"], {}).config.tlsVerify).toBe(true);
    expect(parseCommandArgs(deploy, ["--tls-verify=false"], {}).config.tlsVerify).toBe(false);
    const { config } = parseCommandArgs(undeploy, ["-y", "--all"], {});
    expect([config.yes, config.all]).toEqual([true, true]);
  });

  it("maps dev's --host and --port onto the local API server's options, env below flags", () => {
    const { config } = parseCommandArgs(dev, ["--host", "0.0.0.0", "--port=9001"], { PORT: "5" });
    expect([config.apiHost, config.apiPort, config.port]).toEqual(["0.0.0.0", 9001, 5]);
  });

  it("leaves the worker's unknown flags to the handler", () => {
    const { config, positional } = parseCommandArgs(run, ["--my-flag", "1", "--test-input", "{}"], {});
    expect(config.testInput).toBe("{}");
    expect(positional).toEqual(["--my-flag", "1"]);
  });
});

describe("help", () => {
  it("every command declares a summary and documented options", () => {
    for (const spec of ALL) {
      expect(spec.summary.length).toBeGreaterThan(10);
      for (const option of spec.options) {
        expect(option.flag).toMatch(/^--[a-z][a-z-]*$/);
        expect(option.help.length).toBeGreaterThan(5);
      }
    }
  });

  it("flash <command> --help lists the command's table", () => {
    const help = commandHelp(serve);
    expect(help.split("\n")[0]).toBe("usage: flash serve [endpoint_id...] [options]");
    for (const option of serve.options) expect(help).toContain(option.flag);
    expect(help).toContain(serve.summary);
  });

  it("flash --help lists every command with its summary", () => {
    const help = commandsHelp(ALL);
    expect(help.split("\n")[0]).toBe("usage: flash <command> [options]");
    for (const spec of ALL) {
      const line = help.split("\n").find((l) => l.startsWith(`  ${spec.name} `));
      expect(line).toContain(spec.summary);
    }
  });
});
