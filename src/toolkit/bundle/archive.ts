// The deployment artifact: one gzip tarball of the shipped files plus the manifest at its root.
import { closeSync, openSync, readSync } from "node:fs";
import { create } from "tar";
import { BuildError } from "./errors.js";

/** SOURCE_DATE_EPOCH (reproducible-builds.org) when it is a whole number of seconds: the time builds record. */
export function sourceDateEpoch(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const given = env.SOURCE_DATE_EPOCH?.trim();
  return given && /^\d{1,12}$/.test(given) ? Number(given) : undefined;
}

export type ArchiveProgress = (filesDone: number, filesTotal: number) => void;

/**
 * Writes `out` from `files` (relative to `root`); `extra` maps archive names to paths relative to
 * `root` for files that live elsewhere (the manifest, written under .flash/); `links` maps the archive name of
 * a symbolic link to the target it ships with, when that differs from what the link says here.
 */
export async function writeArchive(
  root: string,
  files: readonly string[],
  extra: Record<string, string>,
  out: string,
  options: { links?: ReadonlyMap<string, string>; onProgress?: ArchiveProgress } = {},
): Promise<void> {
  const renames = new Map(Object.entries(extra).map(([name, path]) => [path, name]));
  const total = files.length + renames.size;
  let done = 0;
  const epoch = sourceDateEpoch();
  await create(
    {
      gzip: true,
      file: out,
      cwd: root,
      portable: true,
      // A link ships as a link (collectFiles keeps only those within the project): following one could ship a secret.
      follow: false,
      // With SOURCE_DATE_EPOCH every entry has that time: the same files give the same artifact, byte for byte.
      ...(epoch === undefined ? {} : { mtime: new Date(epoch * 1000) }),
      onWriteEntry(entry) {
        const name = renames.get(entry.path);
        if (name) entry.path = name;
        const target = options.links?.get(entry.path);
        if (entry.type === "SymbolicLink" && target !== undefined) entry.linkpath = target;
        options.onProgress?.(++done, total);
      },
    },
    [...files, ...renames.keys()],
  );
}

/** Refuses an artifact that is not gzip (a damaged or foreign file), before anything reads it as a tarball. */
export function checkArtifact(file: string, shown = file): void {
  const head = Buffer.alloc(2);
  const fd = openSync(file, "r");
  let read: number;
  try {
    read = readSync(fd, head, 0, 2, 0);
  } finally {
    closeSync(fd);
  }
  if (read === 2 && head[0] === 31 && head[1] === 139) return;
  throw new BuildError(
    `File is not a valid gzip file. Expected magic bytes (31, 139), got: (${[...head.subarray(0, read)].join(", ")}). ${shown} is damaged: delete the .flash directory and rebuild (flash build).`,
  );
}
