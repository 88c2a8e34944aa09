// Limits of the payload codec. The first two come from the interface document; the rest bound what
// a hostile pickle can make the decoder build.

/** docs/toolkit.md §3.1 `MAX_PAYLOAD_SIZE`: length of one base64 argument before decoding, 10 MiB; equal passes. */
export const MAX_PAYLOAD_BASE64_CHARS = 10 * 1024 * 1024;

/** docs/toolkit.md §3.1 `DESERIALIZE_TIMEOUT_SECONDS`: wall-clock budget of one decode call. */
export const DESERIALIZE_TIMEOUT_SECONDS = 30;

/** The decoder reads the clock once per this many opcodes (a power of two, used as a mask). */
export const CLOCK_CHECK_EVERY_OPS = 1 << 14;

/** Deepest nesting accepted; CPython's pickler stops near 1000 levels (default recursion limit). */
export const MAX_DEPTH = 2000;

/** Memo entries; a real pickle stores at most one per two input bytes, so 10 MB of base64 stays far below. */
export const MAX_MEMO_ENTRIES = 1 << 24;

/**
 * Items the allow-listed constructors (set, frozenset, bytes, bytearray, _codecs.encode) may copy in one decode:
 * one per input byte (a pickle writes every item it copies, so only memo-driven amplification copies more), at
 * least MIN_COPIED_ITEMS and at most MAX_COPIED_ITEMS.
 */
export const MAX_COPIED_ITEMS = 1 << 26;

/** The copy budget of a pickle shorter than this many bytes. */
export const MIN_COPIED_ITEMS = 1 << 16;

/** CPython's most decimal digits in an int read from text or written as text (sys.int_info.default_max_str_digits). */
export const MAX_STR_DIGITS = 4300;

/** Highest pickle protocol CPython 3.8+ writes and reads. */
export const HIGHEST_PROTOCOL = 5;
