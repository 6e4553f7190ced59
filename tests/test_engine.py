"""The engine is strategy-blind: plug-in strategies and compilers run from one file each; dlcfuzz's
own exceptions are internal errors of one test, never of the campaign; options that do not apply
are refused; every strategy survives kill -9 and resumes without losing or duplicating a test."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

import plugin_example  # noqa: E402,F401  (registers the plug-ins: one line each in that file)
from dlcfuzz.cli import main  # noqa: E402
from dlcfuzz.engine.campaign import Campaign, CampaignOptions, campaign_options  # noqa: E402
from dlcfuzz.engine.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path: Path, name: str, **kw) -> Store:
    out = tmp_path / name
    Campaign(campaign_options(seconds=600, jobs=2, seed=kw.pop("seed", 0), out=out, quiet=True, **kw)).run()
    return Store(out / "store.sqlite", create=False)


def test_plugin_strategy_and_compiler_run_from_one_file(tmp_path):
    """The planted compiler's wrong Abs is found and reduced by the plug-in strategy; the same
    strategy stays quiet on the correct compiler over the same tests."""
    bad = run(tmp_path, "bad", compiler="abs-plus-one", strategy="one-op", op="abs", max_tests=12)
    found = bad.findings(distinct_only=False)
    assert found and all(f["category"] in ("inconsistency", "wrong-result") for f in found)
    assert bad.totals()["verdicts"].get("bug", 0) >= 10  # the fault shows on (nearly) every test
    assert all(f["reduced_nodes"] == 1 for f in bad.findings())
    good = run(tmp_path, "good", compiler="onnxruntime", strategy="one-op", op="abs", max_tests=12)
    assert good.findings(distinct_only=False) == []
    assert good.totals()["verdicts"].get("pass", 0) >= 10  # judged, not unknown


@pytest.mark.parametrize("compiler,configs,category", [
    ("abs-plus-one", ["ort-all"], "wrong-result"),  # every configuration is wrong: the reference decides
    ("abs-reject", [], "inconsistent-rejection"),  # the optimized build rejects what the other compiles
])
def test_planted_faults_fire_the_wrong_result_and_rejection_oracles(tmp_path, compiler, configs, category):
    store = run(tmp_path, "p", compiler=compiler, strategy="one-op", op="abs", max_tests=8, configs=configs)
    found = store.findings(distinct_only=False)
    assert len(found) >= 6 and {f["category"] for f in found} == {category}
    assert [f["reduced_nodes"] for f in store.findings()] == [1]


def test_cli_loads_a_plugin_module(tmp_path):
    out = tmp_path / "cli"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    p = subprocess.run([sys.executable, "-m", "dlcfuzz.cli", "--plugin", "plugin_example", "fuzz", "--strategy", "one-op",
                        "--op", "abs", "--compiler", "abs-plus-one", "--max-tests", "4", "--jobs", "1", "--out", str(out),
                        "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "internal errors: 0"
    assert Store(out / "store.sqlite", create=False).findings()
    assert main(["--plugin", "no_such_plugin_module", "fuzz"]) == 2


def test_internal_errors_are_stored_counted_replayed_and_the_campaign_goes_on(tmp_path, capsys):
    out = tmp_path / "flaky"
    rc = main(["fuzz", "--compiler", "onnxruntime", "--strategy", "flaky-random", "--ops", "4", "--max-tests", "30",
               "--time", "600s", "--jobs", "2", "--out", str(out), "--quiet"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == 3 and lines[-1] == "internal errors: 3"
    store = Store(out / "store.sqlite", create=False)
    rows = store.db.execute("SELECT seq, status, verdict FROM tests UNION ALL "
                            "SELECT seq, 'done', verdict FROM compact_tests ORDER BY seq").fetchall()
    assert [r[0] for r in rows] == list(range(30)) and all(r[1] == "done" for r in rows)  # no test lost
    assert [r[0] for r in rows if r[2] == "internal-error"] == [3, 13, 23]
    errors = store.internal_errors()
    assert [(e["seq"], e["phase"]) for e in errors] == [(3, "make"), (13, "make"), (23, "make")]
    assert all("planted internal error" in e["traceback"] and e["seed"] for e in errors)
    assert "Internal errors (3)" in (out / "report.html").read_text()
    test_id = errors[0]["test_id"]
    assert main(["replay", str(out), "--test", str(test_id)]) == 1  # raised again
    assert "planted internal error at test 3" in capsys.readouterr().err
    assert main(["replay", str(out), "--test", str(test_id + 1)]) in (0, 1)  # an ordinary test replays


@pytest.mark.parametrize("argv", [
    ["--compiler", "tvm", "--strategy", "tzer", "--mode", "disruptive"],
    ["--strategy", "random", "--model", "resnet18"],
    ["--strategy", "metamorphic", "--ops", "5"],
    ["--strategy", "hirgen", "--mode", "sideways"],
    ["--strategy", "nonesuch"],
    ["--strategy", "tzer", "--compiler", "onnxruntime"],
])
def test_options_that_do_not_apply_are_refused(tmp_path, capsys, argv):
    assert main(["fuzz", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dlcfuzz: error:")
    assert not (tmp_path / "x" / "store.sqlite").exists()


KILLED = {  # strategy -> its campaign's arguments (small, fast ones)
    "random": ["--compiler", "planted:raise@add", "--ops", "6"],
    "hirgen": ["--compiler", "onnxruntime", "--ops", "6"],
    "hirgen-disruptive": ["--compiler", "onnxruntime", "--strategy", "hirgen", "--mode", "disruptive"],
    "metamorphic": ["--compiler", "onnxruntime", "--model", "tiny_vgg"],
    "oatest": ["--compiler", "onnxruntime", "--ops", "4"],
    "tzer": ["--compiler", "tvm", "--coverage", "ir", "--graphs", "1", "--zoo", "0"],
    "auto": ["--compiler", "onnxruntime", "--ops", "5", "--model", "tiny_vgg"],
}


TESTS = "SELECT seq, seed, blob FROM tests UNION ALL SELECT seq, NULL, NULL FROM compact_tests"  # compacted: one row


def done(db_path: Path) -> int:
    try:
        return sqlite3.connect(db_path).execute("SELECT (SELECT COUNT(*) FROM tests WHERE status='done') + "
                                                "(SELECT COUNT(*) FROM compact_tests)").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.parametrize("name", list(KILLED))
def test_kill_9_and_resume_lose_and_duplicate_nothing(tmp_path, name):
    if name == "tzer":
        pytest.importorskip("tvm")
    strategy = name.split("-")[0] if name != "hirgen-disruptive" else "hirgen"
    args = KILLED[name] if "--strategy" in KILLED[name] else ["--strategy", strategy, *KILLED[name]]
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "dlcfuzz.cli", "fuzz", *args, "--time", "600s", "--jobs", "2", "--seed", "7",
           "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    want = 3 if name in ("metamorphic", "tzer") else 20
    deadline = time.time() + 180
    while time.time() < deadline and done(out / "store.sqlite") < want and proc.poll() is None:
        time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)  # the campaign and its workers, mid-flight
    proc.wait()
    db = sqlite3.connect(out / "store.sqlite")
    before = {r[0]: (r[1], r[2]) for r in db.execute(TESTS)}
    assert len(before) >= want, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    total = max(before) + (4 if name in ("metamorphic", "tzer") else 10)
    p = subprocess.run([sys.executable, "-m", "dlcfuzz.cli", "fuzz", "--resume", str(out), "--time", "600s",
                        "--max-tests", str(total), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    db = sqlite3.connect(out / "store.sqlite")
    after = {r[0]: (r[1], r[2]) for r in db.execute(TESTS)}
    assert sorted(after) == list(range(total))  # nothing lost, nothing duplicated
    # same tests, same seeds (a compacted test keeps no seed: the master seed derives it)
    assert all(after[s][0] in (seed, None) for s, (seed, _) in before.items() if seed is not None)
    assert db.execute("SELECT COUNT(*) FROM tests WHERE status != 'done'").fetchone()[0] == 0
    dup = db.execute("SELECT test_id, key, COUNT(*) c FROM findings GROUP BY test_id, key HAVING c > 1").fetchall()
    assert not dup
    assert db.execute("SELECT COUNT(*) FROM internal_errors").fetchone()[0] == 0


def test_auto_schedule_is_reproducible_across_resume(tmp_path):
    """The bandit's arms are a function of the master seed and earlier results, not of timing: a
    campaign killed half-way and resumed makes the uninterrupted campaign's tests."""
    def schedule(out: Path) -> list[tuple[int, int]]:
        return Store(out / "store.sqlite", create=False).db.execute("SELECT seq, arm FROM schedule ORDER BY seq").fetchall()

    kw = dict(compiler="onnxruntime", strategy="auto", ops=5, model="tiny_vgg", seconds=600, seed=4, quiet=True)
    whole_run = Campaign(campaign_options(jobs=2, out=tmp_path / "whole", max_tests=160, **kw))
    whole_run.run()
    # memory stays flat: only the blocks not yet folded keep their arms in memory (the store has all)
    from dlcfuzz.strategies.auto import BLOCK

    assert len(whole_run.strategy.schedule) <= 3 * BLOCK < 160
    Campaign(campaign_options(jobs=1, out=tmp_path / "split", max_tests=70, **kw)).run()
    Campaign(campaign_options(jobs=2, out=tmp_path / "split", max_tests=160, seconds=600, quiet=True), resume=True).run()
    whole = schedule(tmp_path / "whole")
    assert len(whole) == 160 and schedule(tmp_path / "split") == whole
    assert len({arm for _, arm in whole}) >= 3  # the schedule mixes strategies


