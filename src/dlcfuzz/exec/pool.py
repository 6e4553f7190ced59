"""A pool of persistent, sandboxed worker processes.

Each worker is a fresh interpreter (spawn semantics, never fork) in its own session, so that a
timeout or memory blow-up kills its whole process tree with one `killpg`. A worker calls the
handler factory once (importing its compiler, which takes seconds) and then serves many tasks
over length-prefixed frames on private pipes. A segfault, abort, hang or out-of-memory kills only
that worker: the parent attributes it to the task in flight and starts a new worker in the
background. Payloads are bytes; frame headers are small JSON objects; nothing is pickled.

Frame: <u32 header length><u32 body length><JSON header><body>.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

_LEN = struct.Struct("<II")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_RSS_EVERY_S = 0.03  # RSS poll of busy workers' known processes
_SCAN_EVERY_S = 0.25  # full /proc scan for new members of a worker's process group
_STDERR_KEEP = 16384
_TAIL = 4096
_END = object()

_worker_chan: _Channel | None = None  # set inside a worker: where progress() writes


class WorkerStartupError(RuntimeError):
    """A worker could not start (e.g. its compiler is not installed, or its factory raised)."""


@dataclass
class TaskResult:
    task_id: int
    status: str  # "ok" | "error" | "crash" | "timeout" | "oom"
    payload: bytes | None = None  # the handler's reply when status == "ok"
    error: str | None = None
    signal: int | None = None  # terminating signal for "crash"
    exit_code: int | None = None
    progress: str | None = None  # last progress() note of the task
    stderr_tail: str = ""
    seconds: float = 0.0
    worker_restarted: bool = False


@dataclass
class PoolStats:
    tasks: int = 0
    ok: int = 0
    errors: int = 0
    crashes: int = 0
    timeouts: int = 0
    ooms: int = 0
    restarts: int = 0
    handler_s: float = 0.0  # time inside handle(), measured in the workers
    task_s: float = 0.0  # send-to-result time of every task, measured in the parent
    started: float = field(default_factory=time.monotonic)

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started


_encode = json.JSONEncoder(separators=(",", ":")).encode


def _frame(header: dict, body: bytes = b"") -> bytes:
    h = _encode(header).encode()
    return _LEN.pack(len(h), len(body)) + h + body


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---- worker side ----------------------------------------------------------


class _Channel:
    """The worker's end of the frame pipes (private fds, not inherited by grandchildren)."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self.reader = os.fdopen(rfd, "rb", buffering=1 << 16)
        self.wfd = wfd
        self.lock = threading.Lock()

    def send(self, header: dict, body: bytes = b"") -> None:
        data = _frame(header, body)
        with self.lock:
            _write_all(self.wfd, data)

    def recv(self) -> tuple[dict, bytes]:
        pre = self.reader.read(8)
        if len(pre) < 8:
            raise EOFError
        hl, bl = _LEN.unpack(pre)
        rest = self.reader.read(hl + bl)
        if len(rest) < hl + bl:
            raise EOFError
        return json.loads(rest[:hl]), rest[hl:]


def progress(note: str) -> None:
    """From inside a handler: tell the parent what the task is doing (reported if it crashes or hangs)."""
    if _worker_chan is not None:
        _worker_chan.send({"kind": "progress", "note": str(note)})


def _describe(e: BaseException) -> str:
    """'Type: message' and the formatted traceback, even when str(e) itself fails."""
    import traceback

    try:
        msg = str(e)
    except Exception:
        msg = "<unprintable>"
    try:
        tb = traceback.format_exc()
    except Exception:
        tb = ""
    return f"{type(e).__name__}: {msg}\n{tb}"


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(70)


