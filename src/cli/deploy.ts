// `flash deploy`: the command line of deployApp(): image, registry and API options in, a summary out.
import { toolkitLogger } from "../client/log.js";
import { ConfigError } from "../config/index.js";
import { connectApi } from "../deploy/connect.js";
import { deployApp } from "../deploy/deploy.js";
import {
  API_OPTIONS,
  type CommandSpec,
  fail,
  isDeployError,
  NODE_VERSION_OPTION,
  parseCommandArgs,
} from "./options.js";

export const spec: CommandSpec = {
  name: "deploy",
  args: "[files...]",
  summary: "build the app's image, push it, and create or update its endpoints through RunPod's REST API v2",
  options: [
    { flag: "--image", value: "REGISTRY/NAME:TAG", help: "where the app's image is pushed (required)" },
    ...API_OPTIONS,
    {
      flag: "--base-image",
      value: "IMAGE",
      help: "the image the app's image builds on (default flash-worker's)",
    },
    {
      flag: "--tls-verify",
      value: "true|false",
      optionalValue: true,
      help: "check the registry's TLS certificate (default true)",
    },
    { flag: "--registry-auth", help: "give the endpoints the registry credentials the push used" },
    NODE_VERSION_OPTION,
    { flag: "--container-tool", value: "TOOL", help: "docker, podman or buildah (env FLASH_CONTAINER_TOOL)" },
  ],
};

/** `flash deploy --image REGISTRY/NAME:TAG [entry files...] [--api-url URL] ...` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    // FLASH_API_KEY is the local platform's own key; deploy takes --api-key or the discovery chain.
    const env = { ...process.env, FLASH_API_KEY: undefined };
    const { config, positional } = parseCommandArgs(spec, args, env);
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
