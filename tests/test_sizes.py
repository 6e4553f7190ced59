"""Size profiles (gen/sizes.py) and the reduction of extents and values (reduce/sizes.py): long-axis tests stay
within their bounds and the operators' rules, replay from their seeds in any process, make up their share of a
campaign, and a finding that shows only at long axes is reported just over its threshold."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcfuzz.gen.random import MAX_DIM, allowed_choices, generate
from dlcfuzz.gen.sizes import LONG_LENGTHS, LONG_SHARE, MAX_LONG_ELEMENTS, MAX_WORK, draw_sizes, graph_work
from dlcfuzz.ir import load
from dlcfuzz.ops import check_graph
from dlcfuzz.reduce.budget import ReductionBudget
from dlcfuzz.reduce.sizes import longest_axis, shrink_axes, shrink_values

CHOICES = allowed_choices(None, None, None)


def make(seed: int, mode: str = "mixed", ops: int = 8):
    """The graph and size profile the random strategy makes from `seed`."""
    rng = np.random.default_rng(seed)
    sizes = draw_sizes(rng, mode)
    return generate(rng, ops, choices=CHOICES, sizes=sizes), sizes


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_long_axis_tests_stay_within_their_bounds_and_the_operators_rules(seed):
    g, sizes = make(seed)
    check_graph(g)  # every node typed by its operator's rule
    if sizes is None:  # a small test: every fresh shape is today's, draw for draw
        small, _ = make(seed, "small")
        assert g.types() == small.types()
        return
    assert all(t.size <= MAX_LONG_ELEMENTS for t in g.types().values())
    assert graph_work(g) <= MAX_WORK


def test_small_mode_never_draws_a_long_axis():
    small = [make(s, "small")[0] for s in range(30)]
    assert all(longest_axis(g) <= 1000 for g in small)
    # at most a fresh rank-5 shape's elements (axes of MAX_DIM): 4,320 is drawn (seed 11)
    assert all(max((t.size for t in g.types().values()), default=0) <= MAX_DIM ** 5 for g in small)
    assert all(draw_sizes(np.random.default_rng(s), "small") is None for s in range(200))


def test_a_share_of_tests_has_an_axis_over_1000():
    profiles = [make(s) for s in range(150)]
    long = [g for g, sizes in profiles if sizes is not None]
    over = [g for g in long if longest_axis(g) > 1000]
    assert abs(len(long) / len(profiles) - LONG_SHARE) < 0.08  # drawn per test, LONG_SHARE of them
    assert 0.05 <= len(over) / len(profiles) <= LONG_SHARE  # most long tests reach past 1,000
    # today's small tests reach past MAX_DIM only where an operator reshapes or tiles (at most 4,096 elements)
    assert all(longest_axis(g) <= 1000 for g, sizes in profiles if sizes is None)


def test_seeds_give_the_same_shapes_in_another_process():
    seeds = list(range(40))
    here = [[list(t.shape) for t in make(s)[0].types().values()] for s in seeds]
    code = ("import json, numpy as np; from dlcfuzz.gen.random import allowed_choices, generate; "
            "from dlcfuzz.gen.sizes import draw_sizes\nout = []\n"
            f"for s in {seeds}:\n    rng = np.random.default_rng(s); sizes = draw_sizes(rng, 'mixed')\n"
            "    g = generate(rng, 8, choices=allowed_choices(None, None, None), sizes=sizes)\n"
            "    out.append([list(t.shape) for t in g.types().values()])\nprint(json.dumps(out))")
    there = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert there == here
    assert any(max(max(s, default=0) for s in shapes) > 1000 for shapes in here)


def test_long_lengths_are_odd_prime_or_next_to_a_power_of_two():
    for n in LONG_LENGTHS:
        assert n % 2 == 1 and n <= MAX_LONG_ELEMENTS


def test_shrink_axes_halves_then_bisects_to_the_threshold_and_keeps_values():
    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.types import TensorType

    t = TensorType("float32", (3, 4097))
    g = Graph([Value("x", t), Value("y", t)], {}, [Node("add", ["x", "y"], [Value("z", t)], name="n0")], ["z"])
    rng = np.random.default_rng(0)
    inputs = {"x": rng.uniform(-2, 2, t.shape).astype("float32"), "y": rng.uniform(-2, 2, t.shape).astype("float32")}
    tried: list[int] = []

    def shows(cand, feed):  # the fault: an axis over 64
        tried.append(longest_axis(cand))
        return longest_axis(cand) > 64

    budget = ReductionBudget(60, 100)
    small, feed = shrink_axes(g, inputs, shows, budget)
    assert longest_axis(small) == 65 and small.inputs[0].type.shape == (3, 65)
    assert np.array_equal(feed["x"], inputs["x"][:, :65])  # the first positions keep their values
    assert tried[:6] == [2048, 1024, 512, 256, 128, 64]  # halving first, then bisection
    assert len(tried) <= 14 and budget.stopped is None
    _, kept = shrink_values(small, feed, lambda cand, f: bool(np.array_equal(f["y"], feed["y"])), budget, seed=1)
    assert np.array_equal(kept["y"], feed["y"]) and not np.array_equal(kept["x"], feed["x"])  # x is re-sampled


def test_shrink_values_shrinks_constants_and_tries_all_small_first():
    """A constant's edge value is re-sampled small like an input's; `only_all_small` spends one check and
    keeps the test when that check does not show (a fault that needs the huge constant)."""
    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.types import TensorType
    from dlcfuzz.reduce.budget import ReductionBudget

    t = TensorType("float32", (4,))
    huge = np.full(4, 3e37, np.float32)
    g = Graph([Value("x", t)], {"c": huge}, [Node("add", ["x", "c"], [Value("z", t)], name="n0")], ["z"])
    feed = {"x": np.full(4, 1e30, np.float32)}

    def shows_anyway(cand, f):
        return True

    budget = ReductionBudget(60, 100)
    cand, kept = shrink_values(g, feed, shows_anyway, budget, seed=2, only_all_small=True)
    assert np.abs(cand.constants["c"]).max() <= 10 and np.abs(kept["x"]).max() <= 10  # both small, one check
    assert budget.used == 1

    def needs_huge_constant(cand, f):
        return bool(np.abs(cand.constants["c"]).max() > 1e30)

    budget = ReductionBudget(60, 100)
    same, same_feed = shrink_values(g, feed, needs_huge_constant, budget, seed=2, only_all_small=True)
    assert same is g and same_feed is feed and budget.used == 1
    cand, kept = shrink_values(g, feed, needs_huge_constant, ReductionBudget(60, 100), seed=2)
    assert np.array_equal(cand.constants["c"], huge) and np.abs(kept["x"]).max() <= 10  # ddmin keeps c alone


pytest.importorskip("onnxruntime")


def numeric_findings(out: Path) -> list[dict]:
    db = sqlite3.connect(out / "store.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM findings WHERE category IN ('wrong-result', 'inconsistency') "
                                        "ORDER BY id")]


def run(tmp_path: Path, compiler: str) -> Path:
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    out = tmp_path / compiler.replace(":", "-").replace("@", "-")
    Campaign(campaign_options(compiler=compiler, strategy="random", seconds=600, jobs=1, seed=3, out=out, ops=3,
                              only_ops=["add", "relu"], max_tests=12, quiet=True, sizes="mixed")).run()
    return out


def test_a_long_axis_fault_is_reduced_to_just_over_its_threshold_and_onnxruntime_stays_quiet(tmp_path):
    out = run(tmp_path, "planted:long@add")
    rows = numeric_findings(out)
    assert rows, "the planted long-axis fault was not found"
    for row in rows:
        folder = out / "findings" / f"{row['id']:04d}-{row['category']}"
        original, reduced = load(folder / "original.json"), load(folder / "reduced.json")
        assert longest_axis(original) > 64
        assert longest_axis(reduced) == 65, (folder / "reduced.txt").read_text()
    assert numeric_findings(run(tmp_path, "onnxruntime")) == []
