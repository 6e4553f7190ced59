"""Regions in the hirgen, oatest and metamorphic strategies (issue 40 item 4): each makes regions at the default
`--regions` share, of the kinds the compiler's baseline configuration lowers, and none at `--regions 0`, where it
makes its old tests draw for draw; the metamorphic region step (a range of nodes in an if on an opaque condition or
a one-trip loop) leaves the mutant's outputs bit-identical, replays from its recorded steps, and finds a planted
wrong branch while the real onnxruntime stays quiet on the same campaign."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.ir import dumps
from dlcfuzz.ir.graph import Graph
from dlcfuzz.mutate.metamorphic import REGION_KINDS, closure, iterate, replay, steps_from_json, steps_to_json
from dlcfuzz.ops import check_graph
from dlcfuzz.strategies.base import Context
from dlcfuzz.strategies.graph import REGIONS

pytest.importorskip("onnxruntime")

MODEL = "tiny_mobilenet"
FIRST_SEED = 15  # the test seeds: 18 and 22 draw a region step at the default share (REGION_STREAM)


def context(tmp_path: Path, name: str, params: dict[str, Any], compiler: str = "onnxruntime") -> Context:
    from dlcfuzz.backends import get_backend
    from dlcfuzz.engine.store import Store
    from dlcfuzz.gen.coverage import Coverage

    backend = get_backend(compiler)
    return Context(compiler, 0, params, list(backend.default_pair()), False, backend, backend.version(),
                   Store(tmp_path / f"{name}.sqlite"), Coverage(), tmp_path, False, 60, None, lambda: None)


def region_nodes(g: Graph) -> list[str]:
    return [n.op for n in g.all_nodes() if n.bodies()]


# ---- metamorphic ---------------------------------------------------------------------------------------------


def metamorphic(tmp_path: Path, name: str, regions: float | None) -> Any:
    from dlcfuzz.strategies.metamorphic import MetamorphicStrategy

    params = {"model": MODEL, "delta": 1e-4, "values": "small"} | ({} if regions is None else {"regions": regions})
    return MetamorphicStrategy(context(tmp_path, name, params))


def mutants(strategy: Any, tests: int) -> list[Any]:
    return [strategy.make_test(seq, FIRST_SEED + seq).payload for seq in range(tests)]


def test_metamorphic_region_steps_at_the_default_share_and_none_at_zero(tmp_path):
    """At the default share some tests hold a region step, of the kinds onnxruntime lowers (if, loop), and up to the
    first of them the mutants are those of `--regions 0`, which are the old ones: `iterate` without regions, from
    each test's seed."""
    assert REGIONS.default == 0.05
    with_regions = mutants(metamorphic(tmp_path, "on", None), 8)
    kinds = [s["kind"] for tc in with_regions for s in tc.meta["metamorphic"]["new_steps"]]
    made = [k for k in kinds if k in REGION_KINDS]
    assert made and set(made) <= {"if", "loop"}, kinds
    assert any(region_nodes(tc.graph) for tc in with_regions)

    plain = metamorphic(tmp_path, "off", 0.0)
    without = mutants(plain, 8)
    assert not any(region_nodes(tc.graph) for tc in without)
    first = next(k for k, tc in enumerate(with_regions)
                 if any(s["kind"] in REGION_KINDS for s in tc.meta["metamorphic"]["new_steps"]))
    assert first > 0
    for a, b in zip(with_regions[:first], without[:first], strict=True):
        assert dumps(a.graph) == dumps(b.graph)

    # the old mutants: the chain grown by `iterate` alone (200 steps a chain, 10 a test)
    ch = plain.chain()
    g = ch.seed
    for seq, tc in enumerate(without):
        if seq % 20 == 0:
            g, profile = ch.seed, dict(ch.seed_profile)
        g, _ = iterate(g, np.random.default_rng(FIRST_SEED + seq), 10, ch.inputs, profile=profile)
        assert dumps(tc.graph) == dumps(plain.mutant_test(g, FIRST_SEED + seq, 0, 0).graph), seq


