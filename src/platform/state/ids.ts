// Ids in the platform's shapes: job ids, worker ids and generated API keys.
import { randomBytes, randomUUID } from "node:crypto";

/** Job ids look like the platform's: `<uuid>-e1`, and `sync-<uuid>-e1` for /runsync (docs/protocol.md §2.1). */
export function newJobId(sync: boolean): string {
  return `${sync ? "sync-" : ""}${randomUUID()}-e1`;
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** Short lowercase ids, like the platform's worker ids (`yuvi40pj18dlj6`). */
export function newShortId(length = 14): string {
  const bytes = randomBytes(length);
  let id = "";
  for (const byte of bytes) id += ALPHABET[byte % ALPHABET.length];
  return id;
}

/** A fresh API key for a platform started without one; URL-safe so it pastes into curl. */
export function newApiKey(): string {
  return `flash_${randomBytes(24).toString("base64url")}`;
}
