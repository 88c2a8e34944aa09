// A worker's logs: its recent lines, then new ones live over their own event stream while the tab shows them.

import type { LogDelta, LogLine } from "../wire.js";
import type { Api } from "./api.js";
import { clear, h } from "./dom.js";
import { clockMs } from "./format.js";
import type { Store } from "./store.js";

/** Lines kept on the page; the platform keeps its own ring. */
const MAX_LINES = 2_000;

export class LogsView {
  private workerId = "";
  private close: (() => void) | undefined;
  private readonly select = h("select", { "aria-label": "Worker", id: "logs-worker" });
  private readonly follow = h("input", { type: "checkbox", checked: true, id: "logs-follow" });
  private readonly lines = h("div", { class: "log-lines", id: "log-lines", role: "log" });
  private readonly state = h("span", { class: "muted small" });
  private readonly title = h("h3", {}, "Worker logs");

  constructor(
    root: HTMLElement,
    private readonly store: Store,
    private readonly api: Api,
  ) {
    this.select.addEventListener("change", () => this.open(this.select.value));
    root.append(
      h(
        "div",
        { class: "toolbar" },
        this.select,
        h("label", { class: "inline" }, this.follow, " Follow"),
        h("button", { type: "button", onclick: () => clear(this.lines) }, "Clear"),
        this.state,
      ),
      this.title,
      this.lines,
    );
    store.on("endpoints", () => this.renderWorkers());
    this.renderWorkers();
  }

  /** Shows one worker's lines (all the platform's lines for ""), following new ones. */
  open(workerId: string): void {
    this.close?.();
    this.workerId = workerId;
    this.renderWorkers();
    clear(this.lines);
    this.title.textContent = workerId ? `Worker ${workerId}` : "All platform lines";
    this.close = this.api.stream("/console/api/logs/events", workerId ? { worker: workerId } : {}, {
      events: { lines: (data) => this.append(data as LogDelta) },
      state: (state) => {
        this.state.textContent = state === "live" ? "live" : state;
      },
    });
  }

  /** The stream stays open only while someone looks. */
  hide(): void {
    this.close?.();
    this.close = undefined;
  }

  show(): void {
    if (!this.close) this.open(this.workerId);
  }

  private renderWorkers(): void {
    const ids: string[] = [];
    for (const endpoint of this.store.endpoints)
      for (const worker of endpoint.workerList) ids.push(worker.id);
    if (this.workerId && !ids.includes(this.workerId)) ids.unshift(this.workerId);
    clear(this.select);
    this.select.append(
      h("option", { value: "", selected: this.workerId === "" }, "All platform lines"),
      ...ids.map((id) => h("option", { value: id, selected: id === this.workerId }, `Worker ${id}`)),
    );
  }

  private append(delta: LogDelta): void {
    const rows = delta.lines.map((line) => row(line));
    if (delta.skipped > 0)
      rows.unshift(h("div", { class: "log-line muted" }, `… ${delta.skipped} lines skipped`));
    this.lines.append(...rows);
    while (this.lines.childElementCount > MAX_LINES) this.lines.firstElementChild?.remove();
    if (this.follow.checked) this.lines.scrollTop = this.lines.scrollHeight;
  }
}

function row(line: LogLine): HTMLElement {
  return h(
    "div",
    { class: `log-line level-${line.level}` },
    h("time", {}, clockMs(line.time)),
    h("span", { class: "level" }, line.level.toUpperCase()),
    h("span", { class: "who" }, line.jobId ?? line.subject ?? ""),
    h("span", { class: "message" }, line.message),
  );
}
