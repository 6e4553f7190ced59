"""Quantization operators: every spec against ONNX, ONNXRuntime, TVM Relax and the importer, plus edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.ops import check_graph, get_op, registry
from op_harness import check_instance, instances, run_ort

QUANT_OPS = sorted(name for name, spec in registry().items() if spec.family == "quant")


def one_node(op: str, t: TensorType, attrs: dict) -> Graph:
    (out,) = get_op(op).infer([t], attrs)
    g = Graph(inputs=[Value("x0", t)], nodes=[Node(op, ["x0"], [Value("y0", out)], attrs, name="n0")], outputs=["y0"])
    check_graph(g)
    return g


def test_family_is_registered():
    assert QUANT_OPS == ["dequantize_linear", "quantize_linear"]


@pytest.mark.parametrize("op", QUANT_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=4, count=8)
    assert got
    for g, inputs in got:
        check_instance(g, inputs)


@pytest.mark.parametrize("to", ["uint8", "int8"])
def test_quantize_saturates_and_rounds_half_to_even(to):
    from dlcfuzz.lower.onnx import to_onnx

    g = one_node("quantize_linear", TensorType("float32", (6,)), {"scale": 0.5, "zero_point": 3, "to": to})
    x = np.array([-1000.0, 1000.0, 0.25, 0.75, -0.25, 1.0], np.float32)  # x / scale: -2000, 2000, 0.5, 1.5, -0.5, 2
    ref = reference.run(g, {"x0": x})["y0"]
    info = np.iinfo(to)
    assert ref.tolist() == [max(info.min, -1997), min(info.max, 2003), 3, 5, 3, 5]
    assert run_ort(to_onnx(g), {"x0": x})[0].tolist() == ref.tolist()


def test_ties_are_near_ties_and_bad_parameters_are_refused():
    q = get_op("quantize_linear")
    attrs = {"scale": 0.5, "zero_point": 0, "to": "uint8"}
    assert q.near_tie([np.array([0.25], np.float32)], attrs, 1e-3)
    assert not q.near_tie([np.array([0.4], np.float32)], attrs, 1e-3)
    with pytest.raises(ShapeError):
        q.infer([TensorType("float32", (2,))], {**attrs, "scale": 0.0})
    with pytest.raises(ShapeError):
        q.infer([TensorType("float32", (2,))], {**attrs, "zero_point": 300})
    with pytest.raises(DTypeError):
        q.infer([TensorType("float64", (2,))], attrs)
    with pytest.raises(ShapeError):
        get_op("dequantize_linear").infer([TensorType("int8", (2,))], {"scale": 0.5, "zero_point": 200})


def test_rank0_round_trip_on_relax():
    """A rank-0 per-tensor (de)quantize lowers through shape (1,) (apache-tvm 0.25 rejects every axis of a
    rank-0 input: an internal error of a 30-minute campaign) and agrees with the reference."""
    from op_harness import run_relax

    pytest.importorskip("tvm")
    q = {"scale": 0.5, "to": "int8", "zero_point": -3}
    g = Graph(inputs=[Value("x", TensorType("float32", ()))], nodes=[
        Node("quantize_linear", ["x"], [Value("q", TensorType("int8", ()))], q, name="n0"),
        Node("dequantize_linear", ["q"], [Value("y", TensorType("float32", ()))], {"scale": 0.5, "zero_point": -3},
             name="n1")], outputs=["y"])
    check_graph(g)
    inputs = {"x": np.array(2.3, np.float32)}
    out = run_relax(g, inputs)
    assert out[0].shape == () and float(out[0]) == float(reference.run(g, inputs)["y"]) == 2.5


def test_sixteen_bit_quantization_at_opset_21():
    from dlcfuzz.lower.onnx import to_onnx

    x = np.array([-3.0, 0.25, 1000.0, -5000.0], np.float32)
    attrs = {"scale": 0.125, "zero_point": -7, "to": "int16"}
    np.testing.assert_array_equal(get_op("quantize_linear").reference([x], attrs)[0], [-31, -5, 7993, -32768])
    g = one_node("quantize_linear", TensorType("float32", (4,)), attrs)
    assert to_onnx(g).opset_import[0].version == 21
    check_instance(g, {"x0": x})
    q = np.array([0, 65535, 7], np.uint16)
    check_instance(one_node("dequantize_linear", TensorType("uint16", (3,)), {"scale": 0.5, "zero_point": 7}), {"x0": q})