def _worker_main(parent: int, pdeathsig: bool) -> None:
    global _worker_chan
    import faulthandler
    import traceback

    if pdeathsig:  # dies with the parent thread that spawned it: only requested from the main thread
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(70)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="watch-parent").start()
    faulthandler.enable(file=sys.stderr, all_threads=True)
    with contextlib.suppress(Exception):  # the parent asks for a traceback before killing a hung task
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    # Frames use private duplicates of stdin/stdout; the handler (and anything it starts) sees
    # /dev/null as stdin and the stderr pipe as stdout, so prints cannot corrupt the stream.
    chan = _Channel(os.dup(0), os.dup(1))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        spec, _ = chan.recv()
    except EOFError:
        return
    for p in spec.get("sys_path", []):
        if p not in sys.path:
            sys.path.append(p)
    _worker_chan = chan
    try:
        import importlib

        module, _, name = spec["handler"].partition(":")
        handle = getattr(importlib.import_module(module), name)(spec.get("init") or {})
    except BaseException as e:  # tell the parent why; it raises WorkerStartupError
        chan.send({"kind": "startup_failed", "error": f"{type(e).__name__}: {e}",
                   "traceback": traceback.format_exc(limit=20)})
        os._exit(3)
    chan.send({"kind": "ready", "pid": os.getpid()})
    while True:
        try:
            header, body = chan.recv()
        except EOFError:
            os._exit(0)
        t0 = time.perf_counter()
        reply = b""
        try:
            out = handle(body)
            if isinstance(out, bytearray | memoryview):
                out = bytes(out)
            if not isinstance(out, bytes):
                raise TypeError(f"handler returned {type(out).__name__}, expected bytes")
            head = {"status": "ok"}
            reply = out
        except MemoryError as e:
            head = {"status": "oom", "error": f"MemoryError raised in the handler: {_describe(e)}"}
        except Exception as e:
            head = {"status": "error", "error": _describe(e)}
        head.update(kind="result", id=header.get("id"), seconds=time.perf_counter() - t0)
        chan.send(head, reply)


_BOOT = """\
import sys
try:
    import dlcfuzz.exec.pool as p
except ImportError:
    sys.path.append(sys.argv[1])
    import dlcfuzz.exec.pool as p
p._worker_main(int(sys.argv[2]), sys.argv[3] == "1")
"""


# ---- parent side ----------------------------------------------------------


