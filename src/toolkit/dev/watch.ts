// `flash dev`'s restarts: each endpoint's workers restart when a file of its module graph (the handler and the
// local files it imports, transitively) changes, or a file its model server's command names (`python3 server.py`),
// and no others; every endpoint's when a file matching a `--watch` path or glob changes. One log line per burst.
import { existsSync, type FSWatcher, readFileSync, statSync, watch } from "node:fs";
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import type { Logger } from "../../log/index.js";
import { ConfigError } from "../../options/index.js";
import { isCode, resolveLocal, scanImports } from "../bundle/imports.js";

/** Files whose change may restart workers, besides those named: a change to another says nothing restarted. */
const SOURCE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".json"]);
/** Editors write a file in several steps: one restart per burst of changes. */
const RESTART_DEBOUNCE_MS = 300;
/** How many `--watch` paths or globs `flash dev` takes. */
export const MAX_WATCH_PATTERNS = 32;
/** Never watched under a `--watch` folder or `**` glob: installed packages, git's store, the toolkit's output. */
const IGNORED_FOLDERS = new Set(["node_modules", ".git", ".flash"]);

/** The handler file and every local file it imports, transitively, as absolute paths. */
export function moduleGraph(file: string): Set<string> {
  const graph = new Set<string>();
  const pending = [resolve(file)];
  const none = new Set<string>();
  while (pending.length > 0) {
    const path = pending.pop()!;
    if (graph.has(path)) continue;
    graph.add(path);
    if (!isCode(path) || !existsSync(path)) continue;
    let source: string;
    try {
      source = readFileSync(path, "utf8");
    } catch {
      continue;
    }
    // Paths relative to the filesystem root, so imports that climb out of the project resolve too.
    const importer = relative(sep, path).split(sep).join("/");
    for (const spec of scanImports(source)) {
      if (!spec.startsWith("./") && !spec.startsWith("../") && spec !== "." && spec !== "..") continue;
      const found = resolveLocal(sep, none, importer, spec);
      if (found.kind !== "missing") pending.push(join(sep, found.path));
    }
  }
  return graph;
}

/**
 * The files a model server's command names that exist under `root` (its working folder): `python3 server.py` →
 * server.py, `uvicorn app.main:api` → app/main.py. Edited, they change what the server runs.
 */
