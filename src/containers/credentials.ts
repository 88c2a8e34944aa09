// Secrets for container tools without a secret in any process's arguments (`ps` shows those to every local user):
// registry logins through an auth file in a private folder, container environments through the tool's own
// environment, which only its user can read.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ContainerTool, toolArgv } from "./tool.js";

/** A registry login. */
export interface RegistryLogin {
  username: string;
  password: string;
}

/** A process to start: argv shows no secret; env, added to the parent's environment, carries the values. */
export interface SecretArgv {
  argv: string[];
  env: Record<string, string>;
}

/** The registry an image reference pulls from, as auth files key it: its first part when that names a host, else Docker Hub. */
export function registryOf(image: string): string {
  const [first, ...rest] = image.split("/");
  const named = rest.length > 0 && first !== undefined && /[.:]|^localhost$/.test(first);
  return named ? first : "docker.io";
}

/**
 * Calls `use` with the path of an auth file (containers-auth.json(5), what `--authfile` reads) holding `login` for
 * the image's registry; the file (0600) lives in a folder of its own (0700) that is removed when `use` settles.
 */
export async function withAuthFile<T>(
  image: string,
  login: RegistryLogin,
  use: (authFile: string) => Promise<T>,
): Promise<T> {
  const folder = await mkdtemp(join(tmpdir(), "flash-auth-"));
  try {
    const file = join(folder, "auth.json");
    const auth = Buffer.from(`${login.username}:${login.password}`).toString("base64");
    await writeFile(file, JSON.stringify({ auths: { [registryOf(image)]: { auth } } }), { mode: 0o600 });
    return await use(file);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** `-e NAME` for each variable: docker and podman take a bare name's value from their own environment. */
export function envNames(env: Record<string, string>): string[] {
  return Object.keys(env).flatMap((name) => ["-e", name]);
}

/**
 * `buildah config --env` flags that set `env` in a working container, values from buildah's environment: buildah
 * run has no such form (1.28), buildah config does. It refuses an empty value by name, and "" is no secret.
 */
export function configEnvFlags(env: Record<string, string>): string[] {
  return Object.entries(env).flatMap(([name, value]) => ["--env", value === "" ? `${name}=` : name]);
}

/**
 * `sh -c` that runs the first $1 words after it (buildah config) and then becomes the rest (exec buildah run): one
 * process to supervise, whose pid is buildah run's once the container's environment is written. The subshell
 * rotates the config words behind the run words and drops those. The script's own variables are prefixed: the
 * shell exports what it was given, and a plain `n` would overwrite a container's `n`.
 */
const CONFIG_THEN_RUN = [
  "_fw_n=$1; shift",
  '(_fw_i=0; while [ "$_fw_i" -lt "$_fw_n" ]; do set -- "$@" "$1"; shift; _fw_i=$((_fw_i + 1)); done',
  ' shift $(($# - _fw_n)); exec "$@") || exit',
  'shift "$_fw_n"; exec "$@"',
].join("\n");

/**
 * buildah run in `container` with `env` set, no value in an argv: the shared variables go into the container's
 * config first (buildah config, values from its environment), `perRun` (values that differ between concurrent
 * runs of one container and are no secret, a worker's id) on the run line, which the config never races.
 */
export function buildahRunWithEnv(
  tool: ContainerTool,
  container: string,
  env: Record<string, string>,
  perRun: readonly string[],
  run: (envFlags: string[]) => string[],
): SecretArgv {
  const shared = Object.fromEntries(Object.entries(env).filter(([name]) => !perRun.includes(name)));
  const runFlags = perRun.flatMap((name) => (env[name] === undefined ? [] : ["-e", `${name}=${env[name]}`]));
  const runArgv = toolArgv(tool, run(runFlags));
  if (Object.keys(shared).length === 0) return { argv: runArgv, env: {} };
  const configArgv = toolArgv(tool, ["config", ...configEnvFlags(shared), container]);
  return {
    argv: ["/bin/sh", "-c", CONFIG_THEN_RUN, "sh", String(configArgv.length), ...configArgv, ...runArgv],
    env: shared,
  };
}
