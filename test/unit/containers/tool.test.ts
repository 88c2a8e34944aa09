// isLoopbackRegistry: which image references are pushed and pulled without TLS verification.
import { describe, expect, it } from "vitest";
import { isLoopbackRegistry } from "../../../src/containers/tool.js";

describe("isLoopbackRegistry", () => {
  const table: [image: string, loopback: boolean][] = [
    ["127.0.0.1:5000/app:1", true],
    ["127.0.0.1/app", true],
    ["localhost:5000/app:1", true],
    ["localhost/flash-worker:cpu", true],
    ["[::1]:5000/app:1", true],
    // A registry whose name starts with 127. is on the internet: TLS stays on.
    ["127.example.com/app", false],
    ["127.example.com:5000/app:1", false],
    ["127.0.0.1.nip.io/app", false],
    ["docker.io/library/node:20", false],
    ["ghcr.io/you/app:1", false],
    ["app:1", false],
  ];
  it.each(table)("%s → %s", (image, loopback) => {
    expect(isLoopbackRegistry(image)).toBe(loopback);
  });
});
