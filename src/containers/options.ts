// The container tool's variables, read by the programs that build or run images (deploy, image, the local platform).
import { ConfigError, nonEmpty, type OptionTable, type Values } from "../options/index.js";
import type { ContainerToolName, ContainerToolOptions } from "./tool.js";

function containerTool(raw: string, source: string): ContainerToolName {
  if (raw === "buildah" || raw === "podman" || raw === "docker") return raw;
  throw new ConfigError(`Invalid container tool "${raw}" in ${source}: expected buildah, podman or docker`);
}

export const CONTAINER_OPTIONS = {
  /** Container tool for image builds and deployed workers (FLASH_CONTAINER_TOOL). */
  containerTool: { env: ["FLASH_CONTAINER_TOOL"], parse: containerTool },
  /** buildah/podman storage folder (vfs) instead of the machine's default storage. */
  containerStorage: { env: ["FLASH_CONTAINER_STORAGE"], parse: nonEmpty },
  /** Node base the runtime image is built on when it must be built here. */
  nodeBaseImage: { env: ["FLASH_NODE_BASE_IMAGE"], parse: nonEmpty },
  /** Where releases publish the runtime images: pulled as <repo>:<version>-<kind> before building them here. */
  imageRepo: { env: ["FLASH_IMAGE_REPO"], parse: nonEmpty },
} as const satisfies OptionTable;

/** The tool settings those variables give. */
export function containerToolOptions(values: Values<typeof CONTAINER_OPTIONS>): ContainerToolOptions {
  return { tool: values.containerTool, storage: values.containerStorage };
}
