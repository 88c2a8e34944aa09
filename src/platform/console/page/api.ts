// Every call the page makes to the platform: JSON routes with `Authorization: Bearer <key>`, event streams with
// a token from POST /console/api/token (EventSource cannot send headers). A 401 anywhere logs the page out.
import type { EventToken } from "../wire.js";

export class Unauthorized extends Error {
  override name = "Unauthorized";
}

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

export type StreamState = "connecting" | "live" | "offline";

export interface StreamHandlers {
  events: Record<string, (data: unknown) => void>;
  state?(state: StreamState): void;
}

/** Reconnect back-off after a stream fails: 1 s doubling to 15 s. */
const RETRY = { baseMs: 1_000, maxMs: 15_000 };

export class Api {
  constructor(
    readonly key: string,
    private readonly onUnauthorized: () => void,
  ) {}

  /** A call with the key; the parsed JSON body, or ApiError with the platform's `{error}` message. */
  async request<T>(
    path: string,
    init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
  ): Promise<T> {
    const response = await this.fetch(path, init);
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: the text is the answer.
    }
    if (!response.ok) throw new ApiError(response.status, errorMessage(body, response), body);
    return body as T;
  }

  /** The raw response (streams read it themselves); a 401 logs the page out. */
  async fetch(
    path: string,
    init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(path, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.signal,
    });
    if (response.status === 401) {
      this.onUnauthorized();
      throw new Unauthorized(errorMessage(await response.json().catch(() => undefined), response));
    }
    return response;
  }

  token(): Promise<EventToken> {
    return this.request<EventToken>("/console/api/token", { method: "POST" });
  }

  /**
   * Opens an event stream and keeps it open: a fresh token for every connection, back-off between failures.
   * Returns the function that closes it for good.
   */
  stream(path: string, params: Record<string, string>, handlers: StreamHandlers): () => void {
    let source: EventSource | undefined;
    let timer: number | undefined;
    let failures = 0;
    let closed = false;
    const connect = async () => {
      handlers.state?.("connecting");
      let token: EventToken;
      try {
        token = await this.token();
      } catch (err) {
        if (err instanceof Unauthorized) return;
        return retry();
      }
      if (closed) return;
      const query = new URLSearchParams({ ...params, token: token.token });
      source = new EventSource(`${path}?${query}`);
      source.onopen = () => {
        failures = 0;
        handlers.state?.("live");
      };
      source.onerror = () => {
        // CONNECTING: the browser retries by itself; CLOSED (e.g. an expired token): we start over.
        if (source?.readyState === EventSource.CLOSED) retry();
        else handlers.state?.("connecting");
      };
      for (const [name, handle] of Object.entries(handlers.events)) {
        source.addEventListener(name, (event) => handle(JSON.parse((event as MessageEvent<string>).data)));
      }
    };
    const retry = () => {
      source?.close();
      source = undefined;
      if (closed) return;
      handlers.state?.("offline");
      const delay = Math.min(RETRY.maxMs, RETRY.baseMs * 2 ** failures++);
      timer = window.setTimeout(() => void connect(), delay);
    };
    void connect();
    return () => {
      closed = true;
      window.clearTimeout(timer);
      source?.close();
    };
  }
}

function errorMessage(body: unknown, response: Response): string {
  if (typeof body === "object" && body !== null && "error" in body) {
    const error = (body as { error: unknown }).error;
    if (typeof error === "string") return error;
    if (typeof error === "object" && error !== null && "message" in error) return String(error.message);
  }
  return `${response.status} ${response.statusText}`;
}
