// flash login and the key lookup through the real command, with a temporary HOME.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { startPlatform } from "../../src/platform/index.js";
import { FLASH, flashRun } from "../process.js";

let home: string;
let cwd: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "flash-home-"));
  cwd = mkdtempSync(join(tmpdir(), "flash-cwd-"));
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(cwd, { recursive: true, force: true });
});

const credentials = () => join(home, ".runpod", "config.toml");

/** `flash login` with `input` written to its stdin, as a user pasting the key would. */
function loginWithStdin(input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FLASH, "login", "--no-verify"], {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: home, RUNPOD_CONSOLE_URL: "http://console.test" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe("flash login", () => {
  it("--api-key saves [default] api_key in ~/.runpod/config.toml with mode 0600", async () => {
    const { code, stdout } = await flashRun(
      ["login", "--api-key", "rpa_TESTKEY", "--no-verify"],
      { HOME: home },
      cwd,
    );
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(
      `Logged in (key not checked: --no-verify). Credentials saved to ${credentials()}`,
    );
    expect(readFileSync(credentials(), "utf8")).toBe('[default]\napi_key = "rpa_TESTKEY"\n');
    expect(statSync(credentials()).mode & 0o777).toBe(0o600);
  });

  it("prompts for the key, pointing at the console, and saves what is pasted", async () => {
    const { code, stdout, stderr } = await loginWithStdin("  rpa_PASTED  \n");
    expect(code).toBe(0);
    expect(stderr).toContain("Create an API key in the console: http://console.test/user/settings");
    expect(stderr).toContain("Paste the API key: ");
    expect(stdout).toContain("Logged in (key not checked: --no-verify).");
    expect(readFileSync(credentials(), "utf8")).toContain('api_key = "rpa_PASTED"');
  });

  it("nothing pasted: nothing saved, exit 1", async () => {
    const { code, stderr } = await loginWithStdin("");
    expect(code).toBe(1);
    expect(stderr).toContain("✗ No API key given; nothing saved.");
    expect(() => statSync(credentials())).toThrow(/ENOENT/);
  });

  it("a key with spaces is refused", async () => {
    const { code, stderr } = await flashRun(
      ["login", "--api-key", "two words", "--no-verify"],
      { HOME: home },
      cwd,
    );
    expect(code).toBe(1);
    expect(stderr).toContain("✗ Invalid API key in flag --api-key");
  });

  it("says when RUNPOD_API_KEY in the environment will be used before the saved key", async () => {
    const { code, stderr } = await flashRun(
      ["login", "--api-key", "saved", "--no-verify"],
      { HOME: home, RUNPOD_API_KEY: "from-env" },
      cwd,
    );
    expect(code).toBe(0);
    expect(stderr).toContain("! RUNPOD_API_KEY is set in this environment and is used before the saved key.");
  });
});

describe("flash login checks the key against the REST API first", () => {
  it("a key the API accepts is saved; a refused one (401) is not, and the message says so", async () => {
    const platform = await startPlatform({
      apiKey: "right-key",
      logger: createLogger({ level: "SILENT", json: false }),
    });
    try {
      const ok = await flashRun(
        ["login", "--api-key", "right-key", "--api-url", platform.url],
        { HOME: home },
        cwd,
      );
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain(
        `✓ The API at ${platform.url} accepted the key (0 endpoint(s) on the account).`,
      );
      expect(readFileSync(credentials(), "utf8")).toContain('api_key = "right-key"');
      // The URL given is saved too: later commands with no --api-url (and no project record) call it.
      expect(readFileSync(credentials(), "utf8")).toContain(`api_url = "${platform.url}"`);
      const listed = await flashRun(["endpoints"], { HOME: home }, cwd);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toBe("No endpoints.");
      rmSync(credentials());
      const refused = await flashRun(
        ["login", "--api-key", "wrong", "--api-url", platform.url],
        { HOME: home },
        cwd,
      );
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `✗ the API at ${platform.url} refused the key (GET /v2/serverless): 401 Unauthorized: Unauthorized: invalid API key. The API key was not accepted`,
      );
      expect(refused.stderr).toContain("Nothing saved.");
      expect(existsSync(credentials())).toBe(false);
    } finally {
      await platform.close();
    }
  });
});

describe("the key lookup of flash deploy", () => {
  it("no key anywhere: the message lists flash login, the environment variable and .env", async () => {
    const { code, stderr } = await flashRun(["deploy", "--image", "127.0.0.1:9/app:1"], { HOME: home }, cwd);
    expect(code).toBe(1);
    expect(stderr).toContain("✗ No API key found. Set one with any of:");
    expect(stderr).toContain("flash login");
    expect(stderr).toContain("export RUNPOD_API_KEY=<your-api-key>");
    expect(stderr).toContain("echo 'RUNPOD_API_KEY=<your-api-key>' >> .env");
  });

  it("a corrupted credentials file: run login again or delete the file (not 'no API key found')", async () => {
    mkdirSync(join(home, ".runpod"));
    writeFileSync(credentials(), "[default\napi_key = rpa_\n");
    const { code, stderr } = await flashRun(["deploy", "--image", "127.0.0.1:9/app:1"], { HOME: home }, cwd);
    expect(code).toBe(1);
    expect(stderr).toContain(`✗ The credentials file ${credentials()} is corrupted (not valid TOML:`);
    expect(stderr).toContain('Run "flash login" again to replace it, or delete the file.');
    expect(stderr).not.toMatch(/no api key found/i);
  });

  it("logs which source it used: a .env line beats the saved key, and says so", async () => {
    await flashRun(["login", "--api-key", "saved", "--no-verify"], { HOME: home }, cwd);
    writeFileSync(join(cwd, ".env"), "RUNPOD_API_KEY=from-dotenv\n");
    // Nothing listens on this port: the command gets as far as needing the platform, after the key lookup.
    const { stderr } = await flashRun(
      ["deploy", "--image", "127.0.0.1:9/app:1", "--api-url", "http://127.0.0.1:9"],
      { HOME: home },
      cwd,
    );
    expect(stderr).toMatch(
      new RegExp(
        `\\| INFO \\| credentials \\| Using API key from \\.env file ${join(cwd, ".env")} \\(it overrides the key saved by flash login in ${credentials()}\\)`,
      ),
    );
  });
});
