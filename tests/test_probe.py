"""The capability probe's group testing answers exactly what one compile per (operator, dtype) answers."""

from __future__ import annotations

import pytest

from dlcfuzz.ops import check_graph
from dlcfuzz.strategies.probe import probe, probe_cases, side_by_side


def test_side_by_side_keeps_each_part_apart():
    cases = probe_cases()[:5]
    g = side_by_side([c[2] for c in cases])
    check_graph(g)
    assert len(g.nodes) == sum(len(c[2].nodes) for c in cases)
    assert len(g.outputs) == sum(len(c[2].outputs) for c in cases)


def test_batched_probe_equals_the_one_by_one_probe_on_onnxruntime():
    pytest.importorskip("onnxruntime")
    from dlcfuzz.backends import get_backend

    backend = get_backend("onnxruntime")
    configs = [backend.default_pair()[0]]
    single = probe(backend, configs, batch=1)
    batched = probe(backend, configs, batch=16)
    assert set(single) == set(batched)
    differ = {k: (single[k], batched[k]) for k in single if single[k][0] != batched[k][0]}
    assert not differ, differ
    assert sum(not ok for ok, _ in single.values()) >= 10  # the split path ran: some pairs are unsupported


def test_probe_beside_the_newest_opset_finds_kernels_missing_at_newer_schemas():
    """onnxruntime 1.32.0 runs GlobalLpPool alone (opset 18 schema) but not in a model that an opset-23
    operator raised to its newest schema, GlobalLpPool(22): a campaign mixing them spent 35% of its tests
    on NOT_IMPLEMENTED. Graphs of ORT campaigns never mix a raising pair with such a pair."""
    pytest.importorskip("onnxruntime")
    import numpy as np

    from dlcfuzz.backends import get_backend
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.strategies.probe import opset_raisers

    backend = get_backend("onnxruntime")
    configs = [backend.default_pair()[0]]
    alone = probe(backend, configs)
    beside = probe(backend, configs, beside_newest=alone)
    assert set(beside) == set(alone)
    assert alone[("global_lp_pool", "float32")][0] and not beside[("global_lp_pool", "float32")][0]
    assert ("global_lp_pool", "float32") not in opset_raisers()
    assert ("rms_norm", "float32") in opset_raisers() and alone[("rms_norm", "float32")][0]
    assert beside[("rms_norm", "float32")][0] and beside[("relu", "float32")][0]

    from dlcfuzz.gen.random import generate
    from dlcfuzz.ops import get_op

    raisers = opset_raisers()
    low_only = {k for k, (ok, _) in beside.items() if not ok and alone[k][0]}
    for variant in (lambda op, dt: alone[(op, dt)][0] and (op, dt) not in raisers,
                    lambda op, dt: alone[(op, dt)][0] and (op, dt) not in low_only):
        for seed in range(20):
            g = generate(np.random.default_rng(seed), 8, supported=variant,
                         ops=[get_op(n) for n in ("global_lp_pool", "rms_norm", "relu", "add")])
            pairs = {(n.op, g.types()[n.inputs[0]].dtype) for n in g.nodes}
            assert not (pairs & raisers and pairs & low_only), pairs
            model = to_onnx(g)
            backend.compile(g, configs[0])  # compiles: no NOT_IMPLEMENTED at the model's opset
            assert model.opset_import


def test_a_disruptive_campaigns_pool_probes_what_a_valid_one_does(monkeypatch):
    """A disruptive campaign probes through its own pool, where our lowering's LoweringGap is a skipped
    configuration, not an error: that probe once cached bitcast and every com.microsoft operator as
    supported on TVM, and every later TVM campaign of the release died on them."""
    pytest.importorskip("tvm")
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.pool import WorkerPool
    from dlcfuzz.strategies import probe as probe_module

    every = probe_module.probe_cases
    picked = {"bitcast", "ms_fast_gelu", "relu", "add"}
    monkeypatch.setattr(probe_module, "probe_cases", lambda seed=0, form_gaps=None: [c for c in every(seed, form_gaps) if c[0] in picked])
    backend = get_backend("tvm")
    configs = [backend.default_pair()[0]]
    here = probe(backend, configs)
    with WorkerPool("dlcfuzz.exec.worker:make_handler", {"compiler": "tvm", "invalid": True}, jobs=1,
                    timeout_s=120) as pool:
        disruptive = probe(backend, configs, pool=pool)
    assert {k: ok for k, (ok, _) in disruptive.items()} == {k: ok for k, (ok, _) in here.items()}
    assert not disruptive[("bitcast", "float32")][0] and not disruptive[("ms_fast_gelu", "float32")][0]
    assert disruptive[("relu", "float32")][0]
