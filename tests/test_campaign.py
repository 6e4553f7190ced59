"""Planted faults prove every oracle: each is found, attributed to the right test, reduced,
reproduced by a standalone script, and the campaign goes on."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

from dlcfuzz.engine.campaign import Campaign, campaign_options  # noqa: E402
from dlcfuzz.ir.serialize import graphs_equal  # noqa: E402
from dlcfuzz.oracle.categories import DedupKey  # noqa: E402
from dlcfuzz.oracle.testcase import TestCase  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


class ReducerWatchingCampaign(Campaign):
    """A campaign whose reducer is closed as soon as it is idle, counting the findings after which
    the reducer was open and the times it was closed while the campaign ran."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.reducer_idle_s = 0.0
        self.open_after_finding = self.released = 0

    def record_finding(self, test, v) -> None:
        super().record_finding(test, v)
        self.open_after_finding += self._reducer is not None

    def release_idle_reducer(self, now: float) -> None:
        was_open = self._reducer is not None
        super().release_idle_reducer(now)
        self.released += was_open and self._reducer is None


def campaign(tmp_path: Path, compiler: str, tests: int, watch: list[int] | None = None, **kw) -> Path:
    """Run a campaign; `watch` receives (findings after which the reducer was open, times it was
    closed while the campaign ran) of a campaign that closes its reducer once it is idle."""
    out = tmp_path / "run"
    opts = campaign_options(compiler=compiler, strategy=kw.pop("strategy", "random"), seconds=600, jobs=2, seed=kw.pop("seed", 0), out=out, ops=kw.pop("ops", 6),
                           max_tests=tests, quiet=True, **kw)
    camp = (ReducerWatchingCampaign if watch is not None else Campaign)(opts)
    camp.run()
    if watch is not None:
        watch.extend([camp.open_after_finding, camp.released])
    return out


def findings(out: Path) -> list[dict]:
    db = sqlite3.connect(out / "store.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM findings ORDER BY id")]


def count_done(out: Path) -> int:
    return sqlite3.connect(out / "store.sqlite").execute(
        "SELECT (SELECT COUNT(*) FROM tests WHERE status='done') + (SELECT COUNT(*) FROM compact_tests)").fetchone()[0]


def graph_ops(out: Path, test_id: int) -> set[str]:
    blob = sqlite3.connect(out / "store.sqlite").execute("SELECT blob FROM tests WHERE id=?", (test_id,)).fetchone()[0]
    return TestCase.from_bytes(blob).graph.ops_used()


def run_repro(path: Path, timeout: float = 120) -> subprocess.CompletedProcess | None:
    def limit():  # the "alloc" reproducer must not take the machine down
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    try:
        return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limit, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None


EXPECT = {
    "segfault": ("crash", lambda p: p is not None and p.returncode == -signal.SIGSEGV),
    "abort": ("crash", lambda p: p is not None and p.returncode == -signal.SIGABRT),
    "raise": ("unexpected-error", lambda p: p is not None and p.returncode == 1 and "BUG REPRODUCED" in p.stdout),
    "wrong": ("inconsistency", lambda p: p is not None and p.returncode == 1 and "BUG REPRODUCED" in p.stdout),
    "hang": ("hang", lambda p: p is None),
    "alloc": ("oom", lambda p: p is not None and p.returncode != 0),
}


