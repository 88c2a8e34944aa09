// The platform's file store: worker-produced files behind expiring URLs, as public image endpoints do.
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { PlatformContext } from "./context.js";
import { checkKey, HttpError, MB } from "./http.js";

/** How long a file a worker stored stays reachable: a public image endpoint's image_url lifetime (7 days). */
export const FILE_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;
/** One file at most this large, all files together at most FILES_TOTAL_BYTES (kept in memory). */
export const FILE_LIMIT_BYTES = 20 * MB;
const FILES_TOTAL_BYTES = 512 * MB;

interface StoredFile {
  body: Buffer;
  contentType: string;
  expiresAt: number;
}

export interface FilesOptions {
  ctx: PlatformContext;
  lifetimeMs: number;
  /** The platform's own address (http://host:port): links are made from it, never from a request's Host. */
  baseUrl: () => string;
  now?: () => number;
}

/**
 * A stored file is the uploader's bytes on the console's origin: served as a download (nosniff, attachment), and
 * sandboxed should a browser render it anyway, so an uploaded HTML page never runs as the console (its stored key).
 */
const SERVED_HEADERS = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "sandbox; default-src 'none'",
} as const;

/** Extensions of the kinds of file workers return, for the download's name; any other is saved as <id>. */
const EXTENSIONS: Record<string, string> = {
  "image/png": ".png",
  "image/jpeg": ".jpg",
  "image/webp": ".webp",
  "image/gif": ".gif",
  "audio/wav": ".wav",
  "audio/mpeg": ".mp3",
  "video/mp4": ".mp4",
  "application/json": ".json",
  "application/pdf": ".pdf",
  "text/plain": ".txt",
};

/** `attachment; filename="<id><ext>"`: the name is ours (hex and a known extension), never the uploader's. */
function disposition(id: string, contentType: string): string {
  const essence = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  return `attachment; filename="${id}${EXTENSIONS[essence] ?? ""}"`;
}

/**
 * Worker-produced files (e.g. generated images) behind URLs that expire, as the platform's public
 * image endpoints do: workers POST the bytes to /v2/<endpoint_id>/files (raw key) and return the URL.
 */
export async function filesApi(app: FastifyInstance, options: FilesOptions): Promise<void> {
  const { ctx, lifetimeMs, baseUrl } = options;
  const now = options.now ?? Date.now;
  const files = new Map<string, StoredFile>();
  let total = 0;

  const sweep = () => {
    for (const [id, file] of files) {
      if (file.expiresAt > now()) continue;
      files.delete(id);
      total -= file.body.length;
    }
  };

  // Any content type is stored as bytes, text/plain and JSON included.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: FILE_LIMIT_BYTES }, (_req, body, done) =>
    done(null, body),
  );

  app.post("/v2/:endpointId/files", { bodyLimit: FILE_LIMIT_BYTES }, async (request, reply) => {
    checkKey(request, ctx.apiKey, true);
    const body = request.body;
    if (!Buffer.isBuffer(body) || body.length === 0)
      throw new HttpError(400, "Send the file's bytes as the body");
    sweep();
    if (total + body.length > FILES_TOTAL_BYTES)
      throw new HttpError(507, "The local platform's file store is full");
    const id = randomBytes(16).toString("hex");
    const expiresAt = now() + lifetimeMs;
    files.set(id, {
      body,
      contentType: request.headers["content-type"] ?? "application/octet-stream",
      expiresAt,
    });
    total += body.length;
    return reply
      .code(201)
      .send({ url: `${baseUrl()}/files/${id}`, expiresAt: new Date(expiresAt).toISOString() });
  });

  // Public like a signed URL: whoever has the link may fetch it until it expires.
  app.get("/files/:id", async (request, reply) => {
    const { id } = request.params as { id: string };
    const file = files.get(id);
    if (!file) throw new HttpError(404, "No such file");
    if (file.expiresAt <= now()) {
      files.delete(id);
      total -= file.body.length;
      throw new HttpError(410, "This file's URL has expired");
    }
    return reply
      .headers({ ...SERVED_HEADERS, "content-disposition": disposition(id, file.contentType) })
      .header("content-type", file.contentType)
      .send(file.body);
  });
}
