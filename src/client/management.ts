// The platform's management API as `flash deploy` uses it: upload an artifact, list, create and delete endpoints.

import { openAsBlob } from "node:fs";
import { FlashError, type HttpStatusFields } from "../errors.js";
import { CONNECT_RETRY, type RetryPolicy, UPLOAD_RETRY, withRetry } from "../http/retry.js";
import type { Logger } from "../log/index.js";

/** The platform could not be reached. */
export class PlatformConnectionError extends FlashError {
  readonly code = "PLATFORM_UNREACHABLE";
  override name = "PlatformConnectionError";
}

/** The platform answered with an error; `detail` is its `{"error"}` text. */
export class ManagementHttpError extends FlashError implements HttpStatusFields {
  readonly code = "MANAGEMENT_HTTP";
  override name = "ManagementHttpError";
  /** The platform's `{"error"}` text, or the start of the body. */
  readonly detail: string;
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly body: string,
    readonly url: string,
  ) {
    const detail = errorText(body);
    super(`${status} ${statusText}${detail ? `: ${detail}` : ""}`);
    this.detail = detail;
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
    const what = `${method} ${path}`;
    let answer: { response: Response; text: string };
    try {
      answer = await withRetry(
        retry,
        async () => {
          const response = await this.doFetch(`${this.url}${path}`, {
            method,
            headers,
            ...(body ? { body: await body() } : {}),
          });
          return { response, text: await response.text() };
        },
        (outcome) => {
          if (!outcome.ok) return connectionReason(outcome.error);
          const { response } = outcome.value;
          const retried = response.status >= 500 && options.retry5xx !== false;
          return retried ? `${response.status} ${response.statusText}` : undefined;
        },
        {
          onRetry: (reason, attempt, ms) =>
            this.options.log?.warn(
              `${what} attempt ${attempt}/${retry.attempts} failed: ${reason}. Retrying in ${ms} ms`,
            ),
        },
      );
    } catch (err) {
      throw new PlatformConnectionError(
        `Failed to connect to the platform at ${this.url}: ${connectionReason(err)}. Start one with "flash serve", or pass --url.`,
      );
    }
    const { response, text } = answer;
    if (response.ok) return (text ? JSON.parse(text) : undefined) as T;
    throw new ManagementHttpError(response.status, response.statusText, text, `${this.url}${path}`);
  }
}

function connectionReason(err: unknown): string {
  return err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
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
