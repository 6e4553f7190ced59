"""The jax lowering target: every operator lowers (or is a documented gap), and the lowered program,
run op by op under `jax.disable_jit()` (no whole-program compile), equals the NumPy reference on
random graphs, sub-functions included, with float64 kept as float64 (x64 enabled).

Eager JAX compiles every primitive once per shape (~0.15 s a case), so the many-case tests compile
their graphs side by side, `BATCH` to one `jax.jit` module, and re-run eagerly only the graphs whose
jit outputs disagree with the reference: the eager run decides whether the lowering is wrong, and a
disagreement of jit alone fails too, as XLA's (none on the pinned jax)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="the jax target needs jax (pip install 'dlcfuzz[xla]')")

from dlcfuzz.errors import TypeRuleError  # noqa: E402
from dlcfuzz.gen.inputs import sample_inputs  # noqa: E402
from dlcfuzz.gen.random import generate, random_shape  # noqa: E402
from dlcfuzz.gen.single import single_op_graph  # noqa: E402
from dlcfuzz.ir import to_text  # noqa: E402
from dlcfuzz.ir.types import TensorType  # noqa: E402
from dlcfuzz.lower.jax import run_eager, to_jax_program  # noqa: E402
from dlcfuzz.lower.registry import load_target  # noqa: E402
from dlcfuzz.ops import all_ops  # noqa: E402
from dlcfuzz.oracle.numeric import compare  # noqa: E402
from dlcfuzz.oracle.policy import reference_of  # noqa: E402
from dlcfuzz.oracle.testcase import TestCase  # noqa: E402
from tests.op_harness import lowered_ops, side_by_side_outputs  # noqa: E402

MIN_JUDGED_PER_PAIR = 1  # judged single-operator cases per (operator, dtype)
# random graphs draw from the operators the target lowers: its documented gaps (data-dependent extents) raise
LOWERED = lowered_ops("jax")
BATCH = 24  # graphs per jit-compiled module: one compile costs about what 2-3 eager cases do


def policy_case(g, rng) -> tuple[TestCase, list | None, set]:
    """The test case, its reference outputs (None when the policy cannot judge it) and its unstable outputs."""
    tc = TestCase(g, sample_inputs(g, rng), [], seed=0)
    ref = reference_of(tc)
    return tc, ref.outputs, ref.unstable


def judged_in_batches(graphs: list, rng) -> list:
    """The graphs the reference judges, after asserting that none disagrees with it: a graph whose
    eager run disagrees fails as the lowering's fault, one where only the jit run does as XLA's."""
    cases = [(g, *policy_case(g, rng)) for g in graphs]
    cases = [c for c in cases if c[2] is not None]

    def run_jit(g, inputs) -> list[np.ndarray]:
        prog = to_jax_program(g)
        return [np.asarray(o) for o in jax.jit(prog.function())(*[np.array(inputs[n]) for n in prog.input_names])]

    lowering, xla_only = [], []
    jitted = side_by_side_outputs([(g, tc.inputs) for g, tc, _, _ in cases], run_jit, BATCH)
    for (g, tc, ref, unstable), got in zip(cases, jitted):
        jit_bad = [m for m in compare(got, ref) if m.index not in unstable]
        if not jit_bad:
            continue
        eager_bad = [m for m in compare(run_eager(g, tc.inputs), ref) if m.index not in unstable]
        (lowering if eager_bad else xla_only).append((g, (eager_bad or jit_bad)[0]))
    assert not lowering, failure_text(lowering, "the lowering's: the eager run disagrees")
    assert not xla_only, failure_text(xla_only, "XLA's: the eager run agrees, the jit run does not")
    return [g for g, *_ in cases]


def failure_text(found: list[tuple], whose: str) -> str:
    g, m = found[0]
    return f"{len(found)} disagreements ({whose}); first: {m}\n{to_text(g)}\n{to_jax_program(g).source}"


def test_every_operator_has_a_jax_rule_or_a_documented_gap():
    t = load_target("jax")
    missing = [s.name for s in all_ops() if not t.covers(s.name)]
    assert not missing
    assert all(reason.strip() for reason in t.gaps.values())


def test_float64_stays_float64():
    from dlcfuzz.ir.graph import Graph, Node, Value

    t = TensorType("float64", (3,))
    g = Graph(inputs=[Value("x", t)], nodes=[Node("exp", ["x"], [Value("y", t)])], outputs=["y"])
    x = np.array([0.1, 1.0, 2.0])
    (y,) = run_eager(g, {"x": x})
    assert y.dtype == np.float64
    # 64-bit accuracy (an ulp or two), far below what a float32 computation could reach (~1e-7)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-14, atol=0)


@pytest.mark.slow
def test_every_operator_and_dtype_agrees_with_the_reference_eagerly():
    rng = np.random.default_rng(1234)
    pair_of, graphs = {}, []
    for spec in lowered_ops("jax"):
        for dt in spec.dtypes:
            rank = int(spec.ranks[int(rng.integers(len(spec.ranks)))])
            for _ in range(6):  # operators that constrain input 0's shape (Det: square matrices)
                try:
                    g = single_op_graph(spec, rng, TensorType(dt, random_shape(rng, rank)))
                except (TypeRuleError, ValueError):
                    continue
                graphs.append(g)
                pair_of[id(g)] = (spec.name, dt)
                break
    judged = collections.Counter(pair_of[id(g)] for g in judged_in_batches(graphs, rng))
    per_op = collections.Counter(op for op, _ in judged.elements())
    assert {s.name for s in lowered_ops("jax")} <= set(per_op), "operators never judged"
    pairs = [(s.name, d) for s in lowered_ops("jax") for d in s.dtypes]
    thin = [p for p in pairs if judged[p] < MIN_JUDGED_PER_PAIR]
    assert len(thin) <= len(pairs) // 20, f"too few judged cases for {thin}"


def test_random_graphs_agree_with_the_reference_eagerly():
    rng = np.random.default_rng(99)
    graphs = [generate(rng, int(rng.integers(1, 12)), ops=LOWERED) for _ in range(90)]
    assert len(judged_in_batches(graphs, rng)) >= 70


def test_sub_functions_become_python_functions_called_from_the_main_one():
    from dlcfuzz.gen.functions import outline

    rng = np.random.default_rng(7)
    graphs = []
    for _ in range(50):
        g = generate(rng, int(rng.integers(3, 10)), ops=LOWERED)
        try:
            g = outline(g, rng)
        except ValueError:
            continue
        if not g.functions:
            continue
        src = to_jax_program(g).source
        assert all(f"def fn_{name}(" in src for name in g.functions), src
        graphs.append(g)
    assert len(judged_in_batches(graphs, rng)) >= 12
