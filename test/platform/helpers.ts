// Shared pieces of the platform tests: a platform on 127.0.0.1:0 with its log captured, and the worker
// side of the wire spoken with plain fetch, exactly as docs/protocol.md §15 shows it.
import { createLogger } from "../../src/log/index.js";
import { type Platform, type PlatformOptions, startPlatform } from "../../src/platform/index.js";

export interface TestPlatform {
  platform: Platform;
  lines: string[];
  /** `${url}/v2/<endpoint>` */
  base(endpointId?: string): string;
  /** fetch with the client's Bearer key and a JSON body. */
  client(
    path: string,
    init?: { method?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  worker(workerId: string, endpointId?: string): WireWorker;
}

export const ENDPOINT = "ep-test";

export async function startTestPlatform(options: PlatformOptions = {}): Promise<TestPlatform> {
  const lines: string[] = [];
  const logger = createLogger({
    level: "DEBUG",
    json: false,
    destination: { write: (line) => lines.push(line.trimEnd()) },
  });
  const platform = await startPlatform({
    apiKey: "test-key",
    longPollMs: 2_000,
    webhooks: { attempts: 3, retryDelayMs: 50, timeoutMs: 5_000 },
    endpoints: [{ id: ENDPOINT, name: "test endpoint" }],
    ...options,
    logger,
  });
  const base = (endpointId = ENDPOINT) => `${platform.url}/v2/${endpointId}`;
  return {
    platform,
    lines,
    base,
    client: (path, init = {}) =>
      fetch(`${base()}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: {
          authorization: `Bearer ${platform.apiKey}`,
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      }),
    worker: (workerId, endpointId = ENDPOINT) => new WireWorker(base(endpointId), workerId, platform.apiKey),
  };
}

export interface TakenJob {
  id: string;
  input: unknown;
}

/** The worker side of the protocol in raw requests: what runpod-python 1.12 sends, byte for byte where it matters. */
export class WireWorker {
  constructor(
    readonly base: string,
    readonly id: string,
    private readonly key: string,
  ) {}

  private headers(): Record<string, string> {
    return { authorization: this.key, "content-type": "application/json" };
  }

  takeRaw(jobInProgress = 0, signal?: AbortSignal): Promise<Response> {
    return fetch(`${this.base}/job-take/${this.id}?gpu=X&job_in_progress=${jobInProgress}`, {
      headers: this.headers(),
      ...(signal ? { signal } : {}),
    });
  }

  /** One job-take; undefined on 204. */
  async take(): Promise<TakenJob | undefined> {
    const response = await this.takeRaw();
    if (response.status === 204) return undefined;
    if (response.status !== 200) throw new Error(`job-take: ${response.status} ${await response.text()}`);
    return (await response.json()) as TakenJob;
  }

  /** job-take until a job comes. */
  async takeOne(): Promise<TakenJob> {
    for (;;) {
      const job = await this.take();
      if (job) return job;
    }
  }

  async takeBatch(size: number): Promise<TakenJob[]> {
    const response = await fetch(
      `${this.base}/job-take-batch/${this.id}?gpu=X&batch_size=${size}&job_in_progress=0`,
      {
        headers: this.headers(),
      },
    );
    if (response.status === 204) return [];
    return (await response.json()) as TakenJob[];
  }

  /** job-done as runpod-python posts it: raw JSON labelled form-urlencoded, plus a `charset` header. */
  done(
    jobId: string,
    body: unknown,
    options: { isStream?: boolean; json?: boolean } = {},
  ): Promise<Response> {
    return fetch(`${this.base}/job-done/${this.id}/${jobId}?gpu=X&isStream=${options.isStream ?? false}`, {
      method: "POST",
      headers: {
        authorization: this.key,
        "content-type": options.json ? "application/json" : "application/x-www-form-urlencoded",
        charset: "utf-8",
        "x-request-id": jobId,
      },
      body: JSON.stringify(body),
    });
  }

  stream(jobId: string, output: unknown): Promise<Response> {
    return fetch(`${this.base}/job-stream/${this.id}/${jobId}?gpu=X&isStream=false`, {
      method: "POST",
      headers: {
        authorization: this.key,
        "content-type": "application/x-www-form-urlencoded",
        charset: "utf-8",
      },
      body: JSON.stringify({ output }),
    });
  }

  /** One job-stop long-poll: the ids to stop, [] on 204. */
  async stops(): Promise<string[]> {
    const response = await fetch(`${this.base}/job-stop/${this.id}?gpu=X`, { headers: this.headers() });
    if (response.status === 204) return [];
    return ((await response.json()) as { jobsToStop: string[] }).jobsToStop;
  }

  ping(jobIds: string[] = [], extra = ""): Promise<Response> {
    const jobs = jobIds.length > 0 ? `&job_id=${encodeURIComponent(jobIds.join(","))}` : "";
    return fetch(`${this.base}/ping/${this.id}?gpu=X${jobs}&runpod_version=1.12.0${extra}`, {
      headers: { authorization: this.key },
    });
  }
}

/** Polls `check` until it returns a value other than undefined/false; generous deadline for a noisy machine. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until a load-balanced endpoint's worker says ready (/ping 200) through the platform's proxy. */
export async function lbReady(t: TestPlatform, id: string): Promise<void> {
  await eventually(
    async () =>
      (
        await fetch(`${t.platform.url}/lb/${id}/ping`, {
          headers: { authorization: `Bearer ${t.platform.apiKey}` },
        })
      ).status === 200,
    `the load-balanced worker of ${id}`,
    60_000,
  );
}

export interface JobJson {
  id: string;
  status: string;
  output?: unknown;
  error?: unknown;
  delayTime?: number;
  executionTime?: number;
  workerId?: string;
  retries?: number;
}