class _Worker:
    """One worker process as seen from the parent: starting -> idle <-> busy -> dead."""

    def __init__(self, spec: bytes, startup_timeout_s: float) -> None:
        pdeathsig = threading.current_thread() is threading.main_thread()
        root = str(Path(__file__).resolve().parents[2])
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, root, str(os.getpid()), "1" if pdeathsig else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, bufsize=0, close_fds=True,
        )
        self.pid = self.proc.pid
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        os.set_blocking(self.rfd, False)
        self.state = "starting"
        self.startup_deadline = time.monotonic() + startup_timeout_s
        self.buf = bytearray()
        self.eof = False
        self.task: tuple[int, float, float, float] | None = None  # (task_id, sent, deadline, timeout_s)
        self.note: str | None = None
        self.members: set[int] = set()  # other processes of its group, refreshed by full scans
        self.err = bytearray()
        self.err_total = 0
        self.err_mark = 0
        self.err_lock = threading.Lock()
        self.err_thread = threading.Thread(target=self._drain_stderr, daemon=True, name=f"pool-stderr-{self.pid}")
        self.err_thread.start()
        try:
            _write_all(self.wfd, spec)
        except OSError:
            pass  # died at once: seen as EOF on its stdout

    # -- stderr ring buffer (own thread: a chatty worker never blocks on a full pipe)
    def _drain_stderr(self) -> None:
        f = self.proc.stderr
        fd = f.fileno()
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                with self.err_lock:
                    self.err += chunk
                    self.err_total += len(chunk)
                    if len(self.err) > 2 * _STDERR_KEEP:
                        del self.err[:-_STDERR_KEEP]
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                f.close()

    def stderr_tail(self, since_mark: bool = True, limit: int = _TAIL) -> str:
        with self.err_lock:
            n = min(len(self.err), limit, self.err_total - self.err_mark if since_mark else limit)
            return bytes(self.err[len(self.err) - n:]).decode(errors="replace") if n > 0 else ""

    # -- frames
    def read_frames(self) -> list[tuple[dict, bytes]]:
        """Frames available now (non-blocking); sets self.eof when the worker closed its end."""
        while True:
            try:
                chunk = os.read(self.rfd, 65536)  # pipe capacity; small enough to avoid mmap churn
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                break
            self.buf += chunk
            if len(chunk) < 65536:
                break
        frames = []
        buf, off, n = self.buf, 0, len(self.buf)
        while n - off >= 8:
            hl, bl = _LEN.unpack_from(buf, off)
            end = off + 8 + hl + bl
            if end > n:
                break
            header = json.loads(buf[off + 8:off + 8 + hl])  # ValueError on garbage
            if not isinstance(header, dict):
                raise ValueError(f"frame header is {type(header).__name__}, not an object")
            frames.append((header, bytes(buf[off + 8 + hl:end])))
            off = end
        if off:
            del buf[:off]
        return frames

    def send(self, task_id: int, payload: bytes, timeout_s: float) -> None:
        now = time.monotonic()
        self.task = (task_id, now, now + timeout_s, timeout_s)
        self.note = None
        self.members = set()
        with self.err_lock:
            self.err_mark = self.err_total
        self.state = "busy"
        _write_all(self.wfd, _frame({"kind": "task", "id": task_id}, payload))

    def dump_traceback(self, wait_s: float = 0.25) -> None:
        """Ask faulthandler for the stacks of a hung worker, and give it a moment to write them."""
        with self.err_lock:
            before = self.err_total
        try:
            os.kill(self.pid, signal.SIGUSR1)
        except OSError:
            return
        end = time.monotonic() + wait_s
        grown_at = None
        while time.monotonic() < end:
            with self.err_lock:
                grown = self.err_total > before
            if grown and grown_at is None:
                grown_at = time.monotonic()
            if grown_at is not None and time.monotonic() - grown_at > 0.03:
                break
            time.sleep(0.005)

    def exit_status(self, grace_s: float = 1.0) -> int | None:
        """After EOF: wait briefly for the worker to die on its own, without reaping it."""
        end = time.monotonic() + grace_s
        while True:
            try:
                if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                    break
            except ChildProcessError:
                break
            if time.monotonic() > end:
                break
            time.sleep(0.002)
        self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL the whole process group (grandchildren included) and reap the worker."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        self.state = "dead"
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()
        self.err_thread.join(timeout=1.0)  # EOF on stderr once the group is gone


def _scan_groups(pgids: set[int]) -> dict[int, set[int]]:
    """pgid -> pids of that process group, by one pass over /proc."""
    found: dict[int, set[int]] = {g: set() for g in pgids}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                pgrp = int(f.read().rsplit(b")", 1)[1].split()[2])
        except (OSError, ValueError, IndexError):
            continue
        if pgrp in found:
            found[pgrp].add(int(name))
    return found


def _rss(pids: Iterable[int]) -> tuple[int, set[int]]:
    """Summed resident bytes of `pids`, and those that are gone."""
    total, gone = 0, set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            gone.add(pid)
    return total, gone


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


