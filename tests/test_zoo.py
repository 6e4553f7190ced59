"""Model zoo: every model is valid, reproducible, numerically tame and agrees with onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference, zoo
from dlcfuzz.ir import graphs_equal
from dlcfuzz.ir.types import FLOATS
from dlcfuzz.ops import check_graph

TINY = zoo.names(tiny=True)
FULL = zoo.names(tiny=False)


def _ort_run(g, inputs):
    ort = pytest.importorskip("onnxruntime")
    from dlcfuzz.lower.onnx import to_onnx

    sess = ort.InferenceSession(to_onnx(g).SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)[0]


def _assert_tame(g, env):
    """Every float value finite and of moderate size; logits distinct."""
    for n in g.nodes:
        for v in n.outputs:
            if v.type.dtype in FLOATS:
                a = env[v.name].astype(np.float64)
                assert np.all(np.isfinite(a)), v.name
                rms = float(np.sqrt(np.mean(a * a)))
                assert 0.05 < rms < 20.0, (v.name, rms)
    logits = env[g.outputs[0]]
    assert logits.shape == (1, zoo.CLASSES)
    assert np.ptp(logits) > 0.1


def test_registry():
    assert set(TINY) == {"tiny_resnet", "tiny_vgg", "tiny_mobilenet"}
    assert set(FULL) == {"resnet18", "vgg11", "mobilenet_v2"}
    for name, info in zoo.ZOO.items():
        assert info.name == name
        assert info.description and "\n" not in info.description
    with pytest.raises(KeyError, match="unknown model"):
        zoo.build("alexnet")


@pytest.mark.parametrize("name", TINY)
def test_tiny_model(name):
    g = zoo.build(name, seed=0)
    check_graph(g)
    assert [v.type.shape for v in g.inputs] == [zoo.INPUT_SHAPE]
    assert graphs_equal(g, zoo.build(name, seed=0))
    assert not graphs_equal(g, zoo.build(name, seed=1))
    nodes, params = zoo.summary(g)
    assert nodes == len(g.nodes) and 10 < nodes < 100
    assert 1000 < params < 20000
    x = zoo.sample_inputs(g, seed=3)
    env = reference.run(g, x, keep_all=True)
    _assert_tame(g, env)
    ref = env[g.outputs[0]]
    out = _ort_run(g, x)
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    assert out.argmax() == ref.argmax()


def test_tiny_models_use_the_architectures_building_blocks():
    ops = {name: zoo.build(name).ops_used() for name in TINY}
    assert {"conv2d", "batch_norm", "relu", "add", "global_avg_pool", "gemm"} <= ops["tiny_resnet"]
    assert {"conv2d", "batch_norm", "relu", "max_pool2d", "flatten", "gemm"} <= ops["tiny_vgg"]
    assert {"conv2d", "batch_norm", "clip", "add", "global_avg_pool"} <= ops["tiny_mobilenet"]
    assert any(n.op == "conv2d" and n.attrs["group"] > 1 for n in zoo.build("tiny_mobilenet").nodes)


@pytest.mark.parametrize("name", FULL)
def test_full_model(name):
    """Full size: valid, sized like the published CIFAR variants, tame activations, equal in ORT."""
    g = zoo.build(name)
    check_graph(g)
    nodes, params = zoo.summary(g)
    # parameters include batch-norm running statistics (2 per channel more than trainable counts)
    expected = {"resnet18": (68, 11.0e6, 11.4e6), "vgg11": (31, 9.1e6, 9.4e6), "mobilenet_v2": (152, 2.2e6, 2.4e6)}
    n_exp, lo, hi = expected[name]
    assert nodes == n_exp and lo < params < hi
    x = zoo.sample_inputs(g, seed=1)
    env = reference.run(g, x, keep_all=True)
    _assert_tame(g, env)
    ref = env[g.outputs[0]]
    out = _ort_run(g, x)
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    assert out.argmax() == ref.argmax()
