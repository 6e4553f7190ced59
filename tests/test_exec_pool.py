"""The sandboxed pool: every planted fault kills only its worker, is attributed to its task, and the pool goes on."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from dlcfuzz.exec.pool import (
    WorkerPool,
    WorkerStartupError,
    _ForkedProcess,
    _scan_groups,
    _zygote,
    progress,
    retire_after_task,
)

H = "dlcfuzz.exec.planted:make_handler"
ECHO = "dlcfuzz.exec.pool:make_echo_handler"


def cmd(do: str, data=None) -> bytes:
    return json.dumps({"do": do, "data": data}).encode()


# every guarantee holds for both ways a worker starts: a fresh interpreter, or forked by a zygote that
# imported the handler's module once
START = {"spawned": None, "forked": ["dlcfuzz.exec.planted"]}


@pytest.fixture(scope="module", params=list(START))
def pool(request):
    with WorkerPool(H, jobs=2, timeout_s=1.0, memory_mb=300, preload=START[request.param]) as p:
        assert all(isinstance(w.proc, _ForkedProcess) == (request.param == "forked") for w in p._workers)
        yield p


@pytest.fixture(params=list(START))
def preload(request) -> list[str] | None:
    return START[request.param]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def group_of(p: WorkerPool) -> set[int]:
    """Every live process in the pool's workers' process groups."""
    groups = _scan_groups({w.pid for w in p._workers})
    return {pid for pids in groups.values() for pid in pids}


@pytest.mark.parametrize("do,status,sig", [
    ("segfault", "crash", signal.SIGSEGV), ("abort", "crash", signal.SIGABRT), ("exit", "crash", None),
    ("hang", "timeout", None), ("spin", "timeout", None), ("alloc", "oom", None), ("raise", "error", None),
    ("memoryerror", "oom", None), ("badreturn", "error", None), ("child_alloc", "oom", None),
    ("garbage", "crash", None),
])
def test_fault_is_attributed_and_pool_recovers(pool, do, status, sig):
    before = pool.stats.restarts
    r = pool.run(cmd(do))
    assert r.status == status, r
    assert r.worker_restarted == (status != "error")
    assert pool.stats.restarts == before + (status != "error")
    if sig is not None:
        assert r.signal == sig and r.exit_code == -sig and f"killed by signal {sig} ({sig.name})" == r.error
    if do == "exit":
        assert r.exit_code == 3 and r.signal is None and "status 3" in r.error
    if do == "segfault":
        assert "Fatal Python error" in r.stderr_tail and "planted.py" in r.stderr_tail
    if do == "hang":
        assert r.error == "exceeded 1.0 s deadline" and 1.0 <= r.seconds < 3.0
    if do == "spin":  # on a loaded machine, its deadline moves by the time it waited for a CPU (up to 4x)
        assert r.error.startswith("exceeded 1.0 s deadline") and 1.0 <= r.seconds < 4 * 1.0 + 2.0
    if do in ("hang", "spin"):
        assert "planted.py" in r.stderr_tail  # faulthandler's stacks, asked for before the kill
    if do in ("alloc", "child_alloc"):
        assert r.error.startswith("exceeded 300 MiB (rss ")
    if do == "raise":
        assert r.error.startswith("ValueError: planted\n") and "Traceback" in r.error and "planted.py" in r.error
    if do == "garbage":
        assert r.error.startswith("corrupt reply from worker")
    if do == "badreturn":
        assert "TypeError: handler returned str" in r.error
    ok = pool.run(cmd("echo", [1, 2]))
    assert ok.status == "ok" and json.loads(ok.payload) == [1, 2] and not ok.worker_restarted


def test_fault_attributed_to_its_task_among_others(pool):
    ids = {pool.submit(cmd("echo", i)): i for i in range(5)}
    bad = pool.submit(cmd("segfault"))
    ids.update({pool.submit(cmd("echo", i)): i for i in range(5, 10)})
    got = {}
    for r in pool.results():
        got[r.task_id] = r
    assert set(got) == set(ids) | {bad}
    assert got[bad].status == "crash"
    assert all(got[t].status == "ok" and json.loads(got[t].payload) == i for t, i in ids.items())


def test_timeout_kills_grandchildren(pool):
    r = pool.run(cmd("spawn_child_and_hang"))
    assert r.status == "timeout"
    child = int(r.progress.split()[1])
    deadline = time.monotonic() + 2
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(child)


@pytest.fixture
def one_starved_cpu():
    """Three busy loops pinned to one CPU: a worker pinned there gets about a quarter of it (an overloaded
    machine, as when other campaigns share it). Each in a session of its own, as a worker is: with the kernel's
    autogroups, CPU time is shared between sessions first, and three loops of one session took only half of it."""
    import subprocess
    import sys

    if not os.path.exists("/proc/self/schedstat"):
        pytest.skip("this kernel keeps no schedstat: a task's wait for a CPU cannot be told")
    cpu = min(os.sched_getaffinity(0))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(3)]
    try:
        for h in hogs:
            os.sched_setaffinity(h.pid, {cpu})
        yield cpu
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def test_a_task_starved_of_cpu_is_not_a_hang_but_a_spinning_one_still_is(one_starved_cpu):
    """XLA compiles judged hangs at load 28 (7 CPU s in 88 s of wall): a task's deadline moves by the time its
    threads waited for a CPU, up to 4x its timeout; a busy-looping task still times out, a sleeping one at once."""
    with WorkerPool(H, jobs=1, timeout_s=1.0) as p:
        os.sched_setaffinity(p._workers[0].pid, {one_starved_cpu})
        r = p.run(cmd("work", 0.5))
        assert r.status == "ok" and r.seconds > 1.2, r  # past its timeout in wall time, yet judged on its CPU
        r = p.run(cmd("spin"))
        assert r.status == "timeout" and "waited for a CPU" in r.error and r.seconds < 4 * 1.0 + 1.0, r
        os.sched_setaffinity(p._workers[0].pid, {one_starved_cpu})  # the replacement worker
        r = p.run(cmd("hang"))
        assert r.status == "timeout" and r.seconds < 1.9 and "waited" not in r.error, r


def test_a_killed_workers_temporary_files_go_with_its_pool(preload):
    """A worker killed on a timeout cannot clean up (a compiler's cache folder leaked ~20 MB per killed
    Inductor worker into /tmp): its temporary files live in the pool's folder, removed on close."""
    with WorkerPool(H, jobs=1, timeout_s=1.0, preload=preload) as p:
        r = p.run(cmd("mkdtemp_and_hang"))
        assert r.status == "timeout"
        made = r.progress.split(maxsplit=1)[1]
        assert os.path.dirname(made) == p.scratch and os.path.isdir(made)
        assert p.run(cmd("echo", 1)).status == "ok"  # the replacement worker shares the folder
    assert not os.path.exists(p.scratch)


