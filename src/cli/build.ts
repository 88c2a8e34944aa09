// `flash build`: bundles the app into .flash/artifact.tar.gz and prints its endpoints and size.
import { relative } from "node:path";
import { buildArtifact, buildNotes, formatSize } from "../toolkit/bundle/index.js";
import { toolkitLogger } from "../toolkit/log.js";
import { type CommandSpec, fail, isUserError, NODE_VERSION_OPTION, parseCommandArgs } from "./options.js";

export const spec = {
  name: "build",
  args: "[files...]",
  summary: "bundle the app into .flash/artifact.tar.gz (sources and a manifest of its endpoints)",
  options: { nodeVersion: NODE_VERSION_OPTION },
} satisfies CommandSpec;

/** `flash build [entry files...] [--node-version V]` */
export async function run(args: string[]): Promise<number> {
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    const log = toolkitLogger().child({ subject: "build" });
    const result = await buildArtifact({
      entries: positional,
      nodeVersion: options.nodeVersion,
      log,
    });
    const { manifest } = result;
    process.stdout.write(
      [
        `✓ built ${manifest.projectName}  ${manifest.files} files, ${manifest.endpoints.length} endpoint(s), ${formatSize(result.bytes)}, Node.js ${manifest.nodeVersion}`,
        ...manifest.endpoints.map(
          (e) =>
            `  ${e.name} (${e.kind}, ${e.file})${e.routes.length > 0 ? `: ${e.routes.map((r) => `${r.method} ${r.path}`).join(", ")}` : ""}`,
        ),
        ...buildNotes(result),
        `  Archive: ${relative(process.cwd(), result.artifact)}`,
        "",
      ].join("\n"),
    );
    return 0;
  } catch (err) {
    if (isUserError(err)) return fail(err.message);
    throw err;
  }
}
