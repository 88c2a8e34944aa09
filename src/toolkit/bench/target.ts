// The endpoint a bench loads, and what the platform says about it: found through REST v2 (a deployed endpoint, or
// one made on `flash serve`), else on the local platform's console (`flash dev`'s endpoints); its jobs sent with
// /runsync; its workers listed (REST v2 /workers, or the console's list); the local platform's /metrics counters.
import { FlashError, isFlashError } from "../../flash-error.js";
import { HttpClient } from "../../http/client.js";
import { readDeployments } from "../../project/deployments.js";
import { findEndpoint, LifecycleError } from "../deploy/lifecycle.js";
import { endpointUrl } from "../deploy/mapping.js";
import type { RestClient } from "../rest/client.js";
import type { RestEndpoint } from "../rest/types.js";
import type { Outcome } from "./load.js";

/** The bench could not start or run; the message says why. */
export class BenchError extends FlashError {
  readonly code = "BENCH_FAILED";
  override name = "BenchError";
}

export interface BenchTarget {
  id: string;
  name: string;
  kind: "queue" | "load-balanced";
  /** `<base>/v2/<id>` where /runsync goes; a load-balanced endpoint's routes' base URL. */
  url: string;
  /** Its REST v2 record, when REST v2 knows it (its GPUs and their count come from there). */
  rest?: RestEndpoint | undefined;
}

/** A worker as one look at the platform shows it. */
export interface WorkerSeen {
  id: string;
  /** Taking jobs (idle or running), not still starting. */
  ready: boolean;
  running: boolean;
}

/** Counters of the local platform's /metrics for one endpoint (absent on RunPod). */
export interface PlatformCounters {
  jobs: Record<string, number>;
  /** A load-balanced endpoint's answers by HTTP status code. */
  answers: Record<string, number>;
  executionSeconds: number;
  delaySeconds: number;
  /** Absent where the platform does not count them (a load-balanced endpoint's workers). */
  workerSeconds?: number | undefined;
  workerStarts: number;
}

interface ConsoleEndpointView {
  id: string;
  name: string;
  kind: "queue" | "load-balanced";
  workerList: { id: string; state: string }[];
  workersRunning: number;
  workersReady?: number;
}

/** Each request is one attempt: a failure is a result to count, not something to hide by retrying. */
const ONCE = { attempts: 1, baseMs: 0, maxMs: 0 };
/** /runsync waits up to 90 s on the platform; an answer takes a little longer to arrive. */
const SYNC_TIMEOUT_MS = 120_000;
const LOOK_TIMEOUT_MS = 10_000;
const MAX_SYNC_WAIT_MS = 90_000;

export class BenchClient {
  private readonly http = new HttpClient({ retry: ONCE, retryStatus: () => false });

  constructor(
    readonly api: RestClient,
    private readonly apiKey: string,
  ) {}

  /** The endpoint `ref` names (id or name); without one, the only endpoint this project deployed or the platform runs. */
  async resolve(ref: string | undefined, cwd: string): Promise<BenchTarget> {
    const local = await this.consoleEndpoints();
    if (!ref) {
      const recorded = readDeployments(cwd);
      const names =
        recorded && recorded.platform === this.api.url
          ? Object.keys(recorded.endpoints)
          : (local?.filter((e) => e.kind === "queue").map((e) => e.id) ?? []);
      if (names.length !== 1) {
        throw new BenchError(
          `Name the endpoint: flash bench ENDPOINT (${names.length ? `there: ${names.join(", ")}` : `none found on ${this.api.url}`})`,
        );
      }
      ref = names[0]!;
    }
    const onConsole = local?.find((e) => e.id === ref || e.name === ref);
    if (onConsole) {
      const lb = onConsole.kind === "load-balanced";
      // An endpoint made through REST v2 on `flash serve` is on the console too; its REST record has its GPUs.
      const rest = await findEndpoint(this.api, onConsole.id).catch(() => undefined);
      return {
        id: onConsole.id,
        // flash dev names an endpoint by its file on the console; its id is what the user types.
        name: rest?.name ?? onConsole.id,
        kind: onConsole.kind,
        url: `${this.api.url}/${lb ? "lb" : "v2"}/${onConsole.id}`,
        rest,
      };
    }
    const rest = await findEndpoint(this.api, ref).catch((err: unknown) => {
      if (isFlashError(err, "LIFECYCLE_FAILED") && local)
        throw new LifecycleError(
          `No endpoint named ${ref} on ${this.api.url} (there: ${local.map((e) => e.id).join(", ") || "none"})`,
        );
      throw err;
    });
    const type = rest.type === "LOAD_BALANCER" ? "LOAD_BALANCER" : "QUEUE";
    return {
      id: rest.id,
      name: rest.name,
      kind: type === "QUEUE" ? "queue" : "load-balanced",
      url: endpointUrl(rest, type),
      rest,
    };
  }

