// The host's npm setup (registry, scoped registries, credentials, CA, proxy) as one .npmrc handed to image
// builds as the build secret `npmrc`: a Dockerfile's `RUN --mount=type=secret,id=npmrc,target=/root/.npmrc
// npm ci` then installs wherever `npm ci` works here, and the file exists for that RUN step only, never in a
// layer.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";

/** The secret's id, as Dockerfiles mount it. */
export const NPMRC_SECRET = "npmrc";

/** npm settings that say where packages come from and how to reach them. */
const CARRIED = ["registry", "proxy", "https-proxy", "noproxy", "strict-ssl"];

type NpmConfig = Record<string, unknown>;

/** `npm config ls --json` in `cwd` (the project's .npmrc counts); {} when npm is missing or says nothing. */
function npmConfig(cwd: string, env: NodeJS.ProcessEnv): NpmConfig {
  const run = spawnSync("npm", ["config", "ls", "--json"], {
    cwd,
    encoding: "utf8",
    timeout: 30_000,
    env: { ...env, npm_config_loglevel: "error" },
  });
  try {
    return run.status === 0 ? (JSON.parse(run.stdout) as NpmConfig) : {};
  } catch {
    return {};
  }
}

/** A value as an .npmrc line's right-hand side: JSON-quoted, which npm's ini reader unquotes. */
const quoted = (value: string) => JSON.stringify(value);

/** `${VAR}` as npm expands it in .npmrc files: the variable's value here, since the build has no such env. */
const expand = (line: string, env: NodeJS.ProcessEnv) =>
  line.replace(/\$\{([^}]+)\}/g, (_, name: string) => env[name] ?? "");

/** Per-registry credentials (`//host/:_authToken=…`) from the project, user and global .npmrc files. */
function credentialLines(cwd: string, config: NpmConfig, env: NodeJS.ProcessEnv): string[] {
  const files = [
    join(cwd, ".npmrc"),
    typeof config.userconfig === "string" ? config.userconfig : join(homedir(), ".npmrc"),
    typeof config.globalconfig === "string" ? config.globalconfig : "",
  ];
  const lines: string[] = [];
  for (const file of files) {
    if (!file || !existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split(/\r?\n/)) {
      if (line.trim().startsWith("//")) lines.push(expand(line.trim(), env));
    }
  }
  return lines;
}

/** PEM certificates in a file. */
function certificates(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)].map((m) => m[0]);
}

/**
 * What npm here trusts, as `ca[]` entries (a path would not exist in the build): npm's `cafile` replaces
 * Node's roots, as here; NODE_EXTRA_CA_CERTS adds to them, so Node's roots come along.
 */
function caLines(config: NpmConfig, env: NodeJS.ProcessEnv): string[] {
  const cafile = typeof config.cafile === "string" && existsSync(config.cafile) ? config.cafile : undefined;
  const extra = env.NODE_EXTRA_CA_CERTS && existsSync(env.NODE_EXTRA_CA_CERTS) ? env.NODE_EXTRA_CA_CERTS : "";
  let certs: string[] = [];
  if (cafile) certs = certificates(cafile);
  else if (typeof config.ca === "string") certs = [config.ca];
  else if (Array.isArray(config.ca)) certs = config.ca.map(String);
  if (extra) certs = [...(certs.length > 0 ? certs : rootCertificates), ...certificates(extra)];
  return [...new Set(certs)].map((cert) => `ca[]=${quoted(cert)}`);
}

/** The .npmrc text: registry, scoped registries, proxy settings, credentials and CA as npm here has them. */
export function hostNpmrc(cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const config = npmConfig(cwd, env);
  const lines = ["# flash: the host's npm settings, a build secret (not stored in the image)"];
  for (const [key, value] of Object.entries(config)) {
    const text = value === null || value === undefined ? "" : String(value);
    if (text && (CARRIED.includes(key) || /^@[^:]+:registry$/.test(key)))
      lines.push(`${key}=${quoted(text)}`);
  }
  // npm takes a proxy from the environment too, where the build does not see it.
  const fromEnv: [string, string | undefined][] = [
    ["https-proxy", env.HTTPS_PROXY ?? env.https_proxy],
    ["proxy", env.HTTP_PROXY ?? env.http_proxy],
    ["noproxy", env.NO_PROXY ?? env.no_proxy],
  ];
  for (const [key, value] of fromEnv) {
    if (value && config[key] == null) lines.push(`${key}=${quoted(value)}`);
  }
  lines.push(...credentialLines(cwd, config, env), ...caLines(config, env));
  return `${lines.join("\n")}\n`;
}

/** The .npmrc written to a private temporary file for one build; `remove()` deletes it afterwards. */
export function npmrcSecret(cwd: string): { file: string; args: string[]; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "flash-npmrc-"));
  const file = join(dir, "npmrc");
  writeFileSync(file, hostNpmrc(cwd), { mode: 0o600 });
  chmodSync(file, 0o600);
  return {
    file,
    args: ["--secret", `id=${NPMRC_SECRET},src=${file}`],
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
