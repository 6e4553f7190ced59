"""Every nn operator agrees across the reference, ONNX, ONNXRuntime, TVM Relax and the importer."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import TensorType
from dlcfuzz.ops import get_op, registry
from tests.op_harness import check_instance, instances

OPS = sorted(n for n, s in registry().items() if s.family == "nn")


@pytest.mark.parametrize("name", OPS)
def test_op_agrees_everywhere(name):
    spec = get_op(name)
    found = instances(spec, seed=sum(map(ord, name)), count=6)
    assert found, f"no valid instance of {name}"
    for g, x in found:
        check_instance(g, x)


def test_conv_type_rules():
    conv = get_op("conv2d")
    attrs = {"strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0], "group": 2}
    x = TensorType("float32", (1, 4, 5, 5))
    with pytest.raises(ShapeError, match="channels"):
        conv.infer([x, TensorType("float32", (2, 3, 3, 3))], attrs)
    with pytest.raises(ShapeError, match="group"):
        conv.infer([TensorType("float32", (1, 3, 5, 5)), TensorType("float32", (2, 1, 3, 3))], attrs)
    with pytest.raises(DTypeError):
        conv.infer([TensorType("int32", (1, 4, 5, 5)), TensorType("int32", (2, 2, 3, 3))], attrs)
    with pytest.raises(ShapeError, match="larger than padded"):
        conv.infer([x, TensorType("float32", (2, 2, 7, 7))], attrs)


def test_conv_reference_by_hand():
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), dtype="float32")
    y = get_op("conv2d").reference([x, w], {"strides": [2, 2], "dilations": [1, 1], "pads": [0, 0, 0, 0], "group": 1})[0]
    np.testing.assert_array_equal(y, [[[[0 + 1 + 4 + 5, 2 + 3 + 6 + 7], [8 + 9 + 12 + 13, 10 + 11 + 14 + 15]]]])


def test_matmul_broadcasting_rules():
    mm = get_op("matmul")
    assert mm.infer([TensorType("float32", (2, 1, 3, 4)), TensorType("float32", (5, 4, 6))], {})[0].shape == (2, 5, 3, 6)
    assert mm.infer([TensorType("float32", (4,)), TensorType("float32", (4, 6))], {})[0].shape == (6,)
    with pytest.raises(ShapeError):
        mm.infer([TensorType("float32", (3, 4)), TensorType("float32", (5, 6))], {})


def test_conv_transpose_rules_and_output_padding():
    ct = get_op("conv_transpose2d")
    x, w = TensorType("float32", (1, 2, 3, 3)), TensorType("float32", (2, 1, 2, 2))
    base = {"strides": [2, 2], "dilations": [1, 1], "pads": [0, 0, 0, 0], "output_padding": [1, 0], "group": 1}
    assert ct.infer([x, w], base)[0].shape == (1, 1, 7, 6)
    with pytest.raises(ShapeError, match="output_padding"):
        ct.infer([x, w], {**base, "output_padding": [2, 0]})
    with pytest.raises(ShapeError, match="channels"):
        ct.infer([x, TensorType("float32", (3, 1, 2, 2))], base)
    with pytest.raises(ShapeError, match="no output"):
        ct.infer([x, w], {**base, "pads": [4, 0, 4, 0]})
    # output_padding adds zero rows at the high end (before the bias)
    y = ct.reference([np.ones((1, 1, 1, 1), "float32"), np.ones((1, 1, 1, 1), "float32")],
                     {"strides": [2, 2], "dilations": [1, 1], "pads": [0, 0, 0, 0], "output_padding": [1, 1], "group": 1})[0]
    np.testing.assert_array_equal(y, [[[[1, 0], [0, 0]]]])


def test_pool_and_norm_rules():
    x = TensorType("float32", (1, 2, 4, 4))
    mp, ap = get_op("max_pool2d"), get_op("avg_pool2d")
    win = {"kernel": [2, 2], "strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1]}
    with pytest.raises(ShapeError, match="smaller than kernel"):
        mp.infer([x], {**win, "pads": [2, 0, 0, 0]})
    with pytest.raises(ShapeError, match="larger than padded"):
        mp.infer([x], {**win, "kernel": [5, 5], "pads": [0, 0, 0, 0]})
    with pytest.raises(ShapeError, match="dilations"):
        ap.infer([x], {**win, "dilations": [2, 2], "count_include_pad": 0})
    p = TensorType("float32", (3,))
    with pytest.raises(ShapeError):
        get_op("batch_norm").infer([x, p, p, p, p], {"epsilon": 1e-5})
    with pytest.raises(ShapeError):
        get_op("instance_norm").infer([x, p, p], {"epsilon": 1e-5})
    with pytest.raises(ShapeError):
        get_op("layer_norm").infer([x, TensorType("float32", (3, 4))], {"axis": -2, "epsilon": 1e-5})
    with pytest.raises(ShapeError):
        get_op("dropout").infer([x], {"ratio": 1.0})
    with pytest.raises(ShapeError):
        get_op("gemm").infer([TensorType("float32", (2, 3)), TensorType("float32", (2, 3))],
                             {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0})


def test_lrn_reference_by_hand():
    x = np.array([1.0, 2.0, 3.0], dtype="float32").reshape(1, 3, 1, 1)
    y = get_op("lrn").reference([x], {"size": 2, "alpha": 2.0, "beta": 1.0, "bias": 1.0})[0].reshape(-1)
    # size 2: channel c sums c and c+1 (floor((2-1)/2) = 0 below, ceil((2-1)/2) = 1 above)
    np.testing.assert_allclose(y, [1 / (1 + 1 + 4), 2 / (1 + 4 + 9), 3 / (1 + 9)], rtol=1e-6)


def test_onnx_import_picks_conv_by_weight_rank_and_refuses_auto_pad():
    from onnx import TensorProto, helper

    from dlcfuzz.lower.onnx_import import import_model

    def model(xs, ws, **attrs):
        node = helper.make_node("Conv", ["x", "w"], ["y"], **attrs)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs),
                                            helper.make_tensor_value_info("w", TensorProto.FLOAT, ws)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])

    assert import_model(model((1, 2, 5), (3, 2, 2))).graph.nodes[0].op == "conv1d"
    assert import_model(model((1, 2, 5, 5), (3, 2, 2, 2))).graph.nodes[0].op == "conv2d"
    res = import_model(model((1, 2, 5, 5), (3, 2, 2, 2), auto_pad="SAME_UPPER"))
    assert not res.complete and "auto_pad" in res.skipped[0].reason
