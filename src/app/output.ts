// What a remote function writes to stdout and stderr during its call, captured per call (concurrent calls
// each get their own text) and still passed through, as the toolkit's FunctionResponse.stdout carries it.
import { AsyncLocalStorage } from "node:async_hooks";
import { tapStdio } from "../log/index.js";

const calls = new AsyncLocalStorage<string[]>();
let installed = false;

/** Inside a captured call, a chunk written to stdout or stderr is also kept for that call. */
function keep(chunk: unknown): void {
  const into = calls.getStore();
  if (into !== undefined)
    into.push(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8"));
}

/** Runs `call` and returns what it wrote to stdout and stderr meanwhile, with its outcome. */
export async function captureOutput<T>(
  call: () => Promise<T>,
): Promise<{ ok: true; value: T; output: string } | { ok: false; error: unknown; output: string }> {
  if (!installed) {
    tapStdio(keep);
    installed = true;
  }
  const chunks: string[] = [];
  try {
    const value = await calls.run(chunks, call);
    return { ok: true, value, output: chunks.join("") };
  } catch (error) {
    return { ok: false, error, output: chunks.join("") };
  }
}