def test_progress_note_survives_a_crash(pool):
    r = pool.run(cmd("progress"))
    assert r.status == "crash" and r.progress == "step 1" and r.signal == signal.SIGSEGV


def test_progress_is_a_noop_outside_a_worker():
    progress("nothing listens")


def test_completion_order_and_per_task_timeout(pool):
    slow = pool.submit(cmd("sleep", 0.4), timeout_s=5.0)
    fast = pool.submit(cmd("echo", "fast"))
    first = pool.next_result(timeout=5)
    assert first.task_id == fast
    assert pool.next_result(timeout=0.0) is None  # the slow one still sleeps
    second = pool.run(cmd("echo", "x"))  # run() leaves the slow result queued for next_result
    assert second.status == "ok"
    rest = list(pool.results())
    assert [r.task_id for r in rest] == [slow] and rest[0].status == "ok"
    assert pool.next_result(timeout=0.1) is None  # nothing pending


def test_map_keeps_order_with_faults_in_between(pool):
    payloads = [cmd("echo", i) if i % 7 else cmd("raise") for i in range(60)]
    payloads[30] = cmd("segfault")
    res = pool.map(iter(payloads))
    assert [r.task_id for r in res] == sorted(r.task_id for r in res)
    for i, r in enumerate(res):
        if i == 30:
            assert r.status == "crash"
        elif i % 7 == 0:
            assert r.status == "error" and "ValueError: planted" in r.error
        else:
            assert json.loads(r.payload) == i


