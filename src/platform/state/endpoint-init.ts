// What the platform's own callers (flash dev, flash serve, tests) create endpoints from, and how it lists them.

/** An endpoint made from a handler file or a worker command. */
export interface EndpointInit {
  id?: string;
  /** "load-balanced": workers serve the app's routes behind /lb/<id>/ instead of taking jobs. */
  kind?: "queue" | "load-balanced";
  name?: string;
  /** Handler file: workers are `flash start <file>` processes. */
  file?: string;
  /** Worker argv, instead of `file`. */
  command?: string[];
  /** Working directory of the workers (the app directory). */
  cwd?: string;
  workers?: [number, number];
  executionTimeoutMs?: number;
  idleTimeoutMs?: number;
  maxRetries?: number;
  env?: Record<string, string>;
  /** The handler was made by openaiCompatible() (flash dev knows from loading it): the console offers a chat form. */
  openaiCompatible?: boolean;
  /** A load-balanced app's routes (flash dev knows from loading it): the playground's first request without a test_input.json. */
  routes?: { method: string; path: string }[];
  /** How long its workers may take to start, instead of the platform's RUNPOD_INIT_TIMEOUT (a model server's own limit). */
  initTimeoutMs?: number;
  /** The app's OpenAPI document as JSON (flash dev makes it from loading the app), served at /v2/<id>/openapi.json. */
  openapi?: string;
  /**
   * The handler's input check, when it asked for one at submit (`validateAtSubmit`; flash dev has it from the app
   * it loaded): a message refuses the job with a 400 before it is queued.
   */
  checkInput?: (input: unknown) => Promise<string | undefined>;
}

/** An endpoint as Platform.listEndpoints() describes it. */
export interface EndpointInfo {
  id: string;
  kind: "queue" | "load-balanced";
  name: string;
  url: string;
  workers: [number, number];
  executionTimeoutMs: number;
  idleTimeoutMs: number;
  maxRetries: number;
  command?: string[];
  cwd?: string;
  /** Worker processes the platform runs for it now. */
  workersRunning: number;
}
