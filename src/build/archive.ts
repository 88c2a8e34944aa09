// The deployment artifact: one gzip tarball of the shipped files plus the manifest at its root.
import { create } from "tar";

export type ArchiveProgress = (filesDone: number, filesTotal: number) => void;

/**
 * Writes `out` from `files` (relative to `root`); `extra` maps archive names to paths relative to
 * `root` for files that live elsewhere (the manifest, written under .flash/).
 */
export async function writeArchive(
  root: string,
  files: readonly string[],
  extra: Record<string, string>,
  out: string,
  onProgress?: ArchiveProgress,
): Promise<void> {
  const renames = new Map(Object.entries(extra).map(([name, path]) => [path, name]));
  const total = files.length + renames.size;
  let done = 0;
  await create(
    {
      gzip: true,
      file: out,
      cwd: root,
      portable: true,
      // A symlinked file ships as its content: the worker's filesystem has no link target.
      follow: true,
      onWriteEntry(entry) {
        const name = renames.get(entry.path);
        if (name) entry.path = name;
        onProgress?.(++done, total);
      },
    },
    [...files, ...renames.keys()],
  );
}
