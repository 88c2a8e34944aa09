// Registry credentials from the standard auth files (REGISTRY_AUTH_FILE, containers auth.json,
// ~/.docker/config.json), the same files buildah, podman and docker read, for the platform's registry credential.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface RegistryLogin {
  host: string;
  username: string;
  password: string;
  /** The file it came from. */
  file: string;
}

/** The auth files in the order the container tools read them. */
export function authFiles(env: Record<string, string | undefined> = process.env, home = homedir()): string[] {
  const files: string[] = [];
  if (env.REGISTRY_AUTH_FILE) files.push(env.REGISTRY_AUTH_FILE);
  if (env.XDG_RUNTIME_DIR) files.push(join(env.XDG_RUNTIME_DIR, "containers", "auth.json"));
  files.push(join(env.XDG_CONFIG_HOME ?? join(home, ".config"), "containers", "auth.json"));
  files.push(join(env.DOCKER_CONFIG ?? join(home, ".docker"), "config.json"));
  return files;
}

/** Docker Hub is keyed several ways in these files. */
function hostKeys(host: string): string[] {
  if (host === "docker.io" || host === "index.docker.io" || host === "registry-1.docker.io") {
    return ["docker.io", "index.docker.io", "https://index.docker.io/v1/", "registry-1.docker.io"];
  }
  return [host, `https://${host}`, `http://${host}`];
}

/** The registry host of an image reference (docker.io when it names none). */
export function registryHost(image: string): string {
  const first = image.split("/")[0] ?? "";
  return image.includes("/") && /[.:]|^localhost$/.test(first) ? first : "docker.io";
}

/** The username and password saved for the image's registry, or undefined when no file has them. */
export function findRegistryLogin(
  image: string,
  env: Record<string, string | undefined> = process.env,
  home = homedir(),
): RegistryLogin | undefined {
  const host = registryHost(image);
  for (const file of authFiles(env, home)) {
    if (!existsSync(file)) continue;
    let auths: Record<string, { auth?: unknown; username?: unknown; password?: unknown }> | undefined;
    try {
      auths = (JSON.parse(readFileSync(file, "utf8")) as { auths?: typeof auths }).auths;
    } catch {
      continue;
    }
    for (const key of hostKeys(host)) {
      const entry = auths?.[key];
      if (!entry) continue;
      if (typeof entry.auth === "string") {
        const decoded = Buffer.from(entry.auth, "base64").toString("utf8");
        const colon = decoded.indexOf(":");
        if (colon > 0)
          return { host, username: decoded.slice(0, colon), password: decoded.slice(colon + 1), file };
      }
      if (typeof entry.username === "string" && typeof entry.password === "string") {
        return { host, username: entry.username, password: entry.password, file };
      }
    }
  }
  return undefined;
}

/** The name flash deploy gives the platform's credential for this login, so the next deploy reuses it. */
export function credentialName(login: RegistryLogin): string {
  return `flash-${login.host}-${login.username}`.toLowerCase().replace(/[^a-z0-9._-]+/g, "-");
}
