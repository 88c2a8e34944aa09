// The platform's management API as `flash deploy` uses it: upload an artifact, list, create and delete endpoints.
import { openAsBlob } from "node:fs";
import type { Logger } from "../log/index.js";
import { backoffMs, type RetryPolicy, sleep } from "../worker/retry.js";
import { CONNECT_RETRY } from "./endpoint.js";

/** Uploads: 3 attempts 2 s then 4 s apart (flash-toolkit §7: base 2 s, max 30 s). */
export const UPLOAD_RETRY: RetryPolicy = { attempts: 3, baseMs: 2_000, maxMs: 30_000 };

/** The platform could not be reached. */
export class PlatformConnectionError extends Error {
  override name = "PlatformConnectionError";
}

/** The platform answered with an error; `detail` is its `{"error"}` text. */
export class ManagementHttpError extends Error {
  override name = "ManagementHttpError";
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly detail: string,
  ) {
    super(`${status} ${reason}${detail ? `: ${detail}` : ""}`);
  }
}

export interface ManagedEndpoint {
  id: string;
  name: string;
  url: string;
}

export interface EndpointSpec {
  id: string;
  kind: "queue" | "load-balanced";
  name: string;
  artifact: string;
  file: string;
  workers: [number, number];
  executionTimeoutMs?: number;
}

export interface ManagementClientOptions {
  /** The platform's base URL. */
  url: string;
  apiKey: string;
  log?: Logger;
  fetch?: typeof fetch;
  retry?: RetryPolicy;
  uploadRetry?: RetryPolicy;
}

export class ManagementClient {
  readonly url: string;
  private readonly doFetch: typeof fetch;

  constructor(private readonly options: ManagementClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.doFetch = options.fetch ?? fetch;
  }

  /** POST /artifacts with the tarball as the body (read from disk as it is sent). */
  async uploadArtifact(path: string): Promise<{ id: string; size: number; files: number }> {
    return this.call("POST", "/artifacts", async () => openAsBlob(path), "application/gzip", {
      retry: this.options.uploadRetry ?? UPLOAD_RETRY,
    });
  }

  async listEndpoints(): Promise<ManagedEndpoint[]> {
    return this.call("GET", "/endpoints");
  }

  async createEndpoint(spec: EndpointSpec): Promise<ManagedEndpoint> {
    const body = JSON.stringify(spec);
    // Not retried on a 5xx: the endpoint may exist by then, and a second create would be refused anyway.
    return this.call("POST", "/endpoints", async () => body, "application/json", { retry5xx: false });
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.call("DELETE", `/endpoints/${encodeURIComponent(id)}`);
  }

  private async call<T>(
    method: string,
    path: string,
    body?: () => Promise<Blob | string>,
    contentType?: string,
    options: { retry?: RetryPolicy; retry5xx?: boolean } = {},
  ): Promise<T> {
    const retry = options.retry ?? this.options.retry ?? CONNECT_RETRY;
    const headers: Record<string, string> = { Authorization: `Bearer ${this.options.apiKey}` };
    if (contentType) headers["Content-Type"] = contentType;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.doFetch(`${this.url}${path}`, {
          method,
          headers,
          ...(body ? { body: await body() } : {}),
        });
      } catch (err) {
        const reason = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
        if (attempt < retry.attempts) {
          await this.wait(retry, attempt, `${method} ${path}`, reason);
          continue;
        }
        throw new PlatformConnectionError(
          `Failed to connect to the platform at ${this.url}: ${reason}. Start one with "flash serve", or pass --url.`,
        );
      }
      const text = await response.text();
      if (response.ok) return (text ? JSON.parse(text) : undefined) as T;
      if (response.status >= 500 && options.retry5xx !== false && attempt < retry.attempts) {
        await this.wait(retry, attempt, `${method} ${path}`, `${response.status} ${response.statusText}`);
        continue;
      }
      throw new ManagementHttpError(response.status, response.statusText, errorText(text));
    }
  }

  private async wait(retry: RetryPolicy, attempt: number, what: string, reason: string): Promise<void> {
    const ms = backoffMs(retry, attempt);
    this.options.log?.warn(
      `${what} attempt ${attempt}/${retry.attempts} failed: ${reason}. Retrying in ${ms} ms`,
    );
    await sleep(ms);
  }
}

function errorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === "string") return parsed.error;
  } catch {
    // Not JSON: the text itself.
  }
  return body.trim().slice(0, 300);
}
