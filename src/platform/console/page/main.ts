// The console page: a login form until the platform accepts the key, then the views over one event stream.

import type { ConsoleEndpoint, ConsoleSnapshot, JobsDelta, MetricsDelta, RequestsDelta } from "../wire.js";
import { Api, Unauthorized } from "./api.js";
import { byId } from "./dom.js";
import { EndpointsView } from "./endpoints-view.js";
import { JobsView } from "./jobs-view.js";
import { LogsView } from "./logs-view.js";
import { MetricsView } from "./metrics-view.js";
import { PlaygroundView } from "./playground-view.js";
import { JOB_CAP_KEY, SettingsView } from "./settings-view.js";
import { DEFAULT_JOB_CAP, Store } from "./store.js";

const KEY = "flash-console.key";
const NOTICE = "flash-console.notice";
const TAB = "flash-console.tab";
type Tab = "jobs" | "playground" | "metrics" | "logs" | "settings";

/** The key from `#key=...` (a link flash dev can print; fragments never reach the server), or a stored one. */
function savedKey(): string | undefined {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("key");
  if (fromHash) {
    history.replaceState(null, "", location.pathname);
    sessionStorage.setItem(KEY, fromHash);
    return fromHash;
  }
  return sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY) ?? undefined;
}

function forgetKey(notice?: string): void {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
  if (notice) sessionStorage.setItem(NOTICE, notice);
  location.reload();
}

function showLogin(): void {
  byId("app").hidden = true;
  byId("logout").hidden = true;
  byId("connection").hidden = true;
  byId("login").hidden = false;
  const error = byId("login-error");
  error.textContent = sessionStorage.getItem(NOTICE) ?? "";
  sessionStorage.removeItem(NOTICE);
  const form = byId<HTMLFormElement>("login-form");
  const input = byId<HTMLInputElement>("login-key");
  input.focus();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    error.textContent = "";
    try {
      await new Api(key, () => {}).token();
    } catch (err) {
      error.textContent =
        err instanceof Unauthorized
          ? "The platform refused this key."
          : `Could not reach the platform: ${String(err)}`;
      return;
    }
    (byId<HTMLInputElement>("login-remember").checked ? localStorage : sessionStorage).setItem(KEY, key);
    byId("login").hidden = true;
    start(key);
  });
}

function start(key: string): void {
  const api = new Api(key, () => forgetKey("The platform refused the key; enter it again."));
  const store = new Store(Number(localStorage.getItem(JOB_CAP_KEY)) || DEFAULT_JOB_CAP);
  const tabs = new Map<Tab, HTMLElement>(
    (["jobs", "playground", "metrics", "logs", "settings"] as const).map((tab) => [tab, byId(`tab-${tab}`)]),
  );
  const show = (tab: Tab) => {
    for (const [name, section] of tabs) section.hidden = name !== tab;
    for (const button of document.querySelectorAll<HTMLButtonElement>("nav.tabs [data-tab]")) {
      button.setAttribute("aria-current", String(button.dataset.tab === tab));
    }
    metrics.visible = tab === "metrics";
    if (metrics.visible) metrics.render();
    if (tab === "logs") logs.show();
    else logs.hide();
    sessionStorage.setItem(TAB, tab);
  };
  const openLogs = (workerId: string) => {
    logs.open(workerId);
    show("logs");
  };
  const showJob = (id: string) => {
    show("jobs");
    jobs.showJob(id);
  };
  const jobs = new JobsView(tabs.get("jobs") ?? byId("tab-jobs"), store, api, openLogs);
  new PlaygroundView(tabs.get("playground") ?? byId("tab-playground"), store, api, showJob);
  const metrics = new MetricsView(tabs.get("metrics") ?? byId("tab-metrics"), store);
  const logs = new LogsView(tabs.get("logs") ?? byId("tab-logs"), store, api);
  new SettingsView(tabs.get("settings") ?? byId("tab-settings"), store, api, () => forgetKey());
  new EndpointsView(byId("endpoints"), store, openLogs);
  for (const button of document.querySelectorAll<HTMLButtonElement>("nav.tabs [data-tab]")) {
    button.addEventListener("click", () => show((button.dataset.tab ?? "jobs") as Tab));
  }

  // The server left jobs out of a delta (a flood): catch up with one snapshot, at most every 2 s.
  let resyncAt = 0;
  let resyncTimer: number | undefined;
  const resync = () => {
    if (resyncTimer !== undefined) return;
    resyncTimer = window.setTimeout(
      async () => {
        resyncAt = Date.now();
        try {
          store.applySnapshot(
            await api.request<ConsoleSnapshot>(`/console/api/snapshot?jobs=${store.jobCap}`),
          );
        } catch {
          // The stream's next snapshot (on reconnect) catches up instead.
        }
        resyncTimer = undefined;
      },
      Math.max(250, resyncAt + 2_000 - Date.now()),
    );
  };
  const connection = byId("connection");
  const logout = byId("logout");
  logout.addEventListener("click", () => forgetKey());
  byId("app").hidden = false;
  logout.hidden = false;
  connection.hidden = false;
  api.stream(
    "/console/api/events",
    { jobs: String(store.jobCap) },
    {
      events: {
        snapshot: (data) => store.applySnapshot(data as ConsoleSnapshot),
        jobs: (data) => {
          store.applyJobs(data as JobsDelta);
          if ((data as JobsDelta).skipped > 0) resync();
        },
        endpoints: (data) => store.applyEndpoints(data as ConsoleEndpoint[]),
        metrics: (data) => store.applyMetrics(data as MetricsDelta),
        requests: (data) => store.applyRequests(data as RequestsDelta),
      },
      state: (state) => {
        connection.textContent =
          state === "live" ? "● live" : state === "connecting" ? "○ connecting…" : "○ offline";
        connection.className = `connection ${state}`;
      },
    },
  );
  show((sessionStorage.getItem(TAB) as Tab | null) ?? "jobs");
}

async function boot(): Promise<void> {
  const key = savedKey();
  if (!key) return showLogin();
  try {
    await new Api(key, () => {}).token();
  } catch (err) {
    if (err instanceof Unauthorized) {
      sessionStorage.removeItem(KEY);
      localStorage.removeItem(KEY);
      sessionStorage.setItem(NOTICE, "The platform refused the saved key; enter it again.");
    } else {
      sessionStorage.setItem(NOTICE, `Could not reach the platform: ${String(err)}`);
    }
    return showLogin();
  }
  start(key);
}

void boot();
