"""Campaign workers as Ray actors on every node of a cluster (`dlcfuzz fuzz --cluster auto|ADDRESS`).

Each actor holds a local `WorkerPool` of one worker and runs one task at a time, so its worker
process imports the compiler once and a segfault, hang or out-of-memory of a test is classified on
its node exactly as the local pool classifies it. The driver keeps generation, the oracle and the
one store; `RayPool` has the interface of `WorkerPool` that the engine uses. A lost actor or node
(the actor's process, its node, or the connection to it) costs no test: the tasks it held are
re-submitted to live actors (their first answers are never seen, so none is judged twice) and the
actor is replaced, which takes effect when the cluster has room for it.

Every node needs dlcfuzz and the compiler installed in the same Python environment as the driver.
Ray is imported only here, and only when a cluster is asked for (extra `cluster`).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from dlcfuzz.errors import UsageError
from dlcfuzz.exec.pool import ClosingPool, PoolStats, TaskResult, WorkerPool, WorkerStartupError

MAX_LOSSES = 3  # a task whose actor died this many times while holding it is the cause: reported as a crash
DEPTH = 2  # tasks queued on one actor: the next one starts without a driver round trip
HUNG_ACTOR_GRACE_S = 60.0  # beyond the task deadlines and a worker restart: an actor that says nothing is lost


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--cluster needs Ray: pip install 'dlcfuzz[cluster]'") from None
    return ray


def connect(address: str) -> None:
    """Join the cluster at `address` ("auto": the running one, else start a local one); once per process."""
    ray = _ray()
    if ray.is_initialized():
        return
    if address != "auto" and not address.startswith("ray://"):  # Ray retries a dead address for minutes
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"--cluster {address}: expected auto or HOST:PORT (the head node's GCS address)")
        try:
            socket.create_connection((host, int(port)), timeout=10).close()
        except OSError as e:
            raise UsageError(f"--cluster {address}: no Ray cluster answers there ({e.strerror or e})") from None
    kw: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING, "include_dashboard": False}
    try:
        ray.init(**kw) if address == "auto" else ray.init(address=address, **kw)
    except ConnectionError as e:
        raise UsageError(f"--cluster {address}: cannot connect: {e}") from None


def cluster_cpus(address: str) -> int:
    """The cluster's CPUs (the default number of actors: one per CPU)."""
    connect(address)
    return max(1, int(_ray().cluster_resources().get("CPU", 1)))


def cluster_jobs(address: str, jobs: int | None) -> int:
    """The number of actors for `--jobs` (None: one per CPU), refused when the cluster has too few CPUs."""
    cpus = cluster_cpus(address)
    if jobs is not None and jobs > cpus:
        raise UsageError(f"--jobs {jobs}: the cluster at {address} has {cpus} CPUs (one actor per CPU)")
    return cpus if jobs is None else jobs


def make_pool(cluster: str | None, handler: str, init: dict | None, jobs: int, timeout_s: float,
              memory_mb: int = 4096, cpus_per_actor: float = 1.0) -> WorkerPool | RayPool:
    """The engine's pool: local worker processes, or Ray actors when `cluster` is given."""
    if cluster is None:
        from dlcfuzz.exec.worker import preload_modules

        return WorkerPool(handler, init, jobs=jobs, timeout_s=timeout_s, memory_mb=memory_mb,
                          preload=preload_modules(handler, init or {}))
    return RayPool(handler, init, jobs=jobs, timeout_s=timeout_s, memory_mb=memory_mb, address=cluster,
                   cpus_per_actor=cpus_per_actor)


