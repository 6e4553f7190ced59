"""A pool of persistent, sandboxed worker processes.

Each worker is a fresh interpreter (spawn semantics: `python -m dlcfuzz.exec.pool`) in its own
session, so a timeout kills its whole process tree. It imports its compiler once (the handler
factory) and then serves tasks over length-prefixed frames on its stdin/stdout. A segfault,
abort, hang or memory blow-up kills only that worker: the parent attributes it to the task in
flight and starts a new worker. Payloads are bytes; nothing is pickled.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

_HEADER = struct.Struct("<I")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_worker_out = None  # set inside a worker: where progress() writes


class WorkerStartupError(RuntimeError):
    """A worker could not start (e.g. its compiler is not installed)."""


@dataclass
class TaskResult:
    task_id: int
    status: str  # "ok" | "error" | "crash" | "timeout" | "oom"
    payload: bytes | None = None
    error: str | None = None
    signal: int | None = None
    exit_code: int | None = None
    progress: str | None = None
    stderr_tail: str = ""
    seconds: float = 0.0
    worker_restarted: bool = False


@dataclass
class PoolStats:
    tasks: int = 0
    crashes: int = 0
    timeouts: int = 0
    ooms: int = 0
    restarts: int = 0
    handler_s: float = 0.0
    started: float = field(default_factory=time.monotonic)


# ---- framing --------------------------------------------------------------


def _write_frame(f, kind: str, header: dict, body: bytes = b"") -> None:
    h = json.dumps({"kind": kind, **header}).encode()
    f.write(_HEADER.pack(len(h)) + h + _HEADER.pack(len(body)) + body)
    f.flush()


def _read_exact(f, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _read_frame(f) -> tuple[dict, bytes]:
    h = json.loads(_read_exact(f, _HEADER.unpack(_read_exact(f, 4))[0]))
    body = _read_exact(f, _HEADER.unpack(_read_exact(f, 4))[0])
    return h, body


def progress(note: str) -> None:
    """Called from inside a handler: tells the parent what the task is doing (kept if it crashes)."""
    if _worker_out is not None:
        _write_frame(_worker_out, "progress", {"note": note})


# ---- worker side ----------------------------------------------------------


def _set_pdeathsig() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _worker_main() -> None:
    global _worker_out
    import faulthandler

    faulthandler.enable(file=sys.stderr, all_threads=True)
    _set_pdeathsig()
    stdin = sys.stdin.buffer
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    # Handlers that print must not corrupt the frame stream.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _worker_out = out
    spec = json.loads(sys.argv[1])
    try:
        module, _, name = spec["handler"].partition(":")
        handle = getattr(importlib.import_module(module), name)(spec.get("init") or {})
    except BaseException as e:  # report why, then exit: the parent raises WorkerStartupError
        _write_frame(out, "startup_failed", {"error": f"{type(e).__name__}: {e}"})
        sys.exit(3)
    _write_frame(out, "ready", {"pid": os.getpid()})
    while True:
        try:
            header, body = _read_frame(stdin)
        except EOFError:
            return
        t0 = time.perf_counter()
        try:
            reply = handle(body)
            _write_frame(out, "result", {"status": "ok", "seconds": time.perf_counter() - t0}, reply)
        except MemoryError:
            _write_frame(out, "result", {"status": "oom", "error": "MemoryError raised in the handler",
                                         "seconds": time.perf_counter() - t0})
        except Exception as e:
            import traceback

            _write_frame(out, "result", {"status": "error", "error": f"{type(e).__name__}: {e}\n{traceback.format_exc()}",
                                         "seconds": time.perf_counter() - t0})


# ---- parent side ----------------------------------------------------------


class _Worker:
    def __init__(self, handler: str, init: dict, startup_timeout_s: float) -> None:
        arg = json.dumps({"handler": handler, "init": init})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dlcfuzz.exec.pool", arg],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, bufsize=0,
        )
        self.stderr: collections.deque[bytes] = collections.deque()
        self.stderr_len = 0
        self.stderr_lock = threading.Lock()
        self.stderr_mark = 0
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.task: tuple[int, float, float] | None = None  # (task_id, started, deadline)
        self.note: str | None = None
        self._buf = b""
        os.set_blocking(self.proc.stdout.fileno(), False)
        header = self._wait_frame(startup_timeout_s)
        if header is None or header[0].get("kind") != "ready":
            err = header[0].get("error") if header else f"no answer within {startup_timeout_s:.0f} s"
            tail = self.stderr_text()[-1500:]
            self.kill()
            raise WorkerStartupError(f"worker failed to start: {err}" + (f"\n{tail}" if tail and not header else ""))

    def _drain_stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            with self.stderr_lock:
                self.stderr.append(line)
                self.stderr_len += len(line)
                while self.stderr_len > 16384 and len(self.stderr) > 1:
                    self.stderr_len -= len(self.stderr.popleft())

    def stderr_text(self) -> str:
        with self.stderr_lock:
            return b"".join(self.stderr).decode(errors="replace")

    def read_frames(self) -> list[tuple[dict, bytes]]:
        """Frames available now (non-blocking); raises EOFError when the worker's stdout closed."""
        try:
            chunk = self.proc.stdout.read(1 << 20)
        except BlockingIOError:
            chunk = None
        if chunk == b"":
            raise EOFError
        if chunk:
            self._buf += chunk
        frames = []
        while True:
            if len(self._buf) < 4:
                break
            hl = _HEADER.unpack_from(self._buf)[0]
            if len(self._buf) < 8 + hl:
                break
            bl = _HEADER.unpack_from(self._buf, 4 + hl)[0]
            if len(self._buf) < 8 + hl + bl:
                break
            h = json.loads(self._buf[4:4 + hl])
            frames.append((h, self._buf[8 + hl:8 + hl + bl]))
            self._buf = self._buf[8 + hl + bl:]
        return frames

    def _wait_frame(self, timeout: float) -> tuple[dict, bytes] | None:
        end = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while time.monotonic() < end:
                sel.select(min(0.1, max(0.0, end - time.monotonic())))
                try:
                    frames = self.read_frames()
                except EOFError:
                    return None
                if frames:
                    return frames[0]
        finally:
            sel.close()
        return None

    def send(self, task_id: int, payload: bytes, timeout_s: float) -> None:
        now = time.monotonic()
        self.task = (task_id, now, now + timeout_s)
        self.note = None
        with self.stderr_lock:
            self.stderr.clear()
            self.stderr_len = 0
        _write_frame(self.proc.stdin, "task", {"id": task_id}, payload)

    def rss_bytes(self) -> int:
        """Resident memory of the worker's whole process group (its session)."""
        pgid = self.proc.pid
        total = 0
        try:
            pids = os.listdir("/proc")
        except OSError:
            return 0
        for p in pids:
            if not p.isdigit():
                continue
            try:
                with open(f"/proc/{p}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                if int(fields[2]) != pgid:  # field 5 (pgrp) after the comm field
                    continue
                with open(f"/proc/{p}/statm", "rb") as f:
                    total += int(f.read().split()[1]) * _PAGE
            except (OSError, ValueError, IndexError):
                continue
        return total

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                f.close()


class WorkerPool:
    """`jobs` persistent workers running `handler` ("module:factory"; factory(init) -> handle(bytes) -> bytes)."""

    def __init__(self, handler: str, init: dict | None = None, jobs: int = 1, timeout_s: float = 30.0,
                 memory_mb: int = 4096, startup_timeout_s: float = 120.0) -> None:
        self.handler = handler
        self.init = init or {}
        self.timeout_s = timeout_s
        self.memory_bytes = memory_mb << 20
        self.startup_timeout_s = startup_timeout_s
        self.stats = PoolStats()
        self._next_id = 0
        self._queue: collections.deque[tuple[int, bytes, float]] = collections.deque()
        self._done: collections.deque[TaskResult] = collections.deque()
        self._workers: list[_Worker] = []
        self._closed = False
        try:
            for _ in range(max(1, jobs)):
                self._workers.append(_Worker(handler, self.init, startup_timeout_s))
        except BaseException:
            self.close()
            raise
        self._last_rss = 0.0

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- submission ----------------------------------------------------
    def submit(self, payload: bytes, timeout_s: float | None = None) -> int:
        task_id = self._next_id
        self._next_id += 1
        self._queue.append((task_id, payload, timeout_s or self.timeout_s))
        self._dispatch()
        return task_id

    def _dispatch(self) -> None:
        for i, w in enumerate(self._workers):
            if not self._queue:
                return
            if w.task is None:
                task_id, payload, t = self._queue.popleft()
                try:
                    w.send(task_id, payload, t)
                except (BrokenPipeError, OSError):
                    # died while idle (e.g. killed from outside): respawn, retry this task on the new one
                    self._replace(i)
                    self._workers[i].send(task_id, payload, t)

    def _replace(self, i: int) -> None:
        self._workers[i].kill()
        self.stats.restarts += 1
        self._workers[i] = _Worker(self.handler, self.init, self.startup_timeout_s)

    # ---- completion ----------------------------------------------------
    def _finish(self, i: int, result: TaskResult) -> None:
        self.stats.tasks += 1
        self._done.append(result)
        if result.status in ("crash", "timeout", "oom"):
            self.stats.crashes += result.status == "crash"
            self.stats.timeouts += result.status == "timeout"
            self.stats.ooms += result.status == "oom"
            self._replace(i)  # even after a caught MemoryError: a fresh heap is cheaper than doubt
            result.worker_restarted = True
        else:
            self._workers[i].task = None

    def _kill_task(self, i: int, status: str, error: str) -> None:
        w = self._workers[i]
        task_id, started, _ = w.task
        w.kill()
        time.sleep(0.02)  # let the stderr thread drain the last lines
        sig = -w.proc.returncode if w.proc.returncode is not None and w.proc.returncode < 0 else None
        self._finish(i, TaskResult(task_id, status, error=error, signal=sig, exit_code=w.proc.returncode,
                                   progress=w.note, stderr_tail=w.stderr_text()[-4096:],
                                   seconds=time.monotonic() - started))

    def _poll(self, timeout: float) -> None:
        busy = [(i, w) for i, w in enumerate(self._workers) if w.task is not None]
        if not busy:
            return
        sel = selectors.DefaultSelector()
        for i, w in busy:
            sel.register(w.proc.stdout, selectors.EVENT_READ, i)
        now = time.monotonic()
        nearest = min(w.task[2] for _, w in busy)
        wait = max(0.0, min(timeout, nearest - now, 0.05))
        try:
            events = sel.select(wait)
        finally:
            sel.close()
        for key, _ in events:
            i = key.data
            w = self._workers[i]
            if w.task is None:
                continue
            try:
                frames = w.read_frames()
            except EOFError:
                w.proc.wait()
                time.sleep(0.02)
                code = w.proc.returncode
                task_id, started, _ = w.task
                if code is not None and code < 0:
                    name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
                    err = f"killed by signal {-code} ({name})"
                else:
                    err = f"worker exited with status {code}"
                self._finish(i, TaskResult(task_id, "crash", error=err, signal=-code if code and code < 0 else None,
                                           exit_code=code, progress=w.note, stderr_tail=w.stderr_text()[-4096:],
                                           seconds=time.monotonic() - started))
                continue
            for h, body in frames:
                if h["kind"] == "progress":
                    w.note = h["note"]
                elif h["kind"] == "result" and w.task is not None:
                    task_id, started, _ = w.task
                    self.stats.handler_s += h.get("seconds", 0.0)
                    status = h["status"]
                    self._finish(i, TaskResult(task_id, status, payload=body if status == "ok" else None,
                                               error=h.get("error"), progress=w.note,
                                               stderr_tail=w.stderr_text()[-4096:] if status != "ok" else "",
                                               seconds=h.get("seconds", time.monotonic() - started)))
        now = time.monotonic()
        check_rss = now - self._last_rss >= 0.05
        if check_rss:
            self._last_rss = now
        for i, w in enumerate(self._workers):
            if w.task is None:
                continue
            if now > w.task[2]:
                self._kill_task(i, "timeout", f"exceeded {w.task[2] - w.task[1]:.1f} s deadline")
            elif check_rss:
                rss = w.rss_bytes()
                if rss > self.memory_bytes:
                    self._kill_task(i, "oom", f"exceeded {self.memory_bytes >> 20} MiB (rss {rss >> 20} MiB)")
        self._dispatch()

    def pending(self) -> int:
        return len(self._queue) + sum(w.task is not None for w in self._workers) + len(self._done)

    def next_result(self, timeout: float | None = None) -> TaskResult | None:
        """The next finished task (completion order), or None after `timeout` seconds."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._done:
            if not self._queue and all(w.task is None for w in self._workers):
                return None
            left = 0.05 if end is None else end - time.monotonic()
            if left <= 0:
                return None
            self._poll(left)
        return self._done.popleft()

    def run(self, payload: bytes, timeout_s: float | None = None) -> TaskResult:
        """Submit one task and wait for it (other results that arrive meanwhile stay queued)."""
        task_id = self.submit(payload, timeout_s)
        others: list[TaskResult] = []
        try:
            while True:
                r = self.next_result(timeout=None)
                if r is None:
                    raise RuntimeError("task vanished")
                if r.task_id == task_id:
                    return r
                others.append(r)
        finally:
            self._done.extendleft(reversed(others))

    def map(self, payloads: Iterable[bytes], timeout_s: float | None = None) -> list[TaskResult]:
        ids = [self.submit(p, timeout_s) for p in payloads]
        want = set(ids)
        got: dict[int, TaskResult] = {}
        others: list[TaskResult] = []
        while want - set(got):
            r = self.next_result(timeout=None)
            if r is None:
                raise RuntimeError("tasks vanished")
            (got.__setitem__(r.task_id, r) if r.task_id in want else others.append(r))
        self._done.extend(others)
        return [got[i] for i in ids]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for w in self._workers:
            w.kill()
        self._workers = []


def make_echo_handler(init: dict) -> Callable[[bytes], bytes]:
    """The simplest handler (used by overhead measurements): returns its payload."""
    return lambda payload: payload


if __name__ == "__main__":
    # Run the worker loop in the importable module, so that handlers' `progress` sees the frame stream.
    from dlcfuzz.exec import pool as _pool

    _pool._worker_main()
