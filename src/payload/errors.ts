// Errors of the payload codec; their messages are the texts of docs/toolkit.md §3.2 where one exists.
import { type ErrorCode, FlashError } from "../flash-error.js";

/** One class for every payload over its limit, shared with the endpoint client. */
export { PayloadTooLargeError } from "../flash-error.js";

import { DESERIALIZE_TIMEOUT_SECONDS } from "./limits.js";

/** A pickle that cannot be decoded or a value that cannot be encoded; the message says why. */
export class PickleError extends FlashError {
  readonly code: ErrorCode = "PICKLE_INVALID";
  override name = "PickleError";
}

/** The decoder refused a global (a class, function or module attribute): nothing was resolved or run. */
export class PickleGlobalError extends PickleError {
  override readonly code = "PICKLE_GLOBAL_REFUSED";
  override name = "PickleGlobalError";
  constructor(
    readonly module: string,
    readonly qualname: string,
    detail: string,
  ) {
    super(`refusing global '${shortName(`${module}.${qualname}`)}': ${detail}`);
  }
}

/** Names quoted in a message are cut here: a hostile pickle's name may fill the whole payload. */
const MAX_QUOTED_NAME = 200;

function shortName(name: string): string {
  return name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}…` : name;
}

/** docs/toolkit.md §3.2 `DeserializeTimeoutError`: decoding ran past its wall-clock budget. */
export class DeserializeTimeoutError extends FlashError {
  readonly code = "DESERIALIZE_TIMEOUT";
  override name = "DeserializeTimeoutError";
  constructor(seconds: number = DESERIALIZE_TIMEOUT_SECONDS) {
    super(`Deserialization timed out after ${seconds}s`);
  }
}

/** Any failure of (de)serializing one argument, wrapped as docs/toolkit.md §3.2 words it. */
export class SerializationError extends FlashError {
  readonly code = "SERIALIZATION_FAILED";
  override name = "SerializationError";
}
