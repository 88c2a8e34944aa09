#!/usr/bin/python3
"""A long-lived Python peer for the payload interop tests: one JSON request per stdin line, one answer per line.

Requests: {"id": n, "op": ..., ...}
  loads_canon  {"b64"}                 -> {"canon"}   cloudpickle.loads, then a canonical, type-strict text
  canon_typed  {"typed"}               -> {"canon"}   the same text for the value a typed tree describes
  dumps_typed  {"typed", "protocol"}   -> {"b64"}     cloudpickle.dumps of that value (protocol null = default)
  echo         {"b64", "protocol"}     -> {"b64"}     loads then dumps again (a Python-side round trip)
  verdicts     {"cases": [b64, ...]}   -> {"verdicts"} each case loaded by CPython's own unpickler, its address
                                          space bounded (mutated lengths would allocate gigabytes): {"canon"},
                                          {"error"}, {"nomem": true} (no verdict) or {"notplain"} (a class or
                                          function); pickle.loads itself, with globals outside the decoder's
                                          allow-list refused by an audit hook before anything is imported
Failures answer {"id": n, "error": "<type>: <message>"}.

The canonical text keeps every type apart (int/float/bool, bytes/bytearray, list/tuple, set/frozenset), prints
floats with repr (nan, -0.0), sorts set items and dict entries (their order is not part of the value) and marks
shared or recursive lists, dicts and sets as #n / @n; an int beyond 4,300 decimal digits is written in hex.
"""

import base64
import json
import pickle
import resource
import sys

import cloudpickle


DECIMAL_CEILING = 10**4300


def canon(v, seen=None):
    if seen is None:
        seen = {}
    t = type(v)
    if v is None:
        return "None"
    if t is bool:
        return f"bool:{v}"
    if t is int:
        # beyond str()'s 4,300 digits (sys.int_info.default_max_str_digits), hex: it has no limit
        return f"int:{v}" if abs(v) < DECIMAL_CEILING else f"int:{v:#x}"
    if t is float:
        return f"float:{v!r}"
    if t is str:
        return "str:" + json.dumps(v, ensure_ascii=True)
    if t is bytes:
        return f"bytes:{v.hex()}"
    if t is bytearray:
        return f"bytearray:{v.hex()}"
    if t is tuple:
        return "tuple(" + ",".join(canon(x, seen) for x in v) + ")"
    if t is frozenset:
        return "frozenset{" + ",".join(sorted(canon(x, seen) for x in v)) + "}"
    if t in (list, dict, set):
        if id(v) in seen:
            return f"@{seen[id(v)]}"
        n = seen[id(v)] = len(seen)
        if t is list:
            return f"#{n}list[" + ",".join(canon(x, seen) for x in v) + "]"
        if t is set:
            return f"#{n}set{{" + ",".join(sorted(canon(x, seen) for x in v)) + "}"
        items = sorted(canon(k, seen) + ":" + canon(x, seen) for k, x in v.items())
        return f"#{n}dict{{" + ",".join(items) + "}"
    raise TypeError(f"not plain data: {t.__name__}")


def from_typed(t, ids=None):
    if ids is None:
        ids = {}
    k = t["t"]
    if k == "none":
        return None
    if k in ("bool", "str"):
        return t["v"]
    if k == "int":
        return int(t["v"])
    if k == "float":
        return float(t["v"])
    if k == "bytes":
        return base64.b64decode(t["b64"])
    if k == "bytearray":
        return bytearray(base64.b64decode(t["b64"]))
    if k == "ref":
        return ids[t["id"]]
    if k == "list":
        out = ids[t["id"]] = []
        out.extend(from_typed(x, ids) for x in t["v"])
        return out
    if k == "set":
        out = ids[t["id"]] = set()
        out.update(from_typed(x, ids) for x in t["v"])
        return out
    if k == "dict":
        out = ids[t["id"]] = {}
        for key, x in t["v"]:
            out[from_typed(key, ids)] = from_typed(x, ids)
        return out
    if k in ("tuple", "frozenset"):
        out = (tuple if k == "tuple" else frozenset)(from_typed(x, ids) for x in t["v"])
        ids[t["id"]] = out
        return out
    raise ValueError(f"unknown typed tag {k}")


# the decoder's allow-list (src/payload/globals.ts): anything else is refused before it is imported or called
ALLOWED = {("builtins", n) for n in ("set", "frozenset", "bytearray", "bytes")} | {("_codecs", "encode")}
MEMORY_LIMIT = 1 << 30
# set once a verdicts request came: the memory bound and the audit hook last for the process
GUARDED = []


def refuse_globals(event, args):
    """An audit hook: CPython's unpickler announces every find_class before it imports anything."""
    if event == "pickle.find_class":
        module, name = args
        # Python 2's __builtin__ passes as builtins; CPython itself decides by protocol whether it exists
        if ("builtins" if module == "__builtin__" else module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"global '{module}.{name}' is refused")


def verdict(data):
    try:
        value = pickle.loads(data)
    except MemoryError:
        return {"nomem": True}
    except RecursionError:
        return {"nomem": True}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    try:
        return {"canon": canon(value)}
    except TypeError as e:
        return {"notplain": str(e)}
    except RecursionError:
        return {"nomem": True}


def handle(req):
    op = req["op"]
    if op == "loads_canon":
        return {"canon": canon(cloudpickle.loads(base64.b64decode(req["b64"])))}
    if op == "canon_typed":
        return {"canon": canon(from_typed(req["typed"]))}
    if op == "dumps_typed":
        v = from_typed(req["typed"])
        p = req.get("protocol")
        data = cloudpickle.dumps(v) if p is None else cloudpickle.dumps(v, protocol=p)
        return {"b64": base64.b64encode(data).decode()}
    if op == "echo":
        v = cloudpickle.loads(base64.b64decode(req["b64"]))
        return {"b64": base64.b64encode(cloudpickle.dumps(v, protocol=req.get("protocol") or 5)).decode()}
    if op == "verdicts":
        if not GUARDED:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            sys.addaudithook(refuse_globals)
            GUARDED.append(True)
        return {"verdicts": [verdict(base64.b64decode(b)) for b in req["cases"]]}
    raise ValueError(f"unknown op {op}")


def main():
    for line in sys.stdin:
        req = json.loads(line)
        try:
            out = handle(req)
        except Exception as e:  # the test reads the failure, the peer keeps serving
            out = {"error": f"{type(e).__name__}: {e}"}
        out["id"] = req["id"]
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
