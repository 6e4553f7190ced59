"""Fuzz the fuzzer: every strategy makes and judges many tests from many seeds against the real
compilers, and dlcfuzz's own code never raises (zero internal errors); the generators hold under
hypothesis-chosen seeds too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")

from dlcfuzz.engine.campaign import Campaign, campaign_options  # noqa: E402
from dlcfuzz.engine.store import Store  # noqa: E402
from dlcfuzz.ops import check_graph

CAMPAIGNS = [  # (strategy options, seeds, tests per seed): a few thousand tests in all
    (dict(compiler="onnxruntime", strategy="auto", ops=8, model="tiny_vgg"), (1, 2), 300),
    (dict(compiler="onnxruntime", strategy="random", ops=8), (1, 2, 3, 4), 400),
    (dict(compiler="onnxruntime", strategy="hirgen", ops=8), (1, 2, 3), 400),
    (dict(compiler="onnxruntime", strategy="hirgen", mode="disruptive"), (1, 2), 400),
    (dict(compiler="onnxruntime", strategy="oatest", ops=6), (1, 2, 3, 4, 5), 300),
    (dict(compiler="onnxruntime", strategy="metamorphic", model="tiny_vgg"), (1,), 12),
    (dict(compiler="tvm", strategy="hirgen", ops=5), (1,), 30),
    (dict(compiler="tvm", strategy="tzer", coverage=["ir"], graphs=1, zoo=False), (1,), 30),
]


@pytest.mark.slow
@pytest.mark.parametrize("kw,seeds,tests", CAMPAIGNS, ids=lambda x: x.get("strategy") if isinstance(x, dict) else "")
def test_no_internal_errors(tmp_path, kw, seeds, tests):
    if kw["compiler"] == "tvm":
        pytest.importorskip("tvm")
    judged = 0
    for seed in seeds:
        out = tmp_path / f"s{seed}"
        camp = Campaign(campaign_options(seconds=600, jobs=2, seed=seed, out=out, max_tests=tests, quiet=True,
                                         reduce=False, **kw))
        camp.run()
        store = Store(out / "store.sqlite", create=False)
        errors = store.internal_errors()
        assert errors == [], errors[0]["traceback"][-3000:]
        verdicts = store.totals()["verdicts"]
        assert sum(verdicts.values()) == tests  # every test made, run and judged
        judged += verdicts.get("pass", 0) + verdicts.get("bug", 0)
    assert judged >= 0.5 * tests * len(seeds)  # most tests are judged, not unknown


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), ops=st.integers(1, 12))
def test_generators_make_valid_graphs_with_a_reference(seed, ops):
    """Random and coverage-guided generation: every graph is well-typed and the reference interpreter
    runs on it (unknowns, e.g. a non-finite value, are the policy's business, never an exception)."""
    from dlcfuzz.gen.coverage import Coverage
    from dlcfuzz.gen.hirgen import generate_guided
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.gen.random import allowed_choices, generate
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import TestCase

    rng = np.random.default_rng(seed)
    choices = allowed_choices(None, None, lambda op, dt: True)
    for g in (generate(rng, ops), generate_guided(rng, ops, Coverage(), choices)):
        check_graph(g)
        tc = TestCase(g, sample_inputs(g, rng), [], seed=seed)
        ref = reference_of(tc)
        assert ref.outputs is not None or ref.reason


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_disruptive_generator_breaks_exactly_one_rule(seed):
    from dlcfuzz.gen.coverage import Coverage
    from dlcfuzz.gen.disruptive import generate_disruptive
    from dlcfuzz.gen.random import allowed_choices

    rng = np.random.default_rng(seed)
    g, inputs, broken = generate_disruptive(rng, Coverage(), allowed_choices(None, None, lambda op, dt: True))
    assert broken.rule and broken.node in {n.name for n in g.nodes}
    assert set(inputs) == {v.name for v in g.inputs}