def test_auto_stores_the_metamorphic_arms_passing_mutants_as_their_steps(tmp_path, monkeypatch):
    """Under auto too, a passing mutant is stored as the steps new in it and rebuilds from the store
    (its digest checked), also when it was made after a resume from a chain read back from steps."""
    import dlcfuzz.strategies.auto as auto

    monkeypatch.setattr(auto, "COST_S", {})  # every arm as cheap: the metamorphic arm gets its share of tests
    kw = dict(compiler="onnxruntime", strategy="auto", ops=5, model="tiny_vgg", seconds=600, seed=4, quiet=True)
    Campaign(campaign_options(jobs=1, out=tmp_path / "run", max_tests=40, **kw)).run()
    Campaign(campaign_options(jobs=2, out=tmp_path / "run", max_tests=80, seconds=600, quiet=True), resume=True).run()
    camp = Campaign(CampaignOptions(out=tmp_path / "run", quiet=True), resume=True, record_run=False)
    light = [(seq, b) for seq, b in camp.store.blobs_from(0) if camp.strategy.is_light(b)]
    assert any(seq < 40 for seq, _ in light) and any(seq >= 40 for seq, _ in light)
    assert all(len(camp.strategy.inflate(b)) > 4 * len(b) for _, b in light)
    camp.store.close()


