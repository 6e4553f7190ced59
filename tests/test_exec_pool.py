"""The sandboxed pool: every planted fault kills only its worker, is attributed to its task, and the pool goes on."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from dlcfuzz.exec.pool import WorkerPool, WorkerStartupError

H = "dlcfuzz.exec.planted:make_handler"


def cmd(do: str, data=None) -> bytes:
    return json.dumps({"do": do, "data": data}).encode()


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(H, jobs=2, timeout_s=2.0, memory_mb=400) as p:
        yield p


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("do,status,sig", [
    ("segfault", "crash", signal.SIGSEGV), ("abort", "crash", signal.SIGABRT), ("exit", "crash", None),
    ("hang", "timeout", None), ("alloc", "oom", None), ("raise", "error", None), ("memoryerror", "oom", None),
])
def test_fault_is_attributed_and_pool_recovers(pool, do, status, sig):
    r = pool.run(cmd(do))
    assert r.status == status, r
    if sig is not None:
        assert r.signal == sig and "SIG" in r.error
    if do == "segfault":
        assert "Fatal Python error" in r.stderr_tail or "Segmentation" in r.stderr_tail
    if do == "raise":
        assert "ValueError: planted" in r.error and not r.worker_restarted
    ok = pool.run(cmd("echo", [1, 2]))
    assert ok.status == "ok" and json.loads(ok.payload) == [1, 2]


def test_timeout_kills_grandchildren(pool):
    r = pool.run(cmd("spawn_child_and_hang"))
    assert r.status == "timeout"
    child = int(r.progress.split()[1])
    time.sleep(0.2)
    assert not alive(child)


def test_progress_note_survives_a_crash(pool):
    r = pool.run(cmd("progress"))
    assert r.status == "crash" and r.progress == "step 1"


def test_map_keeps_order_with_faults_in_between(pool):
    payloads = [cmd("echo", i) if i % 7 else cmd("raise") for i in range(60)]
    payloads[30] = cmd("segfault")
    res = pool.map(payloads)
    assert [r.task_id for r in res] == sorted(r.task_id for r in res)
    for i, r in enumerate(res):
        if i == 30:
            assert r.status == "crash"
        elif i % 7 == 0:
            assert r.status == "error"
        else:
            assert json.loads(r.payload) == i


def test_many_small_tasks():
    with WorkerPool(H, jobs=1) as p:
        res = p.map([cmd("echo", i) for i in range(2000)])
    assert [json.loads(r.payload) for r in res] == list(range(2000))


def test_startup_failure_is_a_clear_error():
    with pytest.raises(WorkerStartupError, match="compiler not installed"):
        WorkerPool(H, {"fail_startup": True}, jobs=1)


def test_close_leaves_no_processes():
    p = WorkerPool(H, jobs=2)
    pids = [w.proc.pid for w in p._workers]
    p.close()
    assert not any(alive(pid) for pid in pids)
