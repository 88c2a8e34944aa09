// Registry logins from the auth files the container tools write: REGISTRY_AUTH_FILE first, then containers'
// auth.json, then ~/.docker/config.json; Docker Hub under any of its keys.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { credentialName, findRegistryLogin, registryHost } from "../../src/toolkit/image/registry-auth.js";

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "flash-auth-"));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const auth = (user: string, password: string) => Buffer.from(`${user}:${password}`).toString("base64");

describe("registry logins", () => {
  it("the image's registry host; docker.io when it names none", () => {
    expect(registryHost("127.0.0.1:5000/app:1")).toBe("127.0.0.1:5000");
    expect(registryHost("ghcr.io/me/app:1")).toBe("ghcr.io");
    expect(registryHost("me/app:1")).toBe("docker.io");
  });

  it("REGISTRY_AUTH_FILE wins over ~/.docker/config.json; Docker Hub's legacy key is found", () => {
    mkdirSync(join(home, ".docker"));
    writeFileSync(
      join(home, ".docker/config.json"),
      JSON.stringify({
        auths: {
          "https://index.docker.io/v1/": { auth: auth("hub", "p1") },
          "ghcr.io": { auth: auth("gh", "p2") },
        },
      }),
    );
    const file = join(home, "auth.json");
    writeFileSync(file, JSON.stringify({ auths: { "ghcr.io": { auth: auth("first", "p3") } } }));
    expect(findRegistryLogin("ghcr.io/me/app:1", { REGISTRY_AUTH_FILE: file }, home)).toEqual({
      host: "ghcr.io",
      username: "first",
      password: "p3",
      file,
    });
    const hub = findRegistryLogin("docker.io/me/app:1", {}, home);
    expect(hub).toMatchObject({ username: "hub", password: "p1" });
    expect(credentialName(hub!)).toBe("flash-docker.io-hub");
    expect(findRegistryLogin("quay.io/me/app:1", {}, home)).toBeUndefined();
  });
});
