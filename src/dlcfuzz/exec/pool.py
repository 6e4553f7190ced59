"""A pool of persistent, sandboxed worker processes.

Each worker is a fresh interpreter (spawn semantics, never fork) in its own session, so that a
timeout or memory blow-up kills its whole process tree with one `killpg`. A worker calls the
handler factory once (importing its compiler, which takes seconds) and then serves many tasks
over length-prefixed frames on private pipes. A segfault, abort, hang or out-of-memory kills only
that worker: the parent attributes it to the task in flight and starts a new worker in the
background. Payloads are bytes; frame headers are small JSON objects; nothing is pickled.

A worker whose tasks are short gets its next tasks written into its pipe before the current one
ends (up to AHEAD of them), so it does not wait for the parent's round trip or its pauses. It runs
its tasks in order, so a crash, hang or out-of-memory belongs to the oldest task sent; the tasks
ahead never started and go back to the queue. Each task's stderr begins with a marker line the
worker writes: that is how a task's stderr tail is told from its neighbours'. Progress notes go to
memory shared with the parent, not to frames.

Frame: <u32 header length><u32 body length><JSON header><body>.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import re
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Self

_LEN = struct.Struct("<II")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_RSS_EVERY_S = 0.03  # RSS poll of busy workers' known processes
_SCAN_EVERY_S = 0.25  # full /proc scan for new members of a worker's process group
# A task whose threads waited for a CPU (an overloaded machine) gets that long more, up to this many times its
# timeout more: a hang is judged on the time the task could run, not on other processes' load.
_STARVED_CAP = 3.0
_STDERR_KEEP = 16384
_TAIL = 4096
# a task is sent ahead only behind short tasks: for long ones the round trip saved is negligible, and
# a task queued behind a long one would wait although another worker may fall idle first
_AHEAD_BELOW_S = 0.25
AHEAD = 2  # tasks a busy worker may hold in its pipe: enough to ride out the parent's usual pauses
_TASK_MARK = b"\x1edlcfuzz-task %d\x1e\n"  # written by the worker to its stderr as each task starts
_TASK_MARK_RE = re.compile(rb"\x1edlcfuzz-task \d+\x1e\n")
_END = object()

_worker_chan: _Channel | None = None  # set inside a worker: its end of the frame pipes
_worker_notes: _NoteSlot | None = None  # set inside a worker: where progress() writes
_worker_retire: str | None = None  # set inside a worker by retire_after_task(): why it must not run another task
# A task's last progress note lives in memory the parent shares with the worker (a write there costs
# no system call, where a frame per note cost more than the note was worth): the parent reads it
# when the task crashes, hangs or runs out of memory, and a result's header carries it otherwise.
_NOTE_HEAD = struct.Struct("<qI")  # task id (-1 while being written), note length; the note at 16
_NOTE_BYTES = 4096


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
    task_s: float = 0.0  # per task, from its start (its send, or the result before it) to its result, in the parent
    started: float = field(default_factory=time.monotonic)

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started


class TaskRunner(Protocol):
    """What a reduction needs of a pool: one task run to its result (a `Pool`, or one arm's view of it in
    strategies/auto.py)."""

    def run(self, payload: bytes, timeout_s: float | None = None) -> TaskResult: ...


class Pool(TaskRunner, Protocol):
    """The engine's pool, whichever `make_pool` gives: `WorkerPool` (local processes) or `RayPool`
    (exec/cluster.py, Ray actors). A context manager that closes the pool."""

    def submit(self, payload: bytes, timeout_s: float | None = None) -> int: ...

    def next_result(self, timeout: float | None = None) -> TaskResult | None: ...

    def results(self, block: bool = True, timeout: float | None = None) -> Iterator[TaskResult]: ...

    def map(self, payloads: Iterable[bytes], timeout_s: float | None = None) -> list[TaskResult]: ...

    def pending(self) -> int: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


_encode = json.JSONEncoder(separators=(",", ":")).encode


def _frame(header: dict, body: bytes = b"") -> bytes:
    h = _encode(header).encode()
    return _LEN.pack(len(h), len(body)) + h + body


def _task_frame(task_id: int, payload: bytes) -> bytes:
    return _frame({"kind": "task", "id": task_id}, payload)


def _frame_size(payload: bytes) -> int:
    return len(payload) + 64  # a task's frame: the payload, its lengths and a header well under 56 bytes


def _pipe_capacity(fd: int) -> int:
    try:
        import fcntl

        return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    except (ImportError, AttributeError, OSError):
        return 4096  # POSIX's PIPE_BUF: at least this much fits


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


class _NoteSlot:
    """The shared memory a worker's progress notes go to, and the note of its current task."""

    def __init__(self, fd: int) -> None:
        import mmap

        self.mem = mmap.mmap(fd, _NOTE_BYTES)
        self.task = -1
        self.last: str | None = None

    def start(self, task_id: int) -> None:
        self.task, self.last = task_id, None

    def write(self, note: str) -> None:
        self.last = note
        data = note.encode(errors="replace")[:_NOTE_BYTES - 16]
        _NOTE_HEAD.pack_into(self.mem, 0, -1, 0)  # a note torn by a kill is never read as whole
        self.mem[16:16 + len(data)] = data
        _NOTE_HEAD.pack_into(self.mem, 0, self.task, len(data))


