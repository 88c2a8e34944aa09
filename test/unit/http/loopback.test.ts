// isLoopback and isLoopbackAuthority: which hosts are this machine's, by parsing, never by a name's prefix.
import { describe, expect, it } from "vitest";
import { isLoopback, isLoopbackAuthority } from "../../../src/http/loopback.js";

describe("isLoopback", () => {
  const table: [host: string, loopback: boolean][] = [
    ["localhost", true],
    ["LOCALHOST", true],
    ["127.0.0.1", true],
    ["127.0.0.2", true],
    ["127.255.255.254", true],
    ["::1", true],
    ["[::1]", true],
    ["0:0:0:0:0:0:0:1", true],
    ["::ffff:127.0.0.1", true],
    ["[::ffff:7f00:1]", true],
    // Names that only look like loopback are someone else's machine.
    ["127.example.com", false],
    ["127.0.0.1.nip.io", false],
    ["127.evil", false],
    ["localhost.example.com", false],
    ["app.localhost", false],
    ["128.0.0.1", false],
    ["126.255.255.255", false],
    ["::2", false],
    ["[::]", false],
    ["0.0.0.0", false],
    ["10.0.0.1", false],
    ["", false],
  ];
  it.each(table)("%s → %s", (host, loopback) => {
    expect(isLoopback(host)).toBe(loopback);
  });
});

describe("isLoopbackAuthority (a Host header)", () => {
  const table: [authority: string, loopback: boolean][] = [
    ["127.0.0.1:8000", true],
    ["127.0.0.1", true],
    ["localhost:8000", true],
    ["Localhost:8000", true],
    ["[::1]:8000", true],
    ["abc123.localhost:8000", true],
    ["pod1-8888.localhost", true],
    ["evil.example", false],
    ["evil.example:8000", false],
    ["127.example.com:8000", false],
    ["localhost.evil.example:8000", false],
    ["evil@127.0.0.1:8000", false],
    ["127.0.0.1:8000/x", false],
    ["127.0.0.1 :8000", false],
    ["[::1", false],
    ["", false],
  ];
  it.each(table)("%s → %s", (authority, loopback) => {
    expect(isLoopbackAuthority(authority)).toBe(loopback);
  });
});
