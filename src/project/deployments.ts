// `.flash/deployments.json`: what `flash deploy` created, so clients can call an endpoint by its name.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export interface DeployedEndpoint {
  id: string;
  /** `{base_url}/v2/<id>` for a queue endpoint, the routes' base URL for a load-balanced one. */
  url: string;
  kind: "queue" | "load-balanced";
  /** The pushed image's digest the endpoint was last created or updated with. */
  digest?: string;
  /** sha256 of the request that created or updated it: with the digest, what says a redeploy changes nothing. */
  spec?: string;
}

/** A Pod `flash deploy --pod` made: its id, and where its ports are reached. */
export interface DeployedPod {
  id: string;
  /** The image it runs (pinned to the pushed digest when known). */
  image: string;
  kind: "queue" | "load-balanced";
  /** What the client calls: the app's proxy URL (routes), or `<proxy URL>/v2/local` for a queue app's test API; "" until a tcp-only app's address is known. */
  url: string;
  /** The proxy URL of each http port, by port. */
  http: Record<string, string>;
  /** `ip:port` of each tcp port, by port, when the Pod last reported them. */
  tcp: Record<string, string>;
}

export interface Deployments {
  /** The REST API's base URL the endpoints were deployed through. */
  platform: string;
  deployedAt: string;
  /** The image the endpoints run. */
  image?: string;
  /** By endpoint name. */
  endpoints: Record<string, DeployedEndpoint>;
  /** By Pod name (flash deploy --pod). */
  pods?: Record<string, DeployedPod>;
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