def progress(note: str) -> None:
    """From inside a handler: tell the parent what the task is doing (reported if it crashes or hangs)."""
    if _worker_notes is not None:
        _worker_notes.write(str(note))


def retire_after_task(reason: str) -> None:
    """From inside a handler: this worker must not run another task once the current one ends (the task left
    its process damaged, e.g. a compiler's known heap corruption that crashes whatever runs next there). The
    parent replaces it after the result, as after an out-of-memory; the tasks sent ahead go back to the queue.
    A no-op outside a worker."""
    global _worker_retire
    if _worker_chan is not None:
        _worker_retire = reason


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


def _worker_main(parent: int, pdeathsig: bool, note_fd: int) -> None:
    global _worker_chan, _worker_notes
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
    if spec.get("scratch"):  # the worker's temporary files go where its pool removes them (see WorkerPool)
        tempfile.tempdir = spec["scratch"]
        os.environ["TMPDIR"] = spec["scratch"]
    _worker_chan = chan
    _worker_notes = notes = _NoteSlot(note_fd)
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
        notes.start(header.get("id", -1))
        with contextlib.suppress(Exception):
            sys.stderr.flush()  # the previous task's buffered text stays before this task's marker
        with contextlib.suppress(OSError):
            _write_all(2, _TASK_MARK % header.get("id", -1))
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
        head.update(kind="result", id=header.get("id"), seconds=time.perf_counter() - t0, note=notes.last)
        if _worker_retire is not None:
            head["retire"] = _worker_retire
        chan.send(head, reply)


_BOOT = """\
import sys
try:
    import dlcfuzz.exec.pool as p
except ImportError:
    sys.path.append(sys.argv[1])
    import dlcfuzz.exec.pool as p
p._worker_main(int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4]))
"""


# ---- zygote: a pre-imported process that forks workers --------------------
# Importing a compiler takes seconds (TVM with its torch frontend 10-30 s on a loaded 2-core machine), and
# every worker did it again: at each pool start and after each crash. A zygote imports the pool's modules
# once, single-threaded and before any compiler state exists (no session, no backend object, no thread
# pool), and forks each worker from there; the worker then runs `_worker_main` as a spawned one does, in
# its own session, so it still calls the handler factory itself (per-worker set-up such as Inductor's
# private cache folder and one intra-op thread happens after the fork). The zygote keeps each dead
# worker as a zombie until the parent has killed its process group and asks for the reap, so a worker's
# pid (and group id) is never reused while the parent may still signal it.

_ZYGOTE_BOOT = """\
import sys
try:
    import dlcfuzz.exec.pool as p
except ImportError:
    sys.path.append(sys.argv[1])
    import dlcfuzz.exec.pool as p
p._zygote_main(int(sys.argv[2]), sys.argv[3] == "1")
"""
_CTRL_BYTES = 1 << 16