def test_region_steps_keep_the_outputs_and_replay(tmp_path):
    """Every region step leaves the reference's outputs bit for bit; the recorded steps replay the mutant, and each
    region step with what it depends on, and random dependency-closed subsets (the step reducer's), replay alone."""
    strategy = metamorphic(tmp_path, "all", 1.0)
    ch = strategy.chain()
    expected = reference.outputs(ch.seed, ch.inputs)
    tests = mutants(strategy, 8)
    steps = steps_from_json([s for tc in tests for s in tc.meta["metamorphic"]["new_steps"]])
    assert {s.kind for s in steps} >= {"if", "loop"}
    g = replay(ch.seed, steps)
    check_graph(g)
    assert dumps(strategy.full_mutant(tests[-1])) == dumps(g)
    assert len(region_nodes(g)) >= 8
    for got, want in zip(reference.outputs(g, ch.inputs), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert steps_from_json(steps_to_json(steps)) == steps
    subsets = [closure(steps, [s.id]) for s in steps if s.kind in REGION_KINDS]
    pick = np.random.default_rng(0)
    subsets += [closure(steps, [s.id for s in steps if pick.random() < 0.3]) for _ in range(10)]
    for subset in subsets:
        for got, want in zip(reference.outputs(replay(ch.seed, subset), ch.inputs), expected, strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_metamorphic_region_step_finds_a_planted_wrong_branch_and_the_real_compiler_is_quiet(tmp_path):
    import regions_plugin  # noqa: F401  (registers the planted compiler)
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store

    def campaign(name: str, compiler: str) -> Store:
        out = tmp_path / name
        Campaign(campaign_options(compiler=compiler, strategy="metamorphic", model=MODEL, seconds=600, jobs=2,
                                  seed=0, out=out, quiet=True, regions=1.0, values="small", max_tests=6,
                                  reduce_budget_s=20)).run()
        return Store(out / "store.sqlite", create=False)

    bad = campaign("bad", "wrong-branch")
    found = bad.findings()
    assert found and {f["category"] for f in found} == {"metamorphic"}, found
    good = campaign("good", "onnxruntime")
    assert good.findings(distinct_only=False) == []
    assert good.totals()["verdicts"].get("pass", 0) == 6


# ---- hirgen ------------------------------------------------------------------------------------------------------


def graph_strategy(tmp_path: Path, name: str, strategy: str, regions: float | None, **params: Any) -> Any:
    from dlcfuzz.strategies import get_strategy

    params = {"ops": 8, "only_ops": [], "values": "small", "sizes": "small", **params}
    params |= {} if regions is None else {"regions": regions}
    return get_strategy(strategy)(context(tmp_path, name, params))


def test_hirgen_makes_regions_at_the_default_share_and_its_old_tests_at_zero(tmp_path):
    """Tests whose region stream fires (seeds 18 and 22) hold regions of the kinds onnxruntime lowers, whose
    control-flow items (region kind x depth x carried dtypes) count as coverage; every other test, and every test at
    `--regions 0`, is the graph hirgen made before regions, draw for draw."""
    from dlcfuzz.gen.coverage import graph_items, kind

    on = graph_strategy(tmp_path, "on", "hirgen", None)
    off = graph_strategy(tmp_path, "off", "hirgen", 0.0)
    fired = 0
    for seed in range(FIRST_SEED, FIRST_SEED + 8):
        a, b = on.make_test(seed, seed).payload, off.make_test(seed, seed).payload
        assert not region_nodes(b.graph)
        if seed in (18, 22):
            fired += 1
            assert set(region_nodes(a.graph)) <= {"if", "loop", "scan"} and region_nodes(a.graph)
            assert any(kind(i) == "region" for i in graph_items(a.graph))
        else:
            assert dumps(a.graph) == dumps(b.graph)
            np.testing.assert_equal(a.inputs, b.inputs)
    assert fired == 2


def test_hirgen_coverage_feedback_rewards_new_control_flow():
    """Guided region placement (GUIDED_CANDIDATES wrappings, the one adding the most coverage) covers more
    control-flow items over a campaign than one random wrapping a test (the ablation's)."""
    from dlcfuzz.gen.coverage import Coverage, graph_items, kind
    from dlcfuzz.gen.hirgen import guided_regions
    from dlcfuzz.gen.random import generate

    def covered(candidates: int) -> int:
        cov = Coverage()
        for seed in range(60):  # 30 tied once data-dependent extents came (no region wraps theirs): 63 > 58 at 60
            g = generate(np.random.default_rng(seed), 8)
            cov.add(graph_items(guided_regions(g, np.random.default_rng([seed, 1]), cov, candidates=candidates)))
        return cov.counts()["region"]

    guided, ablation = covered(8), covered(1)
    assert guided > ablation, (guided, ablation)
    assert all(kind(i) != "region" for i in graph_items(generate(np.random.default_rng(0), 8)))


# ---- oatest ------------------------------------------------------------------------------------------------------


def test_oatest_wraps_the_spliced_pattern_at_the_default_share_and_makes_its_old_tests_at_zero(tmp_path):
    """A test whose region stream fires holds a region around nodes of its latest splice (the pattern or its
    bridges); the others, and every test at `--regions 0`, are the syntheses of before, draw for draw."""
    on = graph_strategy(tmp_path, "on", "oatest", None)
    off = graph_strategy(tmp_path, "off", "oatest", 0.0)
    for s in (on, off):
        s.restore(0)
    for seed in range(FIRST_SEED, FIRST_SEED + 8):
        a, b = on.make_test(seed, seed).payload, off.make_test(seed, seed).payload
        assert not region_nodes(b.graph)
        if seed in (18, 22):
            regions = [n for n in a.graph.nodes if n.bodies()]
            assert len(regions) == 1, seed
            inside = [m.name for body in regions[0].bodies().values() for m in body.nodes]
            assert any(name.startswith("s") and "_" in name for name in inside), inside
        else:
            assert dumps(a.graph) == dumps(b.graph)
