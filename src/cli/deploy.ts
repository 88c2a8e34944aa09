// `flash deploy`: the command line of deployApp(): image, registry and API options in, a summary out.

import { CONTAINER_OPTIONS, containerToolOptions } from "../containers/options.js";
import { ConfigError, nonEmpty, onOff, repeated, seconds, toggle } from "../options/index.js";
import { deployApp } from "../toolkit/deploy/deploy.js";
import { deployedPod, podAddresses, podPort } from "../toolkit/deploy/pod.js";
import { type DeployedPodEntry, deployPod, recordPod, waitForPod } from "../toolkit/deploy/pod-deploy.js";
import { endpointSummary } from "../toolkit/deploy/summary.js";
import { DEFAULT_WAIT_TIMEOUT_S, waitForRelease } from "../toolkit/deploy/wait.js";
import { toolkitLogger } from "../toolkit/log.js";
import { connectApi } from "../toolkit/rest/connect.js";
import {
  API_OPTIONS,
  type CommandSpec,
  fail,
  isDeployError,
  NODE_VERSION_OPTION,
  parseCommandArgs,
} from "./options.js";

export const spec = {
  name: "deploy",
  args: "[files...]",
  summary:
    "build the app's image, push it, and create or update its endpoints (or with --pod, a Pod) through RunPod's REST API v2",
  options: {
    image: {
      flags: ["--image"],
      parse: nonEmpty,
      value: "REGISTRY/NAME:TAG",
      help: "where the app's image is pushed (required)",
    },
    ...API_OPTIONS,
    pod: toggle(["--pod"], "run the app on a Pod (a dedicated GPU or CPU) instead of serverless endpoints"),
    gpu: {
      flags: ["--gpu"],
      parse: nonEmpty,
      value: "TYPE",
      help: "the Pod's GPU type, a GET /v2/catalog/gpus id (default: the first type the endpoint names)",
    },
    port: repeated(
      ["--port"],
      podPort,
      "N/http|tcp",
      "a port the Pod exposes, through the proxy (http) or forwarded (tcp); the app listens on the first http one, else the first tcp one (default 80/http, a queue app's test API 8000/http)",
    ),
    baseImage: {
      flags: ["--base-image"],
      parse: nonEmpty,
      value: "IMAGE",
      help: "the image the app's image builds on (default flash-worker's)",
    },
    tlsVerify: {
      flags: ["--tls-verify"],
      parse: onOff,
      optionalValue: true,
      value: "true|false",
      help: "check the registry's TLS certificate (default true)",
    },
    registryAuth: toggle(["--registry-auth"], "give the endpoints the registry credentials the push used"),
    nodeVersion: NODE_VERSION_OPTION,
    ...CONTAINER_OPTIONS,
    containerTool: {
      ...CONTAINER_OPTIONS.containerTool,
      flags: ["--container-tool"],
      value: "TOOL",
      help: "docker, podman or buildah (env FLASH_CONTAINER_TOOL)",
    },
    noWait: toggle(
      ["--no-wait"],
      "return once the endpoints (or the Pod) are changed, without waiting for the app to answer",
    ),
    waitTimeout: {
      flags: ["--wait-timeout"],
      parse: seconds(86_400),
      default: DEFAULT_WAIT_TIMEOUT_S * 1000,
      value: "SECONDS",
      help: `how long to wait for a worker of the new release to answer (default ${DEFAULT_WAIT_TIMEOUT_S})`,
    },
    noTest: toggle(["--no-test"], "send no smoke request from test_input.json to scale-to-zero endpoints"),
  },
} satisfies CommandSpec;

