// Pods' containers on this machine: each run as a child process (a container run from its prepared image), its
// tcp ports forwarded from public ports on the platform's interface, its output in the platform log under its id.
import { type ChildProcess, spawn } from "node:child_process";
import { connect, createServer, type Server } from "node:net";
import { FlashError } from "../../flash-error.js";
import type { Logger } from "../../log/index.js";
import type { WorkerLaunch } from "../state/endpoint.js";
import type { PodHost } from "../state/pod-life.js";
import { type PodRecord, podPorts } from "../state/pods.js";
import { relayOutput } from "./pool.js";
import { markContainerRun, terminate } from "./terminate.js";

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
  forwards: Server[];
  stopping: boolean;
}

/** A Pod asked to start while the platform closes: nothing is started. */
export class PlatformClosingError extends FlashError {
  readonly code = "PLATFORM_CLOSING";
  override name = "PlatformClosingError";
}

export interface PodRunnerOptions {
  log: Logger;
  /** The interface the platform listens on: tcp forwards listen there too. */
  bindHost: string;
  /** The address clients reach it at (a Pod's public IP). */
  publicIp(): string;
  /** How long a stopped container may take before it is killed. */
  stopGraceMs: number;
}

export class PodRunner implements PodHost {
  private readonly running = new Map<string, Running>();
  private closed = false;

  constructor(private readonly options: PodRunnerOptions) {}

  async run(
    pod: PodRecord,
    launch: WorkerLaunch,
    exited: (how: string, ok: boolean) => void,
  ): Promise<Map<number, number>> {
    await this.stop(pod);
    // A pull that ends while the platform closes starts nothing.
    if (this.closed) throw new PlatformClosingError("the platform is closing");
    const forwards: Server[] = [];
    const tcp = new Map<number, number>();
    try {
      for (const port of podPorts(pod).filter((p) => p.type === "tcp")) {
        const server = await forward(port.private, this.options.bindHost);
        forwards.push(server);
        tcp.set(port.private, (server.address() as { port: number }).port);
      }
    } catch (err) {
      for (const server of forwards) server.close();
      throw err;
    }
    // RunPod's variables for the Pod's own use: its id, public IP and the public port of each tcp port.
    const env: Record<string, string> = {
      ...pod.env,
      RUNPOD_POD_ID: pod.id,
      RUNPOD_PUBLIC_IP: this.options.publicIp(),
      ...Object.fromEntries(
        [...tcp].map(([inside, outside]) => [`RUNPOD_TCP_PORT_${inside}`, String(outside)]),
      ),
    };
    const launched = launch(env);
    const [command, ...args] = launched.argv;
    if (!command) throw new Error("the container tool gave no command to run");
    const log = this.options.log.child({ subject: pod.id });
    const child = spawn(command, args, {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...launched.env },
    });
    markContainerRun(child);
    let done: () => void = () => {};
    const running: Running = {
      child,
      exited: new Promise((resolve) => {
        done = resolve;
      }),
      forwards,
      stopping: false,
    };
    this.running.set(pod.id, running);
    log.info(`Pod:${pod.id} | starting (pid ${child.pid}): ${[command, ...args].join(" ")}`);
    relayOutput(child, log);
    child.once("error", (err) => log.error(`Pod:${pod.id} | could not start: ${err.message}`));
    child.once("close", (code, signal) => {
      for (const server of forwards) server.close();
      if (this.running.get(pod.id) === running) this.running.delete(pod.id);
      done();
      const how = signal ? `signal ${signal}` : `code ${code}`;
      log.info(`Pod:${pod.id} | container exited with ${how}`);
      if (!running.stopping) exited(how, code === 0);
    });
    return tcp;
  }

  stop(pod: PodRecord): Promise<void> {
    return this.stopById(pod.id);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.running.keys()].map((id) => this.stopById(id)));
  }

  private async stopById(id: string): Promise<void> {
    const running = this.running.get(id);
    if (!running) return;
    running.stopping = true;
    for (const server of running.forwards) server.close();
    terminate(running.child, running.exited, this.options.stopGraceMs);
    await running.exited;
  }
}

/** A TCP forward from a free port on `host` to the container's port on loopback, bytes both ways. */
async function forward(port: number, host: string): Promise<Server> {
  const server = createServer((socket) => {
    const upstream = connect(port, "127.0.0.1");
    socket.pipe(upstream).pipe(socket);
    socket.once("error", () => upstream.destroy());
    upstream.once("error", () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  return server;
}
