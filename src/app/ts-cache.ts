// TypeScript handlers on a Node without type stripping: compiled once by esbuild into a cache keyed by content.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { BuildResult, OnResolveArgs, PluginBuild } from "esbuild";

/** What the cache remembers about one handler file: the sources it was built from and what it imports. */
interface Manifest {
  /** The compiled module's file name in the cache folder, named by the hash of everything below. */
  module: string;
  /** Each bundled source (and the tsconfig.json that shaped it) with the sha256 of its content. */
  inputs: { path: string; sha256: string }[];
  /** Packages the module imports by absolute path, resolved when it was built. */
  externals: string[];
}

/** Bumped when the way modules are built changes, so older cache entries are never reused. */
const FORMAT = 1;

/**
 * Code that means something else once moved into the cache folder (its own location, CommonJS globals):
 * such files go through tsx, which runs them in place.
 */
const LOCATION_BOUND = /\bimport\.meta\b|\b__dirname\b|\b__filename\b|\brequire\s*\(|\bmodule\.exports\b/;

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex");

/** FLASH_TS_CACHE, else $XDG_CACHE_HOME/flash-worker/ts, else ~/.cache/flash-worker/ts (tmp when there is no home). */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FLASH_TS_CACHE) return resolve(env.FLASH_TS_CACHE);
  const base = env.XDG_CACHE_HOME || (homedir() ? join(homedir(), ".cache") : tmpdir());
  return join(base, "flash-worker", "ts");
}

/** The tsconfig.json esbuild would read for this file: the nearest one above it. */
function nearestTsconfig(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const candidate = join(dir, "tsconfig.json");
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/** The cached module's path when every recorded source still has the content it was built from. */
function lookup(dir: string, file: string): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, `${sha256(file)}.json`), "utf8")) as Manifest;
  } catch {
    return undefined;
  }
  if (nearestTsconfig(file) !== manifest.inputs.find((i) => i.path.endsWith("tsconfig.json"))?.path)
    return undefined;
  for (const input of manifest.inputs) {
    try {
      if (sha256(readFileSync(input.path)) !== input.sha256) return undefined;
    } catch {
      return undefined;
    }
  }
  if (!manifest.externals.every((path) => existsSync(path))) return undefined;
  const module = join(dir, manifest.module);
  return existsSync(module) ? module : undefined;
}

/** Writes through a temporary name, so a worker starting beside this one never reads half a file. */
function writeAtomic(path: string, data: string): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, data);
  renameSync(temp, path);
}

/**
 * Bundles the handler and its local imports into one ES module; packages stay imports, resolved now to
 * absolute paths (as Node would resolve them from the handler) since the module lives elsewhere.
 * Undefined when the sources need to run in place or esbuild has anything to say about them.
 */
async function compile(dir: string, file: string): Promise<string | undefined> {
  const esbuild = await import("esbuild");
  // A second context that reads no tsconfig resolves packages as Node does: no `paths` aliases, no `module` field.
  let nodeResolver: PluginBuild | undefined;
  const resolverContext = await esbuild.context({
    bundle: true,
    platform: "node",
    format: "esm",
    conditions: [],
    mainFields: ["main"],
    tsconfigRaw: "{}",
    write: false,
    plugins: [
      {
        name: "flash-node-resolver",
        setup: (build) => {
          nodeResolver = build;
        },
      },
    ],
  });
  const externals = new Set<string>();
  let result: BuildResult<{ metafile: true; write: false }>;
  try {
    result = await esbuild.build({
      entryPoints: [file],
      outdir: dir, // source map paths relative to the cached module
      bundle: true,
      write: false,
      format: "esm",
      platform: "node",
      target: `node${process.versions.node}`,
      sourcemap: "inline",
      sourcesContent: false,
      metafile: true,
      logLevel: "silent",
      plugins: [
        {
          name: "flash-externals",
          setup(build: PluginBuild) {
            build.onResolve({ filter: /^[^./]/ }, async (args: OnResolveArgs) => {
              if (args.path.startsWith("node:") || !nodeResolver) return undefined;
              const found = await nodeResolver.resolve(args.path, {
                kind: args.kind,
                resolveDir: args.resolveDir,
              });
              // Unresolvable as a package: a tsconfig `paths` alias to local sources, bundled as tsx would.
              if (found.errors.length > 0 || !isAbsolute(found.path)) return undefined;
              // A package shipped as source fails the build (then the cache is skipped: caught below).
              if (!/\.(c|m)?js$|\.json$|\.node$/.test(found.path))
                return { errors: [{ text: `package source ${found.path}` }] };
              externals.add(found.path);
              return { path: pathToFileURL(found.path).href, external: true };
            });
          },
        },
      ],
    });
  } catch {
    return undefined;
  } finally {
    await resolverContext.dispose();
  }
  if (result.warnings.length > 0) return undefined;
  const inputs = Object.keys(result.metafile.inputs).map((p) => resolve(p));
  const sources = inputs.map((path) => ({ path, content: readFileSync(path) }));
  if (sources.some((s) => LOCATION_BOUND.test(s.content.toString("utf8")))) return undefined;
  const tsconfig = nearestTsconfig(file);
  if (tsconfig) sources.push({ path: tsconfig, content: readFileSync(tsconfig) });
  const code = result.outputFiles[0]?.text;
  if (code === undefined) return undefined;
  const manifest: Omit<Manifest, "module"> = {
    inputs: sources.map((s) => ({ path: s.path, sha256: sha256(s.content) })),
    externals: [...externals].sort(),
  };
  const key = sha256(
    JSON.stringify({ FORMAT, esbuild: esbuild.version, node: process.version, file, manifest }),
  );
  const module = `${key}.mjs`;
  mkdirSync(dir, { recursive: true });
  writeAtomic(join(dir, module), code);
  writeAtomic(join(dir, `${sha256(file)}.json`), JSON.stringify({ module, ...manifest }));
  return join(dir, module);
}

/**
 * The file URL of the handler compiled to JavaScript, built now or taken from the cache; undefined when it
 * must go through tsx (sources bound to their location, syntax esbuild warns about, no writable cache).
 */
export async function compiledHandler(file: string, dir = cacheDir()): Promise<string | undefined> {
  const cached = lookup(dir, file) ?? (await compile(dir, file).catch(() => undefined));
  if (!cached) return undefined;
  // Stack traces in error results point at the user's .ts lines, as they do under tsx.
  process.setSourceMapsEnabled(true);
  return pathToFileURL(cached).href;
}
