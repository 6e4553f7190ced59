"""Inductor's pattern-matcher rewrites on the real torch 2.13: the inventory read from its passes, fired
detection on programs that must and cannot fire an attention fusion, and torch's replacement patterns as seed
programs (every variant runs eagerly; one compiles, fires its own pattern and agrees with eager). Compiles are
few (a cold Inductor compile takes ~15 s)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the inductor backend needs torch (pip install 'dlcfuzz[inductor]')")

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.inductor.pattern_seeds import (  # noqa: E402
    TensorSpec,
    make_inputs,
    pattern_seeds,
    registrations,
    run_seed,
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


def test_a_seed_fires_its_pattern_and_agrees_with_eager(backend, seeds):
    seed = next(s for s in seeds if s.name == "_sfdp_pattern_5" and s.variant == "float32 registered inference")
    run = run_seed(backend, seed, np.random.default_rng(0))
    assert run.verdict == "ok", run.detail
    assert "fuse_attention._sfdp_pattern_5_inference" in run.fired
