// `flash run`'s test input: found and parsed before any model server starts, so a wrong file costs no load.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { WorkerConfig } from "./options.js";

/** The most a test input may hold: the platform's /runsync body limit, so what runs here would be accepted there. */
export const TEST_INPUT_LIMIT_BYTES = 20 * 1024 * 1024;

/** The test input as parsed, and where it came from (`--test_input` or a file's path). */
export interface TestInput {
  parsed: unknown;
  source: string;
}

/** Where test_input.json is looked for, in order: beside the handler file (its own), then the current folder. */
export function testInputCandidates(file: string | undefined): string[] {
  const here = resolve("test_input.json");
  const beside = file ? join(dirname(resolve(file)), "test_input.json") : undefined;
  return beside && beside !== here ? [beside, here] : [here];
}

/**
 * Reads and parses the test input: --test_input, else the first of `testInputCandidates` that exists.
 * `missing` when there is none; otherwise a message naming the source when it is not JSON.
 */
export function readTestInput(config: WorkerConfig): TestInput | { missing: string[] } | string {
  let text: string;
  let source: string;
  if (config.testInput !== undefined) {
    text = config.testInput;
    source = "--test_input";
  } else {
    const candidates = testInputCandidates(config.file);
    const found = candidates.find((path) => existsSync(path));
    if (!found) return { missing: candidates };
    source = found;
    const stat = statSync(found);
    if (!stat.isFile()) return `Test input ${found} is not a file`;
    if (stat.size > TEST_INPUT_LIMIT_BYTES) return tooBig(found, stat.size);
    text = readFileSync(found, "utf8");
  }
  if (Buffer.byteLength(text) > TEST_INPUT_LIMIT_BYTES) return tooBig(source, Buffer.byteLength(text));
  try {
    return { parsed: JSON.parse(text) as unknown, source };
  } catch (err) {
    return `Test input from ${source} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function tooBig(source: string, bytes: number): string {
  const mb = (n: number) => (n / (1024 * 1024)).toFixed(1);
  return `Test input from ${source} is ${mb(bytes)} MB; a job's input is at most ${mb(TEST_INPUT_LIMIT_BYTES)} MB (the platform's /runsync limit)`;
}
