"""Tzer (low-level TIR fuzzing): mutators keep PrimFuncs well-formed, the pass table runs, coverage
sources report, the planted pass bug is found, correct pass sequences stay quiet, the CLI works."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="Tzer fuzzes TVM's TIR: apache-tvm is not installed")

import tvm_ffi  # noqa: E402

from dlcfuzz.backends.tvm import tir_passes as tpasses  # noqa: E402
from dlcfuzz.oracle.numeric import compare  # noqa: E402
from dlcfuzz.tvm_tir import runner, seeds, tir  # noqa: E402


@pytest.fixture(scope="module")
def funcs():
    return seeds.seed_funcs(0, graphs=3, zoo=False)


def test_seeds_include_the_empty_func_and_legalized_graphs(funcs):
    assert len(funcs) >= 5
    assert tir.node_kind(funcs[0].body) == "Evaluate"
    assert all(tir.well_formed(f) for f in funcs)
    assert any(tir.node_kind(f.body) in ("For", "SeqStmt") for f in funcs[1:])


@pytest.mark.parametrize("name", list(tir.MUTATORS))
def test_every_mutator_keeps_functions_well_formed_and_buildable(funcs, name):
    rng = np.random.default_rng(7)
    made = built = 0
    for i in range(40):
        f = funcs[i % len(funcs)]
        try:
            m, _ = tir.mutate(f, rng, [name])
        except tir.MutationFailed:
            continue
        assert tir.well_formed(m), m.script()
        assert not tvm_ffi.structural_equal(m, f)
        made += 1
        if built < 2:  # the final validity check: it compiles for LLVM after a script round trip
            meta, _ = runner.execute({"script": m.script(), "passes": [], "seed": i, "configs": ["lowest"], "repeat": 0}, [])
            assert meta["observations"][0]["status"] == "ok", meta["observations"][0].get("error")
            built += 1
    assert made >= 10, f"{name} applied only {made} times"


def test_at_least_90_percent_of_mutants_are_well_formed(funcs):
    rng = np.random.default_rng(3)
    ok = n = 0
    f = funcs[1]
    for _ in range(150):
        try:
            m, _ = tir.mutate(f, rng, list(tir.MUTATORS))
        except tir.MutationFailed:
            continue
        n += 1
        ok += tir.well_formed(m)
        if rng.random() < 0.5:
            f = m  # chains of mutations, as the campaign's pool makes them
    assert n >= 100 and ok / n >= 0.9


def test_generator_spans_at_least_60_operators_and_intrinsics():
    gen = tir.Generator(np.random.default_rng(0))
    a = tvm.tirx.decl_buffer((8,), "float32", name="A")
    b = tvm.tirx.decl_buffer((8,), "int32", name="B")
    i = tvm.tirx.Var("i", "int64")
    scope = tir.Scope(vars=[tir.ScalarVar(i, 0, 7)], buffers=[a, b])
    seen: set[str] = set()
    for k in range(3000):
        e = gen.expr(["float32", "int32", "bool", "int64", "float64"][k % 5], 6, scope)
        tir.walk(e, lambda n: seen.add(n.op.name if tir.node_kind(n) == "Call" else tir.node_kind(n)))
    ops = seen - {"Var", "IntImm", "FloatImm"}
    assert len(ops) >= 60, sorted(ops)


def test_pass_sequences_respect_the_rules():
    rng = np.random.default_rng(0)
    for _ in range(200):
        seq = tpasses.sample_sequence(rng)
        assert tpasses.violations(seq) == []
        assert tpasses.violations(tpasses.mutate_sequence(seq, rng)) == []
    assert tpasses.violations(["StorageRewrite"])  # needs FlattenBuffer and VectorizeLoop before it
    assert tpasses.repair(["StorageRewrite"]) == ["FlattenBuffer", "VectorizeLoop", "StorageRewrite"]


def test_every_pass_in_the_table_runs_and_a_correct_sequence_stays_quiet(funcs):
    """Each pass alone, then the whole default-order sequence: results equal the unoptimized build."""
    from dlcfuzz.strategies.tzer import DEFAULT_SEQUENCE

    # ForceNarrowIndexToInt32 refuses int64 data buffers by design (its precondition): a function without them
    f = next(f for f in funcs if tir.node_kind(f.body) in ("For", "SeqStmt") and '"int64")' not in f.script())
    script = f.script()
    for seq in [[p] for p in tpasses.PASSES] + [DEFAULT_SEQUENCE]:
        meta, arrays = runner.execute({"script": script, "passes": tpasses.repair(seq), "seed": 1, "repeat": 0}, [])
        by = {o["config"]: o for o in meta["observations"]}
        assert all(o["status"] == "ok" for o in by.values()), (seq, [o.get("error") for o in by.values()])
        n = by["lowest"]["n"]
        ref = [arrays[f"lowest/{k}"] for k in range(n)]
        for c in ("mutated", "default"):
            assert compare([arrays[f"{c}/{k}"] for k in range(n)], ref) == [], (seq, c)


def test_ir_state_and_python_coverage(funcs):
    import os

    from dlcfuzz.tvm_tir.coverage import PythonLines, parse_sources

    f = funcs[1]
    py = PythonLines(os.path.dirname(tvm.__file__))
    meta, _ = runner.execute({"script": f.script(), "passes": ["StmtSimplify", "FlattenBuffer"], "seed": 0, "repeat": 0},
                             ["ir", "python"], python_cov=py)
    items = set(meta["coverage"])
    assert any(i.startswith("ir:pass:FlattenBuffer:") for i in items)
    assert any(i.startswith("ir:edge:") for i in items)
    assert any(i.startswith("py:tirx/") or i.startswith("py:ir/") for i in items)
    with pytest.raises(ValueError):
        parse_sources("ir,gcov")


SANCOV_TARGET = r"""
int classify(int x) {
  int r = 0;
  if (x > 10) { r += 1; if (x > 100) r += 2; }
  else if (x < 0) { r -= 1; }
  for (int i = 0; i < (x & 3); i++) r ^= i;
  return r;
}
"""


def test_sancov_adapter_reads_distinct_edges_for_distinct_inputs(tmp_path):
    from dlcfuzz.tvm_tir.coverage import SANCOV_RUNTIME, SanCov

    cc = shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (gcc or clang) to build an instrumented library")
    (tmp_path / "rt.c").write_text(SANCOV_RUNTIME)
    (tmp_path / "target.c").write_text(SANCOV_TARGET)
    lib = tmp_path / "libtarget.so"
    # the runtime itself must not be instrumented: compile it separately
    rt_obj, tg_obj = tmp_path / "rt.o", tmp_path / "target.o"
    steps = [[cc, "-c", "-fPIC", "-O0", str(tmp_path / "rt.c"), "-o", str(rt_obj)],
             [cc, "-c", "-fPIC", "-O0", "-fsanitize-coverage=trace-pc", str(tmp_path / "target.c"), "-o", str(tg_obj)],
             [cc, "-shared", str(rt_obj), str(tg_obj), "-o", str(lib)]]
    for step in steps:
        r = subprocess.run(step, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"{Path(cc).name} cannot build with -fsanitize-coverage=trace-pc: {r.stderr[:200]}")
    cov = SanCov(str(lib))
    cov.lib.classify.argtypes = [__import__("ctypes").c_int]
    cov.reset()
    edges = {}
    for x in (5, 50, 500, -5):
        cov.lib.classify(x)
        edges[x] = cov.take()
        assert edges[x], "no edges recorded"
    assert edges[5] != edges[50] and edges[50] != edges[500] and edges[5] != edges[-5]
    cov.lib.classify(50)
    assert cov.take() == edges[50]  # deterministic, and take() resets the counters
    with pytest.raises(ValueError):
        SanCov(str(tmp_path / "rt.o"))


@pytest.mark.slow
def test_planted_pass_bug_is_found_with_a_standalone_reproducer(tmp_path):
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store

    out = tmp_path / "run"
    # random-passes: the planted pass is in half of the sequences; the zoo seeds have 3x3 convolutions. 10 tests:
    # seed 1 finds it at test 3 (40 tests also found a real TVM error at test 26, whose reduction the test never
    # asserts, and came near the 120 s bound on a loaded machine)
    camp = Campaign(campaign_options(compiler="tvm", strategy="tzer", seconds=120, max_tests=10, jobs=1, seed=1, out=out,
                                     planted=True, graphs=2, zoo=True, variant="random-passes", coverage=["ir"],
                                     quiet=True))
    report = camp.run()
    store = Store(out / "store.sqlite", create=False)
    found = [f for f in store.findings() if runner.PLANTED in (f["key"] or "")]
    assert found, [f["key"] for f in store.findings()]
    f = found[0]
    assert f["category"] == "inconsistency" and f["reduced_nodes"] == 1  # reduced to the planted pass alone
    assert store.coverage_curve() and "Coverage over time" in report.read_text()
    folder = next((out / "findings").glob(f"{f['id']:04d}-*"))
    r = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "BUG REPRODUCED" in r.stdout, r.stdout + r.stderr


def test_a_pass_reduction_that_a_damaged_worker_misled_is_not_kept(tmp_path):
    """The planted pass `Planted:Poison` raises and damages its process: from then on every build of the same function
    raises the same error, whatever its passes. In the reducer's one worker every candidate sequence then "shows" the
    finding, down to no pass at all. The minimal sequence is checked in a fresh worker, where it does not show it: the
    finding is kept with its whole sequence, saying why. The same campaign without the planted pass finds nothing."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store

    found = {}
    for planted in ("poison", False):
        out = tmp_path / str(planted)
        Campaign(campaign_options(compiler="tvm", strategy="tzer", seconds=120, max_tests=POISON_TESTS, jobs=1, seed=3,
                                  out=out, planted=planted, graphs=1, zoo=False, variant="random-passes",
                                  coverage=["ir"], quiet=True)).run()
        found[planted] = Store(out / "store.sqlite", create=False).findings()
    assert found[False] == []
    first = min(found["poison"], key=lambda f: f["id"])
    assert first["category"] == "unexpected-error" and runner.POISON_ERROR in first["detail"], first
    assert "in a fresh worker" in (first["not_minimal"] or ""), first
    assert first["reduced_nodes"] == first["nodes"] > 1 and runner.POISON in first["key"], first


