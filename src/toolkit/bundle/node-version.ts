// The Node.js version the workers run, one rule: --node-version, else the Endpoints' nodeVersion, else 24 (what
// the images ship). Never the local Node.js: it only has to be one the build can run the app's code on.
import { DEFAULT_NODE_VERSION, type NodeVersion, SUPPORTED_NODE_VERSIONS } from "../../app/settings.js";
import { BuildError } from "./errors.js";

const SUPPORTED = SUPPORTED_NODE_VERSIONS.join(", ");

/** The major of "22", "v22", "22.x", "22.11.0", or undefined. */
function major(version: string): string | undefined {
  return /^v?(\d+)(?:\.x|(?:\.\d+){1,2})?$/.exec(version.trim())?.[1];
}

function supported(version: string): NodeVersion | undefined {
  const found = major(version);
  return SUPPORTED_NODE_VERSIONS.find((v) => v === found);
}

/**
 * Picks the version to build for. `declared` holds each endpoint's nodeVersion by endpoint name.
 * The local Node.js must be supported too unless --node-version says what to build for: the build runs the app's code here.
 */
export function targetNodeVersion(
  flag: string | undefined,
  declared: ReadonlyMap<string, NodeVersion>,
  local: string = process.versions.node,
): NodeVersion {
  if (flag !== undefined) {
    const version = supported(flag);
    if (!version) throw new BuildError(`Node.js ${flag} is not supported. Supported versions: ${SUPPORTED}`);
    return version;
  }
  if (!supported(local)) {
    throw new BuildError(
      `Local Node.js ${local} is not supported. Supported versions: ${SUPPORTED}. Use --node-version <version>, set nodeVersion on the Endpoint, or switch to a supported Node.js.`,
    );
  }
  const distinct = new Set(declared.values());
  if (distinct.size > 1) {
    const list = [...declared].map(([name, version]) => `${name}=${version}`).join(", ");
    throw new BuildError(
      `An app runs one Node.js version across its endpoints (found ${list}). Set nodeVersion to the same value on every Endpoint, or pass --node-version.`,
    );
  }
  return [...distinct][0] ?? DEFAULT_NODE_VERSION;
}
