// EventSource cannot send an Authorization header, so the console's event streams take a short-lived token
// that the page gets from POST /console/api/token with its Bearer key: the key itself never goes in a URL
// (URLs end up in logs and history), and a leaked token is worthless after a minute.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { HttpError } from "../api/http.js";

/** Long enough for the page to open its stream and for EventSource's automatic reconnects to succeed. */
export const TOKEN_TTL_MS = 60_000;

const mac = (apiKey: string, expiresAt: number): string =>
  createHmac("sha256", apiKey).update(`flash-console-events:${expiresAt}`).digest("base64url");

/** A token that opens event streams until `expiresAt`: `<expiresAt>.<HMAC of it keyed by the API key>`. */
export function eventToken(apiKey: string, now = Date.now()): { token: string; expiresAt: number } {
  const expiresAt = now + TOKEN_TTL_MS;
  return { token: `${expiresAt}.${mac(apiKey, expiresAt)}`, expiresAt };
}

/** True for a token made with this key that has not expired; the MAC is compared in constant time. */
export function validEventToken(token: string, apiKey: string, now = Date.now()): boolean {
  const dot = token.indexOf(".");
  if (dot <= 0) return false;
  const expiresAt = Number(token.slice(0, dot));
  if (!Number.isSafeInteger(expiresAt) || expiresAt <= now || expiresAt > now + TOKEN_TTL_MS) return false;
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(apiKey, expiresAt));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The `?token=` of an event stream request, or a 401. */
export function checkEventToken(request: FastifyRequest, apiKey: string): void {
  const { token } = request.query as { token?: unknown };
  if (typeof token !== "string" || token === "") {
    throw new HttpError(401, "Unauthorized: missing ?token= (POST /console/api/token with the Bearer key)");
  }
  if (!validEventToken(token, apiKey)) throw new HttpError(401, "Unauthorized: invalid or expired token");
}