export function serverFiles(server: { command: string; args?: readonly string[] }, root: string): string[] {
  // Without args the command is a shell line: its words, quotes dropped (a good enough reading for file names).
  const words = server.args ? [server.command, ...server.args] : server.command.split(/\s+/);
  const found = new Set<string>();
  for (const raw of words) {
    // A flag's value (`--config=conf.yaml`) can name a file too; a bare flag cannot.
    const word = (raw.startsWith("-") ? (raw.split("=")[1] ?? "") : raw).replace(/^['"]|['"]$/g, "");
    if (!word || word.includes("{port}")) continue;
    // `module.path:attribute`, as uvicorn, gunicorn and hypercorn take an app.
    const app = /^([A-Za-z_][\w.]*):[A-Za-z_]\w*$/.exec(word);
    const path = resolve(root, app ? `${app[1]!.split(".").join("/")}.py` : word);
    if (isInside(root, path) && isFile(path)) found.add(path);
  }
  return [...found];
}

const isInside = (root: string, path: string) => {
  const rel = relative(root, path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
};

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** A `--watch` path or glob: the folder to watch, whether its subfolders too, and which changed files it means. */
export interface WatchPattern {
  text: string;
  base: string;
  recursive: boolean;
  matches(path: string): boolean;
}

/**
 * Reads a `--watch` value relative to `root`: a file; a folder (every file under it); or a glob, `*` and `?` within
 * a name, `**` across folders (`models/*.py`, `config/**`).
 */
export function watchPattern(text: string, root: string): WatchPattern {
  const absolute = resolve(root, text);
  if (!/[*?]/.test(text)) {
    const folder = existsSync(absolute) && statSync(absolute).isDirectory();
    return folder
      ? { text, base: absolute, recursive: true, matches: (path) => isInside(absolute, path) }
      : { text, base: dirname(absolute), recursive: false, matches: (path) => path === absolute };
  }
  const parts = absolute.split(sep);
  const first = parts.findIndex((part) => /[*?]/.test(part));
  const base = parts.slice(0, first).join(sep) || sep;
  const rest = parts.slice(first);
  // `**` is any number of folders (all that is left when last); `*` and `?` stay within a name.
  const source = rest
    .map((part, i) => {
      const last = i === rest.length - 1;
      if (part === "**") return last ? ".*" : "(?:[^/]+/)*";
      const name = part
        .replace(/[.+^${}()|[\]\\]/g, "\\$&")
        .replaceAll("*", "[^/]*")
        .replaceAll("?", "[^/]");
      return last ? name : `${name}/`;
    })
    .join("");
  const regex = new RegExp(`^${source}$`);
  return {
    text,
    base,
    recursive: rest.length > 1 || rest.includes("**"),
    matches: (path) => isInside(base, path) && regex.test(relative(base, path).split(sep).join("/")),
  };
}

/** The `--watch` values, checked: at most MAX_WATCH_PATTERNS. */
export function watchPatterns(values: readonly string[], root: string): WatchPattern[] {
  if (values.length > MAX_WATCH_PATTERNS) {
    throw new ConfigError(
      `flash dev takes at most ${MAX_WATCH_PATTERNS} --watch paths or globs (${values.length} given): watch a folder or a glob instead`,
    );
  }
  return values.map((value) => watchPattern(value, root));
}

export interface WatchedEndpoint {
  id: string;
  file: string;
  /** Files besides its module graph whose change restarts it (its model server's). */
  files?: readonly string[];
  restart(): void;
}

/** Watches the endpoints' module graphs and files, and the `--watch` patterns; returns the function that stops. */
export function watchEndpoints(
  endpoints: readonly WatchedEndpoint[],
  log: Logger,
  patterns: readonly WatchPattern[] = [],
): () => void {
  const graphOf = (e: WatchedEndpoint) => new Set([...moduleGraph(e.file), ...(e.files ?? [])]);
  const graphs = new Map(endpoints.map((e) => [e.id, graphOf(e)]));
  const watchers = new Map<string, FSWatcher>();
  const changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    const paths = [...changed];
    changed.clear();
    const names = paths.map((p) => relative(process.cwd(), p) || p).join(", ");
    const everyone = paths.some((p) => patterns.some((pattern) => pattern.matches(p)));
    const hit = everyone ? endpoints : endpoints.filter((e) => paths.some((p) => graphs.get(e.id)?.has(p)));
    if (hit.length === 0) {
      log.info(`${names} changed; no endpoint imports it, nothing to restart`);
      return;
    }
    log.info(`${names} changed; restarting ${hit.map((e) => e.id).join(", ")}`);
    for (const endpoint of hit) {
      endpoint.restart();
      // Its imports may have changed with it.
      graphs.set(endpoint.id, graphOf(endpoint));
    }
    watchDirectories();
  };

  const wanted = (path: string) =>
    SOURCE_EXTENSIONS.has(extname(path)) ||
    [...graphs.values()].some((graph) => graph.has(path)) ||
    patterns.some((pattern) => pattern.matches(path));

  const watchDirectory = (dir: string, recursive: boolean) => {
    try {
      const watcher = watch(dir, { recursive }, (_event, name) => {
        if (!name) return;
        const path = join(dir, name.toString());
        if (
          recursive &&
          relative(dir, path)
            .split(sep)
            .some((part) => IGNORED_FOLDERS.has(part))
        )
          return;
        if (!wanted(path)) return;
        changed.add(path);
        clearTimeout(timer);
        timer = setTimeout(flush, RESTART_DEBOUNCE_MS);
      });
      watcher.on("error", (err) => log.warn(`Not watching ${dir} any more: ${err.message}`));
      watchers.set(`${recursive ? "**" : ""}${dir}`, watcher);
    } catch (err) {
      log.warn(`Cannot watch ${dir}: ${(err as Error).message}`);
    }
  };

  // Every directory holding a file of some graph, and only those (never node_modules: those are not local imports);
  // and each pattern's folder, with its subfolders where the pattern reaches into them.
  const watchDirectories = () => {
    const want = new Map<string, { dir: string; recursive: boolean }>();
    for (const graph of graphs.values())
      for (const p of graph) want.set(dirname(p), { dir: dirname(p), recursive: false });
    for (const pattern of patterns) {
      const key = `${pattern.recursive ? "**" : ""}${pattern.base}`;
      want.set(key, { dir: pattern.base, recursive: pattern.recursive });
    }
    for (const [key, watcher] of watchers) {
      if (!want.has(key)) {
        watcher.close();
        watchers.delete(key);
      }
    }
    for (const [key, { dir, recursive }] of want)
      if (!watchers.has(key) && existsSync(dir)) watchDirectory(dir, recursive);
  };

  watchDirectories();
  return () => {
    clearTimeout(timer);
    for (const watcher of watchers.values()) watcher.close();
    watchers.clear();
  };
}
