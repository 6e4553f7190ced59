"""The seeds written for Inductor's split/cat graph rewrites (backends/inductor/split_cat_seeds.py) on the real torch
2.13: each names rewrites the installed torch registers behind the split/cat fusion options, batches keep their pass
groups apart, and a group compiled as one function fires each seed's rewrite (torch's own counters show the graph
changed, not only that a handler ran) and agrees with eager against the float64 reference. Compiles: two."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the inductor backend needs torch (pip install 'dlcfuzz[inductor]')")

from torch._dynamo.utils import counters  # noqa: E402

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.inductor import split_cat_seeds as written  # noqa: E402
from dlcfuzz.backends.inductor.knobs import SPLIT_CAT_POST_GRAD, SPLIT_CAT_PRE_GRAD, fusion_knobs  # noqa: E402
from dlcfuzz.backends.inductor.pattern_seeds import batches, pattern_names, run_batch  # noqa: E402
from dlcfuzz.backends.inductor.patterns import pattern_inventory  # noqa: E402


@pytest.fixture(scope="module")
def seeds():
    return list(written.split_cat_seeds())


def test_every_seed_targets_registered_rewrites_behind_the_fusion_options(seeds):
    inventory = pattern_inventory()
    targets = {name for s in seeds for name in pattern_names(s)}
    assert len(targets) == 29  # of the 31 split/cat and decompose_mm rewrites: the module docstring names the two
    assert {inventory[n].gate for n in targets} == {"pre_grad_fusion_options", "post_grad_fusion_options"}
    for s in seeds:
        assert pattern_names(s) == s.rewrites and s.variant == "float32 written inference"
        assert s.argnames == tuple(inspect.signature(getattr(written, s.name)).parameters)
        assert set(s.fusion_passes) <= set(SPLIT_CAT_PRE_GRAD) | set(SPLIT_CAT_POST_GRAD)
        assert not (s.training or s.random or s.frozen)
    knobs = fusion_knobs(written.PASS_GROUPS["aten"])
    assert list(knobs) == ["post_grad_fusion_options"]
    assert list(knobs["post_grad_fusion_options"])[0] == "normalization_aten_pass"  # the others match its form


def test_batches_keep_pass_groups_apart(seeds):
    groups = list(batches(seeds, 8))
    assert sorted(id(s) for g in groups for s in g) == sorted(map(id, seeds))
    assert all(len({s.fusion_passes for s in g}) == 1 for g in groups)
    assert len(groups) == 9  # the 8 groups, the 9 normalization seeds in two batches


@pytest.mark.parametrize(("group", "applied"), [
    ("split-unbind", {"remove_split_with_size_one_pass", "merge_splits_pass", "move_reshape_out_of_split_stack_pass",
                      "einsum_to_pointwise_pass", "scmerge_split_removed"}),
    ("aten", {"normalization_aten_pass", "split_cat_aten_pass", "select_cat_aten_pass", "decompose_mm",
              "decompose_bmm", "decompose_addmm"}),
])
def test_a_pass_group_compiles_once_fires_each_seeds_rewrite_and_agrees_with_eager(seeds, group, applied):
    chosen = [s for s in seeds if s.fusion_passes == written.PASS_GROUPS[group]]
    assert len(chosen) >= 5
    counters.clear()
    runs = run_batch(get_backend("inductor"), chosen, np.random.default_rng(0))
    assert [r.verdict for r in runs] == ["ok"] * len(chosen), [(r.seed.name, r.detail[:200]) for r in runs]
    for r in runs:
        assert set(r.seed.rewrites) <= set(r.fired), (r.seed.name, sorted(r.fired))
    assert applied <= {name for name, n in counters["inductor"].items() if n > 0}, dict(counters["inductor"])
