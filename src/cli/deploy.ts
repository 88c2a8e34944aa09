import { closeSync, openSync, readSync } from "node:fs";
import { buildArtifact, formatSize, type ManifestEndpoint, WORKER_PLATFORM } from "../build/index.js";
import { resolveApiKey } from "../client/credentials.js";
import { type DeployedEndpoint, writeDeployments } from "../client/deployments.js";
import { toolkitLogger } from "../client/log.js";
import { type ManagedEndpoint, ManagementClient } from "../client/management.js";
import { FlashError, isFlashError } from "../errors.js";
import { isLoopback } from "../http/loopback.js";
import { gzipMagicError } from "../platform/artifacts.js";
import { type CommandSpec, fail, isUserError, NODE_VERSION_OPTION, parseCommandArgs } from "./options.js";

export const spec: CommandSpec = {
  name: "deploy",
  args: "[files...]",
  summary: "build the app, then create or update its endpoints on the platform (local by default)",
  options: [
    {
      flag: "--url",
      value: "URL",
      help: "the platform (env FLASH_PLATFORM_URL; default http://127.0.0.1:8000)",
    },
    {
      flag: "--api-key",
      value: "KEY",
      help: "its API key (default: RUNPOD_API_KEY, .env, then flash login's)",
    },
    NODE_VERSION_OPTION,
  ],
};

/** Where `flash serve` and `flash dev` listen by default. */
export const LOCAL_PLATFORM_URL = "http://127.0.0.1:8000";

/** The platform refused an endpoint; the message starts with the interface document's words. */
export class ProvisionError extends FlashError {
  readonly code = "PROVISION_FAILED";
  override name = "ProvisionError";
}

/** The first two bytes of the artifact must be gzip's: a truncated or foreign file is caught before upload. */
function checkArtifact(path: string): void {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(2);
    const read = readSync(fd, head, 0, 2, 0);
    const problem = gzipMagicError(head.subarray(0, read));
    if (problem) throw new ProvisionError(`${problem}. Delete the .flash directory and rebuild.`);
  } finally {
    closeSync(fd);
  }
}

async function provision(
  platform: ManagementClient,
  artifact: string,
  endpoint: ManifestEndpoint,
  existing: ReadonlySet<string>,
): Promise<ManagedEndpoint> {
  try {
    if (existing.has(endpoint.id)) await platform.deleteEndpoint(endpoint.id);
    return await platform.createEndpoint({
      id: endpoint.id,
      kind: endpoint.kind,
      name: endpoint.name,
      artifact,
      file: endpoint.file,
      workers: endpoint.workers,
      ...(endpoint.executionTimeoutMs > 0 ? { executionTimeoutMs: endpoint.executionTimeoutMs } : {}),
    });
  } catch (err) {
    if (isFlashError(err, "MANAGEMENT_HTTP")) {
      throw new ProvisionError(`Failed to provision resources for endpoint ${endpoint.name}: ${err.message}`);
    }
    throw err;
  }
}

/** `flash deploy [entry files...] [--url URL] [--api-key KEY] [--node-version V]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { config, positional } = parseCommandArgs(spec, args);
    const url = config.platformUrl ?? LOCAL_PLATFORM_URL;
    const apiKey = config.localApiKey ?? resolveApiKey({ log }).key;
    // a platform on this machine runs workers here: its packages are this machine's; elsewhere, the workers'
    const local = isLoopback(new URL(url).hostname);
    const built = await buildArtifact({
      entries: positional,
      target: local ? { os: process.platform, cpu: process.arch } : WORKER_PLATFORM,
      ...(config.nodeVersion === undefined ? {} : { nodeVersion: config.nodeVersion }),
      log: log.child({ subject: "build" }),
    });
    const { manifest } = built;
    process.stdout.write(
      `✓ built ${manifest.projectName}  ${manifest.files} files, ${manifest.endpoints.length} endpoint(s), ${formatSize(built.bytes)}\n`,
    );
    checkArtifact(built.artifact);

    const platform = new ManagementClient({ url, apiKey, log: log.child({ subject: "deploy" }) });
    const started = Date.now();
    const uploaded = await platform.uploadArtifact(built.artifact);
    process.stdout.write(
      `✓ uploaded  ${formatSize(uploaded.size)}  ${((Date.now() - started) / 1000).toFixed(1)}s\n`,
    );

    const existing = new Set((await platform.listEndpoints()).map((e) => e.id));
    const deployed: Record<string, DeployedEndpoint> = {};
    const lines: string[] = [];
    for (const endpoint of manifest.endpoints) {
      const created = await provision(platform, uploaded.id, endpoint, existing);
      log
        .child({ subject: `Endpoint:${created.id}` })
        .info(
          `${existing.has(created.id) ? "Updated" : "Created"} endpoint: ${created.id} - ${created.name}`,
        );
      deployed[endpoint.name] = { id: created.id, url: created.url, kind: endpoint.kind };
      if (endpoint.kind === "load-balanced") {
        const route = endpoint.routes[0];
        lines.push(
          `  ${endpoint.name}  ${created.url}/<path>  (routes: ${endpoint.routes.map((r) => `${r.method} ${r.path}`).join(", ")})`,
          `    curl -X ${route?.method ?? "GET"} ${created.url}${route?.path ?? "/"} -H "Authorization: Bearer $RUNPOD_API_KEY"`,
        );
      } else {
        lines.push(
          `  ${endpoint.name}  ${created.url}/runsync`,
          `    curl -X POST ${created.url}/runsync -H "Authorization: Bearer $RUNPOD_API_KEY" -H 'Content-Type: application/json' -d '{"input": {}}'`,
        );
      }
    }
    writeDeployments(process.cwd(), {
      platform: url,
      deployedAt: new Date().toISOString(),
      endpoints: deployed,
    });
    process.stdout.write(`✓ deployed to ${url}\n${lines.join("\n")}\n`);
    return 0;
  } catch (err) {
    if (
      isUserError(err) ||
      isFlashError(
        err,
        "PROVISION_FAILED",
        "PLATFORM_UNREACHABLE",
        "API_KEY_MISSING",
        "CREDENTIALS_FILE_INVALID",
      )
    ) {
      return fail(err.message);
    }
    if (isFlashError(err, "MANAGEMENT_HTTP"))
      return fail(`The platform refused the deployment: ${err.message}`);
    throw err;
  }
}
