// Loopback hosts: where the local platform needs no API key and a registry is reached without TLS.
import { BlockList, isIP } from "node:net";

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/**
 * Whether a host (a name or an address, IPv6 with or without brackets, no port) is this machine's loopback:
 * exactly `localhost`, or an IP literal in 127.0.0.0/8 or ::1 (IPv4-mapped included). A name that merely
 * starts with "127." (127.example.com) is someone else's machine.
 */
export function isLoopback(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === "localhost") return true;
  const family = isIP(bare);
  if (family === 0) return false;
  return LOOPBACK.check(bare, family === 4 ? "ipv4" : "ipv6");
}

/**
 * Whether a Host header (`host[:port]`) names this machine's loopback, as a browser sends it for a loopback URL:
 * isLoopback's hosts and `*.localhost` names (RFC 6761: they never leave the machine, browsers included).
 */
export function isLoopbackAuthority(authority: string): boolean {
  // Only a host and a port: no userinfo (`evil@127.0.0.1`), path or whitespace for the URL parser to read past.
  if (!/^[A-Za-z0-9.\-[\]:]+$/.test(authority)) return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${authority}`).hostname;
  } catch {
    return false;
  }
  if (hostname.endsWith(".localhost")) return true;
  return isLoopback(hostname);
}