def test_every_finding_is_reduced_on_its_own_budget_or_says_why_not(tmp_path, capsys):
    """Issue 17 item 2: reduction is not a share of the campaign's time. With a budget each finding
    is reduced to a minimal form; with none (budget 0 s, or --no-reduce) the finding says why it is
    not minimal, in the store, its detail.txt, `dlcfuzz list` and its issue text."""
    common = dict(compiler="planted:miseval@relu", strategy="random", ops=6, only_ops=["relu", "add", "mul", "neg"],
                  max_tests=6, seed=1)
    reduced = run(tmp_path, "reduced", **common).findings()
    assert reduced and all(f["not_minimal"] is None and f["reduced_nodes"] <= 2 < f["nodes"] for f in reduced)
    spent = run(tmp_path, "spent", reduce_budget_s=0.0, **common).findings()
    assert spent and all("0 s budget ran out" in f["not_minimal"] and f["reduced_nodes"] == f["nodes"] for f in spent)
    detail = next((tmp_path / "spent" / "findings").glob("*/detail.txt")).read_text()
    assert "not minimal, its 0 s budget ran out" in detail
    off = run(tmp_path, "off", reduce=False, **common).findings()
    assert off and all(f["not_minimal"] == "reduction is off (--no-reduce)" for f in off)
    assert main(["list", str(tmp_path / "spent")]) == 0
    assert "+nodes" in capsys.readouterr().out
    assert main(["issue", str(tmp_path / "spent"), str(spent[0]["id"]), "--out", str(tmp_path / "i.md")]) == 0
    assert "It may not be minimal: its 0 s budget ran out" in (tmp_path / "i.md").read_text()


def test_reduction_budget_counts_checks_and_time():
    from dlcfuzz.reduce.budget import ReductionBudget

    now = [0.0]
    b = ReductionBudget(10.0, 3, clock=lambda: now[0])
    assert [b.take() for _ in range(4)] == [True, True, True, False]
    assert b.stopped == "its limit of 3 compile+run checks was reached"
    b = ReductionBudget(10.0, 100, clock=lambda: now[0])
    calls = []
    guarded = b.guard(lambda x: calls.append(x) or True)
    assert guarded(1)
    now[0] = 10.5
    assert not guarded(2) and calls == [1]
    assert b.stopped == "its 10 s budget ran out after 1 checks"
