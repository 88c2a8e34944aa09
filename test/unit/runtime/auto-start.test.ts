// handler() in a file a test runner imports never starts the runtime: vitest's fork is a program from node_modules
// (docs/design.md §2.1). Started, it would take the registry and run the one-shot test in this process.
import { describe, expect, it } from "vitest";
import { registry } from "../../../src/app/registry.js";
import { handler } from "../../../src/index.js";

describe("auto-start", () => {
  it("handler() imported under vitest leaves the app unclaimed after its setImmediate", async () => {
    expect(process.argv[1]).toMatch(/[\\/]node_modules[\\/]/);
    handler(() => "not started");
    expect(registry().autoStartScheduled).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(registry().managed).toBe(false);
  });
});