def _exit_code(info: os.waitid_result) -> int:
    """A waitid result as subprocess's returncode: the exit status, or minus the killing signal."""
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _zygote_main(parent: int, pdeathsig: bool) -> None:
    import importlib
    import socket

    if pdeathsig:
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(70)
    ctrl = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    spec = json.loads(ctrl.recv(_CTRL_BYTES) or b"{}")
    for p in spec.get("sys_path", []):
        if p not in sys.path:
            sys.path.append(p)
    for module in spec.get("preload", []):
        # a module that fails here is imported again by the worker, which reports why (WorkerStartupError)
        with contextlib.suppress(BaseException):
            # its `before_fork()`: set-up that is the same in every worker (a fact of the machine), done once
            # here instead of in each worker; it must leave no thread running (a fork copies only this one)
            before_fork = getattr(importlib.import_module(module), "before_fork", None)
            if callable(before_fork):
                before_fork()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    ctrl.send(_encode({"kind": "ready"}).encode())
    children: dict[int, bool] = {}  # pid -> its exit was reported
    sel = selectors.DefaultSelector()
    sel.register(ctrl, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    while True:
        events = sel.select(1.0)
        if os.getppid() != parent:
            os._exit(70)  # the workers follow: their death signal is this process's exit
        for key, _ in events:
            if key.fileobj == wake_r:
                with contextlib.suppress(OSError):
                    while os.read(wake_r, 512):
                        pass
                continue
            try:
                msg, fds, _, _ = socket.recv_fds(ctrl, _CTRL_BYTES, 4)
            except OSError:
                msg, fds = b"", []
            if not msg:
                os._exit(0)
            req = json.loads(msg)
            if req["kind"] == "fork":
                pid = os.fork()
                if pid == 0:
                    _forked_worker(ctrl, (wake_r, wake_w), fds, parent=os.getppid())
                for fd in fds:
                    os.close(fd)
                children[pid] = False
                ctrl.send(_encode({"kind": "forked", "pid": pid}).encode())
            elif req["kind"] == "reap" and req["pid"] in children:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(req["pid"], 0)
                del children[req["pid"]]
                ctrl.send(_encode({"kind": "reaped", "pid": req["pid"]}).encode())
        for pid, reported in list(children.items()):
            if reported:
                continue
            try:
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
            if info is not None:
                children[pid] = True
                ctrl.send(_encode({"kind": "exit", "pid": pid, "code": _exit_code(info)}).encode())


def _forked_worker(ctrl, wake: tuple[int, int], fds: list[int], parent: int) -> None:
    """In the child the zygote forked: a session of its own, the pipes as stdin/stdout/stderr, the
    zygote's signal set-up undone, then the worker's main loop, as a spawned worker runs it."""
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        ctrl.close()
        for fd in wake:
            os.close(fd)
        stdin, stdout, stderr, note_fd = fds
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        _worker_main(parent, True, note_fd)
    finally:
        os._exit(1)


class _ForkedProcess:
    """A worker the zygote forked, with what the pool uses of a Popen: pid, the three pipes, returncode
    and wait (its exit status comes from the zygote, which reaps it when wait() returns)."""

    def __init__(self, zygote: _Zygote, pid: int, stdin: int, stdout: int, stderr: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.stdin = os.fdopen(stdin, "wb", buffering=0)
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self.stderr = os.fdopen(stderr, "rb", buffering=0)
        self.returncode: int | None = None

    def exited(self, timeout: float) -> bool:
        """Whether it died within `timeout` s (not reaped yet)."""
        code = self.zygote.exit_code(self.pid, timeout)
        return code is not None

    def wait(self, timeout: float) -> int:
        if self.returncode is None:
            code = self.zygote.exit_code(self.pid, timeout)
            if code is None:
                raise subprocess.TimeoutExpired("worker", timeout)
            self.zygote.reap(self.pid, timeout)
            self.returncode = code
        return self.returncode


class _Zygote:
    """The parent's side of a zygote: its process, the control socket, and a thread that reads the
    zygote's messages (fork replies, exits, reaps). Thread-safe: pools of several threads share it."""

    def __init__(self, preload: list[str], startup_timeout_s: float) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pdeathsig = threading.current_thread() is threading.main_thread()
        root = str(Path(__file__).resolve().parents[2])
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _ZYGOTE_BOOT, root, str(os.getpid()), "1" if pdeathsig else "0"],
                stdin=theirs.fileno(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True)
        finally:
            theirs.close()
        self.sock = ours
        self.lock = threading.Lock()  # one fork request at a time
        self.cond = threading.Condition()
        self.replies: collections.deque[dict] = collections.deque()
        self.exits: dict[int, int] = {}
        self.workers: set[int] = set()  # forked and not reaped
        self.ready = False
        self.alive = True
        ours.send(_encode({"preload": preload, "sys_path": sys.path}).encode())
        self.reader = threading.Thread(target=self._read, daemon=True, name=f"zygote-{self.proc.pid}")
        self.reader.start()
        with self.cond:
            self.cond.wait_for(lambda: self.ready or not self.alive, startup_timeout_s)
        if not self.ready:
            self.close()

    def _read(self) -> None:
        while True:
            try:
                msg = self.sock.recv(_CTRL_BYTES)
            except OSError:
                msg = b""
            with self.cond:
                if not msg:
                    self.alive = False
                    self.cond.notify_all()
                    return
                m = json.loads(msg)
                if m["kind"] == "ready":
                    self.ready = True
                elif m["kind"] == "exit":
                    self.exits[m["pid"]] = m["code"]
                else:
                    self.replies.append(m)
                self.cond.notify_all()

    def _reply(self, kind: str, timeout: float) -> dict | None:
        with self.cond:
            self.cond.wait_for(lambda: (self.replies and self.replies[0]["kind"] == kind) or not self.alive, timeout)
            return self.replies.popleft() if self.replies and self.replies[0]["kind"] == kind else None

    def fork(self, fds: list[int]) -> int | None:
        """A new worker with `fds` (stdin, stdout, stderr, progress memory) as its own; its pid, or None
        when the zygote is gone."""
        import socket

        with self.lock:
            if not self.alive:
                return None
            try:
                socket.send_fds(self.sock, [_encode({"kind": "fork"}).encode()], fds)
            except OSError:
                return None
            reply = self._reply("forked", 30.0)
            if reply is None:
                return None
            self.workers.add(reply["pid"])
            return reply["pid"]

    def exit_code(self, pid: int, timeout: float) -> int | None:
        with self.cond:
            self.cond.wait_for(lambda: pid in self.exits or not self.alive, timeout)
            if pid not in self.exits and not self.alive:
                return -signal.SIGKILL  # the zygote died, and its workers with it (their death signal)
            return self.exits.get(pid)

    def reap(self, pid: int, timeout: float) -> None:
        with self.lock:
            self.exits.pop(pid, None)
            self.workers.discard(pid)
            with contextlib.suppress(OSError):
                self.sock.send(_encode({"kind": "reap", "pid": pid}).encode())
                self._reply("reaped", timeout)

    def close(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.sock.close()


_ZYGOTES: dict[tuple, _Zygote] = {}  # one per preload list, environment, import path and folder
_ZYGOTES_KEPT = 2
_ZYGOTES_LOCK = threading.Lock()
# Variables that change at every call and that no module reads at import: pytest rewrites this one at each
# phase of each test, which made every test's pools import their compiler again in a zygote of their own.
_PER_CALL_VARIABLES = frozenset({"PYTEST_CURRENT_TEST"})


def _zygote(preload: list[str], startup_timeout_s: float) -> _Zygote | None:
    """This process's zygote for `preload` (started on first use, shared by the pools that preload the same
    modules in the same environment, import path and working folder; what a module reads at import is the
    same in every worker); None when it could not start: the pool spawns its workers then."""
    environment = tuple(sorted(kv for kv in os.environ.items() if kv[0] not in _PER_CALL_VARIABLES))
    key = (tuple(preload), environment, tuple(sys.path), os.getcwd())
    with _ZYGOTES_LOCK:
        z = _ZYGOTES.pop(key, None)
        if z is None or not z.alive:
            z = _Zygote(preload, startup_timeout_s)
        _ZYGOTES[key] = z  # the most recently used last
        for old in list(_ZYGOTES)[:-_ZYGOTES_KEPT]:  # each holds its compiler's memory: the idle ones go
            if not _ZYGOTES[old].workers:
                _ZYGOTES.pop(old).close()
        return z if z.alive else None


def close_zygotes() -> None:
    """Kill every zygote of this process (their workers die with them): at exit, or to free their memory."""
    with _ZYGOTES_LOCK:
        for z in _ZYGOTES.values():
            z.close()
        _ZYGOTES.clear()


atexit.register(close_zygotes)


# ---- parent side ----------------------------------------------------------


class _Worker:
    """One worker process as seen from the parent: starting -> idle <-> busy -> dead."""

    def __init__(self, spec: bytes, startup_timeout_s: float, zygote: _Zygote | None = None) -> None:
        import mmap

        note_fd = os.memfd_create("dlcfuzz-progress")
        try:
            os.ftruncate(note_fd, _NOTE_BYTES)
            self.notes = mmap.mmap(note_fd, _NOTE_BYTES)
            forked = zygote and self._fork(zygote, note_fd)
            self.proc: subprocess.Popen | _ForkedProcess = forked or self._spawn(note_fd)
        finally:
            os.close(note_fd)  # the mapping and the worker's inherited descriptor keep it
        self.pid = self.proc.pid
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.pipe_bytes = _pipe_capacity(self.wfd)
        os.set_blocking(self.rfd, False)
        self.state = "starting"
        self.startup_deadline = time.monotonic() + startup_timeout_s
        self.buf = bytearray()
        self.eof = False
        self.task: tuple[int, float, float, float] | None = None  # (task_id, started, deadline, timeout_s)
        self.ahead: collections.deque[tuple[int, bytes, float]] = collections.deque()  # sent, not started
        self.ahead_bytes = 0
        self.last_task_s: float = 0.0  # the parent's time for the last task that ended normally
        self.members: set[int] = set()  # other processes of its group, refreshed by full scans
        self.waited_from: dict[int, int] = {}  # thread id -> its run-queue wait (ns) when first seen in this task
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

    @staticmethod
    def _spawn(note_fd: int) -> subprocess.Popen:
        pdeathsig = threading.current_thread() is threading.main_thread()
        root = str(Path(__file__).resolve().parents[2])
        return subprocess.Popen(
            [sys.executable, "-c", _BOOT, root, str(os.getpid()), "1" if pdeathsig else "0", str(note_fd)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, bufsize=0, close_fds=True, pass_fds=(note_fd,),
        )

    @staticmethod
    def _fork(zygote: _Zygote, note_fd: int) -> _ForkedProcess | None:
        """The worker forked by `zygote` on new pipes; None when the zygote is gone (then it is spawned)."""
        pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr: (read end, write end)
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        try:
            pid = zygote.fork([*theirs, note_fd])
        finally:
            for fd in theirs:
                os.close(fd)
        if pid is None:
            for fd in (pipes[0][1], pipes[1][0], pipes[2][0]):
                os.close(fd)
            return None
        return _ForkedProcess(zygote, pid, pipes[0][1], pipes[1][0], pipes[2][0])

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

    def stderr_tail(self, task_id: int | None = None, limit: int = _TAIL) -> str:
        """The last `limit` bytes of stderr; with `task_id`, only what that task wrote: from its
        marker to the next task's. Without its marker in the ring (not read from the pipe yet, or
        pushed out by the task's own output), what came after it became the oldest task sent."""
        with self.err_lock:
            buf = bytes(self.err)
            since = self.err_total - self.err_mark
        if task_id is not None:
            mark = _TASK_MARK % task_id
            at = buf.rfind(mark)
            buf = buf[at + len(mark):] if at >= 0 else buf[len(buf) - min(len(buf), since):] if since > 0 else b""
            following = _TASK_MARK_RE.search(buf)
            if following:
                buf = buf[:following.start()]
        return _TASK_MARK_RE.sub(b"", buf)[-limit:].decode(errors="replace")

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
        self._begin(task_id, timeout_s)
        _write_all(self.wfd, _task_frame(task_id, payload))

    def _begin(self, task_id: int, timeout_s: float) -> None:
        """`task_id` is the oldest task sent: its deadline, notes and stderr start now."""
        now = time.monotonic()
        self.task = (task_id, now, now + timeout_s, timeout_s)
        self.members = set()
        self.waited_from = {}
        with self.err_lock:
            self.err_mark = self.err_total
        self.state = "busy"

    def can_take_ahead(self, payload: bytes) -> bool:
        """A busy worker behind short tasks, with fewer than AHEAD ahead, takes one more if all
        their frames fit its pipe: the write must not block the parent while the worker is busy."""
        return (self.state == "busy" and len(self.ahead) < AHEAD and self.last_task_s < _AHEAD_BELOW_S
                and self.ahead_bytes + _frame_size(payload) <= self.pipe_bytes)

    def send_ahead(self, item: tuple[int, bytes, float]) -> None:
        task_id, payload, _ = item
        _write_all(self.wfd, _task_frame(task_id, payload))
        self.ahead.append(item)
        self.ahead_bytes += _frame_size(payload)

    def next_task(self) -> None:
        """The oldest task ended normally: the one ahead (if any) is running now."""
        self.last_task_s = time.monotonic() - self.task[1]
        if self.ahead:
            task_id, payload, timeout_s = self.ahead.popleft()
            self.ahead_bytes -= _frame_size(payload)
            self._begin(task_id, timeout_s)
        else:
            self.task = None
            self.state = "idle"

    def note_waits(self) -> None:
        """Remember the run-queue wait of threads of its group not seen before in this task (full scans)."""
        for tid, ns in _runqueue_waits([self.pid, *self.members]).items():
            self.waited_from.setdefault(tid, ns)

    def starved_s(self) -> float:
        """The longest time one thread of its group waited for a CPU since this task first saw it."""
        now = _runqueue_waits([self.pid, *self.members])
        return max((ns - self.waited_from[tid] for tid, ns in now.items() if tid in self.waited_from),
                   default=0) / 1e9

    def note(self) -> str | None:
        """The last progress note of the oldest task sent (read once the worker stopped in it)."""
        task_id, n = _NOTE_HEAD.unpack_from(self.notes, 0)
        if self.task is None or task_id != self.task[0]:
            return None  # it wrote none, or was killed while writing one
        return bytes(self.notes[16:16 + n]).decode(errors="replace")

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
        if isinstance(self.proc, _ForkedProcess):
            self.proc.exited(grace_s)
            self.kill()
            return self.proc.returncode
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
        if isinstance(self.proc, _ForkedProcess):  # forked just now, it may not lead its own group yet
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        self.state = "dead"
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()
        self.err_thread.join(timeout=1.0)  # EOF on stderr once the group is gone


def _scan_groups(pgids: set[int]) -> dict[int, set[int]]:
    """pgid -> pids of that process group, by one pass over /proc's pids. (Each pid's group by getpgid, one system
    call: reading /proc/PID/stat instead took ~20x as long, and the campaign process scans 4 times a second while a
    worker is busy.)"""
    found: dict[int, set[int]] = {g: set() for g in pgids}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            pgrp = os.getpgid(int(name))
        except OSError:  # gone since the listing
            continue
        if pgrp in found:
            found[pgrp].add(int(name))
    return found


def _runqueue_waits(pids: Iterable[int]) -> dict[int, int]:
    """Thread id -> nanoseconds it has waited on a run queue (the second field of schedstat), for every thread
    of `pids`; empty where the kernel keeps no schedstat."""
    waits: dict[int, int] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                    waits[int(tid)] = int(f.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return waits


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

    `init` must be JSON-serializable. `preload`: modules a zygote imports once for every worker of this
    process that preloads the same (the worker then forks from it and skips their import); without it, each
    worker is a fresh interpreter that imports everything itself. A preloaded module's `before_fork()`, where it
    has one, runs once in the zygote. Not thread-safe: use one pool from one
    thread at a time.
    """

    def __init__(self, handler: str, init: dict | None = None, jobs: int = 1, timeout_s: float = 30.0,
                 memory_mb: int = 4096, startup_timeout_s: float = 120.0, preload: list[str] | None = None) -> None:
        if ":" not in handler:
            raise ValueError(f"handler must be 'module:factory', got {handler!r}")
        self.handler = handler
        self.init = dict(init or {})
        self.jobs = max(1, int(jobs))
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.startup_timeout_s = float(startup_timeout_s)
        self.stats = PoolStats()
        # Workers die by SIGKILL (a timeout, a memory blow-up, close), so they never clean up after
        # themselves: their temporary files (a compiler's cache and build folders) live in this folder,
        # which the pool removes once its workers are dead.
        self.scratch = tempfile.mkdtemp(prefix="dlcfuzz-pool-")
        self._spec = _frame({"kind": "spec", "handler": handler, "init": self.init, "sys_path": sys.path,
                             "scratch": self.scratch})
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
        self._zygote = _zygote(list(preload), self.startup_timeout_s) if preload else None
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
        w = _Worker(self._spec, self.startup_timeout_s, self._zygote)
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
        self._queue.extendleft(reversed(w.ahead))  # never started: first in line again
        w.ahead.clear()
        w.ahead_bytes = 0
        self.stats.restarts += 1
        self._workers[i] = self._start()

    def _startup_failed(self, w: _Worker, why: str, startup: bool) -> None:
        self._retire(w)  # also drains its stderr
        tail = w.stderr_tail(limit=2000)
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
        """Queued tasks to idle workers first; then, when every worker is busy, ahead to those that
        can take them, one at a time in turn."""
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
        if not self._queue or any(w.state == "starting" for w in self._workers):
            return  # a starting worker is free soon: the task waits for whichever is free first
        sent = True
        while self._queue and sent:
            sent = False
            for w in self._workers:
                if not self._queue or not w.can_take_ahead(self._queue[0][1]):
                    continue
                item = self._queue.popleft()
                try:
                    w.send_ahead(item)
                    sent = True
                except OSError:  # it died in its task: its end is seen as EOF; the task waits for another
                    self._queue.appendleft(item)

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
        self._done.append(result)
        if restart:
            w.task = None
            result.worker_restarted = True
            self._replace(w)
        else:
            w.next_task()

    def _kill_task(self, w: _Worker, status: str, error: str) -> None:
        task_id, sent, _, _ = w.task
        if status == "timeout":
            w.dump_traceback()
        self._retire(w)
        self._finish(w, TaskResult(task_id, status, error=error, progress=w.note(), stderr_tail=w.stderr_tail(task_id),
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
                               progress=h.get("note"), stderr_tail=w.stderr_tail(w.task[0]) if status != "ok" else "",
                               seconds=h.get("seconds", 0.0))
                # after a MemoryError, or a task that says it damaged its process: a fresh heap
                self._finish(w, r, restart=status == "oom" or bool(h.get("retire")))
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
            self._finish(w, TaskResult(task_id, "crash", error=how, signal=sig, exit_code=code, progress=w.note(),
                                       stderr_tail=w.stderr_tail(task_id), seconds=time.monotonic() - sent), restart=True)
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
                w.note_waits()
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
                task_id, started, _, timeout_s = w.task
                starved = min(w.starved_s(), _STARVED_CAP * timeout_s)
                if started + timeout_s + starved > now + 0.05:  # it waited for a CPU: give it that time
                    w.task = (task_id, started, started + timeout_s + starved, timeout_s)
                    continue
                self._kill_task(w, "timeout", f"exceeded {timeout_s!r} s deadline"
                                + (f" ({starved:.1f} s more for the time it waited for a CPU)" if starved >= 0.05 else ""))
            elif w.state == "starting" and now >= w.startup_deadline:
                self._startup_failed(w, f"no answer within {self.startup_timeout_s!r} s", startup)
        if now >= self._next_rss:
            self._next_rss = now + _RSS_EVERY_S
            self._check_memory(now)
        self._dispatch()

    def pending(self) -> int:
        """Tasks submitted whose results were not yet taken (queued, running or finished)."""
        return len(self._queue) + sum((w.state == "busy") + len(w.ahead) for w in self._workers) + len(self._done)

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
                while not exhausted and len(want) - len(got) < (1 + AHEAD) * self.jobs:  # feed lazily
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
        shutil.rmtree(self.scratch, ignore_errors=True)


def make_echo_handler(init: dict) -> Callable[[bytes], bytes]:
    """The simplest handler (overhead measurements): returns its payload."""
    return lambda payload: payload

