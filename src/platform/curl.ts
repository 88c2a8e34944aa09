// The curl line `flash dev` and `flash serve` print: /runsync with the key and a sample input.
import type { Platform } from "./server.js";

/** Single-quotes text for a POSIX shell. */
export const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/** A curl call a user can paste: /runsync on the endpoint with the key and a sample input. */
export function curlCommand(platform: Platform, endpointId: string, body: string): string {
  return [
    `curl -s -X POST ${platform.url}/v2/${endpointId}/runsync`,
    `-H ${shellQuote(`Authorization: Bearer ${platform.apiKey}`)}`,
    `-H 'Content-Type: application/json'`,
    `-d ${shellQuote(body)}`,
  ].join(" ");
}