/** What deploy --pod prints: the Pod, each port's address, a call to try, where it is recorded. */
function podSummary(apiUrl: string, entry: DeployedPodEntry, proof: string | undefined): string[] {
  const { pod, endpoint } = entry;
  const compute = pod.gpu ? `GPU ${pod.gpu.id}` : `CPU ${pod.cpu?.id}x${pod.cpu?.vcpuCount}`;
  const { http, tcp } = podAddresses(apiUrl, pod);
  const lines = [
    proof
      ? `✓ deployed to ${apiUrl}: Pod ready (${proof})`
      : `! deployed to ${apiUrl}, not waited for (--no-wait): flash pods shows it`,
    `  ${endpoint.name}  Pod ${pod.id} (${entry.action})  ${compute}  ${pod.status}`,
  ];
  for (const exposed of pod.ports) {
    const [port, type] = exposed.split("/");
    const where = type === "http" ? http[port!] : (tcp[port!] ?? "(its address once it runs: flash pods)");
    lines.push(`    ${port}/${type}  ${where}`);
  }
  // What the client calls: the app's routes, or a queue app's test API.
  const { url } = deployedPod(apiUrl, pod, endpoint, entry.app);
  if (url && endpoint.kind === "load-balanced") {
    const route =
      endpoint.routes.find((r) => r.method === "GET" && !r.path.includes(":")) ?? endpoint.routes[0];
    if (route) lines.push(`    curl -X ${route.method} '${url}${route.path}'`);
  } else if (url) {
    lines.push(
      `    curl -X POST ${url}/runsync -H "Authorization: Bearer $RUNPOD_API_KEY" -H 'Content-Type: application/json' -d '{"input":{}}'`,
    );
  }
  lines.push("  Recorded in .flash/deployments.json");
  return lines;
}

/** `flash deploy --image REGISTRY/NAME:TAG [entry files...] [--api-url URL] ...` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    if (!options.image) {
      throw new ConfigError(
        "flash deploy needs --image REGISTRY/NAME:TAG: where the app's image is pushed (e.g. docker.io/you/app:1)",
      );
    }
    if (!options.pod && (options.gpu || options.port.length > 0)) {
      throw new ConfigError(
        `flash deploy ${options.gpu ? "--gpu" : "--port"} is for a Pod: add --pod (an endpoint's GPUs and ports come from its Endpoint)`,
      );
    }
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const root = process.cwd();
    const say = (line: string) => process.stdout.write(`${line}\n`);
    const deploy = {
      api,
      root,
      entries: positional,
      image: options.image,
      registryAuth: options.registryAuth,
      log,
      say,
      nodeVersion: options.nodeVersion,
      baseImage: options.baseImage,
      nodeBaseImage: options.nodeBaseImage,
      imageRepo: options.imageRepo,
      tlsVerify: options.tlsVerify,
      containers: containerToolOptions(options),
    };
    if (options.pod) {
      const entry = await deployPod({ ...deploy, gpu: options.gpu, ports: options.port });
      let proof: string | undefined;
      if (!options.noWait) {
        const timeoutMs = options.waitTimeout;
        say(
          `  waiting for Pod ${entry.pod.name} (${entry.pod.id}) to answer, up to ${Math.round(timeoutMs / 1000)} s…`,
        );
        const ready = await waitForPod(entry, { api, timeoutMs, log });
        entry.pod = ready.pod;
        proof = ready.how;
        // Its tcp ports have public addresses now.
        recordPod(root, api.url, entry);
      }
      process.stdout.write(`${podSummary(api.url, entry, proof).join("\n")}\n`);
      return 0;
    }
    const result = await deployApp(deploy);
    // The endpoints exist from here on: a failed or slow release is reported, never called deployed.
    const unproven: string[] = [];
    if (options.noWait) unproven.push("not waited for (--no-wait): flash endpoints shows its workers");
    else {
      const timeoutMs = options.waitTimeout;
      for (const entry of result.endpoints) {
        say(
          `  waiting for ${entry.endpoint.name} (${entry.id}) to answer, up to ${Math.round(timeoutMs / 1000)} s…`,
        );
        const verdict = await waitForRelease(entry, { api, root, timeoutMs, smoke: !options.noTest, log });
        if (verdict.proven) say(`✓ ${entry.endpoint.name} ready: ${verdict.how}`);
        else unproven.push(`not verified: ${verdict.why}`);
      }
    }
    const lines = [
      unproven.length === 0 ? `✓ deployed to ${api.url}` : `! deployed to ${api.url}, ${unproven.join("; ")}`,
    ];
    for (const entry of result.endpoints) lines.push(...endpointSummary(root, entry));
    lines.push("  Recorded in .flash/deployments.json");
    process.stdout.write(`${lines.join("\n")}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
