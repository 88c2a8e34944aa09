/** Whether a host name or address is this machine's loopback (what the local platform binds by default). */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || host.startsWith("127.");
}
