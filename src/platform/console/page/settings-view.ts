// Settings: the key this page uses, how many jobs it keeps, and how long the platform keeps finished jobs.

import type { ConsoleSettings } from "../wire.js";
import { type Api, ApiError } from "./api.js";
import { h } from "./dom.js";
import { DEFAULT_JOB_CAP, type Store } from "./store.js";

export const JOB_CAP_KEY = "flash-console.jobCap";
const MINUTE = 60_000;

export class SettingsView {
  private readonly runMinutes = h("input", {
    type: "number",
    min: 0.1,
    step: "any",
    id: "set-run",
    required: true,
  });
  private readonly syncMinutes = h("input", {
    type: "number",
    min: 0.1,
    step: "any",
    id: "set-sync",
    required: true,
  });
  private readonly cap = h("input", {
    type: "number",
    min: 50,
    max: 2000,
    step: 50,
    id: "set-cap",
    required: true,
  });
  private readonly keyShown = h("code", { id: "set-key" });
  private readonly message = h("p", { class: "muted", role: "status" });

  constructor(
    root: HTMLElement,
    private readonly store: Store,
    private readonly api: Api,
    logout: () => void,
  ) {
    this.keyShown.textContent = mask(api.key);
    this.cap.value = String(store.jobCap);
    root.append(
      h(
        "section",
        { class: "card" },
        h("h3", {}, "API key"),
        h(
          "p",
          {},
          "This page sends ",
          this.keyShown,
          " as ",
          h("code", {}, "Authorization: Bearer"),
          " on every call, and trades it for a one-minute token to open its event streams.",
        ),
        h(
          "div",
          { class: "row" },
          h("button", { type: "button", onclick: () => (this.keyShown.textContent = api.key) }, "Show key"),
          h("button", { type: "button", onclick: logout }, "Use another key (log out)"),
        ),
      ),
      h(
        "form",
        { class: "card", id: "settings-form", onsubmit: (e) => this.save(e) },
        h("h3", {}, "Retention"),
        h(
          "p",
          { class: "muted small" },
          "How long finished jobs stay visible in /status; applies to jobs that finish from now on.",
        ),
        h(
          "div",
          { class: "row" },
          h("label", {}, "/run jobs (minutes) ", this.runMinutes),
          h("label", {}, "/runsync jobs (minutes) ", this.syncMinutes),
        ),
        h("h3", {}, "This page"),
        h("div", { class: "row" }, h("label", {}, "Jobs kept in the table ", this.cap)),
        h("div", { class: "row" }, h("button", { type: "submit" }, "Save")),
        this.message,
      ),
    );
    store.on("settings", () => this.fill());
  }

  private fill(): void {
    const retention = this.store.settings?.retention;
    if (!retention) return;
    this.runMinutes.value = String(retention.runMs / MINUTE);
    this.syncMinutes.value = String(retention.syncMs / MINUTE);
  }

  private async save(event: Event): Promise<void> {
    event.preventDefault();
    // The server's window is 2,000 jobs: a page cannot ask its snapshot for more.
    const cap = Math.min(2_000, Math.max(50, Math.round(Number(this.cap.value)) || DEFAULT_JOB_CAP));
    this.cap.value = String(cap);
    localStorage.setItem(JOB_CAP_KEY, String(cap));
    this.store.setJobCap(cap);
    try {
      const settings = await this.api.request<ConsoleSettings>("/console/api/settings", {
        method: "PUT",
        body: {
          retention: {
            runMs: Math.round(Number(this.runMinutes.value) * MINUTE),
            syncMs: Math.round(Number(this.syncMinutes.value) * MINUTE),
          },
        },
      });
      this.store.applySettings(settings);
      this.message.textContent = "Saved.";
    } catch (err) {
      this.message.textContent = err instanceof ApiError ? err.message : String(err);
    }
  }
}

function mask(key: string): string {
  return key.length <= 8 ? "••••" : `${key.slice(0, 4)}…${key.slice(-4)}`;
}