  /** One request to a load-balanced endpoint's route: COMPLETED on a 2xx answer, else its status is the kind. */
  async route(
    target: BenchTarget,
    request: { method: string; path: string; body?: string },
  ): Promise<Outcome> {
    try {
      const answer = await this.http.send({
        method: request.method as "GET",
        url: `${target.url}${request.path}`,
        headers: this.headers(request.body !== undefined),
        body: request.body,
        timeoutMs: SYNC_TIMEOUT_MS,
        what: `${request.method} ${request.path}`,
      });
      const status = answer.response.status;
      if (status >= 200 && status < 300) return { kind: "COMPLETED" };
      return { kind: `HTTP ${status}`, detail: answer.text.slice(0, 200) };
    } catch (err) {
      return { kind: "connection failed", detail: errorText(err) };
    }
  }

  /** One job: /runsync, then /status-sync while it is not finished, until `deadline` (Date.now() ms). */
  async job(target: BenchTarget, body: string, deadline: number): Promise<Outcome> {
    // The platform holds a sync call up to `wait` ms (1 to 90 s, as RunPod's SDKs send it): never past the deadline.
    const wait = () => `?wait=${Math.min(MAX_SYNC_WAIT_MS, Math.max(1_000, deadline - Date.now()))}`;
    let answer = await this.call("POST", `${target.url}/runsync${wait()}`, body, "POST /runsync");
    for (;;) {
      if (!answer.ok) return answer.outcome;
      const view = answer.view;
      const outcome: Outcome = { kind: view.status };
      if (typeof view.delayTime === "number") outcome.delayTime = view.delayTime;
      if (typeof view.executionTime === "number") outcome.executionTime = view.executionTime;
      if (typeof view.workerId === "string") outcome.workerId = view.workerId;
      if (view.error !== undefined) outcome.detail = String(view.error).slice(0, 200);
      if (TERMINAL.has(view.status)) return outcome;
      if (Date.now() >= deadline || !view.id) return { ...outcome, kind: "unfinished" };
      answer = await this.call(
        "GET",
        `${target.url}/status-sync/${view.id}${wait()}`,
        undefined,
        "GET /status-sync",
      );
    }
  }

