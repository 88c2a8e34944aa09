// Deployment artifacts on the local platform: `POST /artifacts` takes the gzip tarball `flash build` makes
// (magic bytes checked, size capped, every entry kept inside the artifact), and each endpoint created
// from it gets its own unpacked copy to run its workers in.
import { createHash } from "node:crypto";
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, posix, resolve } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { extract, list, type ReadEntry } from "tar";
import type { PlatformContext } from "./context.js";
import { HttpError, MB } from "./http.js";

/** The interface document's deployment tarball limit: 1.5 GB (the toolkit's 1500 MB). */
export const MAX_ARTIFACT_BYTES = 1500 * MB;
export const ARTIFACT_CONTENT_TYPES = ["application/gzip", "application/x-gzip", "application/octet-stream"];

const ARTIFACT_ID = /^[0-9a-f]{16}$/;

/** The toolkit's message when the first two bytes are not gzip's 31, 139 (docs/toolkit.md §8.2), else undefined. */
export function gzipMagicError(head: Uint8Array): string | undefined {
  if (head.length >= 2 && head[0] === 31 && head[1] === 139) return undefined;
  const got = head.length === 0 ? "empty file" : `(${head[0]}, ${head[1] ?? "end of file"})`;
  return `File is not a valid gzip file. Expected magic bytes (31, 139), got: ${got}`;
}

/** Why an entry would land outside the directory it is unpacked into, or undefined when it stays inside. */
export function escapesRoot(path: string, linkpath?: string): string | undefined {
  const inside = (p: string) => {
    if (isAbsolute(p) || /^[A-Za-z]:/.test(p) || p.startsWith("\\")) return false;
    const normal = posix.normalize(p.split("\\").join("/"));
    return normal !== ".." && !normal.startsWith("../");
  };
  if (!inside(path)) return `entry "${path}" points outside the artifact`;
  if (linkpath !== undefined && !inside(posix.join(posix.dirname(path), linkpath))) {
    return `link "${path}" -> "${linkpath}" points outside the artifact`;
  }
  return undefined;
}

/** The flash-worker package running this platform: apps that do not ship their own import it, as in the images. */
const RUNTIME_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Uploaded artifacts and the endpoint directories unpacked from them, under one temporary folder. */
export class ArtifactStore {
  private rootDir: string | undefined;
  private deployments = 0;

  private get root(): string {
    this.rootDir ??= mkdtempSync(join(tmpdir(), "flash-platform-"));
    return this.rootDir;
  }

  private path(id: string): string {
    return join(this.root, "artifacts", `${id}.tar.gz`);
  }

  /** Stores an upload; refuses what is not gzip, too large, or has entries that leave the artifact. */
  async save(
    body: Readable,
    maxBytes = MAX_ARTIFACT_BYTES,
  ): Promise<{ id: string; size: number; files: number }> {
    mkdirSync(join(this.root, "artifacts"), { recursive: true });
    const upload = join(this.root, "artifacts", `upload-${process.pid}-${++this.deployments}.tmp`);
    const hash = createHash("sha256");
    let size = 0;
    let head = Buffer.alloc(0);
    try {
      await pipeline(
        body,
        async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            if (head.length < 2) {
              head = Buffer.concat([head, chunk]).subarray(0, 2);
              if (head.length === 2 && gzipMagicError(head)) throw new HttpError(400, gzipMagicError(head)!);
            }
            size += chunk.length;
            if (size > maxBytes) {
              const max = maxBytes % MB === 0 ? `${maxBytes / MB}MB` : `${maxBytes} bytes`;
              throw new HttpError(
                413,
                `Tarball exceeds maximum size. File size: more than ${max}, Max: ${max}`,
              );
            }
            hash.update(chunk);
            yield chunk;
          }
        },
        createWriteStream(upload),
      );
      const magic = gzipMagicError(head);
      if (magic) throw new HttpError(400, magic);
      const files = await checkEntries(upload);
      const id = hash.digest("hex").slice(0, 16);
      renameSync(upload, this.path(id));
      return { id, size, files };
    } finally {
      rmSync(upload, { force: true });
    }
  }

  /** Unpacks an artifact into a fresh directory for one endpoint and returns it. */
  async unpack(id: string, endpointId: string): Promise<string> {
    if (!ARTIFACT_ID.test(id) || !existsSync(this.path(id))) {
      throw new HttpError(404, `Artifact ${id} not found: upload it with POST /artifacts first`);
    }
    const dir = join(this.root, "endpoints", `${endpointId}-${++this.deployments}`);
    mkdirSync(dir, { recursive: true });
    await extract({
      file: this.path(id),
      cwd: dir,
      strict: true,
      // Checked at upload; checked again here so nothing unpacked can leave `dir`.
      filter: (path, entry) => escapesRoot(path, (entry as ReadEntry).linkpath) === undefined,
    });
    const runtime = join(dir, "node_modules", "flash-worker");
    if (!existsSync(runtime) && existsSync(join(RUNTIME_ROOT, "package.json"))) {
      mkdirSync(dirname(runtime), { recursive: true });
      symlinkSync(RUNTIME_ROOT, runtime, "dir");
    }
    return dir;
  }

  /** Removes everything stored. */
  close(): void {
    if (this.rootDir) rmSync(this.rootDir, { recursive: true, force: true });
    this.rootDir = undefined;
  }
}

/** Lists the tarball; refuses it when it is not a readable gzip tar or an entry would escape. Returns the entry count. */
async function checkEntries(file: string): Promise<number> {
  let count = 0;
  let refused: string | undefined;
  try {
    await list({
      file,
      strict: true,
      onReadEntry: (entry) => {
        count++;
        refused ??= escapesRoot(entry.path, entry.linkpath);
      },
    });
  } catch (err) {
    throw new HttpError(400, `Artifact is not a valid gzip tarball: ${(err as Error).message}`);
  }
  if (refused) throw new HttpError(400, `Artifact refused (path traversal): ${refused}`);
  return count;
}

/** `POST /artifacts` (a gzip tarball body) → `{id, size, files}`; the store is closed with the platform. */
export async function artifactRoutes(app: FastifyInstance, _ctx: PlatformContext): Promise<ArtifactStore> {
  const store = new ArtifactStore();
  // The body streams to disk: up to 1.5 GB is never held in memory.
  app.addContentTypeParser(ARTIFACT_CONTENT_TYPES, (_request, payload, done) => done(null, payload));
  app.post("/artifacts", async (request, reply) => {
    const body = request.body as Readable | undefined;
    if (!body || typeof (body as { pipe?: unknown }).pipe !== "function") {
      throw new HttpError(
        415,
        `Send the artifact as the body with Content-Type: ${ARTIFACT_CONTENT_TYPES[0]}`,
      );
    }
    return reply.code(201).send(await store.save(body));
  });
  app.addHook("onClose", async () => store.close());
  return store;
}
