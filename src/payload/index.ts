// The payload codec: pickle for remote functions (docs/toolkit.md §2–§3), base64 limits, a pure dispatcher.
/**
 * Python ↔ JS value mapping (decode → encode gives Python back the same value and type):
 *
 * | Python                     | JS (decoded)                                   | encoded from                               |
 * |----------------------------|------------------------------------------------|--------------------------------------------|
 * | None                       | `null`                                         | `null`, `undefined`                        |
 * | bool                       | `boolean`                                      | `boolean`                                  |
 * | int, \|n\| ≤ 2^53−1          | `number`                                       | integral `number` in that range            |
 * | int beyond that            | `bigint`                                       | any `bigint`                               |
 * | float, not integral        | `number` (also NaN, ±inf, −0.0, \|x\| ≥ 2^53)   | `number` that is not a safe integer, or −0 |
 * | float, integral (1.0)      | `PyFloat` (`.value`, `valueOf()`)              | `PyFloat`                                  |
 * | str                        | `string` (lone surrogates kept)                | `string`                                   |
 * | bytes                      | `Uint8Array` (a copy, never a view of input)   | `Uint8Array` / `Buffer`                    |
 * | bytearray                  | `Uint8Array` tagged: `isByteArray()`           | `bytearray(data)`                          |
 * | list                       | `Array`                                        | `Array`                                    |
 * | tuple                      | frozen `Array` tagged: `isTuple()`             | `tuple(...items)`                          |
 * | set                        | `Set`                                          | `Set`                                      |
 * | frozenset                  | `Set` tagged: `isFrozenSet()`                  | `frozenset(items)`                         |
 * | dict, all keys str         | plain object (`__proto__` is an own property)  | plain object / class instance (own keys)   |
 * | dict, any other key        | `Map`                                          | `Map`                                      |
 *
 * Shared and recursive references keep their identity both ways. A plain object's integer-like keys
 * ("1", "2") are listed first by JS, so such a dict comes back equal but possibly reordered. Tags are
 * non-enumerable Symbol.for properties on the values (a WeakSet kept on globalThis for frozen ones; PyFloat
 * has a Symbol.for brand), so values made by any copy of the package are recognised by all; a copy (`[...t]`,
 * `new Set(s)`) is a plain list / set again.
 *
 * Remote functions decode their arguments with `floats: "number"` unless registered with `exact: true`:
 * an integral float arrives as a plain number, and declared types (pytypes.ts) say what goes back as float.
 */
export {
  b64decode,
  deserializeArg,
  deserializeArgs,
  deserializeKwargs,
  serializeArg,
  serializeResult,
} from "./base64.js";
export { type DecodeOptions, decode } from "./decode.js";
export { type EncodeOptions, encode, type Protocol } from "./encode.js";
export {
  DeserializeTimeoutError,
  PayloadTooLargeError,
  PickleError,
  PickleGlobalError,
  SerializationError,
} from "./errors.js";
export { type Json, MAX_JSON_NODES, toJson } from "./json.js";
export {
  DESERIALIZE_TIMEOUT_SECONDS,
  MAX_COPIED_ITEMS,
  MAX_DEPTH,
  MAX_MEMO_ENTRIES,
  MAX_PAYLOAD_BASE64_CHARS,
} from "./limits.js";
export { convert, formatPyType, type PyType, PyTypeError, parsePyType, TypeMismatch } from "./pytypes.js";
export {
  type Captured,
  createRemoteDispatcher,
  type DispatcherOptions,
  declaredTypes,
  functionResponse,
  isFunctionRequest,
  MAX_INSTANCES,
  type RemoteClass,
  RemoteDispatcher,
  type RemoteEntry,
  type RemoteFunction,
  type RemoteRegistry,
  type RemoteTarget,
} from "./remote.js";
export type { FunctionRequest, FunctionResponse, InstanceInfo } from "./types.js";
export {
  asByteArray,
  asFrozenSet,
  asTuple,
  bytearray,
  frozenset,
  isByteArray,
  isFrozenSet,
  isPyFloat,
  isTuple,
  PyFloat,
  pythonTypeName,
  type Tuple,
  tuple,
} from "./values.js";
