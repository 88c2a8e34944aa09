#!/usr/bin/python3
"""Pickle test vectors made by real Python, for the payload decoder's tests.

Usage: /usr/bin/python3 test/unit/payload/gen_vectors.py [out.json]   (default: test/unit/payload/vectors.json)

Needs cloudpickle (Debian: apt-get install python3-cloudpickle). Re-executes itself with PYTHONHASHSEED=0
so set and frozenset order, and hence the output, is the same on every run.

Output: {"info": {...}, "vectors": [{"name", "expected", "payloads": [{"producer", "protocol", "b64"}]}]}
with `pickle.dumps` at protocols 0-5 and `cloudpickle.dumps` at 2-5 plus its default.

Typed expected values (the format of test/fixtures/pickle/*.json too):
  {"t":"none"} {"t":"bool","v":b} {"t":"int","v":"<decimal>"} {"t":"float","v":"<repr>"}
  {"t":"str","v":s} {"t":"bytes","b64":..} {"t":"bytearray","b64":..}
  {"t":"list"|"tuple"|"set"|"frozenset","id":N,"v":[...]} {"t":"dict","id":N,"v":[[k,v],...]}
  {"t":"ref","id":N}: a later occurrence of container N (shared or recursive reference).
"""

import base64
import json
import os
import pickle
import sys

if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import cloudpickle  # noqa: E402

CONTAINERS = (list, tuple, set, frozenset, dict)


def typed(v, ids):
    """The typed expected tree of v; ids maps id(container) to its number in first-seen order."""
    if isinstance(v, CONTAINERS) and not (isinstance(v, tuple) and len(v) == 0):
        if id(v) in ids:
            return {"t": "ref", "id": ids[id(v)]}
        ids[id(v)] = n = len(ids)
        if isinstance(v, dict):
            return {"t": "dict", "id": n, "v": [[typed(k, ids), typed(x, ids)] for k, x in v.items()]}
        return {"t": type(v).__name__, "id": n, "v": [typed(x, ids) for x in v]}
    if v is None:
        return {"t": "none"}
    if isinstance(v, bool):
        return {"t": "bool", "v": v}
    if isinstance(v, int):
        return {"t": "int", "v": str(v)}
    if isinstance(v, float):
        return {"t": "float", "v": repr(v)}
    if isinstance(v, str):
        return {"t": "str", "v": v}
    if isinstance(v, bytearray):
        return {"t": "bytearray", "b64": base64.b64encode(v).decode()}
    if isinstance(v, bytes):
        return {"t": "bytes", "b64": base64.b64encode(v).decode()}
    if isinstance(v, tuple):
        return {"t": "tuple", "id": -1, "v": []}
    raise TypeError(type(v))


