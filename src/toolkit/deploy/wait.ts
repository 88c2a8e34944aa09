// After `flash deploy` creates or updates an endpoint: follow its new release until a worker of it answers (a
// ready worker, or for a scale-to-zero endpoint a smoke request from test_input.json), or until one fails, and
// then say why with the failing worker's last log lines (REST v2 /workers and /workers/{id}/logs).
import { join } from "node:path";
import { playgroundSample } from "../../app/sample.js";
import { EndpointClient } from "../../client/endpoint.js";
import { CircuitBreakers } from "../../http/breaker.js";
import type { Logger } from "../../log/index.js";
import type { RestClient } from "../rest/client.js";
import type { RestWorker } from "../rest/types.js";
import { DeployError, type DeployedEntry } from "./deploy.js";
import { withApi, workerLastLines } from "./lifecycle.js";

/** How long deploy follows a release by default (an image pull on a cold GPU host takes minutes). */
export const DEFAULT_WAIT_TIMEOUT_S = 600;
/** Log lines of a failing worker shown with the error. */
const LAST_LINES = 20;

export interface WaitOptions {
  api: RestClient;
  /** Project root: test_input.json is read beside each endpoint's file. */
  root: string;
  timeoutMs: number;
  /** Send test_input.json to a scale-to-zero endpoint (off with --no-test). */
  smoke: boolean;
  log: Logger;
  /** Between two looks at the workers. */
  pollMs?: number;
}

/** How a release was proven, or why it could not be. */
export type Verdict = { proven: true; how: string } | { proven: false; why: string };

/** The test input beside an endpoint's file: a job body, or a load-balanced app's first request. */
export type TestInput =
  | { kind: "job"; body: { input: unknown } }
  | { kind: "request"; method: string; path: string; body?: unknown };

/** test_input.json beside `file` (relative to `root`), as the console's playground reads it. */
export function readTestInput(root: string, file: string): TestInput | undefined {
  const sample = playgroundSample(join(root, file));
  if (sample === undefined) return undefined;
  const parsed = JSON.parse(sample) as { input?: unknown; method?: string; path?: string; body?: unknown };
  if ("input" in parsed) return { kind: "job", body: { input: parsed.input } };
  return {
    kind: "request",
    method: parsed.method ?? "GET",
    path: parsed.path ?? "/",
    body: parsed.body,
  };
}

/** Follows one deployed endpoint's release; resolves when proven or unprovable, throws DeployError when refuted. */
export async function waitForRelease(entry: DeployedEntry, options: WaitOptions): Promise<Verdict> {
  const { api } = options;
  const name = entry.endpoint.name;
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const pollMs = options.pollMs ?? 1_000;
  const endpoint = await withApi(api, `endpoint ${name}`, () => api.getEndpoint(entry.id));
  const scaleToZero = (endpoint.workers.min ?? 0) === 0;
  const lb = entry.endpoint.kind === "load-balanced";
  const sample = options.smoke ? readTestInput(options.root, entry.endpoint.file) : undefined;
  // A job for a queue endpoint, a request for a load-balanced one: a test input of the other kind is not sent.
  let input = sample?.kind === (lb ? "request" : "job") ? sample : undefined;
  let from = "test_input.json";
  // A load-balanced endpoint with no worker yet is asked for its /ping: the request starts one.
  if (lb && scaleToZero && options.smoke && !input) {
    input = { kind: "request", method: "GET", path: "/ping" };
    from = "no test_input.json";
  }
  if (scaleToZero && !input) {
    return {
      proven: false,
      why: options.smoke
        ? `${name} scales to zero (workers min 0) and has no test_input.json beside ${entry.endpoint.file} to send it`
        : `${name} scales to zero (workers min 0) and --no-test sent it nothing`,
    };
  }
  // Scale-to-zero endpoints are proven by a request; load-balanced ones also answer test_input.json's first.
  const smokeWanted = input !== undefined && (scaleToZero || lb);
  const client = new EndpointClient({
    name,
    url: entry.url,
    apiKey: api.apiKey,
    timeoutMs: options.timeoutMs,
    breakers: new CircuitBreakers(),
    logger: options.log,
  });
  let smokeSent = false;
  let smokeResult: { ok: true; how: string } | { ok: false; error: Error } | undefined;
  let version: number | null | undefined;
  for (;;) {
    const list = await withApi(api, `the workers of ${name}`, () => api.listWorkers(entry.id));
    version = list.endpointVersion;
    const fresh = list.workers.filter((w) => !w.isStale);
    const failing = fresh.find((w) => w.status === "UNHEALTHY");
    if (failing) throw await refuted(entry, version, failing, options, `worker ${failing.id} is unhealthy`);
    if (!smokeWanted) {
      const ready = fresh.find((w) => w.status === "IDLE" || w.status === "RUNNING");
      if (ready) return { proven: true, how: `worker ${ready.id} of ${releaseName(version)} is ready` };
    }
    // Sent once the older release's workers are gone, so that they cannot be the ones answering it.
    if (smokeWanted && input && !smokeSent && list.workers.every((w) => !w.isStale)) {
      smokeSent = true;
      void sendSmoke(client, input, from, deadline).then(
        (how) => {
          smokeResult = { ok: true, how };
        },
        (error: Error) => {
          smokeResult = { ok: false, error };
        },
      );
    }
    if (smokeResult?.ok) return { proven: true, how: smokeResult.how };
    if (smokeResult && !smokeResult.ok) {
      const worker = fresh.at(-1);
      throw await refuted(entry, version, worker, options, smokeResult.error.message);
    }
    if (Date.now() >= deadline) {
      const states = fresh.map((w) => `${w.id} ${w.status}`).join(", ") || "none";
      throw new DeployError(
        `${name} (${entry.id}): no worker of ${releaseName(version)} answered within ${Math.round(options.timeoutMs / 1000)} s (--wait-timeout). Its workers now: ${states}. It is deployed: flash logs ${name} shows what its workers say; flash undeploy ${name} removes it.`,
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(0, deadline - Date.now()))));
  }
}

/** One smoke request: the job from test_input.json to COMPLETED, or the route answering 2xx. */
async function sendSmoke(
  client: EndpointClient,
  input: TestInput,
  from: string,
  deadline: number,
): Promise<string> {
  const started = Date.now();
  const took = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  if (input.kind === "job") {
    const job = await client.runsync(input.body.input, { timeoutMs: Math.max(1_000, deadline - Date.now()) });
    return `smoke job ${job.id} from ${from} COMPLETED in ${took()}`;
  }
  await client.route(input.method as "GET", input.path, input.body);
  return `${input.method} ${input.path} (${from}) answered in ${took()}`;
}

/** The DeployError for a release that failed, with the failing worker's last log lines. */
async function refuted(
  entry: DeployedEntry,
  version: number | null | undefined,
  worker: RestWorker | undefined,
  options: WaitOptions,
  cause: string,
): Promise<DeployError> {
  const name = entry.endpoint.name;
  const lines = worker ? await workerLastLines(options.api, entry.id, worker.id, LAST_LINES) : [];
  const shown = lines.length
    ? ` Its last log lines (worker ${worker!.id}):\n${lines.map((l) => `    ${l}`).join("\n")}\n`
    : " ";
  return new DeployError(
    `${name} (${entry.id}): ${releaseName(version)} did not start: ${cause}.${shown}It is deployed but not working: fix the cause and deploy again, or flash undeploy ${name}.`,
  );
}

function releaseName(version: number | null | undefined): string {
  return version == null ? "the new release" : `release ${version}`;
}
