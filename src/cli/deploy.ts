import { ApiKeyError, CredentialsFileError } from "../client/credentials.js";
import { toolkitLogger } from "../client/log.js";
import { ConfigError } from "../config/index.js";
import { ContainerToolError, NoContainerToolError } from "../containers/tool.js";
import { connectApi } from "../deploy/connect.js";
import { DeployError, deployApp } from "../deploy/deploy.js";
import { ImageError } from "../deploy/image.js";
import { EndpointMappingError } from "../deploy/mapping.js";
import { ApiConnectionError } from "../deploy/rest-client.js";
import { isUserError } from "./build.js";
import { fail, parseToolkitArgs } from "./toolkit-args.js";

export const summary =
  "build the app's image, push it, and create or update its endpoints through RunPod's REST API v2";

export const options = [
  "--image",
  "--api-url",
  "--api-key",
  "--base-image",
  "--tls-verify",
  "--registry-auth",
  "--node-version",
  "--container-tool",
];

/** Errors whose message is the whole story: printed as one `✗` line. */
export function isDeployError(err: unknown): err is Error {
  return (
    isUserError(err) ||
    err instanceof DeployError ||
    err instanceof EndpointMappingError ||
    err instanceof ImageError ||
    err instanceof NoContainerToolError ||
    err instanceof ContainerToolError ||
    err instanceof ApiConnectionError ||
    err instanceof ApiKeyError ||
    err instanceof CredentialsFileError
  );
}

/** `flash deploy --image REGISTRY/NAME:TAG [entry files...] [--api-url URL] ...` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    // FLASH_API_KEY is the local platform's own key; deploy takes --api-key or the discovery chain.
    const env = { ...process.env, FLASH_API_KEY: undefined };
    const { config, positional } = parseToolkitArgs("deploy", args, options, env);
    if (!config.image) {
      throw new ConfigError(
        "flash deploy needs --image REGISTRY/NAME:TAG: where the app's image is pushed (e.g. docker.io/you/app:1)",
      );
    }
    const api = connectApi({ apiUrl: config.apiUrl, apiKey: config.localApiKey, log });
    const result = await deployApp({
      api,
      root: process.cwd(),
      entries: positional,
      image: config.image,
      registryAuth: config.registryAuth,
      log,
      say: (line) => process.stdout.write(`${line}\n`),
      ...(config.nodeVersion === undefined ? {} : { nodeVersion: config.nodeVersion }),
      ...(config.baseImage ? { baseImage: config.baseImage } : {}),
      ...(config.nodeBaseImage ? { nodeBaseImage: config.nodeBaseImage } : {}),
      ...(config.tlsVerify === undefined ? {} : { tlsVerify: config.tlsVerify }),
      ...(config.containerTool ? { containerTool: config.containerTool } : {}),
      ...(config.containerStorage ? { containerStorage: config.containerStorage } : {}),
    });
    const lines = [`✓ deployed to ${api.url}`];
    for (const { endpoint, id, url, action } of result.endpoints) {
      if (endpoint.kind === "load-balanced") {
        const route = endpoint.routes[0];
        lines.push(
          `  ${endpoint.name}  ${id} (${action})  ${url}/<path>  (routes: ${endpoint.routes.map((r) => `${r.method} ${r.path}`).join(", ")})`,
          `    curl -X ${route?.method ?? "GET"} ${url}${route?.path ?? "/"} -H "Authorization: Bearer $RUNPOD_API_KEY"${route && route.method !== "GET" ? ` -H 'Content-Type: application/json' -d '{}'` : ""}`,
        );
      } else {
        lines.push(
          `  ${endpoint.name}  ${id} (${action})  ${url}/runsync`,
          `    curl -X POST ${url}/runsync -H "Authorization: Bearer $RUNPOD_API_KEY" -H 'Content-Type: application/json' -d '{"input": {}}'`,
        );
      }
    }
    lines.push("  Recorded in .flash/deployments.json");
    process.stdout.write(`${lines.join("\n")}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