def test_worker_killed_while_idle_is_replaced(pool):
    victim = pool._workers[0].pid
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.1)
    res = pool.map([cmd("echo", i) for i in range(6)])
    assert [json.loads(r.payload) for r in res] == list(range(6))
    assert victim not in [w.pid for w in pool._workers]


def test_stats_count_everything(pool):
    s = pool.stats
    before = (s.tasks, s.ok, s.errors, s.crashes, s.restarts)
    pool.map([cmd("echo", 1), cmd("raise"), cmd("abort"), cmd("echo", 2)])
    assert (s.tasks, s.ok, s.errors, s.crashes, s.restarts) == tuple(
        b + d for b, d in zip(before, (4, 2, 1, 1, 1)))
    assert s.tasks == s.ok + s.errors + s.crashes + s.timeouts + s.ooms
    assert 0 < s.handler_s <= s.task_s <= s.wall_s * pool.jobs


def test_short_tasks_are_sent_ahead_and_long_ones_are_not(preload):
    with WorkerPool(H, jobs=1, preload=preload) as p:
        first, second = p.submit(cmd("sleep", 0.05)), p.submit(cmd("sleep", 0.05))
        time.sleep(0.5)  # the parent does not poll: only a task already in the worker's pipe can run
        got = [p.next_result(timeout=0.0), p.next_result(timeout=0.0)]
        assert [r.task_id for r in got] == [first, second] and all(r.status == "ok" for r in got)
        assert p.run(cmd("sleep", 0.3)).status == "ok"  # a long task: the next one waits in the queue
        first, second = p.submit(cmd("sleep", 0.3)), p.submit(cmd("sleep", 0.05))
        time.sleep(0.6)
        assert p.next_result(timeout=0.0).task_id == first
        assert p.next_result(timeout=0.0) is None  # sent only now: it sleeps 0.05 s from here
        assert p.next_result(timeout=5).task_id == second


def test_faults_behind_and_ahead_keep_their_own_task_and_stderr(preload):
    with WorkerPool(H, jobs=1, timeout_s=1.0, preload=preload) as p:
        ids = [p.submit(cmd("note", "alpha")), p.submit(cmd("segfault")), p.submit(cmd("stderr", "gamma")),
               p.submit(cmd("hang")), p.submit(cmd("stderr", "epsilon"))]
        got = {r.task_id: r for r in p.results()}
        alpha, crash, gamma, hang, epsilon = (got[i] for i in ids)
        assert alpha.status == "ok" and alpha.progress == "alpha"
        assert crash.status == "crash" and crash.signal == signal.SIGSEGV
        assert crash.progress is None  # the task before it wrote a note, not the crashed one
        assert "Fatal Python error" in crash.stderr_tail and "planted.py" in crash.stderr_tail
        assert gamma.status == "ok" and json.loads(gamma.payload) == "gamma"
        assert hang.status == "timeout" and "planted.py" in hang.stderr_tail
        assert "gamma" not in hang.stderr_tail and "dlcfuzz-task" not in hang.stderr_tail
        assert epsilon.status == "ok" and json.loads(epsilon.payload) == "epsilon"  # ahead of the hang, or queued
        assert (p.stats.tasks, p.stats.restarts) == (5, 2)


def test_many_small_tasks_and_big_payloads():
    with WorkerPool(H, jobs=1) as p:
        res = p.map([cmd("echo", i) for i in range(2000)])
        assert [json.loads(r.payload) for r in res] == list(range(2000))
    blob = os.urandom(5 << 20)
    with WorkerPool(ECHO, jobs=2) as p:
        res = p.map([blob, b"", blob[:70000]])
        assert [r.payload for r in res] == [blob, b"", blob[:70000]]


@pytest.mark.parametrize("init,match", [
    ({"fail_startup": True}, "RuntimeError: planted startup failure: compiler not installed"),
    ({"startup_crash": True}, r"killed by signal 11 \(SIGSEGV\) during startup"),
])
def test_startup_failure_is_a_clear_error(init, match, preload):
    with pytest.raises(WorkerStartupError, match=match):
        WorkerPool(H, init, jobs=2, preload=preload)


def test_startup_timeout_and_missing_module():
    t0 = time.monotonic()
    with pytest.raises(WorkerStartupError, match="no answer within 0.5 s"):
        WorkerPool(H, {"startup_sleep": 30}, startup_timeout_s=0.5)
    assert time.monotonic() - t0 < 5
    with pytest.raises(WorkerStartupError, match="ModuleNotFoundError"):
        WorkerPool("no_such_compiler_module:make", jobs=1)