def values():
    out = {}
    for n in [0, 1, -1, 255, 256, -256, 65535, 65536, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1,
              2**40 + 7, -(2**47), 2**53 - 1, -(2**53) + 1, 2**53, -(2**53), 2**63 - 1, 2**63, -(2**63) - 1,
              2**64, 10**30, -(10**30), 2**1000, -(2**1000) + 1, 2**2050, -(2**2050)]:
        out[f"int_{n}" if abs(n) < 2**64 else f"int_bits{n.bit_length()}{'_neg' if n < 0 else ''}"] = n
    for f in [0.0, -0.0, 1.0, -3.0, 0.5, 1e-310, 1.7976931348623157e308, float("nan"), float("inf"),
              float("-inf"), 2.0**53, 9007199254740991.0, -9007199254740991.0, 123456789.0, 1e16]:
        out[f"float_{f!r}"] = f
    strs = {"empty": "", "a": "a", "hello": "hello world", "latin1": "caf\xe9", "cjk": "\u65e5\u672c\u8a9e",
            "emoji": "\U0001f600 ok", "lone_high": "a\ud800", "lone_low": "\udc00z", "pair_split": "\ud83d x \ude00",
            "ctrl": "\x00\n\r\t\\ '\"", "escape_like": "\\u1234 \\U0001F600 not escapes", "long_ascii": "x" * 300,
            "long_mixed": "\xe9\u4e2d\U0001f600" * 40, "proto0_newline": "line1\nline2"}
    for k, s in strs.items():
        out[f"str_{k}"] = s
    out.update({
        "none": None, "true": True, "false": False,
        "bytes_empty": b"", "bytes_small": b"\x00\xff\x7f", "bytes_512": bytes(range(256)) * 2,
        "bytearray_empty": bytearray(), "bytearray_small": bytearray(b"abc"), "bytearray_300": bytearray(range(100)) * 3,
        "list_empty": [], "tuple_empty": (), "dict_empty": {}, "set_empty": set(), "frozenset_empty": frozenset(),
        "tuple1": (1,), "tuple2": (1, "b"), "tuple3": (1, 2.5, None), "tuple5": (1, 2, 3, 4, 5),
        "nested": [1, [2, [3, (4, {"k": [5]})]]],
        "dict_str": {"a": 1, "b": [1, 2], "c": {"d": None}},
        "dict_int_keys": {1: "a", 2: "b", -5: "c", 2**70: "big"},
        "dict_misc_keys": {(1, 2): "tuple", None: 0, 1.5: "float", b"k": "bytes", frozenset({1}): "fs", True: "bool"},
        "dict_str_and_int_same": {1: "int", "1": "str"},
        "dict_proto_keys": {"__proto__": {"polluted": 1}, "constructor": {"prototype": {"x": 1}}, "toString": 2,
                            "hasOwnProperty": 3, "__defineGetter__": 4},
        "dict_index_like_keys": {"b": 1, "10": 2, "2": 3},
        "set_ints": {1, 2, 3}, "set_mixed": {1, "a", (1, 2), None, 2.5, b"x"},
        "frozenset_strs": frozenset({"x", "y"}), "set_of_frozensets": {frozenset({1}), frozenset({2, 3})},
        "list_1200": list(range(1200)), "dict_1200": {f"k{i}": i for i in range(1200)},
        "set_1200": set(range(1200)), "tuple_1100": tuple(range(1100)),
        "args_kwargs": ((1, "x", [2.5], {"k": (1, 2)}), {"flag": True, "n": None, "big": 2**80}),
    })
    deep = []
    cur = deep
    for _ in range(300):
        nxt = []
        cur.append(nxt)
        cur = nxt
    out["deep_list_300"] = deep
    t = (1, 2)
    x = [1]
    s = "a shared string"
    out["shared_list"] = [x, x, {"k": x}]
    out["shared_tuple"] = [t, t, (t,)]
    out["shared_str"] = [s, s, {s: s}]
    out["shared_bytes"] = [b"abcd", b"abcd"]
    rl = [1]
    rl.append(rl)
    out["recursive_list"] = rl
    rd = {"a": 1}
    rd["self"] = rd
    out["recursive_dict"] = rd
    ri = {}
    ri[1] = ri
    out["recursive_dict_int_key"] = ri
    rj = {}
    rj[1] = [rj, (rj,)]
    out["recursive_dict_int_key_nested"] = rj
    rk = {"s": None}
    rk[2] = {"back": rk}
    out["recursive_dict_str_then_int"] = rk
    lt = []
    lt.append((lt, "x"))
    out["recursive_via_tuple"] = lt
    ts = []
    tt = (ts, 1)
    ts.append(tt)
    out["recursive_tuple_first"] = tt
    return out


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors.json")
    vectors = []
    for name, v in values().items():
        payloads = []
        for p in range(0, 6):
            payloads.append({"producer": "pickle", "protocol": p, "b64": base64.b64encode(pickle.dumps(v, p)).decode()})
        for p in [2, 3, 4, 5, None]:
            data = cloudpickle.dumps(v) if p is None else cloudpickle.dumps(v, protocol=p)
            payloads.append({"producer": "cloudpickle", "protocol": "default" if p is None else p,
                             "b64": base64.b64encode(data).decode()})
        vectors.append({"name": name, "expected": typed(v, {}), "payloads": payloads})
    info = {"python": sys.version.split()[0], "cloudpickle": cloudpickle.__version__,
            "cloudpickle_default_protocol": cloudpickle.DEFAULT_PROTOCOL}
    with open(dest, "w") as f:
        json.dump({"info": info, "vectors": vectors}, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{dest}: {len(vectors)} values, {sum(len(v['payloads']) for v in vectors)} payloads", file=sys.stderr)


if __name__ == "__main__":
    main()
