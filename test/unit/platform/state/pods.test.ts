// Pods' state without HTTP: the actions each status allows, ports, which updates remake the container, locks.
import { describe, expect, it } from "vitest";
import { DEFAULT_GPU_CATALOG } from "../../../../src/platform/rest/catalog.js";
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