POISON_TESTS = 3  # seed 3: test 2 is the first whose sequence holds the poison pass


def test_cli_tzer_campaign_resume_list_report_and_bad_input(tmp_path):
    from dlcfuzz.cli import main

    out = tmp_path / "tz"
    assert main(["fuzz", "--compiler", "tvm", "--strategy", "tzer", "--time", "60s", "--max-tests", "4", "--jobs", "1",
                 "--coverage", "ir", "--out", str(out), "--quiet"]) == 0
    assert main(["fuzz", "--resume", str(out), "--time", "60s", "--max-tests", "7", "--jobs", "1", "--quiet"]) == 0
    db = sqlite3.connect(out / "store.sqlite")
    assert db.execute("SELECT COUNT(*) FROM tests WHERE status='done'").fetchone()[0] == 7
    assert db.execute("SELECT COUNT(DISTINCT run_id) FROM coverage_curve").fetchone()[0] == 2
    assert main(["list", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    assert "<svg" in (out / "report.html").read_text()
    assert main(["replay", str(out), "--test", "1"]) in (0, 1)  # re-run in the sandbox and judged again
    assert main(["fuzz", "--compiler", "onnxruntime", "--strategy", "tzer", "--out", str(tmp_path / "x")]) == 2
    assert main(["fuzz", "--compiler", "tvm", "--strategy", "tzer", "--coverage", "gcov", "--out", str(tmp_path / "y")]) == 2


def test_old_stores_stay_readable(tmp_path):
    """A store written before the coverage_curve table existed opens and reports."""
    from dlcfuzz.engine.report import write_report
    from dlcfuzz.engine.store import Store

    path = tmp_path / "store.sqlite"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE runs (id INTEGER PRIMARY KEY, started REAL, seed INTEGER, compiler TEXT, version TEXT,"
                     " strategy TEXT, args TEXT); INSERT INTO runs VALUES (1, 0, 0, 'tvm', 'x', 'random', '{}');")
    db.close()
    store = Store(path, create=False)
    assert store.coverage_curve() == []
    assert "Coverage over time" not in write_report(tmp_path, store).read_text()


def test_performance_oracle_needs_a_margin():
    from dlcfuzz.strategies.tzer import slow

    assert slow({"run_s": 1e-2}, {"run_s": 1e-3})
    assert not slow({"run_s": 2.5e-3}, {"run_s": 1e-3})  # within the factor
    assert not slow({"run_s": 4e-6}, {"run_s": 1e-6})  # a factor, but microseconds of noise


def test_dtype_of_reads_the_spelling_of_both_releases() -> None:
    """Regression (issue 36's apache-tvm 0.25 campaign): 0.25's TIR expressions carry `.dtype` where 0.27's carry
    `.ty.dtype`; reading `.ty` alone made the tzer arm's memory mutator raise AttributeError there (an internal
    error). 0.25 is not installed here: its spelling is stood in by an object with `.dtype` alone."""
    from types import SimpleNamespace

    from tvm import tirx

    from dlcfuzz.tvm_tir.tir import dtype_of

    assert dtype_of(SimpleNamespace(dtype="int64")) == "int64"
    assert dtype_of(tirx.Var("n", "int16")) == "int16"