@pytest.mark.parametrize("fault", list(EXPECT))
def test_planted_fault_is_found_reduced_and_reproduced(tmp_path, fault):
    op = "add"
    kw = {"timeout_s": 1.0} if fault == "hang" else {}
    if fault == "alloc":
        kw["memory_mb"] = 600
    # a few operators only, so that the faulty one is in most graphs whatever the seed; fewer tests
    # where each faulty one costs seconds: a crash or out-of-memory respawns a worker (~1.5 s), a hang runs
    # twice, the second time on 4x the deadline (several faulty tests still show the campaign goes on)
    tests = {"hang": 6, "alloc": 12, "segfault": 16, "abort": 16}.get(fault, 40)
    # the reducer closed when idle, watched once: each close costs the next finding a pool start (~2 s)
    reducer: list[int] | None = [] if fault == "raise" else None
    # edge values on: `wrong` adds 1 to output 0, which a huge value absorbs in every smaller graph, so
    # reduction tries all values small first (a finding of this campaign stayed at 6 nodes before); small
    # sizes (long axes have tests of their own)
    out = campaign(tmp_path, f"planted:{fault}@{op}", tests=tests, watch=reducer,
                   only_ops=[op, "relu", "mul", "sub", "neg"], sizes="small", **kw)
    category, reproduced = EXPECT[fault]
    fs = findings(out)
    assert fs, "planted fault not found"
    # an idle reducer's worker is closed while the campaign runs (it used to stay for the rest of a
    # long run): here at the loop's next turn after a reduction, as its idle time is 0
    if reducer is not None:
        open_after_finding, released = reducer
        assert open_after_finding >= 1 and 1 <= released <= open_after_finding, reducer
    assert {f["category"] for f in fs} == {category}
    for f in fs:  # attributed to a test that really contains the faulty operator
        assert op in graph_ops(out, f["test_id"])
        assert json.loads(f["configs"]) == ["ort-all"] if category != "inconsistency" else "ort-all" in json.loads(f["configs"])
    distinct = [f for f in fs if f["duplicate_of"] is None]
    assert len(distinct) == 1, [f["key"] for f in distinct]
    first = distinct[0]
    assert first["reduced_nodes"] <= 2, first  # the faulty op (plus at most one producer)
    # the campaign went on past the fault
    assert count_done(out) == tests
    repro = next((out / "findings").glob(f"{first['id']:04d}-*/repro.py"))
    p = run_repro(repro, timeout=6 if fault == "hang" else 120)  # the planted hang never ends
    assert reproduced(p), (p.returncode, p.stdout[-800:], p.stderr[-800:]) if p else "timed out"
    if category == "inconsistency":  # compared with the reference, not only between configurations
        assert "ort-all output 0 vs the reference" in p.stdout, p.stdout[-800:]


def test_a_reduction_that_a_damaged_worker_misled_is_not_kept(tmp_path):
    """`poison`: once it raised, every optimized build in that process raises the same error, so in the reducer's
    worker every candidate "shows" the finding, down to a lone node without the faulty operator (an OpenVINO
    reduction kept a lone Sign so). The reduced test is checked in a fresh worker, where it does not show it: the
    finding is kept as found, saying why, and its reproducer (a fresh process) shows it."""
    out = campaign(tmp_path, "planted:poison@add", tests=8, only_ops=["add", "relu", "mul", "sub", "neg"],
                   sizes="small")
    distinct = [f for f in findings(out) if f["duplicate_of"] is None]
    assert [f["category"] for f in distinct] == ["unexpected-error"], distinct
    first = distinct[0]
    assert "add" in graph_ops(out, first["test_id"])
    assert "in a fresh worker" in (first["not_minimal"] or ""), first
    assert first["reduced_nodes"] == first["nodes"] > 1, first
    p = run_repro(next((out / "findings").glob(f"{first['id']:04d}-*/repro.py")))
    assert EXPECT["raise"][1](p), (p.returncode, p.stdout[-800:], p.stderr[-800:]) if p else "timed out"


def test_a_fault_that_needs_reused_memory_is_reproduced_by_a_second_round(tmp_path):
    """Regression (onnxruntime 1.20.1 campaign): kernels that left part of their output unwritten were
    found by the long-lived workers, while their scripts, on a fresh process's zeroed memory, printed
    "not reproduced" (14 findings). Planted: right on the process's first run only. The script runs
    every configuration again and shows it in round 2. (The reducer's worker also starts fresh, so its
    first check misses: reduction may stop early and split the fault, as with the real findings.)"""
    out = campaign(tmp_path, "planted:stale@add", tests=40, only_ops=["add", "relu", "mul", "sub", "neg"])
    distinct = [f for f in findings(out) if f["duplicate_of"] is None]
    assert distinct and {f["category"] for f in distinct} == {"inconsistency"}
    for f in distinct:
        assert "add" in graph_ops(out, f["test_id"])
        p = run_repro(next((out / "findings").glob(f"{f['id']:04d}-*/repro.py")), timeout=120)
        assert p is not None and p.returncode == 1 and "shown in round 2" in p.stdout, p and p.stdout[-800:]


