#!/usr/bin/env python3
"""Calls the remote functions of examples/remote-function/handler.ts through the local platform, the way
the Python toolkit does: arguments as base64 cloudpickle in a FunctionRequest, the result decoded back.

usage: FLASH_URL=http://127.0.0.1:8000 FLASH_API_KEY=<key> FLASH_ENDPOINT=<id> python3 client.py [function] [json-args]
"""
import base64
import json
import os
import sys
import urllib.request

import cloudpickle


def call(function_name, *args, **kwargs):
    request = {
        "function_name": function_name,
        "args": [base64.b64encode(cloudpickle.dumps(a)).decode() for a in args],
        "kwargs": {k: base64.b64encode(cloudpickle.dumps(v)).decode() for k, v in kwargs.items()},
    }
    url = f"{os.environ['FLASH_URL']}/v2/{os.environ['FLASH_ENDPOINT']}/runsync"
    body = json.dumps({"input": request}).encode()
    http = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {os.environ['FLASH_API_KEY']}",
        "Content-Type": "application/json",
    })
    with urllib.request.urlopen(http, timeout=120) as answer:
        job = json.load(answer)
    if job.get("status") != "COMPLETED" or job.get("error"):
        raise RuntimeError(f"Remote execution failed: {job.get('error') or job}")
    output = job["output"]
    if not output.get("success"):
        raise RuntimeError(f"Remote execution failed: {output.get('error')}")
    return cloudpickle.loads(base64.b64decode(output["result"]))


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "add"
    args = json.loads(sys.argv[2]) if len(sys.argv) > 2 else [2, 3]
    print(repr(call(name, *args)))
    # Values JSON cannot carry still make the round trip with their types.
    value = {"big": 2**100, "tuple": (1, "a"), "bytes": b"\x00\xff", "set": {1, 2}, "float": 1.0, (1, 2): None}
    back = call("echo", value)
    print("echo round trip:", back == value and type(back["tuple"]) is tuple and type(back["float"]) is float)
