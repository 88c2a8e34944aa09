// `flash build`: the app's shipped files and its manifest in `.flash/artifact.tar.gz` (docs/toolkit.md §8.1).
import { mkdirSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, posix, relative, resolve } from "node:path";
import { findHandlerFile } from "../../app/load.js";
import type { OpenApiDocument } from "../../app/openapi.js";
import type { Logger } from "../../log/index.js";
import { VERSION } from "../../version.js";
import { sourceDateEpoch, writeArchive } from "./archive.js";
import {
  dependencySpecs,
  installDependencies,
  type TargetPlatform,
  WORKER_PLATFORM,
} from "./dependencies.js";
import { BuildError, formatSize } from "./errors.js";
import { collectFiles, ignoreRules, type ProjectLink, readLink } from "./files.js";
import { checkLocalImports } from "./imports.js";
import { describeEndpoints, MANIFEST_NAME, type Manifest } from "./manifest.js";
import { targetNodeVersion } from "./node-version.js";

export { checkArtifact } from "./archive.js";
export { type TargetPlatform, WORKER_PLATFORM } from "./dependencies.js";
export { BuildError, formatSize } from "./errors.js";
export { BUILTIN_IGNORES, type ProjectLink } from "./files.js";
export { endpointSlug, MANIFEST_NAME, type Manifest, type ManifestEndpoint } from "./manifest.js";

/** The interface document's deployment tarball limit, 1.5 GB (the toolkit's 1500 MB). */
export const MAX_ARTIFACT_BYTES = 1500 * 1024 * 1024;
/** Where the artifact goes; delete the folder to rebuild from scratch. */
export const WORK_DIR = ".flash";
export const ARTIFACT_NAME = "artifact.tar.gz";

export interface BuildOptions {
  /** Project root (default: the working directory). */
  root?: string;
  /** Entry files, each defining one endpoint (default: handler.ts, handler.js, … in the working directory). */
  entries?: string[];
  /** --node-version. */
  nodeVersion?: string;
  /** The Node.js running the build (default: this one). */
  localNodeVersion?: string;
  maxBytes?: number;
  /** OS and CPU the app's npm dependencies are installed for (default: the workers', linux-x64). */
  target?: TargetPlatform;
  /** The npm command that installs them (default: `npm` on PATH). */
  npm?: string;
  /** Install them into the artifact (default true); a project Dockerfile installs its own. */
  installDependencies?: boolean;
  log?: Logger;
}

export interface BuildResult {
  artifact: string;
  manifest: Manifest;
  bytes: number;
  /** The project's symbolic links: shipped as links, or left out saying why. */
  links: ProjectLink[];
  /** The credential files and folders left out (docs/toolkit.md §8.1). */
  credentials: string[];
}

/** Archives report progress in quarters once they are this big. */
const PROGRESS_FILES = 200;

