// The import graph of src/: the floors of docs/design.md §3 (ground, app, programs), no circles between folders or
// inside a program, the registry a leaf, the SDK free of the toolkit, commands never importing each other.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../process.js";

const SRC = join(ROOT, "src");

interface Edge {
  from: string;
  to: string;
}

/** Every relative import and re-export of every .ts file under src/, as file → file. */
function fileImports(): Edge[] {
  const edges: Edge[] = [];
  const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
  const specifier = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;
  for (const file of files) {
    const text = readFileSync(join(SRC, file), "utf8");
    for (const match of text.matchAll(specifier)) {
      const target = relative(SRC, resolve(SRC, dirname(file), match[1]!)).replace(/\.js$/, ".ts");
      edges.push({ from: file, to: target });
    }
  }
  return edges;
}

/** A file's place in the layering: its top folder, or the file itself for src/*.ts (index, errors, …). */
const unit = (file: string): string => (file.includes("/") ? `${file.split("/")[0]}/` : file);

/** The circles of a directed graph (each found once from its smallest node), as node lists. */
function circles(graph: Map<string, Set<string>>): string[][] {
  const found: string[][] = [];
  const nodes = [...graph.keys()].sort();
  for (const start of nodes) {
    const walk = (node: string, path: string[]) => {
      for (const next of graph.get(node) ?? []) {
        if (next === start) found.push([...path, start]);
        else if (next > start && !path.includes(next)) walk(next, [...path, next]);
      }
    };
    walk(start, [start]);
  }
  return found;
}

