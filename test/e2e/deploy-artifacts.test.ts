// The platform's side of deploy: POST /artifacts checks gzip magic bytes, size and every entry's path;
// POST /endpoints with an artifact unpacks it into the endpoint's own directory.
import { randomBytes } from "node:crypto";
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { create } from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { ArtifactStore, escapesRoot, gzipMagicError } from "../../src/platform/artifacts.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { ROOT } from "../process.js";

const KEY = "artifact-test-key";
let platform: Platform;
let scratch: string;

beforeAll(async () => {
  platform = await startPlatform({ apiKey: KEY, logger: createLogger({ level: "ERROR", json: false }) });
  scratch = mkdtempSync(join(tmpdir(), "flash-artifacts-"));
});
afterAll(async () => {
  await platform.close();
  rmSync(scratch, { recursive: true, force: true });
});

const upload = (body: Uint8Array | string, contentType = "application/gzip") =>
  fetch(`${platform.url}/artifacts`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": contentType },
    body,
  });

/** A tarball of `files`; `rename` changes entry names on the way in (to forge hostile paths). */
async function tarball(files: Record<string, string>, rename: Record<string, string> = {}): Promise<Buffer> {
  const dir = mkdtempSync(join(scratch, "src-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const out = join(scratch, `${Math.random().toString(36).slice(2)}.tar.gz`);
  await create(
    {
      gzip: true,
      file: out,
      cwd: dir,
      portable: true,
      preservePaths: true,
      onWriteEntry(entry) {
        entry.path = rename[entry.path] ?? entry.path;
      },
    },
    Object.keys(files),
  );
  return readFileSync(out);
}

describe("POST /artifacts", () => {
  it("a gzip tarball is stored: its id, size and entry count come back", async () => {
    const body = await tarball({ "handler.ts": "export default 1;\n", "lib/a.ts": "export {};\n" });
    const response = await upload(body);
    expect(response.status).toBe(201);
    const stored = (await response.json()) as { id: string; size: number; files: number };
    expect(stored).toEqual({ id: expect.stringMatching(/^[0-9a-f]{16}$/), size: body.length, files: 2 });
  });

  it("not gzip: Expected magic bytes (31, 139)", async () => {
    const response = await upload("hello, not a tarball");
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: "File is not a valid gzip file. Expected magic bytes (31, 139), got: (104, 101)",
    });
    const empty = await upload(new Uint8Array(0));
    expect(await empty.json()).toEqual({
      error: "File is not a valid gzip file. Expected magic bytes (31, 139), got: empty file",
    });
  });

  it("gzip that is not a tar, or is cut short, is refused", async () => {
    // Incompressible content, so 200 bytes are surely a cut inside the gzip stream.
    const whole = await tarball({ "a.txt": randomBytes(50_000).toString("hex") });
    expect(whole.length).toBeGreaterThan(50_000);
    const truncated = whole.subarray(0, 200);
    const response = await upload(truncated);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /^Artifact is not a valid gzip tarball: /,
    );
    const notTar = await upload(gzipSync(Buffer.from("just text, no tar headers here".repeat(40))));
    expect(notTar.status).toBe(400);
  });

  it("path traversal is refused: .. entries, absolute paths, links out of the artifact", async () => {
    const dotdot = await upload(await tarball({ "evil.txt": "x" }, { "evil.txt": "../evil.txt" }));
    expect(dotdot.status).toBe(400);
    expect(await dotdot.json()).toEqual({
      error: 'Artifact refused (path traversal): entry "../evil.txt" points outside the artifact',
    });

    const absolute = await upload(await tarball({ "evil.txt": "x" }, { "evil.txt": "/tmp/evil.txt" }));
    expect(((await absolute.json()) as { error: string }).error).toBe(
      'Artifact refused (path traversal): entry "/tmp/evil.txt" points outside the artifact',
    );

    const dir = mkdtempSync(join(scratch, "link-"));
    symlinkSync("../../../etc/passwd", join(dir, "passwd"));
    const out = join(scratch, "link.tar.gz");
    await create({ gzip: true, file: out, cwd: dir, portable: true }, ["passwd"]);
    const link = await upload(readFileSync(out));
    expect(((await link.json()) as { error: string }).error).toBe(
      'Artifact refused (path traversal): link "passwd" -> "../../../etc/passwd" points outside the artifact',
    );
  });

  it("needs the Bearer key", async () => {
    const response = await fetch(`${platform.url}/artifacts`, {
      method: "POST",
      headers: { "content-type": "application/gzip" },
      body: await tarball({ "a.txt": "a" }),
    });
    expect(response.status).toBe(401);
  });
});

describe("POST /endpoints with an artifact", () => {
  it("unpacks it into a directory of the endpoint's own, where flash-worker resolves to the platform's copy", async () => {
    const stored = (await (await upload(await tarball({ "handler.ts": "export {};\n" }))).json()) as {
      id: string;
    };
    const create = (id: string) =>
      fetch(`${platform.url}/endpoints`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ id, artifact: stored.id, file: "handler.ts", workers: [0, 1] }),
      });
    const first = (await (await create("one")).json()) as { cwd: string };
    const second = (await (await create("two")).json()) as { cwd: string };
    expect(first.cwd).not.toBe(second.cwd);
    for (const dir of [first.cwd, second.cwd]) {
      expect(readFileSync(join(dir, "handler.ts"), "utf8")).toBe("export {};\n");
      expect(realpathSync(join(dir, "node_modules", "flash-worker"))).toBe(realpathSync(ROOT));
    }
    await platform.deleteEndpoint("one");
    await platform.deleteEndpoint("two");
  });

  it("an unknown artifact id is a 404", async () => {
    const response = await fetch(`${platform.url}/endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ id: "x", artifact: "0123456789abcdef", file: "handler.ts" }),
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: "Artifact 0123456789abcdef not found: upload it with POST /artifacts first",
    });
  });
});

describe("artifact checks", () => {
  it("gzipMagicError and escapesRoot", () => {
    expect(gzipMagicError(Uint8Array.from([31, 139, 8]))).toBeUndefined();
    expect(gzipMagicError(Uint8Array.from([80, 75]))).toBe(
      "File is not a valid gzip file. Expected magic bytes (31, 139), got: (80, 75)",
    );
    expect(gzipMagicError(Uint8Array.from([31]))).toContain("got: (31, end of file)");
    expect(escapesRoot("a/b/../c.txt")).toBeUndefined();
    expect(escapesRoot("a/../../c.txt")).toContain("points outside");
    expect(escapesRoot("C:\\windows")).toContain("points outside");
    expect(escapesRoot("a/link", "../b")).toBeUndefined();
    expect(escapesRoot("a/link", "../../b")).toContain('link "a/link" -> "../../b"');
  });

  it("an upload over the size limit is refused with the limit", async () => {
    const store = new ArtifactStore();
    try {
      const body = Readable.from([Buffer.from([31, 139]), Buffer.alloc(4096)]);
      await expect(store.save(body, 1024)).rejects.toThrow(
        "Tarball exceeds maximum size. File size: more than 1024 bytes, Max: 1024 bytes",
      );
    } finally {
      store.close();
    }
  });
});
