// This package's version, read once from package.json.
import { readFileSync } from "node:fs";

/** This package's version, sent where runpod-python sends its SDK version (`runpod_version`). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;
