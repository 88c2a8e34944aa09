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

/** A certificate's PEM without whitespace, to compare two copies. */
const pemKey = (pem: string) => pem.replace(/\s+/g, "");

/**
 * The CA certificates npm here trusts beyond Node's own roots (a TLS-intercepting proxy's, a private registry's),
 * as `ca[]` entries: a path would not exist in the build. Only those: npm hands `ca` to install scripts as one
 * environment variable, and a whole bundle (200 KB) is over the kernel's 128 KB limit (spawn E2BIG).
 */
function caLines(config: NpmConfig, env: NodeJS.ProcessEnv): string[] {
  const files = [config.cafile, env.NODE_EXTRA_CA_CERTS].filter(
    (file): file is string => typeof file === "string" && file !== "" && existsSync(file),
  );
  const inline =
    typeof config.ca === "string" ? [config.ca] : Array.isArray(config.ca) ? config.ca.map(String) : [];
  const known = new Set(rootCertificates.map(pemKey));
  const extra = new Map<string, string>();
  for (const cert of [...files.flatMap(certificates), ...inline]) {
    if (!known.has(pemKey(cert))) extra.set(pemKey(cert), cert);
  }
  return [...extra.values()].map((cert) => `ca[]=${quoted(cert)}`);
}

/** The .npmrc text: registry, scoped registries, proxy settings, credentials and CA as npm here has them. */
export function hostNpmrc(cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const config = npmConfig(cwd, env);
  // No update notice: it would be the last lines shown of a failed install.
  const lines = [
    "# flash: the host's npm settings, a build secret (not stored in the image)",
    "update-notifier=false",
  ];
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
