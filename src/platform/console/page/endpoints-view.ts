// The sidebar: each endpoint with its queue and its workers (state, cold start, jobs done); a worker opens its logs.

import type { ConsoleEndpoint, ConsoleWorker } from "../wire.js";
import { clear, h } from "./dom.js";
import { ms, WORKER_CLASS } from "./format.js";
import { onFrame } from "./frame.js";
import type { Store } from "./store.js";

export class EndpointsView {
  readonly schedule = onFrame(() => this.render());

  constructor(
    private readonly root: HTMLElement,
    private readonly store: Store,
    private readonly openLogs: (workerId: string) => void,
  ) {
    store.on("endpoints", this.schedule);
  }

  private render(): void {
    clear(this.root);
    this.root.append(h("h2", {}, "Endpoints"));
    if (this.store.endpoints.length === 0) {
      this.root.append(h("p", { class: "muted" }, "No endpoints yet."));
      return;
    }
    for (const endpoint of this.store.endpoints) this.root.append(this.card(endpoint));
  }

  private card(endpoint: ConsoleEndpoint): HTMLElement {
    const [min, max] = endpoint.workers;
    const queue =
      endpoint.kind === "queue"
        ? h(
            "div",
            { class: "counts" },
            count("in queue", endpoint.inQueue),
            count("in progress", endpoint.inProgress),
            count("completed", endpoint.completed),
            count("failed", endpoint.failed),
          )
        : h(
            "div",
            { class: "counts" },
            count("running", endpoint.workersRunning),
            count("ready", endpoint.workersReady ?? 0),
          );
    if (endpoint.workersUnhealthy > 0) {
      queue.append(
        h("span", { class: "count error" }, h("b", {}, String(endpoint.workersUnhealthy)), " unhealthy"),
      );
    }
    return h(
      "section",
      { class: "endpoint", "data-endpoint-id": endpoint.id },
      h(
        "header",
        {},
        h("strong", {}, endpoint.id),
        endpoint.name !== endpoint.id ? h("span", { class: "muted endpoint-name" }, endpoint.name) : null,
        h("span", { class: "tag" }, endpoint.kind === "queue" ? "queue" : "load-balanced"),
      ),
      h("div", { class: "muted small mono" }, endpoint.path),
      queue,
      h("div", { class: "muted small" }, `workers ${min}–${max}`),
      endpoint.workerList.length > 0
        ? h("ul", { class: "workers" }, ...endpoint.workerList.map((worker) => this.worker(worker)))
        : h("p", { class: "muted small" }, endpoint.kind === "queue" ? "No worker running." : ""),
    );
  }

  private worker(worker: ConsoleWorker): HTMLElement {
    const facts = [
      worker.gpu ?? null,
      worker.coldStartMs !== undefined ? `cold start ${ms(worker.coldStartMs)}` : null,
      `${worker.jobsDone} done`,
      worker.jobsHeld > 0 ? `${worker.jobsHeld} running` : null,
    ].filter((x): x is string => x !== null);
    return h(
      "li",
      { "data-worker-id": worker.id },
      h(
        "button",
        {
          type: "button",
          class: "worker",
          title: "Open this worker's logs",
          onclick: () => this.openLogs(worker.id),
        },
        h("span", { class: `status ${WORKER_CLASS[worker.state]}` }, worker.state),
        h("span", { class: "mono" }, worker.id),
        h("span", { class: "muted small" }, facts.join(" · ")),
        worker.unhealthy ? h("span", { class: "error small" }, worker.unhealthy) : null,
      ),
    );
  }
}

function count(label: string, value: number): HTMLElement {
  return h("span", { class: "count" }, h("b", {}, String(value)), ` ${label}`);
}