def test_close_leaves_no_processes(preload):
    p = WorkerPool(H, jobs=2, preload=preload)
    p.submit(cmd("spawn_child_and_hang"))
    p.submit(cmd("hang"))
    deadline = time.monotonic() + 5
    while len(group_of(p)) < 3 and time.monotonic() < deadline:  # 2 workers + the grandchild
        time.sleep(0.02)
    procs = group_of(p)
    workers = [w.pid for w in p._workers]
    assert len(procs) == 3
    p.close()
    assert not any(alive(pid) for pid in procs)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in workers)  # reaped: no zombies
    with pytest.raises(RuntimeError, match="closed"):
        p.submit(cmd("echo"))


def test_a_task_that_retires_its_worker_is_the_last_it_runs(preload):
    """A handler that says its task damaged the process (retire_after_task: a compiler's known heap corruption)
    gets its result through, and the tasks after it, including those already sent ahead into that worker's
    pipe, run in a fresh worker."""
    retire_after_task("outside a worker: a no-op")
    with WorkerPool(H, jobs=1, timeout_s=5.0, preload=preload) as p:
        before = json.loads(p.run(cmd("pid")).payload)
        ids = [p.submit(cmd("retire", "planted damage"))] + [p.submit(cmd("pid")) for _ in range(3)]
        got = {r.task_id: r for r in p.results()}
        assert [got[i].status for i in ids] == ["ok"] * 4
        assert json.loads(got[ids[0]].payload) == before and got[ids[0]].worker_restarted
        after = {json.loads(got[i].payload) for i in ids[1:]}
        assert len(after) == 1 and before not in after and not alive(before)
        assert p.stats.restarts == 1 and p.stats.crashes == 0


def test_tests_of_one_process_share_the_zygote_although_pytest_renames_each_phase(monkeypatch):
    """pytest rewrites PYTEST_CURRENT_TEST at every phase of every test: a zygote keyed on it imported the
    compiler again for each test's pools. Any other variable still gets a zygote of its own (a module may read
    it at import)."""
    preload = ["dlcfuzz.exec.planted"]
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/a.py::one (call)")
    first = _zygote(preload, 10.0)
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/b.py::two (setup)")
    assert _zygote(preload, 10.0) is first and first.alive
    monkeypatch.setenv("DLCFUZZ_TEST_IMPORT_READS_THIS", "1")
    assert _zygote(preload, 10.0) is not first


def test_forked_workers_come_from_one_zygote_and_start_without_importing():
    """Pools that preload the same modules share this process's zygote: their workers are its children,
    each in a session of its own, each running the handler factory itself; a module that does not import
    is the worker's clear startup error, as when spawned; a killed zygote is replaced by the next pool."""
    preload = ["dlcfuzz.exec.planted"]
    with WorkerPool(H, jobs=2, preload=preload) as a, WorkerPool(H, {"startup_sleep": 0.01}, preload=preload) as b:
        assert a._zygote is b._zygote is _zygote(preload, 10.0) and a._zygote.alive
        zygote = a._zygote.proc.pid
        for w in [*a._workers, *b._workers]:
            with open(f"/proc/{w.pid}/stat") as f:
                ppid, pgid, sid = map(int, f.read().rsplit(")", 1)[1].split()[1:4])
            assert ppid == zygote and pgid == sid == w.pid
        assert [json.loads(r.payload) for r in b.map([cmd("echo", i) for i in range(4)])] == list(range(4))
    with pytest.raises(WorkerStartupError, match="ModuleNotFoundError"):
        WorkerPool("no_such_compiler_module:make", jobs=1, preload=["no_such_compiler_module"])
    os.kill(zygote, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _zygote(preload, 10.0).proc.pid == zygote and time.monotonic() < deadline:
        time.sleep(0.05)
    with WorkerPool(H, jobs=1, preload=preload) as c:
        assert c._zygote.proc.pid != zygote and isinstance(c._workers[0].proc, _ForkedProcess)
        assert json.loads(c.run(cmd("echo", 7)).payload) == 7
