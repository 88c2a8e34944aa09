// Each command's option table: strict parsing for toolkit commands, lenient for the worker's, help generated from it.
import { describe, expect, it } from "vitest";
import { spec as build } from "../../../src/cli/build.js";
import { COMMANDS } from "../../../src/cli/commands.js";
import { spec as deploy } from "../../../src/cli/deploy.js";
import { spec as dev } from "../../../src/cli/dev.js";
import { spec as login } from "../../../src/cli/login.js";
import { commandHelp, commandsHelp, parseCommandArgs } from "../../../src/cli/options.js";
import { spec as run } from "../../../src/cli/run.js";
import { spec as undeploy } from "../../../src/cli/undeploy.js";
import { ConfigError, shownFlags } from "../../../src/options/index.js";

describe("parseCommandArgs", () => {
  it("refuses a flag another command takes, naming the command's own", () => {
    expect(() => parseCommandArgs(build, ["--workers", "3", "--port", "9", "x.ts"], {})).toThrow(
      new ConfigError("Unknown option --workers (flash build takes --node-version)"),
    );
    expect(() => parseCommandArgs(login, ["--url", "http://x"], {})).toThrow(
      "Unknown option --url (flash login takes --api-key, --api-url, --no-verify)",
    );
  });

  it("says which flag lacks its value, and which takes none", () => {
    expect(() => parseCommandArgs(build, ["--node-version"], {})).toThrow(
      "Flag --node-version needs a value",
    );
    expect(() => parseCommandArgs(deploy, ["--image", "--no-wait"], {})).toThrow(
      "Flag --image needs a value",
    );
    expect(() => parseCommandArgs(deploy, ["--no-wait=1"], {})).toThrow("Flag --no-wait takes no value");
  });

  it("returns typed values its parsers validated, positional arguments apart", () => {
    const { options, positional } = parseCommandArgs(deploy, ["a.ts", "--api-url=http://h:1/", "b.ts"], {});
    expect(options.apiUrl).toBe("http://h:1");
    expect(options.waitTimeout).toBe(600_000);
    expect(positional).toEqual(["a.ts", "b.ts"]);
    expect(() => parseCommandArgs(deploy, ["--api-url", "ftp://h"], {})).toThrow(
      /Invalid URL "ftp:\/\/h" in flag --api-url/,
    );
    expect(parseCommandArgs(deploy, ["--wait-timeout", "2.5"], {}).options.waitTimeout).toBe(2500);
  });

  it("takes short aliases and values that may be left out", () => {
    expect(parseCommandArgs(deploy, ["--tls-verify"], {}).options.tlsVerify).toBe(true);
    expect(parseCommandArgs(deploy, ["--tls-verify=false"], {}).options.tlsVerify).toBe(false);
    expect(parseCommandArgs(deploy, [], {}).options.tlsVerify).toBeUndefined();
    const { options } = parseCommandArgs(undeploy, ["-y", "--all"], {});
    expect([options.yes, options.all]).toEqual([true, true]);
    expect(parseCommandArgs(undeploy, [], {}).options.yes).toBe(false);
  });

  it("reads only its own variables: the local platform's key is not deploy's, a worker's PORT not dev's", () => {
    const env = { FLASH_API_KEY: "platform-key", PORT: "5", RUNPOD_API_URL: "http://api:1" };
    expect(parseCommandArgs(deploy, [], env).options).toMatchObject({
      apiKey: undefined,
      apiUrl: "http://api:1",
    });
    expect(parseCommandArgs(dev, ["--host", "0.0.0.0", "--port=9001"], env).options).toMatchObject({
      host: "0.0.0.0",
      port: 9001,
      apiKey: "platform-key",
    });
    // A bad value of a variable a command does not read never stops it.
    expect(() => parseCommandArgs(deploy, [], { FLASH_WORKERS: "nope", PORT: "x" })).not.toThrow();
    expect(() => parseCommandArgs(deploy, [], { FLASH_CONTAINER_TOOL: "foo" })).toThrow(
      'Invalid container tool "foo" in environment variable FLASH_CONTAINER_TOOL',
    );
  });

  it("says where a value came from: a URL typed on login's command line is saved, RUNPOD_API_URL is not", () => {
    const env = { RUNPOD_API_URL: "http://env:1" };
    expect(parseCommandArgs(login, [], env).sources.apiUrl).toBe("env");
    expect(parseCommandArgs(login, ["--api-url", "http://flag:1"], env).sources.apiUrl).toBe("flag");
    expect(parseCommandArgs(login, [], {}).sources.apiUrl).toBe("default");
  });

  it("leaves the worker's unknown flags to the handler", () => {
    const { options, positional } = parseCommandArgs(run, ["--my-flag", "1", "--test-input", "{}"], {});
    expect(options.testInput).toBe("{}");
    expect(positional).toEqual(["--my-flag", "1"]);
  });
});

describe("help", () => {
  const all = () => Promise.all(Object.values(COMMANDS).map(async (load) => (await load()).spec));

  it("every command declares a summary and documented options", async () => {
    const specs = await all();
    expect(specs.map((s) => s.name)).toEqual(Object.keys(COMMANDS));
    for (const spec of specs) {
      expect(spec.summary.length).toBeGreaterThan(10);
      const listed = Object.values(spec.options).filter((o) => o.flags?.length && o.help);
      if (spec.name !== "endpoints") expect(listed.length).toBeGreaterThan(0);
      for (const option of listed) {
        for (const flag of shownFlags(option)) expect(flag).toMatch(/^(--[a-z][a-z-]*|-[a-z])$/);
        expect(option.help!.length).toBeGreaterThan(5);
      }
    }
  });

  it("flash <command> --help lists the command's table", async () => {
    for (const spec of await all()) {
      const help = commandHelp(spec);
      expect(help.split("\n")[0]).toMatch(new RegExp(`^usage: flash ${spec.name}`));
      for (const option of Object.values(spec.options).filter((o) => o.help && o.flags?.length)) {
        expect(help).toContain(shownFlags(option).join(", "));
      }
      expect(help).toContain(spec.summary);
    }
    expect(commandHelp(undeploy)).toContain("-y, --yes");
    expect(commandHelp(deploy)).toContain("--tls-verify[=true|false]");
  });

  it("flash --help lists every command with its summary", async () => {
    const specs = await all();
    const help = commandsHelp(specs);
    expect(help.split("\n")[0]).toBe("usage: flash <command> [options]");
    for (const spec of specs) {
      const line = help.split("\n").find((l) => l.startsWith(`  ${spec.name} `));
      expect(line).toContain(spec.summary);
    }
  });
});
