// nonPublicKind: the download guard's address rules, IPv6 addresses that carry an IPv4 one (NAT64, 6to4, Teredo)
// judged by the IPv4 address they reach.
import { describe, expect, it } from "vitest";
import { nonPublicKind } from "../../../../src/runtime/files/address.js";

describe("IPv6 addresses carrying an IPv4 address", () => {
  const refused: [address: string, kind: string][] = [
    // NAT64 (64:ff9b::/96): the IPv4 address in the last 32 bits.
    ["64:ff9b::7f00:1", "a NAT64 (64:ff9b::/96) address for 127.0.0.1, a loopback"],
    ["64:ff9b::127.0.0.1", "a NAT64 (64:ff9b::/96) address for 127.0.0.1, a loopback"],
    ["64:ff9b::a9fe:a9fe", "a NAT64 (64:ff9b::/96) address for 169.254.169.254, the cloud metadata"],
    ["64:ff9b::a00:1", "a NAT64 (64:ff9b::/96) address for 10.0.0.1, a private (RFC 1918)"],
    ["64:ff9b:1::a00:1", "a local-use NAT64 (RFC 8215)"],
    // 6to4 (2002::/16): the IPv4 address in bits 16-47.
    ["2002:7f00:1::", "a 6to4 (2002::/16) address for 127.0.0.1, a loopback"],
    ["2002:c0a8:101::1", "a 6to4 (2002::/16) address for 192.168.1.1, a private (RFC 1918)"],
    ["2002:a9fe:a9fe:1:2:3:4:5", "a 6to4 (2002::/16) address for 169.254.169.254, the cloud metadata"],
    // Teredo (2001::/32): the server's IPv4 in bits 32-63, the client's inverted in the last 32 bits.
    ["2001:0:7f00:1::", "a Teredo (2001::/32) address for 127.0.0.1, a loopback"],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "a Teredo (2001::/32) address for 127.0.0.1, a loopback"],
    [
      "2001:0:4136:e378:8000:63bf:f5ff:fffe",
      "a Teredo (2001::/32) address for 10.0.0.1, a private (RFC 1918)",
    ],
  ];
  it.each(refused)("%s is refused: %s", (address, kind) => {
    expect(nonPublicKind(address)).toBe(kind);
  });

  const allowed = [
    "64:ff9b::808:808", // NAT64 of 8.8.8.8
    "2002:808:808::1", // 6to4 of 8.8.8.8
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7", // server 65.54.227.120, client 8.8.8.8
    "2606:4700:4700::1111", // an ordinary global address
  ];
  it.each(allowed)("%s is public", (address) => {
    expect(nonPublicKind(address)).toBeUndefined();
  });

  it("judges both Teredo addresses: RFC 4380's example, a public server and a documentation client, is refused", () => {
    expect(nonPublicKind("2001:0:4136:e378:8000:63bf:3fff:fdd2")).toBe(
      "a Teredo (2001::/32) address for 192.0.2.45, a documentation",
    );
  });
});
