// The build secret `npmrc`: the host's npm registry, scoped registries, credentials, CA and proxy, read through
// the real npm from a project's and a user's .npmrc files, and accepted by npm itself.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { hostNpmrc, npmrcSecret } from "../../src/toolkit/image/npmrc.js";

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "flash-npmrc-test-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A self-signed CA certificate of our own (a proxy's CA, say): one Node does not already trust. */
const ownCa = (dir: string, name: string) => {
  const made = spawnSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
    ].concat(["-subj", `/CN=${name}`, "-keyout", join(dir, `${name}.key`), "-out", join(dir, `${name}.pem`)]),
    { encoding: "utf8" },
  );
  expect(made.status, made.stderr).toBe(0);
  return readFileSync(join(dir, `${name}.pem`), "utf8").trim();
};

/** npm's own reading of an .npmrc as its only config file. */
const npmGet = (rc: string, key: string, cwd: string) =>
  spawnSync("npm", ["config", "get", key, "--userconfig", rc, "--globalconfig", join(cwd, "none")], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, npm_config_cafile: "", NODE_EXTRA_CA_CERTS: "" },
  }).stdout.trim();

describe("the npmrc build secret", () => {
  it("carries registry, scoped registry, credentials (environment variables expanded), proxy and CA; npm reads it back", () => {
    const project = scratch();
    const home = scratch();
    // a bundle as distributions ship it: public roots Node has anyway, and the proxy's CA
    const proxyCa = ownCa(home, "proxy-ca");
    writeFileSync(join(home, "ca.pem"), [...rootCertificates.slice(0, 3), proxyCa].join("\n"));
    writeFileSync(
      join(home, ".npmrc"),
      [
        "registry=http://127.0.0.1:4873/",
        "@acme:registry=http://127.0.0.1:4874/",
        "//127.0.0.1:4873/:_authToken=$" + "{FLASH_TEST_TOKEN}",
        `cafile=${join(home, "ca.pem")}`,
        "",
      ].join("\n"),
    );
    writeFileSync(join(project, ".npmrc"), "//127.0.0.1:4874/:_authToken=project-token\n");
    const text = hostNpmrc(project, {
      ...process.env,
      npm_config_userconfig: join(home, ".npmrc"),
      npm_config_cafile: join(home, "ca.pem"),
      NODE_EXTRA_CA_CERTS: "",
      FLASH_TEST_TOKEN: "user-token",
      HTTPS_PROXY: "http://127.0.0.1:3128",
    });
    const rc = join(home, "secret.npmrc");
    writeFileSync(rc, text);
    expect(npmGet(rc, "registry", project)).toBe("http://127.0.0.1:4873/");
    expect(npmGet(rc, "@acme:registry", project)).toBe("http://127.0.0.1:4874/");
    expect(npmGet(rc, "https-proxy", project)).toBe("http://127.0.0.1:3128");
    expect(text).toContain("//127.0.0.1:4873/:_authToken=user-token");
    expect(text).toContain("//127.0.0.1:4874/:_authToken=project-token");
    // the CA as certificates (the file's path would not exist in the build): the one Node does not have
    const cas = text.split("\n").filter((l) => l.startsWith("ca[]="));
    expect(cas.map((l) => JSON.parse(l.slice("ca[]=".length)) as string)).toEqual([proxyCa]);
    // npm reads them back as its ca setting
    expect(npmGet(rc, "ca", project)).toContain(proxyCa.split("\n")[1]);
  });

  it("NODE_EXTRA_CA_CERTS: its certificates come along; none at all leaves npm's defaults alone", () => {
    const home = scratch();
    writeFileSync(join(home, ".npmrc"), "");
    const extra = ownCa(home, "extra");
    const text = hostNpmrc(home, {
      ...process.env,
      npm_config_userconfig: join(home, ".npmrc"),
      npm_config_globalconfig: join(home, "none"),
      npm_config_cafile: "",
      NODE_EXTRA_CA_CERTS: join(home, "extra.pem"),
    });
    expect(text.split("\n").filter((l) => l.startsWith("ca[]="))).toEqual([`ca[]=${JSON.stringify(extra)}`]);
    const none = hostNpmrc(home, {
      ...process.env,
      npm_config_userconfig: join(home, ".npmrc"),
      npm_config_globalconfig: join(home, "none"),
      npm_config_cafile: "",
      NODE_EXTRA_CA_CERTS: "",
    });
    expect(none).not.toContain("ca[]=");
  });

  it("is written to a private file outside the build context, removed afterwards", () => {
    const project = scratch();
    const secret = npmrcSecret(project);
    expect(secret.file.startsWith(project)).toBe(false);
    expect(statSync(secret.file).mode & 0o777).toBe(0o600);
    expect(secret.args).toEqual(["--secret", `id=npmrc,src=${secret.file}`]);
    expect(readFileSync(secret.file, "utf8")).toContain("registry=");
    secret.remove();
    expect(() => statSync(secret.file)).toThrow();
  });
});
