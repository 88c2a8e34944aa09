// What `flash dev` watches besides the module graph (src/toolkit/dev/watch.ts): the files a model server's command
// names, and `--watch` paths and globs (issue 44, item 9). The restarts themselves: test/platform/dev.e2e.test.ts.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  MAX_WATCH_PATTERNS,
  serverFiles,
  watchPattern,
  watchPatterns,
} from "../../../../src/toolkit/dev/watch.js";

const root = mkdtempSync(join(tmpdir(), "flash-dev-watch-"));
mkdirSync(join(root, "app"));
mkdirSync(join(root, "conf"));
for (const file of ["server.py", "app/main.py", "conf/settings.yaml"]) writeFileSync(join(root, file), "");
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("serverFiles", () => {
  it("the project files a server's command names: scripts, uvicorn's module:app, --flag=file; not programs or flags", () => {
    expect(serverFiles({ command: "python3 server.py --port {port}" }, root)).toEqual([
      join(root, "server.py"),
    ]);
    expect(serverFiles({ command: "uvicorn app.main:api --port {port}" }, root)).toEqual([
      join(root, "app/main.py"),
    ]);
    expect(
      serverFiles(
        { command: "python3", args: ["-m", "x", "--config=conf/settings.yaml", "'server.py'"] },
        root,
      ),
    ).toEqual([join(root, "conf/settings.yaml"), join(root, "server.py")]);
    // vLLM's model name, a missing file, a file outside the project, the project folder itself: none.
    expect(
      serverFiles({ command: "vllm serve Qwen/Qwen3-0.6B missing.py ../x.py . --port {port}" }, root),
    ).toEqual([]);
  });
});

describe("watchPattern", () => {
  it("a file, a folder (all under it), a glob within a name, ** across folders", () => {
    const file = watchPattern("server.py", root);
    expect([file.base, file.recursive]).toEqual([root, false]);
    expect([file.matches(join(root, "server.py")), file.matches(join(root, "other.py"))]).toEqual([
      true,
      false,
    ]);

    const folder = watchPattern("conf", root);
    expect([folder.base, folder.recursive]).toEqual([join(root, "conf"), true]);
    expect(folder.matches(join(root, "conf/deep/a.yaml"))).toBe(true);
    expect(folder.matches(join(root, "confx/a.yaml"))).toBe(false);

    const names = watchPattern("app/*.py", root);
    expect([names.base, names.recursive]).toEqual([join(root, "app"), false]);
    expect(names.matches(join(root, "app/main.py"))).toBe(true);
    expect(names.matches(join(root, "app/sub/main.py"))).toBe(false);
    expect(names.matches(join(root, "app/main.pyc"))).toBe(false);

    const deep = watchPattern("app/**/*.py", root);
    expect([deep.base, deep.recursive]).toEqual([join(root, "app"), true]);
    expect(deep.matches(join(root, "app/main.py"))).toBe(true);
    expect(deep.matches(join(root, "app/a/b/main.py"))).toBe(true);
    expect(deep.matches(join(root, "app/a/b/main.txt"))).toBe(false);

    const all = watchPattern("conf/**", root);
    expect(all.matches(join(root, "conf/x/y.txt"))).toBe(true);
    expect(all.matches(join(root, "app/x.txt"))).toBe(false);
  });

  it(`at most ${MAX_WATCH_PATTERNS} --watch values`, () => {
    expect(watchPatterns(["a", "b"], root)).toHaveLength(2);
    const many = Array.from({ length: MAX_WATCH_PATTERNS + 1 }, (_, i) => `f${i}`);
    expect(() => watchPatterns(many, root)).toThrow(
      `flash dev takes at most ${MAX_WATCH_PATTERNS} --watch paths or globs (${MAX_WATCH_PATTERNS + 1} given): watch a folder or a glob instead`,
    );
  });
});
