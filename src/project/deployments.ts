// `.flash/deployments.json`: what `flash deploy` created, so clients can call an endpoint by its name.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export interface DeployedEndpoint {
  id: string;
  /** `{base_url}/v2/<id>` for a queue endpoint, the routes' base URL for a load-balanced one. */
  url: string;
  kind: "queue" | "load-balanced";
}

export interface Deployments {
  /** The REST API's base URL the endpoints were deployed through. */
  platform: string;
  deployedAt: string;
  /** The image the endpoints run. */
  image?: string;
  /** By endpoint name. */
  endpoints: Record<string, DeployedEndpoint>;
}

export function deploymentsPath(projectDir: string): string {
  return join(projectDir, ".flash", "deployments.json");
}

/** The recorded deployments, or undefined when nothing was deployed from this directory (or the file is unreadable). */
export function readDeployments(projectDir: string): Deployments | undefined {
  const path = deploymentsPath(projectDir);
  if (!existsSync(path)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<Deployments>;
    if (typeof parsed.platform !== "string" || typeof parsed.endpoints !== "object" || !parsed.endpoints) {
      return undefined;
    }
    return parsed as Deployments;
  } catch {
    return undefined;
  }
}

export function writeDeployments(projectDir: string, deployments: Deployments): string {
  const path = deploymentsPath(projectDir);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(deployments, null, 2)}\n`);
  return path;
}
