// The console's server side on a real platform on 127.0.0.1: auth of every route, the event stream's snapshot
// and deltas as a worker takes and finishes a job, coalescing under a flood, worker logs, settings.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventToken } from "../../src/platform/console/auth.js";
import type {
  ConsoleEndpoint,
  ConsoleJobDetail,
  ConsoleSettings,
  ConsoleSnapshot,
  JobsDelta,
  LogDelta,
  MetricsDelta,
  RequestsDelta,
} from "../../src/platform/console/wire.js";
import { ENDPOINT, eventually, startTestPlatform, type TestPlatform } from "../platform/helpers.js";
import { SseClient } from "./sse-client.js";

let t: TestPlatform;
const open: SseClient[] = [];

beforeEach(async () => {
  t = await startTestPlatform();
});

afterEach(async () => {
  for (const client of open.splice(0)) client.close();
  await t.platform.close();
});

const api = (path: string, init: { method?: string; body?: unknown; key?: string | null } = {}) => {
  const headers: Record<string, string> = {};
  if (init.key !== null) headers.authorization = init.key ?? `Bearer ${t.platform.apiKey}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  return fetch(`${t.platform.url}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
};

async function token(): Promise<string> {
  const response = await api("/console/api/token", { method: "POST" });
  expect(response.status).toBe(200);
  return ((await response.json()) as { token: string }).token;
}

async function events(path = "/console/api/events", query = ""): Promise<SseClient> {
  const client = await SseClient.open(`${t.platform.url}${path}?token=${await token()}${query}`);
  open.push(client);
  return client;
}

