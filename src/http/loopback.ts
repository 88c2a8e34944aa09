// Loopback hosts: where the local platform needs no API key and a registry is reached without TLS.
/** Whether a host name or address is this machine's loopback. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || host.startsWith("127.");
}
