"""Backends: every configuration compiles and agrees on a correct program; knobs do what they say."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.errors import UsageError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.oracle.numeric import compare

F = TensorType("float32", (1, 2, 4, 4))


def conv_relu_graph() -> Graph:
    rng = np.random.default_rng(0)
    g = Graph(
        inputs=[Value("x", F)],
        constants={"w": rng.normal(size=(3, 2, 3, 3)).astype("float32"), "b": rng.normal(size=(3,)).astype("float32")},
        nodes=[
            Node("conv2d", ["x", "w", "b"], [Value("c", TensorType("float32", (1, 3, 4, 4)))],
                 {"strides": [1, 1], "dilations": [1, 1], "pads": [1, 1, 1, 1], "group": 1}, name="n0"),
            Node("relu", ["c"], [Value("y", TensorType("float32", (1, 3, 4, 4)))], name="n1"),
        ],
        outputs=["y"],
    )
    g.check()
    return g


def run_all(name: str):
    from dlcfuzz import reference

    backend = get_backend(name)
    g = conv_relu_graph()
    x = {"x": np.random.default_rng(1).normal(size=F.shape).astype("float32")}
    ref = reference.outputs(g, x)
    for config in backend.configs().values():
        got = backend.compile(g, config).run(x)
        assert not compare(got, ref), config.name
    return backend, g, x


def test_onnxruntime_configs_agree_and_dump_the_optimized_model():
    pytest.importorskip("onnxruntime")
    import onnx

    backend, g, x = run_all("onnxruntime")
    compiled = backend.compile(g, Config("dump", {"opt_level": "extended", "dump": True}))
    model = onnx.load_from_string(compiled.optimized_model)
    ops = [n.op_type for n in model.graph.node]
    assert "Relu" not in ops, ops  # ConvActivationFusion fired
    plain = backend.compile(g, Config("off", {"opt_level": "extended", "dump": True, "disabled_optimizers": ["ConvActivationFusion"]}))
    assert "Relu" in [n.op_type for n in onnx.load_from_string(plain.optimized_model).graph.node]


def test_tvm_configs_agree_across_methods_targets_and_exec_modes():
    pytest.importorskip("tvm")
    backend, _, _ = run_all("tvm")
    names = {c.options["target"] for c in backend.configs().values()} | {c.options["method"] for c in backend.configs().values()}
    assert {"llvm", "c", "direct", "onnx"} <= names


def test_tvm_explicit_pass_sequence():
    pytest.importorskip("tvm")
    from dlcfuzz.backends.tvm import PASSES

    backend = get_backend("tvm")
    g = conv_relu_graph()
    x = {"x": np.ones(F.shape, "float32")}
    base = backend.compile(g, backend.configs()["tvm-unopt"]).run(x)
    seq = ["FoldConstant", "DeadCodeElimination", "CanonicalizeBindings", "LegalizeOps", "AnnotateTIROpPattern",
           "FuseOps", "FuseTIR"]
    assert set(seq) <= set(PASSES) and len(PASSES) >= 20
    got = backend.compile(g, Config("seq", {"method": "direct", "passes": seq, "target": "llvm"})).run(x)
    assert not compare(got, base)


def test_unknown_backend_and_planted_syntax():
    with pytest.raises(UsageError, match="unknown compiler"):
        get_backend("nope")
    with pytest.raises(UsageError, match="unknown planted fault"):
        get_backend("planted:explode@add")