class ClosingPool:
    """A pool as a context manager that is closed on exit and when collected (WorkerPool, RayPool)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


class WorkerPool(ClosingPool):
    """`jobs` persistent workers serving `handler` ("module:factory"; factory(init) -> handle(bytes) -> bytes).

    `init` must be JSON-serializable. Not thread-safe: use one pool from one thread at a time.
    """

    def __init__(self, handler: str, init: dict | None = None, jobs: int = 1, timeout_s: float = 30.0,
                 memory_mb: int = 4096, startup_timeout_s: float = 120.0) -> None:
        if ":" not in handler:
            raise ValueError(f"handler must be 'module:factory', got {handler!r}")
        self.handler = handler
        self.init = dict(init or {})
        self.jobs = max(1, int(jobs))
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.startup_timeout_s = float(startup_timeout_s)
        self.stats = PoolStats()
        self._spec = _frame({"kind": "spec", "handler": handler, "init": self.init, "sys_path": sys.path})
        self._next_id = 0
        self._queue: collections.deque[tuple[int, bytes, float]] = collections.deque()
        self._done: collections.deque[TaskResult] = collections.deque()
        self._sel = selectors.DefaultSelector()
        self._workers: list[_Worker] = []
        self._failures = [0] * self.jobs  # consecutive startup failures per slot
        self._closed = False
        self._broken: str | None = None
        self._next_rss = 0.0
        self._next_scan = 0.0
        try:
            for _ in range(self.jobs):  # all start in parallel
                self._workers.append(self._start())
            while any(w.state == "starting" for w in self._workers):
                self._poll(1.0, startup=True)
        except BaseException:
            self.close()
            raise

    # ---- workers ---------------------------------------------------------
    def _start(self) -> _Worker:
        w = _Worker(self._spec, self.startup_timeout_s)
        self._sel.register(w.rfd, selectors.EVENT_READ, w)
        return w

    def _retire(self, w: _Worker) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(w.rfd)
        if w.state != "dead":
            w.kill()

    def _replace(self, w: _Worker) -> None:
        """Kill `w` (if still alive) and start a fresh worker in its slot, without waiting for it."""
        i = self._workers.index(w)
        self._retire(w)
        self.stats.restarts += 1
        self._workers[i] = self._start()

    def _startup_failed(self, w: _Worker, why: str, startup: bool) -> None:
        self._retire(w)  # also drains its stderr
        tail = w.stderr_tail(since_mark=False, limit=2000)
        msg = f"worker for {self.handler} failed to start: {why}" + (f"\n--- worker stderr ---\n{tail}" if tail else "")
        i = self._workers.index(w)
        self._failures[i] += 1
        if startup or self._failures[i] >= 2:
            self._broken = msg
            raise WorkerStartupError(msg)
        self._workers[i] = self._start()  # a respawn failed once: try again before giving up

    # ---- submission ------------------------------------------------------
    def _check(self) -> None:
        if self._closed:
            raise RuntimeError("pool is closed")
        if self._broken:
            raise WorkerStartupError(self._broken)

    def submit(self, payload: bytes, timeout_s: float | None = None) -> int:
        """Queue one task; returns its task_id. It starts as soon as a worker is free."""
        self._check()
        if not isinstance(payload, bytes | bytearray | memoryview):
            raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
        task_id = self._next_id
        self._next_id += 1
        self._queue.append((task_id, bytes(payload), self.timeout_s if timeout_s is None else float(timeout_s)))
        self._dispatch()
        return task_id

    def _dispatch(self) -> None:
        if not self._queue:
            return
        for w in self._workers:
            if not self._queue:
                return
            if w.state != "idle":
                continue
            item = self._queue.popleft()
            try:
                w.send(*item)
            except OSError:  # died while idle (killed from outside): retry the task on another worker
                w.task = None
                self._queue.appendleft(item)
                self._replace(w)

    # ---- completion ------------------------------------------------------
    def _finish(self, w: _Worker, result: TaskResult, restart: bool) -> None:
        s = self.stats
        s.tasks += 1
        s.task_s += time.monotonic() - w.task[1]
        s.ok += result.status == "ok"
        s.errors += result.status == "error"
        s.crashes += result.status == "crash"
        s.timeouts += result.status == "timeout"
        s.ooms += result.status == "oom"
        w.task = None
        self._done.append(result)
        if restart:
            result.worker_restarted = True
            self._replace(w)
        else:
            w.state = "idle"

    def _kill_task(self, w: _Worker, status: str, error: str) -> None:
        task_id, sent, _, _ = w.task
        if status == "timeout":
            w.dump_traceback()
        self._retire(w)
        self._finish(w, TaskResult(task_id, status, error=error, progress=w.note, stderr_tail=w.stderr_tail(),
                                   seconds=time.monotonic() - sent), restart=True)

    def _on_frames(self, w: _Worker, startup: bool) -> None:
        try:
            frames = w.read_frames()
        except ValueError as e:  # garbage on the frame pipe: treat the worker as crashed
            if w.state == "busy":
                self._kill_task(w, "crash", f"corrupt reply from worker: {e}")
            elif w.state == "starting":
                self._startup_failed(w, f"corrupt reply from worker: {e}", startup)
            else:
                self._replace(w)
            return
        for h, body in frames:
            kind = h.get("kind")
            if kind == "result" and w.task is not None and h.get("id") == w.task[0]:
                status = h.get("status", "error")
                self.stats.handler_s += h.get("seconds", 0.0)
                r = TaskResult(w.task[0], status, payload=body if status == "ok" else None, error=h.get("error"),
                               progress=w.note, stderr_tail=w.stderr_tail() if status != "ok" else "",
                               seconds=h.get("seconds", 0.0))
                self._finish(w, r, restart=status == "oom")  # after a MemoryError, a fresh heap
            elif kind == "progress" and w.task is not None:
                w.note = h.get("note")
            elif kind == "ready" and w.state == "starting":
                w.state = "idle"
                self._failures[self._workers.index(w)] = 0
            elif kind == "startup_failed" and w.state == "starting":
                why = h.get("error", "?")
                tb = h.get("traceback")
                self._startup_failed(w, why + (f"\n{tb}" if tb else ""), startup)
                return
        if w.eof and w.state != "dead":
            self._on_exit(w, startup)

    def _on_exit(self, w: _Worker, startup: bool) -> None:
        was = w.state
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(w.rfd)  # before its fd is closed (and its number reused)
        code = w.exit_status()
        sig = -code if code is not None and code < 0 else None
        how = f"killed by signal {sig} ({_signal_name(sig)})" if sig else f"exited with status {code}"
        if was == "starting":
            self._startup_failed(w, f"worker {how} during startup", startup)
        elif w.task is not None:
            task_id, sent, _, _ = w.task
            self._finish(w, TaskResult(task_id, "crash", error=how, signal=sig, exit_code=code, progress=w.note,
                                       stderr_tail=w.stderr_tail(), seconds=time.monotonic() - sent), restart=True)
        else:  # died while idle
            self._replace(w)

    def _check_memory(self, now: float) -> None:
        busy = [w for w in self._workers if w.state == "busy"]
        if not busy:
            return
        if now >= self._next_scan:
            self._next_scan = now + _SCAN_EVERY_S
            groups = _scan_groups({w.pid for w in busy})
            for w in busy:
                w.members = groups[w.pid] - {w.pid}
        limit = self.memory_mb << 20
        for w in busy:
            rss, gone = _rss([w.pid, *w.members])
            w.members -= gone
            if rss > limit:
                self._kill_task(w, "oom", f"exceeded {self.memory_mb} MiB (rss {rss >> 20} MiB)")

    def _poll(self, timeout: float, startup: bool = False) -> None:
        """Wait up to `timeout` s for worker events; enforce deadlines and memory limits; dispatch."""
        now = time.monotonic()
        wake = now + timeout
        for w in self._workers:
            if w.state == "busy":
                wake = min(wake, w.task[2], self._next_rss)
            elif w.state == "starting":
                wake = min(wake, w.startup_deadline)
        for key, _ in self._sel.select(max(0.0, wake - now)):
            w = key.data
            if w.state != "dead":
                self._on_frames(w, startup)
        now = time.monotonic()
        for w in list(self._workers):
            if w.state == "busy" and now >= w.task[2]:
                self._kill_task(w, "timeout", f"exceeded {w.task[3]!r} s deadline")
            elif w.state == "starting" and now >= w.startup_deadline:
                self._startup_failed(w, f"no answer within {self.startup_timeout_s!r} s", startup)
        if now >= self._next_rss:
            self._next_rss = now + _RSS_EVERY_S
            self._check_memory(now)
        self._dispatch()

    def pending(self) -> int:
        """Tasks submitted whose results were not yet taken (queued, running or finished)."""
        return len(self._queue) + sum(w.state == "busy" for w in self._workers) + len(self._done)

    def next_result(self, timeout: float | None = None) -> TaskResult | None:
        """The next finished task (completion order); None if none is pending or `timeout` s passed."""
        self._check()
        end = None if timeout is None else time.monotonic() + timeout
        polled = False
        while not self._done:
            if not self._queue and not any(w.state == "busy" for w in self._workers):
                return None
            left = 3600.0 if end is None else end - time.monotonic()
            if left <= 0 and polled:
                return None
            self._poll(max(0.0, left))
            polled = True
        return self._done.popleft()

    def results(self, block: bool = True, timeout: float | None = None) -> Iterator[TaskResult]:
        """Finished tasks in completion order until none is pending (or, if not blocking, none is ready now)."""
        while True:
            r = self.next_result(timeout if block else 0.0)
            if r is None:
                return
            yield r

    def run(self, payload: bytes, timeout_s: float | None = None) -> TaskResult:
        """Submit one task and wait for it; results of other tasks that finish meanwhile stay queued."""
        task_id = self.submit(payload, timeout_s)
        return self._wait_for({task_id})[task_id]

    def map(self, payloads: Iterable[bytes], timeout_s: float | None = None) -> list[TaskResult]:
        """Run every payload, keeping all workers busy; results in input order."""
        ids: list[int] = []
        it = iter(payloads)
        want: set[int] = set()
        got: dict[int, TaskResult] = {}
        others: list[TaskResult] = []
        exhausted = False
        try:
            while True:
                while not exhausted and len(want) - len(got) < 2 * self.jobs:  # feed lazily
                    p = next(it, _END)
                    if p is _END:
                        exhausted = True
                        break
                    ids.append(self.submit(p, timeout_s))
                    want.add(ids[-1])
                if len(got) == len(want) and exhausted:
                    return [got[i] for i in ids]
                r = self.next_result()
                if r is None:
                    raise RuntimeError("pool lost track of tasks")
                (got.__setitem__(r.task_id, r) if r.task_id in want else others.append(r))
        finally:
            self._done.extendleft(reversed(others))

    def _wait_for(self, want: set[int]) -> dict[int, TaskResult]:
        got: dict[int, TaskResult] = {}
        others: list[TaskResult] = []
        try:
            while len(got) < len(want):
                r = self.next_result()
                if r is None:
                    raise RuntimeError("pool lost track of tasks")
                (got.__setitem__(r.task_id, r) if r.task_id in want else others.append(r))
        finally:
            self._done.extendleft(reversed(others))
        return got

    def close(self) -> None:
        """Kill every worker's process tree and reap it; pending tasks are dropped."""
        if self._closed:
            return
        self._closed = True
        for w in self._workers:
            with contextlib.suppress(Exception):
                self._retire(w)
        self._workers = []
        self._queue.clear()
        with contextlib.suppress(Exception):
            self._sel.close()


def make_echo_handler(init: dict) -> Callable[[bytes], bytes]:
    """The simplest handler (overhead measurements): returns its payload."""
    return lambda payload: payload


if __name__ == "__main__":  # python -m dlcfuzz.exec.pool PARENT_PID: a worker (normally started via _BOOT)
    from dlcfuzz.exec import pool as _pool

    _pool._worker_main(int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid(), False)