describe("console auth", () => {
  it("serves the page without the key, and it holds no data", async () => {
    const page = await fetch(`${t.platform.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain('id="login-form"');
    expect(html).not.toContain(ENDPOINT);
    expect(html).not.toContain(t.platform.apiKey);
    const script = await fetch(`${t.platform.url}/console/assets/main.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    for (const name of ["..%2Fauth.js", "main.js.map", "dom.d.ts", "nope.js"]) {
      expect((await fetch(`${t.platform.url}/console/assets/${name}`)).status, name).toBe(404);
    }
  });

  it("answers 401 to every API call without the Bearer key, a wrong key or the raw key", async () => {
    const calls: [string, string][] = [
      ["POST", "/console/api/token"],
      ["GET", "/console/api/snapshot"],
      ["GET", "/console/api/endpoints"],
      ["GET", "/console/api/jobs/some-job"],
      ["GET", "/console/api/logs"],
      ["GET", "/console/api/settings"],
      ["PUT", "/console/api/settings"],
    ];
    for (const [method, path] of calls) {
      for (const key of [null, "Bearer wrong-key", t.platform.apiKey]) {
        const response = await api(path, { method, key });
        expect(response.status, `${method} ${path} with ${key}`).toBe(401);
        expect(((await response.json()) as { error: string }).error).toMatch(/^Unauthorized/);
      }
    }
  });

  it("opens event streams only with a valid token, never with the key itself", async () => {
    const { url, apiKey } = t.platform;
    const forged = eventToken("another-key").token;
    const expired = eventToken(apiKey, Date.now() - 61_000).token;
    for (const path of ["/console/api/events", "/console/api/logs/events"]) {
      for (const query of ["", "?token=", `?token=${forged}`, `?token=${expired}`, `?token=${apiKey}`]) {
        const response = await fetch(`${url}${path}${query}`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        expect(response.status, `${path}${query}`).toBe(401);
        await response.body?.cancel();
      }
    }
    const stream = await events();
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  });
});

describe("console event stream", () => {
  it("starts with a snapshot, then sends the job's changes, metrics and the worker as it runs the job", async () => {
    const stream = await events();
    const snapshot = await stream.next<ConsoleSnapshot>("snapshot");
    expect(snapshot.endpoints.map((e) => e.id)).toEqual([ENDPOINT]);
    expect(snapshot.jobs).toEqual([]);
    expect(snapshot.settings.retention).toEqual({ runMs: 30 * 60_000, syncMs: 60_000 });

    const run = (await (await t.client("/run", { body: { input: { n: 1 } } })).json()) as { id: string };
    const queued = await stream.next<JobsDelta>("jobs", (d) => d.jobs.some((j) => j.id === run.id));
    expect(queued.jobs.find((j) => j.id === run.id)).toMatchObject({
      endpointId: ENDPOINT,
      status: "IN_QUEUE",
      sync: false,
    });

    const worker = t.worker("w1");
    const taken = await worker.takeOne();
    expect(taken.id).toBe(run.id);
    const running = await stream.next<JobsDelta>("jobs", (d) =>
      d.jobs.some((j) => j.status === "IN_PROGRESS"),
    );
    expect(running.jobs[0]).toMatchObject({ status: "IN_PROGRESS", workerId: "w1" });
    expect(running.jobs[0]?.delayTime).toBeGreaterThanOrEqual(0);
    const busy = await stream.next<ConsoleEndpoint[]>("endpoints", (e) =>
      e.some((x) => x.workerList.some((w) => w.id === "w1" && w.state === "running")),
    );
    expect(busy[0]).toMatchObject({ inProgress: 1, inQueue: 0 });

    await worker.done(run.id, { status: "IN_PROGRESS", output: { step: 1 } });
    const progress = await stream.next<JobsDelta>("jobs", (d) => d.jobs.some((j) => j.output !== undefined));
    expect(progress.jobs[0]).toMatchObject({ status: "IN_PROGRESS", output: '{"step":1}' });

    await worker.done(run.id, { output: { n: 1, ok: true } });
    const done = await stream.next<JobsDelta>("jobs", (d) => d.jobs.some((j) => j.status === "COMPLETED"));
    const job = done.jobs[0];
    expect(job).toMatchObject({
      id: run.id,
      status: "COMPLETED",
      output: '{"n":1,"ok":true}',
      workerId: "w1",
    });
    expect(job?.executionTime).toBeGreaterThanOrEqual(0);

    const metrics = await stream.next<MetricsDelta>("metrics", (d) =>
      d.buckets.some((b) => b.bucket.completed === 1),
    );
    const bucket = metrics.buckets.find((b) => b.endpointId === ENDPOINT)?.bucket;
    // The request counts in the 10 s bucket of its submission, which may be the one before (totals below).
    expect(bucket).toMatchObject({ completed: 1, failed: 0 });
    expect(bucket?.delayP50).toBe(job?.delayTime);
    expect(bucket?.executionP95).toBe(job?.executionTime);
    const idle = await stream.next<ConsoleEndpoint[]>("endpoints", (e) =>
      e.some((x) => x.workerList.some((w) => w.id === "w1" && w.state === "idle" && w.jobsDone === 1)),
    );
    expect(idle[0]).toMatchObject({ completed: 1, inProgress: 0 });

    // A page that connects now gets all of it in its snapshot.
    const late = await events();
    const again = await late.next<ConsoleSnapshot>("snapshot");
    expect(again.jobs.map((j) => j.status)).toEqual(["COMPLETED"]);
    const series = again.metrics.series[ENDPOINT] ?? [];
    expect(series.reduce((n, b) => n + b.requests, 0)).toBe(1);
    expect(series.reduce((n, b) => n + b.completed, 0)).toBe(1);

    const detail = (await (await api(`/console/api/jobs/${run.id}`)).json()) as ConsoleJobDetail;
    expect(detail).toMatchObject({ input: { n: 1 }, outputValue: { n: 1, ok: true }, status: "COMPLETED" });
    expect((await api("/console/api/jobs/unknown")).status).toBe(404);
  });

  it("coalesces a flood of jobs into few events with a capped size and a skipped count", async () => {
    const stream = await events();
    await stream.next("snapshot");
    const endpoint = t.platform.scheduler.endpoint(ENDPOINT);
    if (!endpoint) throw new Error("no endpoint");
    for (let i = 0; i < 3_000; i++) t.platform.scheduler.submit(endpoint, { input: { i }, sync: false });
    const delta = await stream.next<JobsDelta>("jobs");
    expect(delta.jobs).toHaveLength(500);
    expect(delta.skipped).toBe(2_500);
    expect(delta.totalJobs).toBe(3_000);
    // The latest changes are the ones sent.
    expect(delta.jobs.at(-1)).toMatchObject({ status: "IN_QUEUE" });
    // One more job after the flood: its event comes after anything the flood still had to send, alone.
    const marker = t.platform.scheduler.submit(endpoint, { input: { marker: true }, sync: false });
    const next = await stream.next<JobsDelta>("jobs");
    expect(next).toMatchObject({ jobs: [{ id: marker.id }], skipped: 0, totalJobs: 3_001 });
    expect(stream.events.filter((e) => e.event === "jobs")).toHaveLength(2);

    const snapshot = (await (await api("/console/api/snapshot?jobs=2000")).json()) as ConsoleSnapshot;
    expect(snapshot.jobs).toHaveLength(2_000);
    expect(snapshot.totalJobs).toBe(3_001);
    const created = snapshot.jobs.map((j) => j.createdAt);
    expect(created).toEqual([...created].sort((a, b) => b - a));
    expect((await api("/console/api/snapshot?jobs=5000")).status).toBe(400);
    expect(snapshot.metrics.series[ENDPOINT]?.reduce((n, b) => n + b.requests, 0)).toBe(3_001);
  });

  it("counts on the card only the finished jobs the platform holds: a failed /runsync job leaves both together", async () => {
    const stream = await events();
    await stream.next("snapshot");
    // /runsync jobs that finish from now on are kept 1 s (the platform's default is 1 min).
    await api("/console/api/settings", {
      method: "PUT",
      body: { retention: { runMs: 60_000, syncMs: 1_000 } },
    });
    const answer = t.client("/runsync", { body: { input: { fail: true } } });
    const worker = t.worker("w1");
    const taken = await worker.takeOne();
    await worker.done(taken.id, { error: "boom" });
    expect(((await (await answer).json()) as { status: string }).status).toBe("FAILED");
    const failed = await stream.next<ConsoleEndpoint[]>("endpoints", (e) => e[0]?.failed === 1);
    expect(failed[0]).toMatchObject({ failed: 1, completed: 0 });

    // Its retention ends: the pages are told to drop it, and the card's count goes with it.
    const gone = await stream.next<JobsDelta>("jobs", (d) => d.removed.includes(taken.id));
    expect(gone.jobs.map((j) => j.id)).not.toContain(taken.id);
    const after = await stream.next<ConsoleEndpoint[]>("endpoints", (e) => e[0]?.failed === 0);
    expect(after[0]).toMatchObject({ failed: 0, completed: 0 });
    const snapshot = (await (await api("/console/api/snapshot")).json()) as ConsoleSnapshot;
    expect(snapshot.jobs).toEqual([]);
    expect(snapshot.endpoints[0]).toMatchObject({ failed: 0 });
    // The Metrics tab still counts it in its window.
    expect(snapshot.metrics.series[ENDPOINT]?.reduce((n, b) => n + b.failed, 0)).toBe(1);
  });

  it("marks only a chat-completion-compatible endpoint as one", async () => {
    t.platform.createEndpoint({ id: "chat", openaiCompatible: true });
    const snapshot = (await (await api("/console/api/snapshot")).json()) as ConsoleSnapshot;
    const byId = new Map(snapshot.endpoints.map((e) => [e.id, e]));
    expect(byId.get("chat")?.openaiCompatible).toBe(true);
    expect(byId.get(ENDPOINT)?.openaiCompatible).toBeUndefined();
  });

  it("ends its streams when the platform closes", async () => {
    const stream = await events();
    const logs = await events("/console/api/logs/events");
    await stream.next("snapshot");
    await logs.next("lines");
    await t.platform.close();
    await stream.closedByServer();
    await logs.closedByServer();
  });
});

describe("console load-balanced endpoints", () => {
  it("records every request the proxy answers: method, path, status and time, in the snapshot, deltas and metrics", async () => {
    await t.platform.close();
    t = await startTestPlatform({
      loadBalanced: [{ id: "routes-api", file: "test/fixtures/lb-routes.ts", workers: [1, 1] }],
    });
    const lb = (path: string, init: { method?: string; body?: unknown } = {}) =>
      fetch(`${t.platform.url}/lb/routes-api${path}`, {
        method: init.method ?? "GET",
        headers: {
          authorization: `Bearer ${t.platform.apiKey}`,
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
    await eventually(async () => (await lb("/ping")).status === 200, "the load-balanced worker", 60_000);
    const stream = await events();
    const first = await stream.next<ConsoleSnapshot>("snapshot");
    // The readiness checks above went through the proxy too.
    expect(first.requests["routes-api"]?.at(-1)).toMatchObject({ method: "GET", path: "/ping", status: 200 });

    expect((await lb("/hello/flash?greeting=hi")).status).toBe(200);
    expect((await lb("/sum", { method: "POST", body: { a: 1, b: 2 } })).status).toBe(200);
    expect((await lb("/nope")).status).toBe(404);
    const delta = await stream.next<RequestsDelta>("requests", (d) =>
      d.requests.some((r) => r.request.path === "/nope"),
    );
    const seen = [...stream.events]
      .filter((e) => e.event === "requests")
      .flatMap((e) => (e.data as RequestsDelta).requests)
      .map(({ endpointId, request }) => [endpointId, request.method, request.path, request.status]);
    expect(seen).toEqual([
      ["routes-api", "GET", "/hello/flash", 200],
      ["routes-api", "POST", "/sum", 200],
      ["routes-api", "GET", "/nope", 404],
    ]);
    for (const { request } of delta.requests) expect(request.ms).toBeGreaterThanOrEqual(0);

    const metrics = await stream.next<MetricsDelta>("metrics", (d) =>
      d.buckets.some((b) => (b.bucket.statusCodes?.["404"] ?? 0) > 0),
    );
    // The 404's own bucket: a run that crosses a 10 s boundary has an earlier one for the 200s.
    const bucket = metrics.buckets.find(
      (b) => b.endpointId === "routes-api" && (b.bucket.statusCodes?.["404"] ?? 0) > 0,
    )?.bucket;
    expect(bucket?.statusCodes?.["404"]).toBe(1);
    expect(bucket?.failed).toBe(1);
    expect(bucket?.executionP95).toBeGreaterThanOrEqual(0);

    const snapshot = (await (await api("/console/api/snapshot")).json()) as ConsoleSnapshot;
    expect(
      snapshot.requests["routes-api"]?.slice(-3).map((r) => `${r.method} ${r.path} ${r.status}`),
    ).toEqual(["GET /hello/flash 200", "POST /sum 200", "GET /nope 404"]);
    const total = snapshot.metrics.series["routes-api"]?.reduce((n, b) => n + b.requests, 0);
    expect(total).toBe(snapshot.requests["routes-api"]?.length);
  }, 90_000);
});

describe("console worker logs", () => {
  it("sends a worker's recent lines, then its new ones, and nothing about other workers", async () => {
    const first = t.worker("w1");
    await t.client("/run", { body: { input: { a: 1 } } });
    await first.takeOne();
    const stream = await events("/console/api/logs/events", "&worker=w1");
    const backlog = await stream.next<LogDelta>("lines");
    expect(backlog.lines.map((l) => l.message)).toEqual([
      expect.stringMatching(/^Worker:w1 \| Delay Time: \d+ ms$/),
    ]);
    expect(backlog.lines[0]).toMatchObject({ workerId: "w1", level: "info" });

    const other = t.worker("w2");
    const run = (await (await t.client("/run", { body: { input: { b: 2 } } })).json()) as { id: string };
    await other.takeOne();
    await other.done(run.id, { output: 1 });
    await first.ping([], "&status=unhealthy&reason=disk%20full").catch(() => undefined);
    const live = await stream.next<LogDelta>("lines", (d) => d.lines.some((l) => l.level === "error"));
    for (const line of live.lines) expect(line.workerId ?? line.subject).toBe("w1");

    const all = (await (await api("/console/api/logs?limit=50")).json()) as LogDelta;
    const workers = new Set(all.lines.map((l) => l.workerId).filter(Boolean));
    expect(workers).toEqual(new Set(["w1", "w2"]));
    const one = (await (await api("/console/api/logs?worker=w2")).json()) as LogDelta;
    expect(one.lines.length).toBeGreaterThan(0);
    for (const line of one.lines) expect(line.workerId).toBe("w2");
  });
});

describe("console settings", () => {
  it("changes how long jobs that finish from now on are kept", async () => {
    const put = await api("/console/api/settings", {
      method: "PUT",
      body: { retention: { runMs: 5_000, syncMs: 2_000 } },
    });
    expect(put.status).toBe(200);
    expect(((await put.json()) as ConsoleSettings).retention).toEqual({ runMs: 5_000, syncMs: 2_000 });
    const run = (await (await t.client("/run", { body: { input: {} } })).json()) as { id: string };
    const worker = t.worker("w1");
    await worker.takeOne();
    await worker.done(run.id, { output: "ok" });
    const job = t.platform.scheduler.jobs.get(run.id);
    expect((job?.expiresAt ?? 0) - (job?.finishedAt ?? 0)).toBe(5_000);

    for (const body of [{ retention: { runMs: 5 } }, { retention: { runMs: "soon" } }, { retention: 1 }]) {
      expect((await api("/console/api/settings", { method: "PUT", body })).status).toBe(400);
    }
    const get = (await (await api("/console/api/settings")).json()) as ConsoleSettings;
    expect(get.retention.runMs).toBe(5_000);
  });
});
