"""Inductor's pattern-matcher rewrites on the real torch 2.13: the inventory read from its passes, fired
detection on programs that must and cannot fire an attention fusion, and torch's replacement patterns as seed
programs (every variant runs eagerly; a batch of them compiles once, fires each one's pattern and agrees with
eager but for a registered torch bug), and the split/cat fusion options a campaign draws. Compiles are few (a cold
Inductor compile takes ~15 s)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the inductor backend needs torch (pip install 'dlcfuzz[inductor]')")

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.inductor.knobs import SPLIT_CAT_FUSIONS  # noqa: E402
from dlcfuzz.backends.inductor.pattern_seeds import (  # noqa: E402
    TensorSpec,
    batches,
    make_inputs,
    pattern_seeds,
    registrations,
    run_batch,
)
from dlcfuzz.backends.inductor.patterns import pattern_inventory, recording_fired  # noqa: E402
from dlcfuzz.gen.single import single_op_graph  # noqa: E402
from dlcfuzz.ir.types import TensorType  # noqa: E402
from dlcfuzz.ops import get_op  # noqa: E402

SFDP_1 = "fuse_attention._sfdp_pattern_1_inference"


@pytest.fixture(scope="module")
def backend():
    return get_backend("inductor")


@pytest.fixture(scope="module")
def inventory():
    return pattern_inventory()


@pytest.fixture(scope="module")
def seeds():
    return list(pattern_seeds())


def test_inventory_is_read_from_torch(backend, inventory):
    assert len(inventory) >= 100
    for name in (SFDP_1, "fuse_attention._sfdp_pattern_5_half_training", "pad_mm.mm_pattern_inference",
                 "joint_graph.pointless_view", "post_grad.mm_plus_mm", "split_cat.merge_splits"):
        assert name in inventory, name
    assert inventory[SFDP_1].kind == "replacement" and inventory[SFDP_1].gate == "default"
    assert inventory["joint_graph.pointless_view"].kind == "graph"
    # patterns whose passes need a knob are registered, and counted, all the same
    gates = {info.gate for info in inventory.values()}
    assert {"default", "freezing=True", "pre_grad_fusion_options"} <= gates
    assert backend.optimizations() == tuple(inventory)


def _attention(q, k, v):
    return (q @ k.transpose(-2, -1)).div(8.0).softmax(dim=-1) @ v


def _pointwise(x, y):
    return torch.relu(x + y) * 2.0


def test_fired_names_the_rewrite_a_program_must_fire(backend):
    q = torch.randn(2, 4, 8, 16)
    with recording_fired() as fired:
        compiled = backend.compile_function(_attention, [q, q, q])
    assert fired[SFDP_1] == 1
    torch.testing.assert_close(compiled(q, q, q), _attention(q, q, q), rtol=1e-4, atol=1e-4)
    x = torch.randn(3, 5)
    with recording_fired() as fired:
        backend.compile_function(_pointwise, [x, x])
    assert not fired


def test_backend_fired_on_a_graph_that_cannot_fire(backend):
    g = single_op_graph(get_op("relu"), np.random.default_rng(0), TensorType("float32", (4, 6)))
    config = backend.configs()["inductor"]
    assert backend.fired(g, config, [SFDP_1, "joint_graph.pointless_view"]) == {
        SFDP_1: False, "joint_graph.pointless_view": False}


def test_registrations_recorded_from_torch():
    regs = registrations()
    names = {r.pattern_name for r in regs}
    assert {"_sfdp_pattern_1_inference", "_sfdp_pattern_1_half_training", "mm_pattern_inference"} <= names
    assert any(r.search.endswith(":prepare_softmax_pattern") for r in regs)  # registered without a pattern name
    sfdp_7 = next(r for r in regs if r.pattern_name == "_sfdp_pattern_7_inference")
    assert dict(sfdp_7.kwargs)["dropout_p"] == 0.0  # the inference variant fixes dropout_p (a partial in torch)


def test_seeds_cover_every_float_dtype_and_run_eagerly(seeds):
    assert len({s.search for s in seeds}) >= 30
    sfdp_1 = {s.variant for s in seeds if s.name == "_sfdp_pattern_1"}
    for dtype in ("float32", "float16", "bfloat16", "float64"):
        for mode in ("inference", "training"):
            assert f"{dtype} registered {mode}" in sfdp_1 and f"{dtype} grown {mode}" in sfdp_1
    small = [s for s in seeds if sum(int(np.prod(a.shape)) for a in s.args if isinstance(a, TensorSpec)) < 1 << 16]
    assert len(small) >= 400
    rng = np.random.default_rng(0)
    for s in small:
        inputs = make_inputs(s, rng)
        with torch.set_grad_enabled(s.training):
            out = s.function()(*inputs)
        assert out is not None, s


def test_a_batch_of_seeds_fires_each_ones_rewrite_in_one_compile_and_names_the_seed_that_differs(backend, seeds):
    """One compile: torch's own attention seeds, one of them in its registered mixed dtypes (float16 q/k/v, a float32
    mask: the `_half_mask_fp32` trace no single dtype gives), each fires its rewrite; sfdp_7 on float32 (torch
    2.13's registered bug inductor-sfdp-half-cast-dropped: the replacement drops its float16 casts) is the one
    mismatch, named by its seed, not by the batch."""
    want = [("_sfdp_pattern_1", "float32 scalar inference"), ("_sfdp_pattern_5", "float32 registered inference"),
            ("_sfdp_pattern_16", "mixed scalar inference"), ("_sfdp_pattern_7", "float32 registered inference")]
    batch = [next(s for s in seeds if (s.name, s.variant) == w) for w in want]
    assert {a.dtype for a in batch[2].args if isinstance(a, TensorSpec)} == {"float16", "float32"}
    runs = run_batch(backend, batch, np.random.default_rng(0))
    assert [r.seed for r in runs] == batch
    assert [r.verdict for r in runs] == ["ok", "ok", "ok", "mismatch"], [r.detail for r in runs]
    assert "torch.float32 != eager" in runs[3].detail and "in a batch of 4" in runs[3].detail
    assert {SFDP_1, "fuse_attention._sfdp_pattern_5_inference", "fuse_attention._sfdp_pattern_16_half_mask_fp32_inference",
            "fuse_attention._sfdp_pattern_7_inference"} <= set(runs[0].fired)
    assert all(r.fired == runs[0].fired for r in runs)  # one compile's


def test_batches_keep_training_random_and_frozen_seeds_apart(seeds):
    groups = list(batches(seeds, 8))
    assert sorted(id(s) for g in groups for s in g) == sorted(map(id, seeds))
    assert all(len(g) <= 8 and len({(s.training, s.random, s.frozen) for s in g}) == 1 for g in groups)
    # a rare kind (the frozen seeds: torch's freezing replacements) does not wait for seeds far down the order
    at = {id(s): k for k, s in enumerate(seeds)}
    assert any(g[0].frozen for g in groups)
    assert all(at[id(g[-1])] - at[id(g[0])] <= 4 * 8 for g in groups)


def _split_cat(x, y):
    a, b = torch.split(x, [2, 2], 1)
    return torch.cat([b.clamp(0, 1), a, y], 1).reshape(-1), torch.stack(torch.unbind(y, 0), 0).squeeze()


def test_the_split_cat_fusion_options_a_campaign_draws_fire_their_rewrites(backend, inventory):
    """The knob (knobs.SPLIT_CAT_FUSIONS, drawn by the graph strategies' sampled knobs and the programs dialect's
    `+fusions` configuration) reaches rewrites whose passes are off by default; one compile."""
    x, y = torch.randn(3, 4), torch.randn(3, 2)
    with recording_fired() as fired:
        compiled = backend.compile_function(_split_cat, [x, y], knobs=dict(SPLIT_CAT_FUSIONS))
    pre = {"split_cat.normalize_split_default", "split_cat.normalize_cat_default", "split_cat.merge_getitem_cat",
           "split_cat.merge_unbind_stack"}
    post = {"split_cat.normalize_cat_default_aten", "split_cat.merge_split_cat_aten"}
    assert pre | post <= set(fired)
    assert {inventory[n].gate for n in pre} == {"pre_grad_fusion_options"}
    assert {inventory[n].gate for n in post} == {"post_grad_fusion_options"}
    for got, want in zip(compiled(x, y), _split_cat(x, y), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
