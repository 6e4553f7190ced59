"""Several input sets per compiled program (issue 42): each configuration compiles once and runs every
set, each set is judged against its reference, a fault that shows on some inputs only is found where
one set per compile misses it, the finding keeps the set that shows it, and stores of an older dlcfuzz
open."""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from dlcfuzz.backends import BACKENDS, get_backend  # noqa: E402
from dlcfuzz.backends.base import BackendBase  # noqa: E402
from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend  # noqa: E402
from dlcfuzz.engine.campaign import Campaign, campaign_options, replay  # noqa: E402
from dlcfuzz.engine.store import Store  # noqa: E402
from dlcfuzz.exec.worker import make_handler, run_configs  # noqa: E402
from dlcfuzz.ir import dumps  # noqa: E402
from dlcfuzz.ir.graph import Graph, Node, Value  # noqa: E402
from dlcfuzz.ir.types import TensorType  # noqa: E402
from dlcfuzz.oracle import categories as C  # noqa: E402
from dlcfuzz.oracle.policy import Reference, drawn_input_set, reference_of  # noqa: E402
from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes, reply_more_sets  # noqa: E402
from dlcfuzz.strategies.graph import RandomStrategy  # noqa: E402

FAULTY = "planted:signed@relu"  # ONNXRuntime whose optimized build is off by one when input 0 starts negative
SEED = 0  # its test 0: the first set starts positive, set 2 negative (checked below, not assumed)


class CountingOrt(OnnxRuntimeBackend):
    """The real ONNXRuntime, counting its builds and the runs of what it built."""

    name = "counting-ort"

    def __init__(self) -> None:
        self.builds = 0
        self.runs = 0

    def build(self, lowered: bytes, g: Graph, config: Any) -> Any:
        self.builds += 1
        compiled, backend = super().build(lowered, g, config), self

        class Counted:
            def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
                backend.runs += 1
                return compiled.run(inputs)

        return Counted()


def relu_graph() -> Graph:
    t = TensorType("float32", (2, 3))
    return Graph([Value("x", t)], {}, [Node("relu", ["x"], [Value("y", t)])], ["y"])


def test_compile_bound_compilers_declare_several_sets_and_the_others_one():
    assert BackendBase.input_sets == 1 and OnnxRuntimeBackend.input_sets == 1
    for name in ("tvm", "inductor", "xla", "openvino"):
        module, cls, _ = BACKENDS[name]
        assert getattr(importlib.import_module(module), cls).input_sets >= 8, name


def test_each_configuration_compiles_once_and_runs_every_set():
    backend, g = CountingOrt(), relu_graph()
    tc = TestCase(g, {"x": np.full((2, 3), -1.0, np.float32)}, list(backend.default_pair()), seed=7, input_sets=5)
    sets = [tc.inputs] + [drawn_input_set(tc, i) for i in range(1, 5)]
    obs = run_configs(backend, tc, input_sets=sets)
    assert backend.builds == 2 and backend.runs == 10
    assert [(o.config, o.input_set) for o in obs] == [(c.name, i) for c in tc.configs for i in range(5)]
    for o in obs:
        np.testing.assert_array_equal(o.outputs[0], np.maximum(sets[o.input_set]["x"], 0))
    assert sum(o.compile_s > 0 for o in obs) == 2  # a compile is timed once, on set 0's observation
    # the worker draws the sets from the test's seed and replies each set's reference and inputs
    reply = make_handler({"compiler": "onnxruntime"})(tc.to_bytes())
    observations, _, ref, _ = reply_from_bytes(reply)
    more = reply_more_sets(reply)
    assert len(observations) == 10 and len(more) == 4 and ref["reason"] is None
    for i, (r, inputs) in enumerate(more, start=1):
        np.testing.assert_array_equal(inputs["x"], drawn_input_set(tc, i)["x"])
        np.testing.assert_array_equal(r["outputs"][0], np.maximum(inputs["x"], 0))
    assert TestCase.from_bytes(tc.to_bytes()).input_sets == 5


def test_an_unknown_of_one_set_hides_no_bug_of_another():
    backend = get_backend(FAULTY)
    g = relu_graph()
    tc = TestCase(g, {"x": np.ones((2, 3), np.float32)}, list(backend.default_pair()), seed=3, compiler=FAULTY,
                  input_sets=3)
    sets = [tc.inputs, {"x": np.full((2, 3), 0.5, np.float32)}, {"x": np.full((2, 3), -0.5, np.float32)}]
    obs = run_configs(backend, tc, input_sets=sets)
    refs = [Reference(None, C.NONFINITE_REFERENCE)]  # set 0's reference unusable: an unknown, judged alone
    refs += [reference_of(TestCase(g, s, tc.configs, seed=tc.seed)) for s in sets[1:]]
    strategy = RandomStrategy.__new__(RandomStrategy)
    strategy.ctx = SimpleNamespace(backend=backend)
    verdicts, deciding = strategy.judge_sets(tc, list(zip(sets, refs)), obs)
    assert deciding == 2 and [v.category for v in verdicts if v.kind == "bug"] == [C.INCONSISTENCY]
    assert all(v.input_set == 2 for v in verdicts)
    # without the faulty set: set 1 passes, so the test passes (set 0's unknown says nothing of the compile)
    verdicts, deciding = strategy.judge_sets(tc, list(zip(sets, refs))[:2], [o for o in obs if o.input_set < 2])
    assert (deciding, [v.kind for v in verdicts]) == (1, ["pass"])


