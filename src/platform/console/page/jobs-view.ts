// The live job table: filters, one page of rows at a time, and the whole job on a click.

import type { ConsoleJob, ConsoleJobDetail, JobStatus } from "../wire.js";
import { type Api, ApiError } from "./api.js";
import { clear, h, present } from "./dom.js";
import { clock, ms, pretty, STATUS_CLASS } from "./format.js";
import { onFrame } from "./frame.js";
import type { Store } from "./store.js";

const PAGE_SIZE = 50;
const STATUSES: JobStatus[] = ["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"];

export class JobsView {
  private pageIndex = 0;
  private endpoint = "";
  private status = "";
  private text = "";
  private selected: string | undefined;
  private readonly endpointSelect = h("select", { "aria-label": "Endpoint" });
  private readonly body = h("tbody");
  private readonly pager = h("div", { class: "pager" });
  private readonly summary = h("span", { class: "muted" });
  private readonly detail = h("div", { class: "detail", hidden: true });
  readonly schedule = onFrame(() => this.render());

  constructor(
    root: HTMLElement,
    private readonly store: Store,
    private readonly api: Api,
    private readonly openLogs: (workerId: string) => void,
  ) {
    const statusSelect = h(
      "select",
      {
        "aria-label": "Status",
        onchange: (e) => this.filter({ status: (e.target as HTMLSelectElement).value }),
      },
      h("option", { value: "" }, "Any status"),
      ...STATUSES.map((status) => h("option", { value: status }, status)),
    );
    this.endpointSelect.addEventListener("change", () =>
      this.filter({ endpoint: this.endpointSelect.value }),
    );
    const search = h("input", {
      type: "search",
      placeholder: "Job id or worker",
      "aria-label": "Search jobs",
      oninput: (e) => this.filter({ text: (e.target as HTMLInputElement).value.trim() }),
    });
    root.append(
      h("div", { class: "toolbar" }, this.endpointSelect, statusSelect, search, this.summary),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "jobs", id: "jobs-table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...[
                "Job",
                "Endpoint",
                "Status",
                "Queued",
                "Delay time",
                "Execution time",
                "Worker",
                "Output, error or progress",
              ].map((title) => h("th", {}, title)),
            ),
          ),
          this.body,
        ),
      ),
      this.pager,
      this.detail,
    );
    store.on("jobs", this.schedule);
    store.on("endpoints", () => this.renderEndpoints());
  }

  showJob(id: string): void {
    this.selected = id;
    void this.loadDetail(id);
    this.schedule();
  }

  private filter(change: { endpoint?: string; status?: string; text?: string }): void {
    if (change.endpoint !== undefined) this.endpoint = change.endpoint;
    if (change.status !== undefined) this.status = change.status;
    if (change.text !== undefined) this.text = change.text;
    this.pageIndex = 0;
    this.schedule();
  }

  private renderEndpoints(): void {
    const current = this.endpointSelect.value;
    clear(this.endpointSelect);
    this.endpointSelect.append(
      h("option", { value: "" }, "All endpoints"),
      ...this.store.endpoints
        .filter((e) => e.kind === "queue")
        .map((e) => h("option", { value: e.id, selected: e.id === current }, e.id)),
    );
  }

  private matches(job: ConsoleJob): boolean {
    if (this.endpoint && job.endpointId !== this.endpoint) return false;
    if (this.status && job.status !== this.status) return false;
    if (this.text && !job.id.includes(this.text) && job.workerId !== this.text) return false;
    return true;
  }

  private render(): void {
    const jobs = this.store.sortedJobs().filter((job) => this.matches(job));
    const pages = Math.max(1, Math.ceil(jobs.length / PAGE_SIZE));
    this.pageIndex = Math.min(this.pageIndex, pages - 1);
    const first = this.pageIndex * PAGE_SIZE;
    const rows = jobs.slice(first, first + PAGE_SIZE).map((job) => this.row(job));
    clear(this.body);
    if (rows.length === 0) {
      this.body.append(
        h("tr", {}, h("td", { colspan: 8, class: "empty" }, "No jobs yet: send one from the Playground.")),
      );
    } else {
      this.body.append(...rows);
    }
    const { store } = this;
    this.summary.textContent =
      `${plural(store.jobs.size, "job")} in this page (newest ${store.jobCap} kept), ${store.totalJobs} on the platform` +
      (store.skipped > 0 ? `; ${store.skipped} updates skipped under load` : "");
    clear(this.pager);
    this.pager.append(
      h(
        "button",
        { type: "button", disabled: this.pageIndex === 0, onclick: () => this.turn(-1) },
        "‹ Newer",
      ),
      h(
        "span",
        {},
        jobs.length === 0
          ? "no jobs"
          : `${first + 1}–${Math.min(first + PAGE_SIZE, jobs.length)} of ${jobs.length}`,
      ),
      h(
        "button",
        { type: "button", disabled: this.pageIndex >= pages - 1, onclick: () => this.turn(1) },
        "Older ›",
      ),
    );
  }

  private turn(by: number): void {
    this.pageIndex += by;
    this.schedule();
  }

  private row(job: ConsoleJob): HTMLTableRowElement {
    const worker = job.workerId;
    return h(
      "tr",
      {
        "data-job-id": job.id,
        class: job.id === this.selected ? "selected" : undefined,
        onclick: () => this.showJob(job.id),
      },
      h("td", { class: "mono job-id", title: job.id }, job.id),
      h("td", {}, job.endpointId, job.sync ? h("span", { class: "tag" }, "sync") : null),
      h("td", {}, h("span", { class: `status ${STATUS_CLASS[job.status]}` }, job.status)),
      h("td", { class: "num" }, clock(job.createdAt)),
      h("td", { class: "num delay" }, ms(job.delayTime)),
      h("td", { class: "num execution" }, ms(job.executionTime)),
      h(
        "td",
        { class: "mono" },
        worker
          ? h(
              "button",
              {
                type: "button",
                class: "link",
                title: "Open this worker's logs",
                onclick: (e) => {
                  e.stopPropagation();
                  this.openLogs(worker);
                },
              },
              worker,
            )
          : "–",
      ),
      h("td", { class: "output" }, outputCell(job)),
    );
  }

  private async loadDetail(id: string): Promise<void> {
    clear(this.detail);
    this.detail.hidden = false;
    this.detail.append(h("p", { class: "muted" }, `Loading ${id}…`));
    // The detail sits below the table: bring it into view, or a click seems to do nothing.
    this.detail.scrollIntoView({ block: "start", behavior: "smooth" });
    try {
      const job = await this.api.request<ConsoleJobDetail>(`/console/api/jobs/${encodeURIComponent(id)}`);
      if (this.selected !== id) return;
      this.renderDetail(job);
    } catch (err) {
      clear(this.detail);
      this.detail.append(h("p", { class: "error" }, (err as Error).message));
    }
  }

  private renderDetail(job: ConsoleJobDetail): void {
    clear(this.detail);
    const action = (label: string, path: string) =>
      h(
        "button",
        {
          type: "button",
          onclick: async () => {
            try {
              await this.api.request(`/v2/${job.endpointId}/${path}/${job.id}`, { method: "POST" });
              void this.loadDetail(job.id);
            } catch (err) {
              this.detail.append(
                h("p", { class: "error" }, err instanceof ApiError ? err.message : String(err)),
              );
            }
          },
        },
        label,
      );
    const running = job.status === "IN_QUEUE" || job.status === "IN_PROGRESS";
    this.detail.append(
      ...present(
        h(
          "div",
          { class: "detail-head" },
          h("h3", { class: "mono" }, job.id),
          h("span", { class: `status ${STATUS_CLASS[job.status]}` }, job.status),
          running ? action("Cancel", "cancel") : null,
          job.status === "FAILED" || job.status === "TIMED_OUT" ? action("Retry", "retry") : null,
          h("button", { type: "button", onclick: () => this.loadDetail(job.id) }, "Refresh"),
          h(
            "button",
            {
              type: "button",
              class: "link",
              onclick: () => {
                this.selected = undefined;
                this.detail.hidden = true;
                this.schedule();
              },
            },
            "Close",
          ),
        ),
        h(
          "dl",
          { class: "facts" },
          ...fact("Endpoint", job.endpointId),
          ...fact("Queued", clock(job.createdAt)),
          ...fact("Delay time", ms(job.delayTime)),
          ...fact("Execution time", ms(job.executionTime)),
          ...fact("Worker", job.workerId ?? "–"),
          ...fact("Retries", String(job.retries)),
          ...fact("Execution timeout", ms(job.executionTimeoutMs)),
          ...(job.webhook ? fact("Webhook", job.webhook) : []),
        ),
        h("h4", {}, "Input"),
        h("pre", {}, pretty(job.input)),
        job.outputValue !== undefined ? h("h4", {}, running ? "Progress" : "Output") : null,
        job.outputValue !== undefined ? h("pre", {}, pretty(job.outputValue)) : null,
        job.errorValue !== undefined ? h("h4", {}, "Error") : null,
        job.errorValue !== undefined ? h("pre", { class: "error" }, errorText(job.errorValue)) : null,
        job.stream.length > 0 ? h("h4", {}, `Stream (${job.stream.length} chunks)`) : null,
        job.stream.length > 0
          ? h("pre", {}, job.stream.map((chunk) => JSON.stringify(chunk)).join("\n"))
          : null,
      ),
    );
  }
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

function fact(term: string, value: string): HTMLElement[] {
  return [h("dt", {}, term), h("dd", {}, value)];
}

/** runpod-python's error string is JSON with error_type, error_message and error_traceback: show it unpacked. */
function errorText(error: unknown): string {
  if (typeof error === "string") {
    try {
      return pretty(JSON.parse(error));
    } catch {
      return error;
    }
  }
  return pretty(error);
}

function outputCell(job: ConsoleJob): Node | string {
  if (job.error !== undefined) return h("span", { class: "error" }, job.error);
  if (job.status === "IN_PROGRESS") {
    const progress = job.output === undefined ? "running" : `progress ${job.output}`;
    return h(
      "span",
      { class: "progress-text" },
      job.chunks > 0 ? `${progress} · ${job.chunks} chunks` : progress,
    );
  }
  return job.output ?? (job.chunks > 0 ? `${job.chunks} chunks` : "");
}
