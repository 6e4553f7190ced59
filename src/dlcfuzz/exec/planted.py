"""A handler with planted misbehaviour, to prove the pool's isolation (tests only).

Payload: JSON {"do": COMMAND, "data": ...}. Commands: echo (returns data as JSON), segfault,
abort, exit (os._exit(3)), hang (sleeps), spin (busy loop holding the GIL), alloc (grows without
bound), raise (ValueError("planted")), memoryerror, spawn_child_and_hang (starts `sleep 1000`,
reports its pid as progress "child PID", hangs), progress (progress("step 1"), then segfault),
child_alloc (a grandchild grows without bound), garbage (corrupts the frame stream), sleep (data seconds, then echo), work (data seconds of CPU time, then echo), stderr (writes data to stderr, then echo), note (progress(data),
then echo), retire (retire_after_task(data), then its pid), pid (its pid), badreturn (a str), mkdtemp_and_hang (makes a temporary folder, reports its path as progress
"tmp PATH", hangs: what a compiler's cache folder does when its worker is killed).
init: {"fail_startup": true} makes the factory raise; {"startup_crash": true} segfaults in it;
{"startup_sleep": S} delays it.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from dlcfuzz.exec.pool import progress, retire_after_task


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Factory: checks the planted startup faults, returns handle(payload) -> bytes."""
    if init.get("fail_startup"):
        raise RuntimeError("planted startup failure: compiler not installed")
    if init.get("startup_crash"):
        ctypes.string_at(0)
    if init.get("startup_sleep"):
        time.sleep(float(init["startup_sleep"]))

    def handle(payload: bytes) -> bytes:
        cmd = json.loads(payload)
        do, data = cmd["do"], cmd.get("data")
        if do == "echo":
            return json.dumps(data).encode()
        if do == "retire":
            retire_after_task(str(data))
            return json.dumps(os.getpid()).encode()
        if do == "pid":
            return json.dumps(os.getpid()).encode()
        if do == "segfault":
            ctypes.string_at(0)
        if do == "abort":
            os.abort()
        if do == "exit":
            os._exit(3)
        if do == "hang":
            while True:
                time.sleep(1)
        if do == "spin":
            while True:
                pass
        if do == "alloc":
            hog = []
            while True:
                chunk = bytearray(10 << 20)
                chunk[::4096] = b"x" * len(range(0, len(chunk), 4096))  # touch every page
                hog.append(chunk)
        if do == "raise":
            raise ValueError("planted")
        if do == "memoryerror":
            raise MemoryError("planted")
        if do == "spawn_child_and_hang":
            child = subprocess.Popen(["sleep", "1000"])
            progress(f"child {child.pid}")
            while True:
                time.sleep(1)
        if do == "child_alloc":
            hog = "x = []\nwhile True:\n    x.append(bytearray(b'x') * (10 << 20))\n"
            subprocess.Popen([sys.executable, "-c", hog]).wait()
        if do == "garbage":  # corrupts the frame stream, then hangs
            from dlcfuzz.exec import pool

            os.write(pool._worker_chan.wfd, b"\x05\x00\x00\x00\x00\x00\x00\x00hello")
            while True:
                time.sleep(1)
        if do == "mkdtemp_and_hang":
            import tempfile

            progress(f"tmp {tempfile.mkdtemp(prefix='planted-')}")
            while True:
                time.sleep(1)
        if do == "progress":
            progress("step 1")
            ctypes.string_at(0)
        if do == "sleep":
            time.sleep(float(data))
            return json.dumps(data).encode()
        if do == "work":
            until = time.process_time() + float(data)
            while time.process_time() < until:
                pass
            return json.dumps(data).encode()
        if do == "badreturn":
            return str(data)
        if do == "note":
            progress(str(data))
            return json.dumps(data).encode()
        if do == "stderr":
            print(data, file=sys.stderr, flush=True)
            return json.dumps(data).encode()
        raise ValueError(f"unknown command {do!r}")

    return handle
