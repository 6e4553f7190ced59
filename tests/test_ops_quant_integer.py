"""Integer quantized operators (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv,
DynamicQuantizeLinear): every spec against ONNX, ONNXRuntime, TVM Relax and the importer, plus
ONNX's documented examples, the requantization's near ties and the attribute rules."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.lower.onnx_import import import_model
from dlcfuzz.ops import check_graph, get_op, registry
from dlcfuzz.ops.quant_integer import requantize
from op_harness import check_instance, instances

QUANT_INTEGER_OPS = sorted(name for name, spec in registry().items() if spec.family == "quant_integer")


def one_node(op: str, in_types: list[TensorType], attrs: dict) -> Graph:
    outs = get_op(op).infer(in_types, attrs)
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(in_types)],
              nodes=[Node(op, [f"x{i}" for i in range(len(in_types))],
                          [Value(f"y{i}", t) for i, t in enumerate(outs)], attrs, name="n0")],
              outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


def test_family_is_registered():
    assert set(QUANT_INTEGER_OPS) == {"matmul_integer", "conv_integer", "qlinear_matmul", "qlinear_conv",
                                      "dynamic_quantize_linear"}


@pytest.mark.parametrize("op", QUANT_INTEGER_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=2, count=4)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


def test_dynamic_quantize_linear_documented_example():
    x = np.array([0, 2, -3, -2.5, 1.34, 0.5], dtype=np.float32)
    y, scale, zp = get_op("dynamic_quantize_linear").reference([x], {})
    np.testing.assert_array_equal(y, np.array([153, 255, 0, 26, 221, 179], dtype=np.uint8))
    assert scale.dtype == np.float32 and scale.shape == () and abs(float(scale) - 5 / 255) < 1e-7
    assert zp.dtype == np.uint8 and int(zp) == 153


def test_dynamic_quantize_linear_constant_and_positive_inputs():
    op = get_op("dynamic_quantize_linear")
    y, scale, zp = op.reference([np.zeros((2, 2), np.float32)], {})
    assert float(scale) == 1.0 and int(zp) == 0 and not y.any()  # max == min: scale 1
    y, scale, zp = op.reference([np.array([1.0, 4.0], np.float32)], {})
    assert int(zp) == 0 and y.tolist() == [64, 255]  # the range always includes 0: [0, 4]
    assert not op.near_tie([np.array([1.0, 4.0], np.float32)], {}, 1e-3)
    assert op.near_tie([np.array([1.0, 2.0], np.float32)], {}, 1e-3)  # 1 / (2 / 255) = 127.5


def test_requantize_rounds_half_to_even_and_saturates():
    acc = np.array([1, 3, 5, -1, 1000, -1000])
    out = requantize(acc, np.float64(0.5), 10, "uint8")
    assert out.tolist() == [10, 12, 12, 10, 255, 0]
    assert requantize(np.array([1, 3]), np.float64(0.5), 0, "int8").tolist() == [0, 2]


def test_qlinear_near_ties_are_flagged():
    op = get_op("qlinear_matmul")
    attrs = {"a_scale": 0.5, "a_zero_point": 0, "b_scale": 1.0, "b_zero_point": 0, "y_scale": 1.0,
             "y_zero_point": 0, "to": "uint8"}
    a, b = np.array([[3]], np.uint8), np.array([[1]], np.uint8)  # 3 * 0.5 = 1.5: an exact half
    assert op.near_tie([a, b], attrs, 0.0)
    assert not op.near_tie([np.array([[4]], np.uint8), b], attrs, 0.0)
    assert op.reference([a, b], attrs)[0].tolist() == [[2]]


def test_matmul_integer_documented_example_and_per_column_zero_points():
    op = get_op("matmul_integer")
    a = np.array([[11, 7, 3], [10, 6, 2], [9, 5, 1], [8, 4, 0]], np.uint8)
    b = np.array([[1, 4], [2, 5], [3, 6]], np.uint8)
    (y,) = op.reference([a, b], {"a_zero_point": 12, "b_zero_point": 0})
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [[-38, -83], [-44, -98], [-50, -113], [-56, -128]])
    (y,) = op.reference([a, b], {"a_zero_point": 12, "b_zero_point": [0, 1]})
    np.testing.assert_array_equal(y[:, 1], (a.astype(int) - 12) @ (b[:, 1].astype(int) - 1))
    with pytest.raises(ShapeError):
        op.infer([TensorType.of(a), TensorType.of(b)], {"a_zero_point": 12, "b_zero_point": [0, 1, 2]})
    with pytest.raises(ShapeError):
        op.infer([TensorType.of(a), TensorType.of(b)], {"a_zero_point": 300, "b_zero_point": 0})


def test_qlinear_conv_per_channel_scale_with_bias_runs_everywhere():
    rng = np.random.default_rng(3)
    x, w, bias = TensorType("uint8", (1, 2, 4, 4)), TensorType("uint8", (3, 2, 2, 2)), TensorType("int32", (3,))
    attrs = {"strides": [1, 2], "dilations": [1, 1], "pads": [1, 0, 0, 1], "group": 1, "x_scale": 0.0123,
             "x_zero_point": 100, "w_scale": [0.0211, 0.0307, 0.00917], "w_zero_point": 120, "y_scale": 1.7,
             "y_zero_point": 90, "to": "uint8"}
    attrs = {k: float(np.float32(v)) if isinstance(v, float) else
             [float(np.float32(s)) for s in v] if k == "w_scale" else v for k, v in attrs.items()}
    g = one_node("qlinear_conv", [x, w, bias], attrs)
    inputs = {"x0": rng.integers(0, 256, x.shape).astype(np.uint8), "x1": rng.integers(0, 256, w.shape).astype(np.uint8),
              "x2": rng.integers(-500, 500, bias.shape).astype(np.int32)}
    assert not get_op("qlinear_conv").near_tie([inputs["x0"], inputs["x1"], inputs["x2"]], attrs, 0.0)
    check_instance(g, inputs)


def test_conv_integer_per_channel_zero_point_imports():
    """ONNX's per-output-channel w_zero_point: imported and computed (generated too, except for onnxruntime,
    whose known form gap it is)."""
    x, w = TensorType("uint8", (1, 1, 3, 3)), TensorType("uint8", (2, 1, 2, 2))
    attrs = {"strides": [1, 1], "dilations": [1, 1], "pads": [1, 1, 1, 1], "group": 1, "x_zero_point": 1,
             "w_zero_point": [0, 1]}
    g = one_node("conv_integer", [x, w], attrs)
    res = import_model(to_onnx(g))
    assert res.complete and res.graph.nodes[0].attrs["w_zero_point"] == [0, 1]
    inputs = {"x0": np.arange(2, 11, dtype=np.uint8).reshape(1, 1, 3, 3), "x1": np.ones((2, 1, 2, 2), np.uint8)}
    (y,) = reference.outputs(g, inputs)
    # ONNX's test_convinteger_with_padding expectation
    np.testing.assert_array_equal(y[0, 0], [[1, 3, 5, 3], [5, 12, 16, 9], [11, 24, 28, 15], [7, 15, 17, 9]])
    assert not y[0, 1].any()


@pytest.mark.parametrize("op,ins,attrs", [
    ("qlinear_matmul", [TensorType("uint8", (2, 3)), TensorType("uint8", (3, 2))],
     {"a_scale": 0.1, "a_zero_point": 0, "b_scale": 0.1, "b_zero_point": 0, "y_scale": 0.0, "y_zero_point": 0,
      "to": "uint8"}),
    ("qlinear_matmul", [TensorType("uint8", (2, 3)), TensorType("uint8", (3, 2))],
     {"a_scale": 0.1, "a_zero_point": 0, "b_scale": 0.1, "b_zero_point": 0, "y_scale": 1.0, "y_zero_point": 0,
      "to": "int32"}),
    ("qlinear_matmul", [TensorType("uint8", (2, 3)), TensorType("uint8", (4, 2))],
     {"a_scale": 0.1, "a_zero_point": 0, "b_scale": 0.1, "b_zero_point": 0, "y_scale": 1.0, "y_zero_point": 0,
      "to": "uint8"}),
    ("matmul_integer", [TensorType("float32", (2, 3)), TensorType("uint8", (3, 2))],
     {"a_zero_point": 0, "b_zero_point": 0}),
    ("conv_integer", [TensorType("uint8", (1, 2, 3, 3)), TensorType("uint8", (1, 1, 2, 2))],
     {"strides": [1, 1], "dilations": [1, 1], "pads": [0] * 4, "group": 1, "x_zero_point": 0, "w_zero_point": 0}),
    ("qlinear_conv", [TensorType("uint8", (1, 1, 3, 3)), TensorType("uint8", (2, 1, 2, 2)), TensorType("int32", (3,))],
     {"strides": [1, 1], "dilations": [1, 1], "pads": [0] * 4, "group": 1, "x_scale": 0.1, "x_zero_point": 0,
      "w_scale": 0.1, "w_zero_point": 0, "y_scale": 0.1, "y_zero_point": 0, "to": "uint8"}),
])
def test_rejects_bad_instances(op, ins, attrs):
    with pytest.raises((ShapeError, DTypeError)):
        get_op(op).infer(ins, attrs)
