// Which addresses a download may connect to: globally routable ones only, unless private ones are allowed.
import { BlockList, isIP } from "node:net";

/** Non-global ranges of the IANA special-purpose registries, each with the name an error shows; first match wins. */
const RANGES: readonly [network: string, prefix: number, family: "ipv4" | "ipv6", kind: string][] = [
  // Instance metadata of the big clouds (AWS, GCP, Azure; AWS on IPv6), named before their wider ranges.
  ["169.254.169.254", 32, "ipv4", "the cloud metadata"],
  ["fd00:ec2::254", 128, "ipv6", "the cloud metadata"],
  ["0.0.0.0", 8, "ipv4", "an unspecified (this-network)"],
  ["10.0.0.0", 8, "ipv4", "a private (RFC 1918)"],
  ["100.64.0.0", 10, "ipv4", "a carrier-grade NAT (RFC 6598)"],
  ["127.0.0.0", 8, "ipv4", "a loopback"],
  ["169.254.0.0", 16, "ipv4", "a link-local"],
  ["172.16.0.0", 12, "ipv4", "a private (RFC 1918)"],
  ["192.0.0.0", 24, "ipv4", "a reserved (IETF protocol)"],
  ["192.0.2.0", 24, "ipv4", "a documentation"],
  ["192.168.0.0", 16, "ipv4", "a private (RFC 1918)"],
  ["198.18.0.0", 15, "ipv4", "a benchmarking"],
  ["198.51.100.0", 24, "ipv4", "a documentation"],
  ["203.0.113.0", 24, "ipv4", "a documentation"],
  ["224.0.0.0", 4, "ipv4", "a multicast"],
  ["240.0.0.0", 4, "ipv4", "a reserved"],
  ["::", 128, "ipv6", "an unspecified"],
  ["::1", 128, "ipv6", "a loopback"],
  // IPv4-compatible IPv6 (deprecated); IPv4-mapped addresses are checked against the IPv4 ranges by BlockList.
  ["::", 96, "ipv6", "a reserved (IPv4-compatible)"],
  ["64:ff9b:1::", 48, "ipv6", "a local-use NAT64 (RFC 8215)"],
  ["100::", 64, "ipv6", "a discard-only"],
  ["2001:db8::", 32, "ipv6", "a documentation"],
  ["fc00::", 7, "ipv6", "a unique-local"],
  ["fe80::", 10, "ipv6", "a link-local"],
  ["ff00::", 8, "ipv6", "a multicast"],
];

const LISTS = RANGES.map(([network, prefix, family, kind]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, kind };
});

/** An IPv6 range that carries an IPv4 address: the host reached is that IPv4 one, so the IPv4 rules apply. */
interface Carrier {
  list: BlockList;
  scheme: string;
  /** The IPv4 addresses inside, each as two 16-bit words of the IPv6 address. */
  ipv4: (words: readonly number[]) => [number, number][];
}

const carrier = (network: string, prefix: number, scheme: string, ipv4: Carrier["ipv4"]): Carrier => {
  const list = new BlockList();
  list.addSubnet(network, prefix, "ipv6");
  return { list, scheme, ipv4 };
};

const CARRIERS: readonly Carrier[] = [
  carrier("64:ff9b::", 96, "a NAT64 (64:ff9b::/96)", (w) => [[w[6]!, w[7]!]]),
  carrier("2002::", 16, "a 6to4 (2002::/16)", (w) => [[w[1]!, w[2]!]]),
  // Teredo: the server's IPv4 in bits 32-63, the client's in the last 32 bits, inverted (RFC 4380 §4).
  carrier("2001::", 32, "a Teredo (2001::/32)", (w) => [
    [w[2]!, w[3]!],
    [w[6]! ^ 0xffff, w[7]! ^ 0xffff],
  ]),
];

/**
 * Why `address` may not be downloaded from ("a loopback address", "the cloud metadata address"),
 * or undefined when it is a global unicast address. Anything that is not an IP address is refused.
 */
export function nonPublicKind(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return "not an IP";
  const type = family === 4 ? "ipv4" : "ipv6";
  for (const { list, kind } of LISTS) if (list.check(address, type)) return kind;
  return family === 6 ? embeddedKind(address) : undefined;
}

/** Decides for each address a download is about to connect to: the kind that refuses it, or undefined. */
export type AddressPolicy = (address: string) => string | undefined;

export const PUBLIC_ONLY: AddressPolicy = nonPublicKind;

export const ANY_ADDRESS: AddressPolicy = () => undefined;

/** For an IPv6 address that carries a non-public IPv4 one (NAT64, 6to4, Teredo): which, and why it is refused. */
function embeddedKind(address: string): string | undefined {
  for (const { list, scheme, ipv4 } of CARRIERS) {
    if (!list.check(address, "ipv6")) continue;
    for (const [high, low] of ipv4(ipv6Words(address))) {
      const inner = `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
      const kind = nonPublicKind(inner);
      if (kind) return `${scheme} address for ${inner}, ${kind}`;
    }
  }
  return undefined;
}

/** The eight 16-bit words of an IPv6 address that isIP() accepted (`::` expanded, a dotted IPv4 tail as two words). */
function ipv6Words(address: string): number[] {
  const words = (part: string): number[] =>
    part === ""
      ? []
      : part.split(":").flatMap((word) => {
          if (!word.includes(".")) return [Number.parseInt(word, 16)];
          const [a = 0, b = 0, c = 0, d = 0] = word.split(".").map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head = "", tail] = address.replace(/%.*$/, "").split("::");
  const left = words(head);
  const right = tail === undefined ? [] : words(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}
