"""Edge values and long axes in the strategies beyond random and hirgen (issue 37 item 6): metamorphic's chains draw
edge profiles on their seed inputs, disruptive hirgen and oatest draw long axes, each with its default options; with
`--values small` / `--sizes small` each makes the tests it made before, draw for draw. On onnxruntime alone."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from dlcfuzz.gen.sizes import MAX_LONG_ELEMENTS, MAX_WORK, graph_work
from dlcfuzz.ir import dumps
from dlcfuzz.oracle.policy import test_seed as seed_of
from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from value_space import strategy_of  # noqa: E402 - the bench's way to make a strategy without a campaign

LONG_AXIS = 1000


def longest(tc: TestCase) -> int:
    return max((d for t in tc.graph.types().values() for d in t.shape), default=0)


def made(strategy, seqs) -> list:
    return [strategy.make_test(seq, seed_of(0, seq)) for seq in seqs]


class Stored:
    """A store holding the light blobs of a campaign's tests (what inflate reads a chain's steps from)."""

    def __init__(self, blobs: dict[int, bytes]) -> None:
        self.blobs = blobs

    def blobs_before(self, seq: int) -> list:
        return [(s, b) for s, b in sorted(self.blobs.items(), reverse=True) if s < seq]

    def blobs_from(self, seq: int) -> list:
        return [(s, b) for s, b in sorted(self.blobs.items()) if s >= seq]


# ---- metamorphic: edge values on a share of chains' seed inputs -----------------------------------------------

def test_metamorphic_small_values_make_the_old_tests():
    """--values small: the zoo's standard-normal image for every chain and mutants of the seed model profiled on it,
    as the strategy made them before profiles (its chain, step for step), stored without a values field."""
    from dlcfuzz import reference
    from dlcfuzz.mutate.metamorphic import iterate
    from dlcfuzz.strategies.metamorphic import STEPS_PER_TEST, Mutant
    from dlcfuzz.zoo import build, sample_inputs

    s = strategy_of("metamorphic", "onnxruntime", values="small", model="tiny_resnet")
    seed = build("tiny_resnet", 0)
    inputs = sample_inputs(seed, 0)
    profile = reference.run(seed, inputs, keep_all=True)
    g = seed
    for test in made(s, range(3)):
        g, _ = iterate(g, np.random.default_rng(test.seed), STEPS_PER_TEST, inputs, profile=profile)
        tc = test.payload
        assert dumps(s.full_mutant(tc)) == dumps(g)
        assert tc.inputs.keys() == inputs.keys() and all(np.array_equal(tc.inputs[k], inputs[k]) for k in inputs)
        assert "values" not in tc.meta["metamorphic"] and Mutant.of(tc).values == "small"


def test_metamorphic_chains_get_edge_inputs_and_onnxruntime_keeps_mutants_equal_to_their_seeds():
    """With the default --values edge a share of chains (as edge_inputs draws: EDGE_TEST_SHARE of sets, half of
    their inputs) gets edge values on its seed input, finite and exact for the reference; their mutants still agree
    with their seed model on onnxruntime (the worker runs the seed on each chain's inputs), replay from their light
    blobs, and chains without edge values make the small mode's mutants."""
    from dlcfuzz.oracle.verdict import judge_metamorphic
    from dlcfuzz.strategies.metamorphic import CHAIN_STEPS, STEPS_PER_TEST, Mutant, make_handler

    s = strategy_of("metamorphic", "onnxruntime", model="tiny_resnet")
    assert s.params["values"] == "edge"
    per_chain = CHAIN_STEPS // STEPS_PER_TEST
    starts = [k * per_chain for k in range(40)]
    edged = [k for k in starts if s.chain_values(k, "edge")[1].profiles]
    assert 2 <= len(edged) <= 16, edged  # 17.5% of 40 chains expected
    small = s.chain().inputs["input"]
    for k in edged:
        x = s.chain_inputs(k, "edge")["input"]
        assert np.isfinite(x).all() and not np.array_equal(x, small)
    assert any(np.abs(s.chain_inputs(k, "edge")["input"]).max() > 1e3 for k in edged)  # large, not only tiny

    # a small chain's first test, then an edge chain's: each mutant against its own chain's seed run
    plain = strategy_of("metamorphic", "onnxruntime", model="tiny_resnet")
    calm = next(k for k in starts if k not in edged)
    handle = make_handler(plain.handler_init())
    seed_scores = []
    for start in (calm, edged[0]):
        one = strategy_of("metamorphic", "onnxruntime", model="tiny_resnet")
        test = one.make_test(start, seed_of(0, start))
        tc = test.payload
        assert Mutant.of(tc).values == "edge" and Mutant.of(tc).chain == start
        assert np.array_equal(tc.inputs["input"], s.chain_inputs(start, "edge")["input"])
        obs = reply_from_bytes(handle(test.blob))[0]
        verdicts = judge_metamorphic("onnxruntime", obs, Mutant.of(tc).delta)
        assert [v.kind for v in verdicts] == ["pass"], [v.detail for v in verdicts]
        seed_scores.append(next(o.outputs[0] for o in obs if o.config.startswith("seed:")))
        # a light mutant is rebuilt with its chain's inputs (inflate checks the digest of the test that ran)
        again = strategy_of("metamorphic", "onnxruntime", model="tiny_resnet")
        again.ctx.store = Stored({start: one.light_blob(test)})
        assert again.inflate(one.light_blob(test)) == test.blob
        if start == calm:  # no edge value: the small mode's mutant
            twin = strategy_of("metamorphic", "onnxruntime", values="small", model="tiny_resnet")
            assert dumps(twin.make_test(start, seed_of(0, start)).payload.graph) == dumps(tc.graph)
    assert not np.allclose(seed_scores[0], seed_scores[1])


# ---- disruptive hirgen and oatest: long axes on a share of tests ---------------------------------------------

@pytest.mark.parametrize("name", ["disruptive", "oatest"])
def test_small_sizes_make_the_tests_of_before_draw_for_draw(name, monkeypatch):
    """--sizes small makes the tests that --sizes mixed makes when no test draws a long-axis profile: a profile draws
    from a generator of its own (gen/sizes.draw_sizes), never from the test's."""
    import dlcfuzz.gen.sizes as sizes

    small = [t.blob for t in made(strategy_of(name, "onnxruntime", sizes="small"), range(30))]
    monkeypatch.setattr(sizes, "LONG_SHARE", 0.0)
    assert [t.blob for t in made(strategy_of(name, "onnxruntime"), range(30))] == small


def test_disruptive_long_axis_tests_stay_within_bounds_and_onnxruntime_rejects_them():
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.oracle.verdict import judge_rejection

    s = strategy_of("disruptive", "onnxruntime")
    assert s.params["sizes"] == "mixed"
    tests = [t.payload for t in made(s, range(60))]
    long = [tc for tc in tests if longest(tc) > LONG_AXIS]
    assert 4 <= len(long) <= 24, len(long)  # LONG_SHARE = 20% draw one (most reach past 1,000)
    assert all(t.size <= MAX_LONG_ELEMENTS for tc in tests for t in tc.graph.types().values())
    backend = get_backend("onnxruntime")
    for tc in [tc for tc in long if "malformed" not in tc.meta][:3]:
        verdicts = judge_rejection("onnxruntime", tc.meta["broken"], run_configs(backend, tc, invalid=True),
                                   s.per_op_rules, s.lenient(tc.meta["broken"]), backend.expected_error)
        assert {v.category for v in verdicts} == {"rejected"}, [v.detail for v in verdicts]


def test_oatest_long_axis_tests_retype_patterns_within_bounds_and_onnxruntime_agrees_with_the_reference():
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.oracle.policy import reference_of

    s = strategy_of("oatest", "onnxruntime")
    assert s.params["sizes"] == "mixed"
    tests = [t.payload for t in made(s, range(160))]
    long = [tc for tc in tests if longest(tc) > LONG_AXIS]
    assert 12 <= len(long) <= 64, len(long)
    # every test, a small one too: a splice's bridge can lengthen a small test's axis
    assert all(graph_work(tc.graph) <= MAX_WORK for tc in tests)
    assert all(t.size <= MAX_LONG_ELEMENTS for tc in tests for t in tc.graph.types().values())

    def pattern_long(tc: TestCase) -> bool:  # a node of the spliced pattern itself (not a bridge) has a long axis
        import re

        return any(re.match(r"s\d+_(?!o?b\d+$)", n.name or "") and any(d > LONG_AXIS for v in n.outputs
                                                                        for d in v.type.shape) for n in tc.graph.nodes)

    # re-concretized for the long value, not bridged away; a third, since a grown seed carries an earlier
    # splice's long bridge into later tests, which are long without their own pattern being drawn long
    assert sum(map(pattern_long, long)) >= len(long) // 3
    judged = 0
    for tc in long[:6]:
        ref = reference_of(tc, tries=1)
        if ref.outputs is None:
            continue
        verdicts = s.differential(tc, ref, run_configs(s.ctx.backend, tc))
        assert not [v for v in verdicts if v.kind == "bug"], [v.detail for v in verdicts]
        judged += 1
    assert judged >= 3