def run(tmp_path: Path, compiler: str, input_sets: int, name: str) -> tuple[Campaign, sqlite3.Connection]:
    out = tmp_path / name
    camp = Campaign(campaign_options(compiler=compiler, strategy="random", seconds=600, jobs=1, seed=SEED, out=out,
                                     ops=2, only_ops=["relu"], max_tests=1, quiet=True, input_sets=input_sets,
                                     keep_tests=True, reduce_budget_s=20))
    camp.run()
    db = sqlite3.connect(out / "store.sqlite")
    db.row_factory = sqlite3.Row
    return camp, db


def test_a_value_dependent_fault_is_found_with_eight_sets_where_one_misses_it(tmp_path):
    one, db1 = run(tmp_path, FAULTY, 1, "one")
    (blob,) = db1.execute("SELECT blob FROM tests").fetchone()
    tc1 = TestCase.from_bytes(blob)
    assert next(iter(tc1.inputs.values())).ravel()[0] >= 0, "the seed no longer makes a test that one set misses"
    assert db1.execute("SELECT COUNT(*) FROM findings").fetchone()[0] == 0
    assert one.counts["executions"] == 2

    eight, db8 = run(tmp_path, FAULTY, 8, "eight")
    assert eight.counts["executions"] == 16
    assert tuple(db8.execute("SELECT COUNT(*), COUNT(DISTINCT input_set) FROM observations").fetchone()) == (16, 8)
    (finding,) = db8.execute("SELECT * FROM findings").fetchall()
    assert finding["category"] == C.INCONSISTENCY and finding["input_set"] > 0
    (blob,) = db8.execute("SELECT blob FROM tests WHERE id = ?", (finding["test_id"],)).fetchone()
    tc8 = TestCase.from_bytes(blob)
    assert dumps(tc8.graph) == dumps(tc1.graph)  # the same test, other inputs
    drawn = drawn_input_set(tc8, finding["input_set"])  # the finding keeps the set that shows it
    for name, value in tc8.inputs.items():
        np.testing.assert_array_equal(value, drawn[name])
    assert next(iter(tc8.inputs.values())).ravel()[0] < 0
    assert f"input set {finding['input_set']}" in next((tmp_path / "eight" / "findings").glob("*/detail.txt")).read_text()
    # replay re-runs every set; the stored inputs (now set 0) show it
    verdicts = replay(tmp_path / "eight", finding["test_id"])
    assert [(v.category, v.input_set) for v in verdicts if v.kind == "bug"] == [(C.INCONSISTENCY, 0)]

    quiet, dbq = run(tmp_path, "onnxruntime", 8, "correct")  # the correct compiler stays quiet on all 8 sets
    assert quiet.counts["executions"] == 16 and dbq.execute("SELECT COUNT(*) FROM findings").fetchone()[0] == 0
    # the store and the report keep the executions (issue 42's acceptance compares them between campaigns)
    assert dbq.execute("SELECT executions FROM stats ORDER BY t DESC").fetchone()[0] == 16
    assert "<th>executions</th><td>16 (" in (tmp_path / "correct" / "report.html").read_text()


def test_executions_are_summed_over_resumed_runs_and_unknown_in_an_older_store():
    from dlcfuzz.engine.report import run_totals

    first, resumed = [(1.0, 2, 2, 0, 0, 0, 0, 16), (2.0, 5, 5, 0, 0, 0, 0, 40)], [(1.0, 1, 1, 0, 0, 0, 0, 8)]
    assert run_totals(first + resumed, 7) == 48
    assert run_totals([(1.0, 3, 3, 0, 0, 0, 0, None)] + resumed, 7) is None
    assert run_totals([], 7) is None


def test_a_store_of_an_older_dlcfuzz_opens_and_keeps_its_observations(tmp_path):
    path = tmp_path / "store.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE observations (test_id INTEGER, config TEXT, status TEXT, error TEXT, compile_s REAL, run_s REAL,
          PRIMARY KEY (test_id, config));
        CREATE TABLE findings (id INTEGER PRIMARY KEY, test_id INTEGER, category TEXT, signature TEXT, key TEXT,
          compiler TEXT, version TEXT, configs TEXT, detail TEXT, created REAL, duplicate_of INTEGER, reduced BLOB,
          reproducer TEXT, nodes INTEGER, reduced_nodes INTEGER);
        INSERT INTO observations VALUES (1, 'ort-all', 'ok', NULL, 0.5, 0.01);
        INSERT INTO findings (id, test_id, category) VALUES (1, 1, 'wrong-result');
    """)
    db.commit()
    db.close()
    store = Store(path, create=False)
    assert store.db.execute("SELECT config, input_set, compile_s FROM observations").fetchall() == [("ort-all", 0, 0.5)]
    assert store.finding(1)["input_set"] is None and store.finding(1)["opinions"] is None
    ob = SimpleNamespace(config="ort-all", status="ok", error=None, compile_s=0.0, run_s=0.01)
    store.finish_test(2, "pass", 0.1, [SimpleNamespace(**vars(ob), input_set=i) for i in range(3)])
    assert store.db.execute("SELECT COUNT(*) FROM observations WHERE test_id = 2").fetchone()[0] == 3
    store.close()
