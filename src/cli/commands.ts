// Every `flash` command, each in its own module, loaded on demand to keep start-up fast.
import type { Command } from "./options.js";

/** In the order `flash --help` lists them. */
export const COMMANDS: Record<string, () => Promise<Command>> = {
  run: () => import("./run.js"),
  start: () => import("./start.js"),
  dev: () => import("./dev.js"),
  serve: () => import("./serve.js"),
  login: () => import("./login.js"),
  build: () => import("./build.js"),
  deploy: () => import("./deploy.js"),
  undeploy: () => import("./undeploy.js"),
  endpoints: () => import("./endpoints.js"),
  pods: () => import("./pods.js"),
  logs: () => import("./logs.js"),
  bench: () => import("./bench.js"),
  doctor: () => import("./doctor.js"),
  image: () => import("./image.js"),
};
