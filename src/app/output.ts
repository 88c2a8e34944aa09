// What a remote function writes to stdout and stderr during its call, captured per call (concurrent calls
// each get their own text) and still passed through, as the toolkit's FunctionResponse.stdout carries it.
import { AsyncLocalStorage } from "node:async_hooks";

type Write = typeof process.stdout.write;

const calls = new AsyncLocalStorage<string[]>();
let installed = false;

/** Wraps a stream's write once: inside a captured call the text is also kept for that call. */
function tap(stream: NodeJS.WriteStream): void {
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  stream.write = ((chunk: unknown, ...rest: unknown[]) => {
    const into = calls.getStore();
    if (into !== undefined)
      into.push(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8"));
    return write(chunk, ...rest);
  }) as Write;
}

/** Runs `call` and returns what it wrote to stdout and stderr meanwhile, with its outcome. */
export async function captureOutput<T>(
  call: () => Promise<T>,
): Promise<{ ok: true; value: T; output: string } | { ok: false; error: unknown; output: string }> {
  if (!installed) {
    tap(process.stdout);
    tap(process.stderr);
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