function folderGraph(edges: Edge[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const [a, b] = [unit(from), unit(to)];
    if (a === b) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  return graph;
}

describe("src/ layering", () => {
  const edges = fileImports();

  it("finds the imports it checks", () => {
    expect(edges.length).toBeGreaterThan(200);
    expect(edges).toContainEqual({ from: "index.ts", to: "app/registry.ts" });
  });

  it("the circle finder sees a circle when there is one", () => {
    const graph = folderGraph([
      { from: "a/x.ts", to: "b/y.ts" },
      { from: "b/y.ts", to: "c/z.ts" },
      { from: "c/z.ts", to: "a/w.ts" },
      { from: "c/z.ts", to: "d.ts" },
    ]);
    expect(circles(graph)).toEqual([["a/", "b/", "c/", "a/"]]);
  });

  it("has no circles between folders", () => {
    const graph = folderGraph(edges);
    const found = circles(graph).map((circle) => {
      const steps = circle.slice(1).map((to, i) => {
        const from = circle[i]!;
        const example = edges.find((e) => unit(e.from) === from && unit(e.to) === to)!;
        return `${example.from} → ${example.to}`;
      });
      return steps.join(", ");
    });
    expect(found).toEqual([]);
  });

  // platform/<folder> for a file in a subfolder, the file itself for platform/*.ts; the same inside runtime/ and toolkit/.
  for (const program of ["platform", "runtime", "toolkit"]) {
    it(`has no circles between ${program}/'s own folders and files`, () => {
      const inside = (file: string) => file.startsWith(`${program}/`);
      const part = (file: string) => file.split("/").slice(0, 2).join("/");
      const graph = new Map<string, Set<string>>();
      for (const { from, to } of edges.filter((e) => inside(e.from) && inside(e.to))) {
        const [a, b] = [part(from), part(to)];
        if (a === b) continue;
        if (!graph.has(a)) graph.set(a, new Set());
        graph.get(a)!.add(b);
      }
      expect(graph.size).toBeGreaterThan(2);
      expect(circles(graph)).toEqual([]);
    });
  }

  // One level down, a folder's own files are one node: runtime/*.ts may import runtime/queue/ only if
  // runtime/queue/ imports nothing of runtime/*.ts (what the modes share lives in runtime/config/).
  it("has no circles between the folders one level down, a folder's own files counted as one", () => {
    const folder = (file: string) => dirname(file).split("/").slice(0, 2).join("/");
    const graph = new Map<string, Set<string>>();
    for (const { from, to } of edges) {
      const [a, b] = [folder(from), folder(to)];
      // src/*.ts are the ground floor's files and the entry: the test above checks them one by one.
      if (a === b || a === "." || b === ".") continue;
      if (!graph.has(a)) graph.set(a, new Set());
      graph.get(a)!.add(b);
    }
    expect(graph.has("runtime")).toBe(true);
    expect(graph.get("runtime")).toContain("runtime/queue");
    expect(circles(graph)).toEqual([]);
  });

  it("keeps the local platform's state below its routes", () => {
    const state = edges.filter(
      (e) => e.from.startsWith("platform/state/") && !e.to.startsWith("platform/state/"),
    );
    expect(state.filter((e) => e.to.startsWith("platform/"))).toEqual([]);
  });

  // Each floor imports only its own floor and those below: ground < app < programs < the package's entries.
  const GROUND = [
    "flash-error.ts",
    "version.ts",
    "lifecycle.ts",
    "tick-shapes.ts",
    "log/",
    "http/",
    "payload/",
    "gpu/",
    "job/",
    "containers/",
    "trace/",
    "options/",
  ];
  const floorOf = (file: string): number => {
    const top = unit(file);
    if (GROUND.includes(top)) return 0;
    if (top === "app/") return 1;
    if (["project/", "client/", "runtime/", "platform/", "toolkit/", "cli/"].includes(top)) return 2;
    return 3; // index.ts, testing/: the published entries
  };

  it("knows every top folder's floor", () => {
    const tops = new Set(edges.flatMap((e) => [unit(e.from), unit(e.to)]));
    const known = [
      ...GROUND,
      "app/",
      "project/",
      "client/",
      "runtime/",
      "platform/",
      "toolkit/",
      "cli/",
      "index.ts",
      "testing/",
    ];
    expect([...tops].filter((t) => !known.includes(t))).toEqual([]);
  });

  it("has the ground floor and the app model import nothing above them", () => {
    const upward = edges.filter((e) => floorOf(e.from) < 2 && floorOf(e.to) > floorOf(e.from));
    expect(upward.map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it("keeps the SDK (client/) apart from the toolkit, the worker and the platform", () => {
    const crossings = edges.filter(
      (e) => e.from.startsWith("client/") && /^(cli|toolkit|runtime|platform|app)\//.test(e.to),
    );
    expect(crossings.map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it("keeps the platform from importing the worker or the toolkit, and the worker from importing the toolkit", () => {
    const crossings = edges.filter(
      (e) =>
        (e.from.startsWith("platform/") && /^(runtime|cli|toolkit)\//.test(e.to)) ||
        (e.from.startsWith("runtime/") && /^(cli|toolkit)\//.test(e.to)),
    );
    expect(crossings.map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it("keeps the registry a leaf: it imports types only", () => {
    const text = readFileSync(join(SRC, "app/registry.ts"), "utf8");
    const values = [...text.matchAll(/^import (?!type )[^;]*from "([^"]+)"/gm)].map((m) => m[1]);
    expect(values).toEqual(["../version.js"]);
  });

  it("has commands import libraries, never each other", () => {
    const main = readFileSync(join(SRC, "cli/commands.ts"), "utf8");
    const commands = new Set(
      [...main.matchAll(/import\("\.\/([\w-]+)\.js"\)/g)].map((m) => `cli/${m[1]}.ts`),
    );
    expect(commands.size).toBeGreaterThanOrEqual(7);
    const crossings = edges.filter((e) => commands.has(e.to) && e.from !== "cli/commands.ts");
    expect(crossings).toEqual([]);
  });

  it("keeps cli/ to commands: one file per command, beside main.ts, commands.ts and options.ts", () => {
    const main = readFileSync(join(SRC, "cli/commands.ts"), "utf8");
    const commands = [...main.matchAll(/import\("\.\/([\w-]+)\.js"\)/g)].map((m) => `${m[1]}.ts`);
    const inCli = readdirSync(join(SRC, "cli"), { withFileTypes: true }).map((d) =>
      d.isDirectory() ? `${d.name}/` : d.name,
    );
    expect(inCli.sort()).toEqual([...commands, "commands.ts", "main.ts", "options.ts"].sort());
  });

  it("keeps the toolkit's library from importing a command", () => {
    const upward = edges.filter((e) => e.from.startsWith("toolkit/") && e.to.startsWith("cli/"));
    expect(upward.map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });
  it('keeps the pickle codec out of import "flash-worker": only payload/pytypes.ts and values.ts load with index.ts', () => {
    const loaded = staticGraph(["index.ts"]);
    expect(loaded.has("runtime/start.ts")).toBe(true);
    expect([...loaded].filter((f) => f.startsWith("payload/")).sort()).toEqual([
      "payload/pytypes.ts",
      "payload/values.ts",
    ]);
  });

  it("loads no node:http, crypto, dns, https, fs/promises or worker_threads before a queue worker's first job-take", () => {
    // `flash start`, the handler's import "flash-worker" and the queue worker's modules (runtime/start.ts).
    const loaded = staticGraph([
      "cli/main.ts",
      "cli/start.ts",
      "index.ts",
      "runtime/queue/http-client.ts",
      "runtime/queue/heartbeat.ts",
      "runtime/queue/worker.ts",
      "runtime/fitness/startup.ts",
      "gpu/facts.ts",
      "runtime/cold-start.ts",
    ]);
    expect(loaded.has("http/wire.ts")).toBe(true);
    const builtin = /^import (?!type )[^;]*?from "(node:[^"]+)"/gm;
    // node:http too: the worker's platform calls go over http/h1.ts (on Node 24, ~7 MB of idle RSS).
    const lazy = [
      "node:http",
      "node:crypto",
      "node:dns",
      "node:https",
      "node:tls",
      "node:fs/promises",
      "node:worker_threads",
    ];
    const found = [...loaded].flatMap((file) =>
      [...readFileSync(join(SRC, file), "utf8").matchAll(builtin)]
        .map((m) => m[1]!)
        .filter((id) => lazy.includes(id))
        .map((id) => `${file}: ${id}`),
    );
    expect(found).toEqual([]);
  });
});

/** The .ts files loaded by running `entries`: their static imports and re-exports (type-only ones are erased). */
function staticGraph(entries: string[]): Set<string> {
  const valueImport =
    /^(?:import|export) (?!type )[^;]*?from "(\.{1,2}\/[^"]+)"|^import "(\.{1,2}\/[^"]+)"/gm;
  const loaded = new Set<string>();
  const visit = (file: string) => {
    if (loaded.has(file)) return;
    loaded.add(file);
    const text = readFileSync(join(SRC, file), "utf8");
    for (const match of text.matchAll(valueImport)) {
      const target = match[1] ?? match[2]!;
      visit(relative(SRC, resolve(SRC, dirname(file), target)).replace(/\.js$/, ".ts"));
    }
  };
  for (const entry of entries) visit(entry);
  return loaded;
}
