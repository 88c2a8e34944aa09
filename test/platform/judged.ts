// The local platform behind the OpenAPI conformance proxy, for the REST v2 API tests: a container tool that cannot
// run here (records are kept, no worker or Pod ever starts), its log kept, every answer judged after each test.
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type ConformanceProxy, conformanceProxy } from "../deploy/openapi.js";

/** A body as JSON.parse gives it: the tests read the fields they check. */
type Parsed = ReturnType<typeof JSON.parse>;

export interface JudgedPlatform {
  readonly platform: Platform;
  readonly proxy: ConformanceProxy;
  /** The platform's log lines. */
  readonly lines: string[];
  /** A JSON call through the proxy with the platform's key (or `key`). */
  api(
    method: string,
    path: string,
    body?: unknown,
    key?: string,
  ): Promise<{ status: number; type: string; json: Parsed }>;
}

/** Starts one for the file's tests (beforeAll) and stops it after them; answers must conform after each test. */
export function judgedPlatform(apiKey: string): JudgedPlatform {
  const lines: string[] = [];
  let platform: Platform | undefined;
  let proxy: ConformanceProxy | undefined;
  beforeAll(async () => {
    platform = await startPlatform({
      apiKey,
      containers: { tool: "podman", env: { PATH: "/nonexistent" } },
      logger: createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } }),
    });
    proxy = await conformanceProxy(platform.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await platform?.close();
  });
  afterEach(() => {
    // Every answer conforms; the bad requests some tests send on purpose are checked where they are sent.
    expect(proxy!.violations).toEqual([]);
    proxy!.requestViolations.length = 0;
  });
  return {
    get platform() {
      return platform!;
    },
    get proxy() {
      return proxy!;
    },
    lines,
    async api(method, path, body, key = apiKey) {
      const response = await fetch(`${proxy!.url}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return {
        status: response.status,
        type: response.headers.get("content-type") ?? "",
        json: text ? JSON.parse(text) : undefined,
      };
    },
  };
}
