"""A handler with planted misbehaviour, to prove the pool's isolation (tests only).

The payload is JSON: {"do": "echo" | "segfault" | "abort" | "hang" | "alloc" | "raise" |
"memoryerror" | "spawn_child_and_hang" | "progress" | "exit", "data": ...}.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import time
from collections.abc import Callable


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    if init.get("fail_startup"):
        raise RuntimeError("planted startup failure: compiler not installed")

    def handle(payload: bytes) -> bytes:
        from dlcfuzz.exec.pool import progress

        cmd = json.loads(payload)
        do = cmd["do"]
        if do == "echo":
            return json.dumps(cmd.get("data")).encode()
        if do == "segfault":
            ctypes.string_at(0)
        if do == "abort":
            os.abort()
        if do == "hang":
            while True:
                time.sleep(1)
        if do == "alloc":
            hog = []
            while True:
                hog.append(bytearray(32 << 20))
                hog[-1][::4096] = b"x" * len(hog[-1][::4096])
        if do == "raise":
            raise ValueError("planted")
        if do == "memoryerror":
            raise MemoryError
        if do == "spawn_child_and_hang":
            child = subprocess.Popen(["sleep", "1000"])
            progress(f"child {child.pid}")
            while True:
                time.sleep(1)
        if do == "progress":
            progress("step 1")
            ctypes.string_at(0)
        if do == "exit":
            os._exit(3)
        raise ValueError(f"unknown command {do!r}")

    return handle
