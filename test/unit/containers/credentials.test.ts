// Secrets for container tools kept out of argv: the auth file a pull reads, and the argv and environment of a run.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { describe, expect, it } from "vitest";
import {
  buildahRunWithEnv,
  configEnvFlags,
  envNames,
  registryOf,
  withAuthFile,
} from "../../../src/containers/credentials.js";

const BUILDAH = { name: "buildah" as const, prefix: ["buildah", "--root", "/s"] };

describe("registryOf: the key an auth file holds a login under", () => {
  it.each([
    ["127.0.0.1:5000/app:1", "127.0.0.1:5000"],
    ["ghcr.io/you/app:1", "ghcr.io"],
    ["localhost/app", "localhost"],
    ["[::1]:5000/app", "[::1]:5000"],
    ["you/app:1", "docker.io"],
    ["node:20", "docker.io"],
  ])("%s → %s", (image, registry) => {
    expect(registryOf(image)).toBe(registry);
  });
});

describe("withAuthFile", () => {
  it("a 0600 file in a 0700 folder of its own, holding the login for the image's registry; gone afterwards", async () => {
    let path = "";
    const seen = await withAuthFile(
      "127.0.0.1:5000/app:1",
      { username: "u", password: "p:w" },
      async (file) => {
        path = file;
        return {
          json: JSON.parse(readFileSync(file, "utf8")) as unknown,
          fileMode: statSync(file).mode & 0o777,
          folderMode: statSync(dirname(file)).mode & 0o777,
        };
      },
    );
    expect(seen).toEqual({
      json: { auths: { "127.0.0.1:5000": { auth: Buffer.from("u:p:w").toString("base64") } } },
      fileMode: 0o600,
      folderMode: 0o700,
    });
    expect(existsSync(dirname(path))).toBe(false);
  });

  it("is removed when the pull fails too", async () => {
    let path = "";
    await expect(
      withAuthFile("app", { username: "u", password: "p" }, async (file) => {
        path = file;
        throw new Error("pull failed");
      }),
    ).rejects.toThrow("pull failed");
    expect(existsSync(dirname(path))).toBe(false);
  });
});

describe("a run's argv holds names, its environment the values", () => {
  const env = { RUNPOD_POD_ID: "w1", MY_SECRET_TOKEN: "s3cret", EMPTY: "" };

  it("docker and podman: -e NAME", () => {
    expect(envNames(env)).toEqual(["-e", "RUNPOD_POD_ID", "-e", "MY_SECRET_TOKEN", "-e", "EMPTY"]);
  });

  it("buildah config: --env NAME, an empty value written out (buildah refuses it by name, and it is no secret)", () => {
    expect(configEnvFlags(env)).toEqual([
      "--env",
      "RUNPOD_POD_ID",
      "--env",
      "MY_SECRET_TOKEN",
      "--env",
      "EMPTY=",
    ]);
  });

  it("buildah: config then run in one sh; the per-run id on the run line; no value in the argv", () => {
    const launched = buildahRunWithEnv(BUILDAH, "ctr", env, ["RUNPOD_POD_ID"], (flags) => [
      "run",
      ...flags,
      "ctr",
      "--",
      "/worker",
    ]);
    const config = [
      "buildah",
      "--root",
      "/s",
      "config",
      "--env",
      "MY_SECRET_TOKEN",
      "--env",
      "EMPTY=",
      "ctr",
    ];
    const run = ["buildah", "--root", "/s", "run", "-e", "RUNPOD_POD_ID=w1", "ctr", "--", "/worker"];
    expect(launched.argv.slice(0, 2)).toEqual(["/bin/sh", "-c"]);
    expect(launched.argv.slice(3)).toEqual(["sh", String(config.length), ...config, ...run]);
    expect(launched.argv.join(" ")).not.toContain("s3cret");
    expect(launched.env).toEqual({ MY_SECRET_TOKEN: "s3cret", EMPTY: "" });
  });

  it("buildah with nothing to configure: the run alone", () => {
    const launched = buildahRunWithEnv(
      BUILDAH,
      "ctr",
      { RUNPOD_POD_ID: "w1" },
      ["RUNPOD_POD_ID"],
      (flags) => ["run", ...flags, "ctr"],
    );
    expect(launched).toEqual({
      argv: ["buildah", "--root", "/s", "run", "-e", "RUNPOD_POD_ID=w1", "ctr"],
      env: {},
    });
  });
});
