// The playground: /run or /runsync with the request body as editable JSON, a route call (method, path, JSON
// body) for load-balanced endpoints, and a chat form for chat-completion-compatible endpoints
// (/v2/<id>/openai/v1/chat/completions).

import type { ConsoleEndpoint, ConsoleJob } from "../wire.js";
import { type Api, ApiError } from "./api.js";
import { clear, h, present } from "./dom.js";
import { ms, pretty, STATUS_CLASS } from "./format.js";
import { onFrame } from "./frame.js";
import type { Store } from "./store.js";

const DEFAULT_BODY = '{\n  "input": {\n    "name": "world"\n  }\n}';
const bodyKey = (endpointId: string) => `flash-console.body.${endpointId}`;
const routeKey = (endpointId: string) => `flash-console.route.${endpointId}`;
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export class PlaygroundView {
  private readonly endpoint = h("select", { id: "pg-endpoint", "aria-label": "Endpoint" });
  private readonly mode = h(
    "select",
    { id: "pg-mode", "aria-label": "Mode" },
    h("option", { value: "run" }, "/run (queue, answer at once)"),
    h("option", { value: "runsync" }, "/runsync (wait for the result)"),
  );
  private readonly body = h("textarea", {
    id: "pg-body",
    rows: 10,
    spellcheck: false,
    "aria-label": "Request body (JSON)",
  });
  private readonly bodyLabel = h("span", {});
  private readonly method = h(
    "select",
    { id: "pg-method", "aria-label": "Method" },
    ...METHODS.map((m) => h("option", { value: m }, m)),
  );
  private readonly path = h("input", { id: "pg-path", value: "/", spellcheck: false, "aria-label": "Path" });
  private readonly queueFields = h("label", {}, "Mode ", this.mode);
  private readonly routeFields = h(
    "span",
    { class: "row" },
    h("label", {}, "Method ", this.method),
    h("label", { class: "grow" }, "Path ", this.path),
  );
  private readonly bodyError = h("p", { class: "error", role: "alert" });
  private readonly send = h("button", { type: "submit", id: "pg-send" }, "Send");
  private readonly result = h("div", { class: "result", id: "pg-result" });
  private jobId: string | undefined;
  private response: unknown;
  private readonly chatLog = h("div", { class: "chat-log", id: "chat-log" });
  private readonly chatInput = h("textarea", { id: "chat-input", rows: 3, "aria-label": "Message" });
  private readonly chatModel = h("input", { id: "chat-model", value: "local", "aria-label": "Model" });
  private readonly chatSystem = h("input", {
    id: "chat-system",
    placeholder: "optional system prompt",
    "aria-label": "System prompt",
  });
  private readonly chatStream = h("input", { type: "checkbox", id: "chat-stream", checked: true });
  private readonly chatError = h("p", { class: "error", role: "alert" });
  private messages: ChatMessage[] = [];
  private readonly chatForm: HTMLFormElement;
  readonly schedule = onFrame(() => this.renderResult());

  constructor(
    root: HTMLElement,
    private readonly store: Store,
    private readonly api: Api,
    private readonly showJob: (id: string) => void,
  ) {
    this.endpoint.addEventListener("change", () => this.loadBody());
    this.body.addEventListener("input", () => {
      this.checkBody();
      localStorage.setItem(bodyKey(this.endpoint.value), this.body.value);
    });
    const saveRoute = () =>
      localStorage.setItem(
        routeKey(this.endpoint.value),
        JSON.stringify({ method: this.method.value, path: this.path.value }),
      );
    this.method.addEventListener("change", saveRoute);
    this.path.addEventListener("input", saveRoute);
    this.chatForm = h(
      "form",
      { class: "card chat", id: "chat-form", onsubmit: (e) => this.chat(e) },
      h("h3", {}, "Chat"),
      h(
        "p",
        { class: "muted small" },
        "For endpoints whose workers answer chat completions: posts to ",
        h("code", {}, "/v2/<endpoint>/openai/v1/chat/completions"),
        ".",
      ),
      h(
        "div",
        { class: "row" },
        h("label", {}, "Model ", this.chatModel),
        h("label", { class: "grow" }, "System ", this.chatSystem),
        h("label", { class: "inline" }, this.chatStream, " Stream"),
      ),
      this.chatLog,
      h("label", { class: "block" }, "Message", this.chatInput),
      this.chatError,
      h(
        "div",
        { class: "row" },
        h("button", { type: "submit", id: "chat-send" }, "Send message"),
        h("button", { type: "button", onclick: () => this.resetChat() }, "New conversation"),
      ),
    );
    root.append(
      h(
        "form",
        { class: "card playground", id: "pg-form", onsubmit: (e) => this.submit(e) },
        h("h3", {}, "Send a request"),
        h(
          "div",
          { class: "row" },
          h("label", {}, "Endpoint ", this.endpoint),
          this.queueFields,
          this.routeFields,
        ),
        h("label", { class: "block" }, this.bodyLabel, this.body),
        this.bodyError,
        h("div", { class: "row" }, this.send),
        this.result,
      ),
      this.chatForm,
    );
    store.on("endpoints", () => this.renderEndpoints());
    store.on("jobs", this.schedule);
  }

  private selected(): ConsoleEndpoint | undefined {
    return this.store.endpoints.find((e) => e.id === this.endpoint.value);
  }

  private renderEndpoints(): void {
    const current = this.endpoint.value;
    clear(this.endpoint);
    this.endpoint.append(
      ...this.store.endpoints.map((e) =>
        h(
          "option",
          { value: e.id, selected: e.id === current },
          e.kind === "queue" ? e.id : `${e.id} (load-balanced)`,
        ),
      ),
    );
    if (current !== this.endpoint.value || this.body.value === "") this.loadBody();
    else this.showFields();
  }

  /** The queue job's fields or the route's, and the chat form only where the endpoint answers chat completions. */
  private showFields(): void {
    const endpoint = this.selected();
    const routes = endpoint?.kind === "load-balanced";
    this.queueFields.hidden = routes;
    this.routeFields.hidden = !routes;
    clear(this.bodyLabel);
    this.bodyLabel.append(
      ...(routes
        ? ["Request body (JSON; empty for none)"]
        : ["Request body (JSON with ", h("code", {}, "input"), ")"]),
    );
    this.chatForm.hidden = endpoint?.openaiCompatible !== true;
  }

  private loadBody(): void {
    const endpoint = this.selected();
    const id = this.endpoint.value;
    if (endpoint?.kind === "load-balanced") {
      // What the user last sent to it, else the first request of its test_input.json, else GET /.
      const saved = localStorage.getItem(routeKey(id));
      const route = parseRoute(saved ?? endpoint.sample ?? null);
      this.method.value = route.method;
      this.path.value = route.path;
      this.body.value =
        localStorage.getItem(bodyKey(id)) ?? (saved === null ? sampleBody(endpoint.sample) : "");
    } else {
      // What the user last sent to it, else its test_input.json, else a bare job.
      this.body.value = localStorage.getItem(bodyKey(id)) ?? endpoint?.sample ?? DEFAULT_BODY;
    }
    this.showFields();
    this.checkBody();
  }

  private checkBody(): unknown {
    if (this.selected()?.kind === "load-balanced") return this.checkRouteBody();
    try {
      const parsed: unknown = JSON.parse(this.body.value);
      if (typeof parsed !== "object" || parsed === null || !("input" in parsed)) {
        this.bodyError.textContent = 'The body must be a JSON object with "input".';
        return undefined;
      }
      this.bodyError.textContent = "";
      return parsed;
    } catch (err) {
      this.bodyError.textContent = `Not JSON: ${(err as Error).message}`;
      return undefined;
    }
  }

  /** A route's body: empty (none) or any JSON; `null` stands for none. */
  private checkRouteBody(): unknown {
    if (this.body.value.trim() === "") {
      this.bodyError.textContent = "";
      return null;
    }
    try {
      const parsed: unknown = JSON.parse(this.body.value);
      this.bodyError.textContent = "";
      return parsed;
    } catch (err) {
      this.bodyError.textContent = `Not JSON: ${(err as Error).message}`;
      return undefined;
    }
  }

  /** A load-balanced endpoint's route through the platform's proxy: the answer's status, time and body. */
  private async callRoute(endpointId: string, body: unknown): Promise<void> {
    const path = this.path.value.trim();
    if (!path.startsWith("/")) {
      this.bodyError.textContent = 'The path must start with "/".';
      return;
    }
    const method = this.method.value;
    if (body !== null && (method === "GET" || method === "DELETE")) {
      this.bodyError.textContent = `A ${method} request sends no body: empty it or pick another method.`;
      return;
    }
    this.jobId = undefined;
    this.send.disabled = true;
    clear(this.result);
    this.result.append(h("p", { class: "muted" }, `Sending ${method} ${path}…`));
    const started = performance.now();
    try {
      const response = await this.api.fetch(`/lb/${encodeURIComponent(endpointId)}${path}`, {
        method,
        body: body ?? undefined,
      });
      const text = await response.text();
      const took = performance.now() - started;
      let shown = text;
      try {
        shown = pretty(JSON.parse(text));
      } catch {
        // Not JSON: the text is the answer.
      }
      clear(this.result);
      this.result.append(
        h(
          "div",
          { class: "live-job" },
          h(
            "span",
            { class: `status ${response.ok ? "ok" : "bad"}`, id: "pg-http-status" },
            `${response.status} ${response.statusText}`.trim(),
          ),
          h("span", { class: "mono" }, `${method} ${path}`),
          h("span", {}, "time ", h("b", {}, ms(took))),
          h("span", { class: "muted" }, response.headers.get("content-type") ?? ""),
        ),
        h("pre", { id: "pg-response-body" }, shown),
      );
    } catch (err) {
      clear(this.result);
      this.result.append(h("p", { class: "error" }, String(err)));
    } finally {
      this.send.disabled = false;
    }
  }

  private async submit(event: Event): Promise<void> {
    event.preventDefault();
    const body = this.checkBody();
    if (body !== undefined && this.selected()?.kind === "load-balanced") {
      return this.callRoute(this.endpoint.value, body);
    }
    const endpointId = this.endpoint.value;
    if (body === undefined || !endpointId) return;
    const mode = this.mode.value;
    this.jobId = undefined;
    this.response = undefined;
    this.send.disabled = true;
    clear(this.result);
    this.result.append(h("p", { class: "muted" }, mode === "runsync" ? "Waiting for /runsync…" : "Sending…"));
    const started = performance.now();
    try {
      const response = await this.api.request<{ id: string; status: ConsoleJob["status"] }>(
        `/v2/${encodeURIComponent(endpointId)}/${mode}`,
        { body },
      );
      this.response = { ...response, roundTripMs: Math.round(performance.now() - started) };
      this.jobId = response.id;
      this.store.upsertJob({
        id: response.id,
        endpointId,
        status: response.status,
        createdAt: Date.now(),
        sync: mode === "runsync",
        retries: 0,
        chunks: 0,
      });
      this.renderResult();
    } catch (err) {
      clear(this.result);
      this.result.append(h("p", { class: "error" }, err instanceof ApiError ? err.message : String(err)));
    } finally {
      this.send.disabled = false;
    }
  }

  /** The submitted job as the live table sees it, and the HTTP answer it got. */
  private renderResult(): void {
    const id = this.jobId;
    if (id === undefined) return;
    const job = this.store.jobs.get(id);
    clear(this.result);
    if (job) {
      this.result.append(
        ...present(
          h(
            "div",
            { class: "live-job", "data-job-id": id },
            h("button", { type: "button", class: "link mono", onclick: () => this.showJob(id) }, id),
            h("span", { class: `status ${STATUS_CLASS[job.status]}`, id: "pg-status" }, job.status),
            h("span", {}, "delay ", h("b", { id: "pg-delay" }, ms(job.delayTime))),
            h("span", {}, "execution ", h("b", { id: "pg-execution" }, ms(job.executionTime))),
            job.workerId ? h("span", { class: "muted" }, `worker ${job.workerId}`) : null,
          ),
          job.error !== undefined ? h("pre", { class: "error" }, job.error) : null,
          job.output !== undefined ? h("pre", { id: "pg-output" }, job.output) : null,
        ),
      );
    }
    this.result.append(
      h("details", {}, h("summary", {}, "HTTP answer"), h("pre", {}, pretty(this.response))),
    );
  }

  private resetChat(): void {
    this.messages = [];
    clear(this.chatLog);
    this.chatError.textContent = "";
  }

  private async chat(event: Event): Promise<void> {
    event.preventDefault();
    const endpointId = this.endpoint.value;
    const text = this.chatInput.value.trim();
    if (!endpointId || text === "") return;
    this.chatError.textContent = "";
    this.chatInput.value = "";
    this.messages.push({ role: "user", content: text });
    this.chatLog.append(bubble("user", text));
    const answer = bubble("assistant", "…");
    this.chatLog.append(answer);
    const system = this.chatSystem.value.trim();
    const messages: ChatMessage[] = system
      ? [{ role: "system", content: system }, ...this.messages]
      : this.messages;
    const stream = this.chatStream.checked;
    const path = `/v2/${encodeURIComponent(endpointId)}/openai/v1/chat/completions`;
    const body = { model: this.chatModel.value || "local", messages, stream };
    try {
      const content = stream
        ? await this.streamChat(path, body, answer)
        : contentOf(await this.api.request(path, { body }));
      answer.lastChild?.replaceWith(content);
      this.messages.push({ role: "assistant", content });
    } catch (err) {
      answer.remove();
      this.messages.pop();
      this.chatError.textContent = err instanceof Error ? err.message : String(err);
    }
  }

  /** Reads the `data:` events of a streamed answer, adding each delta as it arrives. */
  private async streamChat(path: string, body: unknown, answer: HTMLElement): Promise<string> {
    const response = await this.api.fetch(path, { body });
    if (!response.ok || !response.body) {
      const payload = (await response.json().catch(() => undefined)) as
        | { error?: { message?: string } }
        | undefined;
      throw new Error(payload?.error?.message ?? `${response.status} ${response.statusText}`);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    let content = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      const events = buffered.split("\n\n");
      buffered = events.pop() ?? "";
      for (const event of events) {
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") continue;
          const chunk = JSON.parse(data) as {
            choices?: { delta?: { content?: string } }[];
            error?: { message?: string };
          };
          if (chunk.error) throw new Error(chunk.error.message ?? "The worker reported an error");
          content += chunk.choices?.[0]?.delta?.content ?? "";
          answer.lastChild?.replaceWith(content || "…");
        }
      }
    }
    return content;
  }
}

function parseRoute(saved: string | null): { method: string; path: string } {
  try {
    const route = JSON.parse(saved ?? "") as { method?: unknown; path?: unknown };
    if (typeof route.method === "string" && typeof route.path === "string") {
      return { method: route.method, path: route.path };
    }
  } catch {
    // None saved, or not ours: the first request is GET /.
  }
  return { method: "GET", path: "/" };
}

/** The body of a load-balanced endpoint's sample request, pretty-printed; "" for none. */
function sampleBody(sample: string | undefined): string {
  try {
    const { body } = JSON.parse(sample ?? "") as { body?: unknown };
    return body === undefined ? "" : JSON.stringify(body, null, 2);
  } catch {
    return "";
  }
}

function bubble(role: ChatMessage["role"], text: string): HTMLElement {
  return h(
    "div",
    { class: `bubble ${role}` },
    h("span", { class: "muted small role" }, role),
    document.createTextNode(text),
  );
}

function contentOf(answer: unknown): string {
  const choice = (answer as { choices?: { message?: { content?: unknown }; text?: unknown }[] }).choices?.[0];
  const content = choice?.message?.content ?? choice?.text;
  return typeof content === "string" ? content : pretty(answer);
}
