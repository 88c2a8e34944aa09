// Pods' state without HTTP: the actions each status allows, ports, which updates remake the container, locks, and
// a Pod's life (pull, run, stop, start) against a runner that records what it is asked.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { DEFAULT_GPU_CATALOG } from "../../../../src/platform/rest/catalog.js";
import type { WorkerLaunch } from "../../../../src/platform/state/endpoint.js";
import { type PodHost, PodLife } from "../../../../src/platform/state/pod-life.js";
import { type CreatePodBody, Pods, parsePort, podActions } from "../../../../src/platform/state/pods.js";
import { Problem } from "../../../../src/platform/state/problem.js";
import { Registries } from "../../../../src/platform/state/registries.js";

const POD: CreatePodBody = { name: "dev", image: "a:1", gpu: { id: "NVIDIA L4" }, ports: ["8888/http"] };

function detail(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(Problem);
    return `${(err as Problem).status} ${(err as Problem).detail}`;
  }
  throw new Error("no Problem thrown");
}

const make = () =>
  new Pods(
    DEFAULT_GPU_CATALOG.map((g) => g.id),
    new Registries(),
  );

describe("Pods", () => {
  it("gives each status the document's actions", () => {
    expect(podActions("RUNNING")).toEqual(["stop", "restart", "terminate"]);
    expect(podActions("EXITED")).toEqual(["start", "terminate"]);
    expect(podActions("STARTING")).toEqual(["stop", "terminate"]);
    expect(podActions("TERMINATED")).toEqual([]);
  });

  it("reads ports as <port>/http or <port>/tcp", () => {
    expect(parsePort("22/tcp", "ports[0]")).toEqual({ private: 22, type: "tcp" });
    expect(detail(() => parsePort("70000/tcp", "ports[1]"))).toBe(
      '400 ports[1]: "70000/tcp" is not <port>/http or <port>/tcp (port 1-65535)',
    );
  });

  it("remakes the container only for container settings; a failed rule changes nothing", () => {
    const pods = make();
    const pod = pods.create(POD);
    expect(pod).toMatchObject({ status: "PROVISIONING", gpu: { id: "NVIDIA L4", count: 1 }, disk: 50 });
    expect(pods.update(pod, { name: "dev2", locked: true })).toBe(false);
    expect(pods.update(pod, { env: { A: "1" } })).toBe(true);
    expect(detail(() => pods.update(pod, { ports: ["1/http", "1/tcp"], name: "x" }))).toBe(
      "400 ports[1]: port 1 is exposed twice",
    );
    expect(pod.name).toBe("dev2");
    expect(pod.ports).toEqual(["8888/http"]);
  });

  it("refuses actions the status or a lock does not allow, with 409", () => {
    const pods = make();
    const pod = pods.create(POD);
    pod.status = "RUNNING";
    pods.update(pod, { locked: true });
    expect(detail(() => pods.checkAction(pod, "stop"))).toBe(
      `409 pod ${pod.id} is locked: unlock it (PATCH {"locked": false}) to stop it`,
    );
    expect(detail(() => pods.checkAction(pod, "start"))).toBe(
      `409 pod ${pod.id} is RUNNING: start is not one of its actions (stop, restart, terminate)`,
    );
    pods.checkAction(pod, "terminate");
    pods.delete(pod);
    expect(pod.status).toBe("TERMINATED");
    expect(detail(() => pods.get(pod.id))).toBe(`404 pod ${pod.id} not found`);
  });

  it("has no network volumes, and no persistent mount on a CPU Pod", () => {
    const pods = make();
    expect(detail(() => pods.create({ ...POD, mounts: { network: [{ volumeId: "v", path: "/w" }] } }))).toBe(
      "400 mounts.network: the local platform has no network volumes",
    );
    expect(
      detail(() =>
        pods.create({
          ...POD,
          gpu: undefined,
          cpu: { id: "cpu3c", vcpuCount: 2 },
          mounts: { persistent: { size: 10, path: "/w" } },
        }),
      ),
    ).toBe("400 mounts.persistent: CPU Pods cannot have one");
  });
});

describe("PodLife", () => {
  /** A runner that records runs and stops, and pulls that finish when the test says. */
  function life() {
    const runs: string[] = [];
    const pulls: { resolve: (launch: WorkerLaunch) => void; reject: (err: Error) => void }[] = [];
    const host: PodHost = {
      run: async (pod) => {
        runs.push(`run ${pod.id}`);
        return new Map([[22, 40022]]);
      },
      stop: async (pod) => {
        runs.push(`stop ${pod.id}`);
      },
    };
    const images = {
      prepare: () =>
        new Promise<{ launch: WorkerLaunch }>((resolve, reject) =>
          pulls.push({ resolve: (launch) => resolve({ launch }), reject }),
        ),
      remove: async () => {},
    };
    const registries = new Registries();
    const log = createLogger({ level: "ERROR", json: false, destination: { write: () => {} } });
    const pods = new Pods(["NVIDIA L4"], registries);
    return { runs, pulls, pods, life: new PodLife(host, images, registries, log) };
  }
  const settle = () => new Promise((r) => setTimeout(r, 0));

  it("PROVISIONING while it pulls, RUNNING with its forwards once run; a start after a stop pulls nothing", async () => {
    const { runs, pulls, pods, life: podLife } = life();
    const pod = pods.create(POD);
    podLife.start(pod);
    expect(pod.status).toBe("PROVISIONING");
    pulls[0]!.resolve(() => ({ argv: ["run"], env: {} }));
    await settle();
    expect(pod).toMatchObject({ status: "RUNNING", tcp: new Map([[22, 40022]]) });
    await podLife.stop(pod);
    expect(pod.status).toBe("EXITED");
    podLife.start(pod);
    await settle();
    expect(pod.status).toBe("RUNNING");
    expect(pulls).toHaveLength(1);
    expect(runs).toEqual([`run ${pod.id}`, `stop ${pod.id}`, `run ${pod.id}`]);
  });

  it("a stop while it pulls wins: the pull that ends later runs nothing; a failed pull is ERROR", async () => {
    const { runs, pulls, pods, life: podLife } = life();
    const pod = pods.create(POD);
    podLife.start(pod);
    await podLife.stop(pod);
    pulls[0]!.resolve(() => ({ argv: ["run"], env: {} }));
    await settle();
    expect(pod.status).toBe("EXITED");
    expect(runs).toEqual([`stop ${pod.id}`]);
    podLife.start(pod);
    pulls[1]!.reject(new Error("manifest unknown"));
    await settle();
    expect(pod).toMatchObject({ status: "ERROR", error: "manifest unknown" });
  });
});