  /**
   * One streamed OpenAI request to a model server's passthrough (`<endpoint>/openai/v1/...`, stream on): COMPLETED
   * once its `[DONE]` arrives, with the time to its first token; an error event or a stream cut short is a failure.
   */
  async openaiStream(target: BenchTarget, route: string, body: string): Promise<Outcome> {
    const started = Date.now();
    const url = `${target.url}/openai/v1${route.replace(/^\/v1(?=\/)/, "")}`;
    let response: Response;
    try {
      response = await this.http.open({
        method: "POST",
        url,
        headers: { ...this.headers(true), Accept: "text/event-stream" },
        body,
        timeoutMs: SYNC_TIMEOUT_MS,
        what: `POST ${route}`,
      });
    } catch (err) {
      return { kind: "connection failed", detail: errorText(err) };
    }
    if (!response.ok || !response.body) {
      return {
        kind: `HTTP ${response.status}`,
        detail: (await response.text().catch(() => "")).slice(0, 200),
      };
    }
    const outcome: Outcome = { kind: "stream cut" };
    const decoder = new TextDecoder();
    let pending = "";
    try {
      for await (const chunk of response.body) {
        pending += decoder.decode(chunk as Uint8Array, { stream: true });
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") {
            if (outcome.kind === "stream cut") outcome.kind = "COMPLETED";
            continue;
          }
          if (/^\{"error"/.test(data)) {
            outcome.kind = "stream error";
            outcome.detail = data.slice(0, 200);
          } else outcome.firstTokenMs ??= Date.now() - started;
        }
      }
    } catch (err) {
      return { ...outcome, kind: "stream cut", detail: errorText(err) };
    }
    return outcome;
  }

  private async call(
    method: "GET" | "POST",
    url: string,
    body: string | undefined,
    what: string,
  ): Promise<{ ok: true; view: JobAnswer } | { ok: false; outcome: Outcome }> {
    let text: string;
    let status: number;
    try {
      const answer = await this.http.send({
        method,
        url,
        headers: this.headers(body !== undefined),
        body,
        timeoutMs: SYNC_TIMEOUT_MS,
        what,
      });
      text = answer.text;
      status = answer.response.status;
    } catch (err) {
      return { ok: false, outcome: { kind: "connection failed", detail: errorText(err) } };
    }
    if (status < 200 || status >= 300) {
      return { ok: false, outcome: { kind: `HTTP ${status}`, detail: text.slice(0, 200) } };
    }
    try {
      const view = JSON.parse(text) as JobAnswer;
      if (typeof view.status === "string") return { ok: true, view };
    } catch {
      // Not a job: counted below.
    }
    return { ok: false, outcome: { kind: "not a job answer", detail: text.slice(0, 200) } };
  }

  /** The endpoint's workers now: REST v2 /workers when it knows the endpoint, else the local console's list. */
  async workers(target: BenchTarget): Promise<WorkerSeen[]> {
    if (target.rest) {
      const list = await this.api.listWorkers(target.id);
      return list.workers.map((w) => ({
        id: w.id,
        ready: w.status === "IDLE" || w.status === "RUNNING",
        running: w.status === "RUNNING",
      }));
    }
    const endpoint = (await this.consoleEndpoints())?.find((e) => e.id === target.id);
    // The console counts a load-balanced endpoint's workers without naming them.
    if (endpoint?.kind === "load-balanced") {
      const ready = endpoint.workersReady ?? endpoint.workersRunning;
      return Array.from({ length: endpoint.workersRunning }, (_, i) => ({
        id: `#${i}`,
        ready: i < ready,
        running: false,
      }));
    }
    return (endpoint?.workerList ?? [])
      .filter((w) => w.state !== "exited" && w.state !== "unhealthy")
      .map((w) => ({
        id: w.id,
        ready: w.state === "idle" || w.state === "running",
        running: w.state === "running",
      }));
  }

  /** The local platform's counters for the endpoint; undefined where there is no /metrics (RunPod). */
  async counters(target: BenchTarget): Promise<PlatformCounters | undefined> {
    const text = await this.get(`${this.api.url}/metrics`);
    return text === undefined ? undefined : readCounters(text, target.id);
  }

  /** The local platform's endpoints (flash dev, flash serve); undefined on an API without the console. */
  private async consoleEndpoints(): Promise<ConsoleEndpointView[] | undefined> {
    const text = await this.get(`${this.api.url}/console/api/endpoints`);
    if (text === undefined) return undefined;
    try {
      const list = JSON.parse(text) as unknown;
      return Array.isArray(list) ? (list as ConsoleEndpointView[]) : undefined;
    } catch {
      return undefined;
    }
  }

  /** A GET's body when it answers 200, else undefined (an API that has no such route). */
  private async get(url: string): Promise<string | undefined> {
    try {
      const answer = await this.http.send({
        method: "GET",
        url,
        headers: this.headers(false),
        timeoutMs: LOOK_TIMEOUT_MS,
        what: `GET ${new URL(url).pathname}`,
      });
      return answer.response.status === 200 ? answer.text : undefined;
    } catch {
      return undefined;
    }
  }

  private headers(json: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.apiKey}`,
      Accept: "application/json",
    };
    if (json) headers["Content-Type"] = "application/json";
    return headers;
  }
}

interface JobAnswer {
  id?: string;
  status: string;
  delayTime?: unknown;
  executionTime?: unknown;
  workerId?: unknown;
  error?: unknown;
}

const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"]);

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The endpoint's series of the platform's Prometheus text (src/platform/console/prometheus.ts). */
export function readCounters(text: string, endpointId: string): PlatformCounters {
  const counters: PlatformCounters = {
    jobs: {},
    answers: {},
    executionSeconds: 0,
    delaySeconds: 0,
    workerStarts: 0,
  };
  for (const line of text.split("\n")) {
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match) continue;
    const [, name, rawLabels, rawValue] = match;
    const labels = Object.fromEntries(
      [...rawLabels!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    if (labels.endpoint !== endpointId) continue;
    const value = Number(rawValue);
    if (name === "flash_jobs_total" && labels.status) counters.jobs[labels.status] = value;
    else if (name === "flash_lb_requests_total" && labels.code) counters.answers[labels.code] = value;
    else if (name === "flash_job_execution_seconds_sum") counters.executionSeconds = value;
    else if (name === "flash_job_delay_seconds_sum") counters.delaySeconds = value;
    else if (name === "flash_worker_seconds_total") counters.workerSeconds = value;
    else if (name === "flash_worker_starts_total") counters.workerStarts = value;
  }
  return counters;
}