def _cause(e: BaseException) -> BaseException:
    """The exception an actor method raised, from the RayTaskError that carries it."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e


class PoolActor:
    """Runs on a node: one local worker (the compiler imported once) serving one task at a time."""

    def __init__(self, handler: str, init: dict, timeout_s: float, memory_mb: int, startup_timeout_s: float,
                 driver_sys_path: list[str] | None = None) -> None:
        self.args = (handler, init, timeout_s, memory_mb, startup_timeout_s)
        self.driver_sys_path = driver_sys_path or []
        self.pool: WorkerPool | None = None

    def start(self) -> dict[str, Any]:
        """Start the worker (a WorkerStartupError comes back to the driver as the cause of a RayTaskError)."""
        import ray

        handler, init, timeout_s, memory_mb, startup_timeout_s = self.args
        # the driver's import path where this node has it (a --plugin module beside the driver's code, as the
        # local pool's workers get it); the worker inherits this process's sys.path
        sys.path.extend(p for p in self.driver_sys_path if p not in sys.path and os.path.isdir(p))
        self.pool = WorkerPool(handler, init, jobs=1, timeout_s=timeout_s, memory_mb=memory_mb,
                               startup_timeout_s=startup_timeout_s)
        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    def run(self, payload: bytes, timeout_s: float) -> TaskResult:
        return self.pool.run(payload, timeout_s)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


@dataclass
class ClusterStats(PoolStats):
    actors_lost: int = 0
    tasks_resubmitted: int = 0  # tasks re-run elsewhere because their actor was lost while holding them


@dataclass
class _Actor:
    handle: Any
    state: str  # "starting" -> "live" -> "dead"
    since: float  # when it was started, or last answered
    ready: Any = None  # ObjectRef of start() while starting
    node: str | None = None
    tasks: list[int] = field(default_factory=list)  # task ids queued on it, oldest first


class RayPool(ClosingPool):
    """`jobs` Ray actors (spread over the nodes, `cpus_per_actor` CPUs each) serving `handler`, with the
    interface of `WorkerPool` (submit, next_result, run, map, results, pending, close; a context manager).
    Not thread-safe: use one pool from one thread at a time."""

    def __init__(self, handler: str, init: dict | None = None, jobs: int | None = None, timeout_s: float = 30.0,
                 memory_mb: int = 4096, startup_timeout_s: float = 120.0, address: str = "auto",
                 cpus_per_actor: float = 1.0, depth: int = DEPTH) -> None:
        if ":" not in handler:
            raise ValueError(f"handler must be 'module:factory', got {handler!r}")
        ray = self._rayx = _ray()
        connect(address)
        cpus = cluster_cpus(address)
        self.jobs = max(1, int(jobs or cpus))
        if cpus_per_actor and self.jobs * cpus_per_actor > cpus:
            raise UsageError(f"--jobs {self.jobs}: the cluster has {cpus} CPUs (one actor per CPU)")
        self.handler, self.init = handler, dict(init or {})
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.startup_timeout_s = float(startup_timeout_s)
        self.depth = max(1, int(depth))
        self.stats = ClusterStats()
        self._cls = ray.remote(PoolActor).options(num_cpus=cpus_per_actor, scheduling_strategy="SPREAD",
                                                   max_restarts=0, max_concurrency=1)
        self._next_id = 0
        self._tasks: dict[int, list[Any]] = {}  # task id -> [payload, timeout_s, losses] until its result is taken
        self._queue: collections.deque[int] = collections.deque()
        self._done: collections.deque[TaskResult] = collections.deque()
        self._refs: dict[Any, tuple[_Actor, int]] = {}  # ObjectRef of run() -> (actor, task id)
        self._closed = False
        self._broken: str | None = None
        self._actors: list[_Actor] = []
        try:
            self._actors = [self._start() for _ in range(self.jobs)]
            while any(a.state == "starting" for a in self._actors):  # all up before the first task, as locally
                self._poll(1.0)
                late = [a for a in self._actors if a.state == "starting"
                        and time.monotonic() - a.since > self.startup_timeout_s]
                if late:
                    raise WorkerStartupError(f"{len(late)} of {self.jobs} Ray actors did not start within "
                                             f"{self.startup_timeout_s:.0f} s")
        except BaseException:
            self.close()
            raise

    # ---- actors ----------------------------------------------------------
    def _start(self) -> _Actor:
        h = self._cls.remote(self.handler, self.init, self.timeout_s, self.memory_mb, self.startup_timeout_s,
                             list(sys.path))
        return _Actor(h, "starting", time.monotonic(), ready=h.start.remote())

    def _kill(self, a: _Actor) -> None:
        a.state = "dead"
        with contextlib.suppress(Exception):
            self._rayx.kill(a.handle, no_restart=True)

    def _lost(self, a: _Actor, why: str) -> None:
        """The actor (or its node) is gone: its tasks go back to the front of the queue, unseen, and a
        fresh actor takes its slot (pending until the cluster has a CPU for it)."""
        self._kill(a)
        for ref in [r for r, (owner, _) in self._refs.items() if owner is a]:
            del self._refs[ref]
        self.stats.actors_lost += 1
        for task_id in reversed(a.tasks):
            task = self._tasks[task_id]
            task[2] += 1
            if task[2] >= MAX_LOSSES:  # e.g. Ray's memory monitor killing the actor the test blew up
                status = "oom" if "memory" in why.lower() else "crash"
                self._finish(TaskResult(task_id, status, error=f"its Ray actor was lost {task[2]} times while "
                                        f"running it (last: {why})"))
            else:
                self.stats.tasks_resubmitted += 1
                self._queue.appendleft(task_id)
        a.tasks = []
        self._actors[self._actors.index(a)] = self._start()
        self.stats.restarts += 1

    # ---- submission ------------------------------------------------------
    def _check(self) -> None:
        if self._closed:
            raise RuntimeError("pool is closed")
        if self._broken:
            raise WorkerStartupError(self._broken)

    def submit(self, payload: bytes, timeout_s: float | None = None) -> int:
        """Queue one task; returns its task_id. It starts as soon as an actor has room."""
        self._check()
        if not isinstance(payload, bytes | bytearray | memoryview):
            raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
        task_id = self._next_id
        self._next_id += 1
        self._tasks[task_id] = [bytes(payload), self.timeout_s if timeout_s is None else float(timeout_s), 0]
        self._queue.append(task_id)
        self._dispatch()
        return task_id

    def _dispatch(self) -> None:
        for a in self._actors:  # one task each first, then the queued second ones
            for _ in range(self.depth):
                if not self._queue:
                    return
                if a.state != "live" or len(a.tasks) >= self.depth:
                    break
                task_id = self._queue.popleft()
                payload, timeout_s, _ = self._tasks[task_id]
                if not a.tasks:
                    a.since = time.monotonic()
                a.tasks.append(task_id)
                self._refs[a.handle.run.remote(payload, timeout_s)] = (a, task_id)

    # ---- completion ------------------------------------------------------
    def _finish(self, r: TaskResult) -> None:
        s = self.stats
        del self._tasks[r.task_id]
        s.tasks += 1
        s.task_s += r.seconds
        s.handler_s += r.seconds if r.status in ("ok", "error") else 0.0  # as the local pool: handle() ran
        s.ok += r.status == "ok"
        s.errors += r.status == "error"
        s.crashes += r.status == "crash"
        s.timeouts += r.status == "timeout"
        s.ooms += r.status == "oom"
        s.restarts += r.worker_restarted
        self._done.append(r)

    def _on_ready(self, ref: Any) -> None:
        ray = self._rayx
        from ray.exceptions import (
            ActorUnavailableError,
            LocalRayletDiedError,
            NodeDiedError,
            ObjectLostError,
            OwnerDiedError,
            RayActorError,
            RayTaskError,
            WorkerCrashedError,
        )

        lost = (RayActorError, ActorUnavailableError, NodeDiedError, ObjectLostError, OwnerDiedError,
                WorkerCrashedError, LocalRayletDiedError)
        starting = next((a for a in self._actors if a.ready is not None and a.ready == ref), None)
        if starting is not None:  # an actor's start() answered
            starting.ready = None
            try:
                info = ray.get(ref)
            except RayTaskError as e:
                cause = _cause(e)
                self._broken = f"{cause}" if isinstance(cause, WorkerStartupError) else f"actor start failed: {cause}"
                raise WorkerStartupError(self._broken) from None
            except lost:  # its node went away before it was up: start another
                self._kill(starting)
                self._actors[self._actors.index(starting)] = self._start()
                self.stats.restarts += 1
                return
            starting.state, starting.node, starting.since = "live", info["node"], time.monotonic()
            return
        if ref not in self._refs:  # a lost actor's, answered in the same batch: its task is queued again
            return
        a, task_id = self._refs.pop(ref)
        try:
            r = ray.get(ref)
        except RayTaskError as e:  # the actor's own code raised (not the handler: the local pool catches that)
            cause = _cause(e)
            if isinstance(cause, WorkerStartupError):  # its worker could not be restarted, as locally
                self._broken = str(cause)
                raise WorkerStartupError(self._broken) from None
            a.tasks.remove(task_id)
            a.since = time.monotonic()
            self._finish(TaskResult(task_id, "error", error=f"{type(cause).__name__}: {cause}"))
            return
        except lost as e:
            self._lost(a, f"{type(e).__name__}: {' '.join(str(e).split())[:300]}")
            return
        a.tasks.remove(task_id)
        a.since = time.monotonic()
        r.task_id = task_id
        self._finish(r)

    def _poll(self, timeout: float) -> None:
        """Wait up to `timeout` s for answers of actors; replace lost or silent ones; dispatch."""
        ray = self._rayx
        refs = list(self._refs) + [a.ready for a in self._actors if a.ready is not None]
        if refs:
            ready, rest = ray.wait(refs, num_returns=1, timeout=max(0.0, timeout))
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                self._on_ready(ref)
        elif timeout > 0:
            time.sleep(min(timeout, 0.05))
        now = time.monotonic()
        for a in list(self._actors):
            if a.state == "live" and a.tasks:
                allowed = sum(self._tasks[t][1] for t in a.tasks) + self.startup_timeout_s + HUNG_ACTOR_GRACE_S
                if now - a.since > allowed:
                    self._lost(a, f"no answer for {now - a.since:.0f} s")
        if not any(a.state == "live" for a in self._actors):
            oldest = min(a.since for a in self._actors)
            if now - oldest > self.startup_timeout_s:
                self._broken = (f"no Ray actor could be started within {self.startup_timeout_s:.0f} s "
                                f"(the cluster has {ray.cluster_resources().get('CPU', 0):.0f} CPUs)")
                raise WorkerStartupError(self._broken)
        self._dispatch()

    def pending(self) -> int:
        """Tasks submitted whose results were not yet taken (queued, running or finished)."""
        return len(self._tasks) + len(self._done)

    def next_result(self, timeout: float | None = None) -> TaskResult | None:
        """The next finished task (completion order); None if none is pending or `timeout` s passed."""
        self._check()
        end = None if timeout is None else time.monotonic() + timeout
        polled = False
        while not self._done:
            if not self._tasks:
                return None
            left = 3600.0 if end is None else end - time.monotonic()
            if left <= 0 and polled:
                return None
            self._poll(max(0.0, left))
            polled = True
        return self._done.popleft()

    # The same waiting logic as the local pool's, over submit()/next_result()/_done.
    results = WorkerPool.results
    run = WorkerPool.run
    map = WorkerPool.map
    _wait_for = WorkerPool._wait_for

    def nodes(self) -> list[str | None]:
        """The node id of each live actor (for tests and logs)."""
        return [a.node for a in self._actors if a.state == "live"]

    def close(self) -> None:
        """Stop every actor (an idle one closes its worker, a busy one is killed); pending tasks are dropped."""
        if self._closed:
            return
        self._closed = True
        ray = self._rayx
        idle = [a for a in self._actors if a.state == "live" and not a.tasks]
        with contextlib.suppress(Exception):
            if idle:
                ray.wait([a.handle.close.remote() for a in idle], num_returns=len(idle), timeout=5.0)
        for a in self._actors:
            self._kill(a)
        self._actors = []
        self._refs.clear()
        self._tasks.clear()
        self._queue.clear()
