// Errors of the payload codec; their messages are the texts of flash-toolkit.md §3.2 where one exists.
import { DESERIALIZE_TIMEOUT_SECONDS, MAX_PAYLOAD_BASE64_CHARS } from "./limits.js";

/** A pickle that cannot be decoded or a value that cannot be encoded; the message says why. */
export class PickleError extends Error {
  override name = "PickleError";
}

/** The decoder refused a global (a class, function or module attribute): nothing was resolved or run. */
export class PickleGlobalError extends PickleError {
  override name = "PickleGlobalError";
  constructor(
    readonly module: string,
    readonly qualname: string,
    detail: string,
  ) {
    super(`refusing global '${module}.${qualname}': ${detail}`);
  }
}

/** flash-toolkit.md §3.2 `PayloadTooLargeError`: one base64 argument is longer than the limit. */
export class PayloadTooLargeError extends Error {
  override name = "PayloadTooLargeError";
  constructor(readonly chars: number) {
    const mb = (n: number): string => (n / (1024 * 1024)).toFixed(1);
    super(`Payload size ${mb(chars)} MB exceeds limit of ${mb(MAX_PAYLOAD_BASE64_CHARS)} MB`);
  }
}

/** flash-toolkit.md §3.2 `DeserializeTimeoutError`: decoding ran past its wall-clock budget. */
export class DeserializeTimeoutError extends Error {
  override name = "DeserializeTimeoutError";
  constructor(seconds: number = DESERIALIZE_TIMEOUT_SECONDS) {
    super(`Deserialization timed out after ${seconds}s`);
  }
}

/** Any failure of (de)serializing one argument, wrapped as flash-toolkit.md §3.2 words it. */
export class SerializationError extends Error {
  override name = "SerializationError";
}
