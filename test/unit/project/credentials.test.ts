// Credentials with a temporary HOME: where flash login saves the key, and the lookup order with its log line.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiKeyError, CredentialsFileError, resolveApiKey } from "../../../src/client/index.js";
import { credentialsPath, readCredentialsFile, saveApiKey } from "../../../src/project/credentials.js";
import { writeDeployments } from "../../../src/project/deployments.js";
import { resolveApiUrl } from "../../../src/toolkit/rest/connect.js";
import { captureLog } from "../../client/servers.js";

let home: string;
let project: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "flash-home-"));
  project = mkdtempSync(join(tmpdir(), "flash-project-"));
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(project, { recursive: true, force: true });
});

const lookup = (env: Record<string, string> = {}) => {
  const { log, lines } = captureLog("INFO");
  return { lines, run: () => resolveApiKey({ env, home, cwd: project, log }) };
};

describe("saving", () => {
  it("writes [default] api_key to ~/.runpod/config.toml, readable by the user only", () => {
    const path = saveApiKey("rpa_first", home);
    expect(path).toBe(join(home, ".runpod", "config.toml"));
    expect(readFileSync(path, "utf8")).toBe('[default]\napi_key = "rpa_first"\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readCredentialsFile(path)).toBe("rpa_first");
  });

  it("keeps other profiles and fields, and replaces the key", () => {
    const path = credentialsPath(home);
    mkdirSync(join(home, ".runpod"));
    writeFileSync(path, '[default]\napi_key = "old"\nregion = "eu"\n\n[work]\napi_key = "w"\n', {
      mode: 0o644,
    });
    saveApiKey("new", home);
    const text = readFileSync(path, "utf8");
    expect(text).toContain('api_key = "new"');
    expect(text).toContain('region = "eu"');
    expect(text).toContain('[work]\napi_key = "w"');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("replaces a corrupted file", () => {
    mkdirSync(join(home, ".runpod"));
    writeFileSync(credentialsPath(home), "[default\napi_key = ");
    saveApiKey("fixed", home);
    expect(readCredentialsFile(credentialsPath(home))).toBe("fixed");
  });
});

describe("lookup order", () => {
  it("RUNPOD_API_KEY first, and the log says it overrides the saved key", () => {
    saveApiKey("saved", home);
    writeFileSync(join(project, ".env"), "RUNPOD_API_KEY=dotenv\n");
    const { run, lines } = lookup({ RUNPOD_API_KEY: "from-env", SERVICE_API_KEY: "service" });
    expect(run()).toEqual({ key: "from-env", source: "environment variable RUNPOD_API_KEY" });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `\\| INFO \\| credentials \\| Using API key from environment variable RUNPOD_API_KEY \\(it overrides the key saved by flash login in ${credentialsPath(home)}\\)$`,
      ),
    );
  });

  it("SERVICE_API_KEY (the document's name) when RUNPOD_API_KEY is not set or blank", () => {
    expect(lookup({ RUNPOD_API_KEY: "  ", SERVICE_API_KEY: "svc" }).run()).toEqual({
      key: "svc",
      source: "environment variable SERVICE_API_KEY",
    });
  });

  it("then a RUNPOD_API_KEY= line in .env, for local commands only", () => {
    saveApiKey("saved", home);
    writeFileSync(join(project, ".env"), '# keys\nOTHER=1\nexport RUNPOD_API_KEY="dot env" \n');
    const { run, lines } = lookup();
    expect(run()).toEqual({ key: "dot env", source: `.env file ${join(project, ".env")}` });
    expect(lines[0]).toContain(`Using API key from .env file ${join(project, ".env")} (it overrides`);
    expect(resolveApiKey({ env: {}, home, cwd: project, dotenv: false }).key).toBe("saved");
  });

  it("then the credentials file", () => {
    saveApiKey("saved", home);
    const { run, lines } = lookup();
    expect(run()).toEqual({ key: "saved", source: `credentials file ${credentialsPath(home)}` });
    expect(lines[0]).toMatch(/\| Using API key from credentials file \S+config\.toml$/);
  });
});

describe("the interface document's errors", () => {
  it("no key found: the message lists flash login, the environment variable and .env", () => {
    const err = (() => {
      try {
        lookup().run();
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ApiKeyError);
    const message = (err as Error).message;
    expect(message).toMatch(/^No API key found\./);
    expect(message).toContain("flash login");
    expect(message).toContain("export RUNPOD_API_KEY=<your-api-key>");
    expect(message).toContain("SERVICE_API_KEY");
    expect(message).toContain("echo 'RUNPOD_API_KEY=<your-api-key>' >> .env");
    expect(message).toContain("shell profile");
  });

  it("a file without a key is the same as no file", () => {
    mkdirSync(join(home, ".runpod"));
    writeFileSync(credentialsPath(home), '[default]\nregion = "eu"\n');
    expect(() => lookup().run()).toThrow(/^No API key found/);
  });

  it("corrupted credentials file: says to run login again or delete it, never 'no API key found'", () => {
    mkdirSync(join(home, ".runpod"));
    writeFileSync(credentialsPath(home), '[default]\napi_key = "unterminated\n');
    const err = (() => {
      try {
        lookup().run();
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(CredentialsFileError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^The credentials file ${credentialsPath(home)} is corrupted \\(not valid TOML: .*\\)\\. Run "flash login" again to replace it, or delete the file\\.$`,
      ),
    );
    expect((err as Error).message).not.toMatch(/no api key found/i);
    // A key in the environment still works: the broken file is not needed.
    expect(lookup({ RUNPOD_API_KEY: "k" }).run().key).toBe("k");
  });
});

describe("which API the lifecycle commands call (src/toolkit/rest/connect.ts)", () => {
  it("--api-url or RUNPOD_API_URL > .flash/deployments.json > flash login --api-url > RunPod's", () => {
    const at = (apiUrl?: string) => resolveApiUrl({ cwd: project, home, ...(apiUrl ? { apiUrl } : {}) }).url;
    expect(at()).toBe("https://api.runpod.io");
    saveApiKey("rpa_saved", home, "http://127.0.0.1:9001");
    expect(readFileSync(credentialsPath(home), "utf8")).toContain('api_url = "http://127.0.0.1:9001"');
    expect(at()).toBe("http://127.0.0.1:9001");
    writeDeployments(project, { platform: "http://127.0.0.1:9002", deployedAt: "", endpoints: {} });
    expect(resolveApiUrl({ cwd: project, home })).toEqual({
      url: "http://127.0.0.1:9002",
      from: ".flash/deployments.json",
    });
    expect(at("http://127.0.0.1:9003")).toBe("http://127.0.0.1:9003");
    // A later login without --api-url keeps the saved URL.
    saveApiKey("rpa_again", home);
    expect(readFileSync(credentialsPath(home), "utf8")).toContain('api_url = "http://127.0.0.1:9001"');
  });
});