export async function buildArtifact(options: BuildOptions = {}): Promise<BuildResult> {
  const root = resolve(options.root ?? ".");
  const log = options.log;
  const entries = options.entries?.length
    ? options.entries.map((file) => resolve(root, file))
    : [findHandlerFile(undefined)];

  const rules = ignoreRules(root);
  for (const entry of entries) {
    const rel = relative(root, entry);
    if (rel.startsWith("..")) throw new BuildError(`Entry file ${entry} is outside the project root ${root}`);
    if (rules.ignores(rel.split("\\").join("/"))) {
      throw new BuildError(
        `Entry file ${rel} is excluded by the ignore rules (.gitignore, .flashignore or built-in defaults)`,
      );
    }
  }

  log?.info(`Collecting files in ${root}`);
  const { files, links, credentials, reachable } = collectFiles(root, rules);
  const sourceBytes = files.reduce((sum, file) => sum + file.size, 0);
  log?.info(`${files.length} files to ship (${formatSize(sourceBytes)})`);
  checkLocalImports(
    root,
    files.filter((file) => file.link === undefined).map((file) => file.path),
    reachable,
  );

  const documents = new Map<string, OpenApiDocument>();
  const endpoints = await describeEndpoints(root, entries, documents);
  const declared = new Map(
    endpoints.flatMap((e) => (e.nodeVersion ? [[e.name, e.nodeVersion] as const] : [])),
  );
  const nodeVersion = targetNodeVersion(options.nodeVersion, declared, options.localNodeVersion);
  const workDir = join(root, WORK_DIR);
  mkdirSync(workDir, { recursive: true });
  const specs = dependencySpecs(
    root,
    endpoints.flatMap((e) => e.dependencies),
    log,
  );
  const installed =
    options.installDependencies === false
      ? undefined
      : await installDependencies(root, workDir, specs, {
          target: options.target ?? WORKER_PLATFORM,
          log,
          npm: options.npm,
        });
  const packages = installed ? shippedPackages(root, installed) : { files: {}, links: new Map() };

  const manifest: Manifest = {
    version: "1.0",
    // SOURCE_DATE_EPOCH makes the artifact reproducible (archive.ts pins the entries' times to it too).
    generatedAt: new Date((sourceDateEpoch() ?? Date.now() / 1000) * 1000).toISOString(),
    projectName: basename(root),
    nodeVersion,
    flashWorkerVersion: VERSION,
    files: files.length,
    dependencies: Object.entries(specs).map(([name, range]) => `${name}@${range}`),
    endpoints,
  };

  const manifestPath = join(workDir, MANIFEST_NAME);
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  // Each endpoint's OpenAPI document beside the manifest, under the path its entry names.
  const extra: Record<string, string> = { [MANIFEST_NAME]: `${WORK_DIR}/${MANIFEST_NAME}` };
  for (const [path, document] of documents) {
    mkdirSync(dirname(join(workDir, path)), { recursive: true });
    writeFileSync(join(workDir, path), `${JSON.stringify(document, null, 2)}\n`);
    extra[path] = `${WORK_DIR}/${path}`;
  }
  const artifact = join(workDir, ARTIFACT_NAME);
  rmSync(artifact, { force: true });
  const total = files.length + Object.keys(packages.files).length;
  log?.info(`Archiving ${total} files into ${relative(root, artifact)}`);
  let reported = 0;
  await writeArchive(
    root,
    files.map((file) => file.path),
    { ...extra, ...packages.files },
    artifact,
    {
      links: new Map([
        ...files.flatMap((file) => (file.link === undefined ? [] : [[file.path, file.link] as const])),
        ...packages.links,
      ]),
      onProgress: (done, total) => {
        const quarter = Math.floor((done * 4) / total);
        if (total < PROGRESS_FILES || quarter === reported || quarter >= 4) return;
        reported = quarter;
        log?.info(`Archived ${quarter * 25}% (${done}/${total} files)`);
      },
    },
  );

  const bytes = statSync(artifact).size;
  const max = options.maxBytes ?? MAX_ARTIFACT_BYTES;
  if (bytes > max) {
    rmSync(artifact, { force: true });
    throw new BuildError(
      `Archive exceeds the maximum size: ${formatSize(bytes)} (${bytes} bytes), the maximum is ${formatSize(max)} (${max} bytes). Exclude large files through .flashignore or .gitignore, or keep them on a network volume.`,
    );
  }
  return { artifact, manifest, bytes, links, credentials };
}

/** The build summary's lines on what did not ship as content: links (and those left out, why), credential files. */
export function buildNotes(result: Pick<BuildResult, "links" | "credentials">): string[] {
  const line = (link: ProjectLink) =>
    `${link.path} → ${link.target}${link.leftOut ? ` (${link.leftOut})` : ""}`;
  const shipped = result.links.filter((link) => !link.leftOut).map(line);
  const leftOut = result.links.filter((link) => link.leftOut).map(line);
  const notes: string[] = [];
  if (shipped.length > 0) notes.push(`  Shipped as links: ${shipped.join(", ")}`);
  if (leftOut.length > 0) notes.push(`  Links left out, not followed: ${leftOut.join(", ")}`);
  if (result.credentials.length > 0) {
    notes.push(
      `  Left out as credentials (a !pattern in .flashignore ships one): ${result.credentials.join(", ")}`,
    );
  }
  return notes;
}

/**
 * The installed node_modules/ tree: archive name → path relative to the project root, and the targets its links
 * ship with; a link that reaches outside the project (a `file:` folder elsewhere) is left out.
 */
function shippedPackages(
  root: string,
  installDir: string,
): { files: Record<string, string>; links: Map<string, string> } {
  const modules = join(installDir, "node_modules");
  const realRoot = realpathSync(root);
  const installed = relative(realRoot, realpathSync(modules)).split("\\").join("/");
  const files: Record<string, string> = {};
  const links = new Map<string, string>();
  for (const entry of readdirSync(modules, { recursive: true, withFileTypes: true })) {
    if (entry.isDirectory()) continue;
    const full = join(entry.parentPath ?? entry.path, entry.name);
    const name = `node_modules/${relative(modules, full).split("\\").join("/")}`;
    if (entry.isSymbolicLink()) {
      const { inside } = readLink(realRoot, full);
      if (inside === undefined) continue;
      // Where the target lands in the artifact: the install's node_modules/ ships as node_modules/.
      const lands = inside.startsWith(`${installed}/`)
        ? `node_modules/${inside.slice(installed.length + 1)}`
        : inside;
      links.set(name, posix.relative(posix.dirname(name), lands) || ".");
    }
    files[name] = relative(root, full).split("\\").join("/");
  }
  return { files, links };
}
