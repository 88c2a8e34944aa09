// A load-balanced worker: HTTP routes served directly, /ping 204 while the model loads, 200 once ready.
import { existsSync } from "node:fs";
import { Endpoint, GpuGroup, type RouteRequest } from "flash-worker";

const api = new Endpoint({
  name: "lb-example",
  gpu: GpuGroup.ANY,
  workers: [0, 3],
  executionTimeoutMs: 30_000,
});

let model: { greet(name: string): string } | undefined;

/** Stands in for loading weights: takes MODEL_LOAD_MS (default 1500), and waits for MODEL_READY_FILE when set. */
async function loadModel(): Promise<void> {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  await sleep(Number(process.env.MODEL_LOAD_MS ?? 1500));
  const readyFile = process.env.MODEL_READY_FILE;
  while (readyFile && !existsSync(readyFile)) await sleep(50);
  model = { greet: (name) => `hello ${name}` };
}

api.onStart(loadModel);

/** Returns the JSON body it got. */
api.post("/echo", (body) => body);

/** Path parameters arrive merged into the arguments. */
api.get("/hello/:name", ({ name }: { name: string }) => ({ hello: name }));

/** Query strings too; the second argument has the rest of the request. */
api.get("/greet", ({ name = "world" }: { name?: string }, request: RouteRequest) => ({
  greeting: model?.greet(name),
  path: request.path,
}));

/** Long work watches `request.signal`: aborted on the execution timeout, a gone client, or shutdown. */
api.post("/sleep", async ({ ms = 1000 }: { ms?: number }, request: RouteRequest) => {
  request.log.info(`sleeping ${ms} ms`);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    request.signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(request.signal.reason);
    });
  });
  return { slept: ms };
});

/** A thrown error becomes a 500 with its message. */
api.post("/fail", ({ message }: { message?: string }) => {
  throw new Error(message ?? "failed on purpose");
});

export default api;
