// `flash dev`'s restarts: each endpoint's workers restart when a file of its module graph (the handler and the
// local files it imports, transitively) changes, and no others; one log line per burst of changes.
import { existsSync, type FSWatcher, readFileSync, watch } from "node:fs";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import type { Logger } from "../log/index.js";
import { isCode, resolveLocal, scanImports } from "./bundle/imports.js";

/** Files whose change may restart workers. */
const SOURCE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".json"]);
/** Editors write a file in several steps: one restart per burst of changes. */
const RESTART_DEBOUNCE_MS = 300;

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

export interface WatchedEndpoint {
  id: string;
  file: string;
  restart(): void;
}

/** Watches the module graphs of the endpoints; returns the function that stops watching. */
export function watchEndpoints(endpoints: readonly WatchedEndpoint[], log: Logger): () => void {
  const graphs = new Map(endpoints.map((e) => [e.id, moduleGraph(e.file)]));
  const watchers = new Map<string, FSWatcher>();
  const changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    const paths = [...changed];
    changed.clear();
    const names = paths.map((p) => relative(process.cwd(), p) || p).join(", ");
    const hit = endpoints.filter((e) => paths.some((p) => graphs.get(e.id)?.has(p)));
    if (hit.length === 0) {
      log.info(`${names} changed; no endpoint imports it, nothing to restart`);
      return;
    }
    log.info(`${names} changed; restarting ${hit.map((e) => e.id).join(", ")}`);
    for (const endpoint of hit) {
      endpoint.restart();
      // Its imports may have changed with it.
      graphs.set(endpoint.id, moduleGraph(endpoint.file));
    }
    watchDirectories();
  };

  const watchDirectory = (dir: string) => {
    try {
      const watcher = watch(dir, (_event, name) => {
        if (!name || !SOURCE_EXTENSIONS.has(extname(name))) return;
        changed.add(join(dir, name.toString()));
        clearTimeout(timer);
        timer = setTimeout(flush, RESTART_DEBOUNCE_MS);
      });
      watcher.on("error", (err) => log.warn(`Not watching ${dir} any more: ${err.message}`));
      watchers.set(dir, watcher);
    } catch (err) {
      log.warn(`Cannot watch ${dir}: ${(err as Error).message}`);
    }
  };

  // Every directory holding a file of some graph, and only those (never node_modules: those are not local imports).
  const watchDirectories = () => {
    const wanted = new Set([...graphs.values()].flatMap((graph) => [...graph].map((p) => dirname(p))));
    for (const [dir, watcher] of watchers) {
      if (!wanted.has(dir)) {
        watcher.close();
        watchers.delete(dir);
      }
    }
    for (const dir of wanted) if (!watchers.has(dir) && existsSync(dir)) watchDirectory(dir);
  };

  watchDirectories();
  return () => {
    clearTimeout(timer);
    for (const watcher of watchers.values()) watcher.close();
    watchers.clear();
  };
}
