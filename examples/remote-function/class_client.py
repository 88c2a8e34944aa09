#!/usr/bin/env python3
"""Class mode: constructs examples/remote-function/handler.ts's Counter on the worker and calls its methods,
keeping the instance between calls by instance_id, as the toolkit's class stubs do.

usage: FLASH_URL=http://127.0.0.1:8000 FLASH_API_KEY=<key> FLASH_ENDPOINT=<id> python3 class_client.py
"""
import base64
import json
import os
import urllib.request

import cloudpickle


def pickled(value):
    return base64.b64encode(cloudpickle.dumps(value)).decode()


def call_method(class_name, method_name, *args, constructor_args=(), instance_id=None, create_new_instance=True,
                **kwargs):
    request = {
        "execution_type": "class",                 # class mode instead of "function"
        "class_name": class_name,                  # the name given to remote(name, Class)
        "constructor_args": [pickled(a) for a in constructor_args],  # used when an instance is created
        "method_name": method_name,                # default "__call__"
        "args": [pickled(a) for a in args],
        "kwargs": {k: pickled(v) for k, v in kwargs.items()},
        "create_new_instance": create_new_instance,  # False: reuse the instance kept under instance_id
    }
    if instance_id is not None:
        request["instance_id"] = instance_id       # omitted: the worker makes one, "<ClassName>_<8 hex>"
    url = f"{os.environ['FLASH_URL']}/v2/{os.environ['FLASH_ENDPOINT']}/runsync"
    http = urllib.request.Request(url, data=json.dumps({"input": request}).encode(), method="POST", headers={
        "Authorization": f"Bearer {os.environ['FLASH_API_KEY']}",
        "Content-Type": "application/json",
    })
    with urllib.request.urlopen(http, timeout=120) as answer:
        output = json.load(answer)["output"]
    if not output.get("success"):
        raise RuntimeError(f"Remote execution failed: {output.get('error')}")
    # instance_info: class_name, created_at, method_calls, last_used; stdout: what the method printed
    return cloudpickle.loads(base64.b64decode(output["result"])), output["instance_id"], output["stdout"]


if __name__ == "__main__":
    first, instance_id, printed = call_method("Counter", "increment", 5, constructor_args=(10,))
    again, _, _ = call_method("Counter", "increment", 2, instance_id=instance_id, create_new_instance=False)
    print(first, again, instance_id.startswith("Counter_"), repr(printed))
