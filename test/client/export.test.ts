// The published entry: `import ... from "flash-worker/client"` resolves through package.json exports to dist/.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ROOT } from "../process.js";

describe("flash-worker/client", () => {
  it("is exported by the package (built files), with the client, the breaker and the errors", () => {
    const script =
      'const m = await import("flash-worker/client"); console.log(JSON.stringify(Object.keys(m).sort()));';
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT });
    const names = JSON.parse(out.toString()) as string[];
    for (const name of [
      "EndpointClient",
      "endpoint",
      "CircuitBreakers",
      "resolveApiKey",
      "EndpointConnectionError",
      "ExecutionTimeoutError",
      "PayloadTooLargeError",
      "CircuitOpenError",
    ]) {
      expect(names).toContain(name);
    }
    // Tuning constants and the CLI's own helpers are not part of the public surface.
    for (const name of [
      "saveApiKey",
      "CONNECT_RETRY",
      "DEFAULT_BREAKERS",
      "readDeployments",
      "MAX_PAYLOAD_BYTES",
    ]) {
      expect(names).not.toContain(name);
    }
  });
});