def test_auto_reduces_through_the_campaigns_one_reducer(tmp_path):
    """`auto` reduces each arm's findings in the campaign's one reducer pool (tagged by arm), not in a
    pool per arm: the 30-minute memory run peaked at 1.26 GB with a reducer worker per arm."""
    out = campaign(tmp_path, "planted:wrong@add", tests=80, strategy="auto", model="tiny_vgg")
    # the graph arms' findings are inconsistencies; the metamorphic arm (its floor test in block 0) finds
    # the planted Add as a mutant that differs from its seed. Every one is reduced to its fixed point; the
    # planted Add's to two nodes at most (a graph arm may also find ORT's own float16 inconsistency, e.g.
    # a Mish whose rounding flips a LessEqual between ort-disable and ort-all, minimal at 6 nodes)
    every = [f for f in findings(out) if f["duplicate_of"] is None]
    distinct = [f for f in every if f["category"] != "metamorphic"]
    assert distinct and {f["category"] for f in distinct} == {"inconsistency"}
    planted = [f for f in distinct if "add" in (DedupKey.parse(f["key"]).option("ops") or "").split(",")]
    assert planted and planted[0]["reduced_nodes"] <= 2, distinct
    repro = next((out / "findings").glob(f"{planted[0]['id']:04d}-*/repro.py"))
    p = run_repro(repro)
    assert p is not None and p.returncode == 1 and "BUG REPRODUCED" in p.stdout, p and p.stdout[-800:]


def test_correct_pair_is_quiet_and_reports(tmp_path):
    """No wrong result or inconsistency but ORT's documented bugs (the known-bugs register: a real bug such
    as Col2Im's N-D dilation, microsoft/onnxruntime#18156, is a finding, not noise)."""
    from dlcfuzz.engine.known import Register
    from dlcfuzz.engine.report import classify, cluster_known
    from dlcfuzz.engine.store import Store

    out = campaign(tmp_path, "onnxruntime", tests=150, ops=10, configs=["ort-disable", "ort-basic"])
    clusters, known = classify(out, Store(out / "store.sqlite", create=False), Register(use_env=False))
    bad = [c.describe() for c in clusters if c.first.category in ("inconsistency", "wrong-result")
           and cluster_known(c, known) is None]
    assert not bad, bad

    assert Store(out / "store.sqlite", create=False).totals()["verdicts"].get("pass", 0) >= 120  # judged, not unknown
    assert (out / "report.html").exists()
    html = (out / "report.html").read_text()
    assert "Statistics" in html and "Tests over time" in html


def test_kill_and_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "dlcfuzz.cli", "fuzz", "--compiler", "planted:raise@add", "--strategy", "random", "--time", "600s",
           "--jobs", "2", "--seed", "7", "--ops", "6", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    db_path = out / "store.sqlite"
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.5)
        if db_path.exists():
            try:
                n = count_done(out)
            except sqlite3.OperationalError:
                continue
            if n >= 30:
                break
    os.killpg(proc.pid, signal.SIGKILL)  # the campaign and its workers, mid-flight
    proc.wait()
    db = sqlite3.connect(db_path)
    tests = "SELECT seq, blob FROM tests UNION ALL SELECT seq, NULL FROM compact_tests"  # compacted: no blob
    before = dict(db.execute(tests).fetchall())
    finished = {r[0] for r in db.execute("SELECT seq FROM tests WHERE status = 'done' UNION SELECT seq FROM compact_tests")}
    before_findings = db.execute("SELECT COUNT(*) FROM findings").fetchone()[0]
    assert len(before) >= 30
    p = subprocess.run([sys.executable, "-m", "dlcfuzz.cli", "fuzz", "--resume", str(out), "--time", "600s",
                        "--max-tests", str(max(before) + 20), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    db = sqlite3.connect(db_path)
    after = dict(db.execute(tests).fetchall())
    # nothing lost, nothing duplicated, every test finished, stored blobs unchanged
    assert sorted(after) == list(range(max(before) + 20))
    # a finished test's blob is final; one in flight at the kill keeps its graph and seed (the
    # worker may re-sample non-finite inputs deterministically and the store records what ran)
    assert all(after[s] == b for s, b in before.items() if s in finished)
    for s, b in before.items():
        if b is not None and after[s] is not None:
            old, new = TestCase.from_bytes(b), TestCase.from_bytes(after[s])
            assert graphs_equal(old.graph, new.graph) and old.seed == new.seed
    assert db.execute("SELECT COUNT(*) FROM tests WHERE status != 'done'").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM findings").fetchone()[0] >= before_findings
    dup_tests = db.execute("SELECT test_id, category, COUNT(*) c FROM findings GROUP BY test_id, category HAVING c > 1").fetchall()
    assert not dup_tests
