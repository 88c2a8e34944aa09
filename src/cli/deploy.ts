// `flash deploy`: the command line of deployApp(): image, registry and API options in, a summary out.

import { ConfigError } from "../options/index.js";
import { connectApi } from "./deploy/connect.js";
import { type DeployedEntry, deployApp } from "./deploy/deploy.js";
import { DEFAULT_WAIT_TIMEOUT_S, readTestInput, waitForRelease } from "./deploy/wait.js";
import { toolkitLogger } from "./log.js";
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
    {
      flag: "--no-wait",
      help: "return once the endpoints are changed, without waiting for a worker to answer",
    },
    {
      flag: "--wait-timeout",
      value: "SECONDS",
      help: `how long to wait for a worker of the new release to answer (default ${DEFAULT_WAIT_TIMEOUT_S})`,
    },
    { flag: "--no-test", help: "send no smoke request from test_input.json to scale-to-zero endpoints" },
  ],
};

/** A JSON body inside the single quotes of a shell command. */
const shellQuoted = (body: unknown) => `'${JSON.stringify(body).replaceAll("'", "'\\''")}'`;

/** The curl the user can try an endpoint with: its test_input.json when it has one. */
function curlLine(root: string, entry: DeployedEntry): string {
  const auth = '-H "Authorization: Bearer $RUNPOD_API_KEY"';
  const json = "-H 'Content-Type: application/json'";
  const sample = readTestInput(root, entry.endpoint.file);
  if (entry.endpoint.kind === "load-balanced") {
    const route = entry.endpoint.routes[0];
    const request =
      sample?.kind === "request"
        ? sample
        : {
            method: route?.method ?? "GET",
            path: route?.path ?? "/",
            body: route && route.method !== "GET" ? {} : undefined,
          };
    const body = request.body === undefined ? "" : ` ${json} -d ${shellQuoted(request.body)}`;
    return `curl -X ${request.method} '${entry.url}${request.path}' ${auth}${body}`;
  }
  const body = sample?.kind === "job" ? sample.body : { input: {} };
  return `curl -X POST ${entry.url}/runsync ${auth} ${json} -d ${shellQuoted(body)}`;
}

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
    const root = process.cwd();
    const say = (line: string) => process.stdout.write(`${line}\n`);
    const result = await deployApp({
      api,
      root,
      entries: positional,
      image: config.image,
      registryAuth: config.registryAuth,
      log,
      say,
      ...(config.nodeVersion === undefined ? {} : { nodeVersion: config.nodeVersion }),
      ...(config.baseImage ? { baseImage: config.baseImage } : {}),
      ...(config.nodeBaseImage ? { nodeBaseImage: config.nodeBaseImage } : {}),
      ...(config.tlsVerify === undefined ? {} : { tlsVerify: config.tlsVerify }),
      ...(config.containerTool ? { containerTool: config.containerTool } : {}),
      ...(config.containerStorage ? { containerStorage: config.containerStorage } : {}),
    });
    // The endpoints exist from here on: a failed or slow release is reported, never called deployed.
    const unproven: string[] = [];
    if (config.noWait) unproven.push("not waited for (--no-wait): flash endpoints shows its workers");
    else {
      const timeoutMs = config.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_S * 1000;
      for (const entry of result.endpoints) {
        say(
          `  waiting for ${entry.endpoint.name} (${entry.id}) to answer, up to ${Math.round(timeoutMs / 1000)} s…`,
        );
        const verdict = await waitForRelease(entry, { api, root, timeoutMs, smoke: !config.noTest, log });
        if (verdict.proven) say(`✓ ${entry.endpoint.name} ready: ${verdict.how}`);
        else unproven.push(`not verified: ${verdict.why}`);
      }
    }
    const lines = [
      unproven.length === 0 ? `✓ deployed to ${api.url}` : `! deployed to ${api.url}, ${unproven.join("; ")}`,
    ];
    for (const entry of result.endpoints) {
      const { endpoint, id, url, action } = entry;
      if (endpoint.kind === "load-balanced") {
        lines.push(
          `  ${endpoint.name}  ${id} (${action})  ${url}/<path>  (routes: ${endpoint.routes.map((r) => `${r.method} ${r.path}`).join(", ")})`,
        );
      } else {
        lines.push(`  ${endpoint.name}  ${id} (${action})  ${url}/runsync`);
      }
      lines.push(`    ${curlLine(root, entry)}`);
    }
    lines.push("  Recorded in .flash/deployments.json");
    process.stdout.write(`${lines.join("\n")}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
