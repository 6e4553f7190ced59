"""Reduce-family operators: every spec against ONNX, ONNXRuntime, TVM Relax and the importer, plus edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.ops import check_graph, get_op, registry
from op_harness import check_instance, instances

# the operators of ops/reduce.py (other modules, e.g. ops/reduce_lp.py, share the family name)
REDUCE_OPS = sorted(name for name, spec in registry().items()
                    if spec.family == "reduce" and type(spec).__module__ == "dlcfuzz.ops.reduce")
AXES_OPS = [op for op in REDUCE_OPS if op.startswith("reduce_")]
F = TensorType("float32", (2, 3, 4))


def one_node(op: str, t: TensorType, attrs: dict) -> Graph:
    (out,) = get_op(op).infer([t], attrs)
    g = Graph(inputs=[Value("x0", t)], nodes=[Node(op, ["x0"], [Value("y0", out)], attrs, name="n0")], outputs=["y0"])
    check_graph(g)
    return g


def test_family_is_registered():
    assert {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin"} <= set(
        REDUCE_OPS)


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_op_agrees_everywhere(op):
    spec = get_op(op)
    got = instances(spec, seed=2, count=6)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


@pytest.mark.parametrize("op", AXES_OPS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_empty_axes_reduce_everything(op, keepdims):
    attrs = {"axes": [], "keepdims": keepdims, "noop_with_empty_axes": 0}
    (out,) = get_op(op).infer([F], attrs)
    assert out.shape == ((1, 1, 1) if keepdims else ())
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=F.shape).astype("float32")
    (y,) = get_op(op).reference([x], attrs)
    fn = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
          "reduce_prod": np.prod}[op]
    np.testing.assert_allclose(y, fn(x, keepdims=bool(keepdims)), rtol=1e-5)
    check_instance(one_node(op, F, attrs), {"x0": x})


@pytest.mark.parametrize("op", AXES_OPS)
def test_empty_axes_with_noop_is_identity(op):
    attrs = {"axes": [], "keepdims": 0, "noop_with_empty_axes": 1}
    assert get_op(op).infer([F], attrs) == [F]
    x = np.random.default_rng(1).uniform(0.5, 1.5, size=F.shape).astype("float32")
    np.testing.assert_array_equal(get_op(op).reference([x], attrs)[0], x)
    check_instance(one_node(op, F, attrs), {"x0": x})


def test_axes_and_keepdims_shapes():
    s = get_op("reduce_sum")
    assert s.infer([F], {"axes": [-1, 0], "keepdims": 1, "noop_with_empty_axes": 0}) == [F.with_shape((1, 3, 1))]
    assert s.infer([F], {"axes": [1], "keepdims": 0, "noop_with_empty_axes": 0}) == [F.with_shape((2, 4))]


@pytest.mark.parametrize("attrs", [
    {"axes": [3], "keepdims": 1, "noop_with_empty_axes": 0},
    {"axes": [-4], "keepdims": 1, "noop_with_empty_axes": 0},
    {"axes": [0, -3], "keepdims": 1, "noop_with_empty_axes": 0},
    {"axes": [0], "keepdims": 2, "noop_with_empty_axes": 0},
    {"axes": [0], "keepdims": 1, "noop_with_empty_axes": 5},
    {"axes": 0, "keepdims": 1, "noop_with_empty_axes": 0},
])
@pytest.mark.parametrize("op", AXES_OPS)
def test_reduce_rejects_bad_attrs(op, attrs):
    with pytest.raises(ShapeError):
        get_op(op).infer([F], attrs)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_ops(op):
    spec = get_op(op)
    assert spec.infer([F], {"axis": -1, "keepdims": 0}) == [TensorType("int64", (2, 3))]
    assert spec.infer([F], {"axis": 1, "keepdims": 1}) == [TensorType("int64", (2, 1, 4))]
    for bad in ({"axis": 3, "keepdims": 1}, {"axis": 0, "keepdims": 3}):
        with pytest.raises(ShapeError):
            spec.infer([F], bad)
    with pytest.raises(ShapeError):
        spec.infer([TensorType("float32", ())], {"axis": 0, "keepdims": 1})
    with pytest.raises(DTypeError):
        spec.infer([TensorType("bool", (2,))], {"axis": 0, "keepdims": 1})
    # ties select the first index
    x = np.array([[1, 3, 3, 0], [2, 2, 0, 0]], dtype="int32")
    (y,) = spec.reference([x], {"axis": 1, "keepdims": 0})
    np.testing.assert_array_equal(y, [1, 0] if op == "argmax" else [3, 2])
    check_instance(one_node(op, TensorType.of(x), {"axis": 1, "keepdims": 0}), {"x0": x})


def test_dtype_rules():
    with pytest.raises(DTypeError):
        get_op("reduce_sum").infer([TensorType("int8", (2,))], {"axes": [], "keepdims": 1, "noop_with_empty_axes": 0})
    assert get_op("reduce_max").infer([TensorType("uint8", (2,))], {"axes": [0], "keepdims": 0,
                                                                    "noop_with_empty_axes": 0})


def test_empty_set_identities():
    x = np.zeros((0, 3), dtype="float32")
    attrs = {"axes": [0], "keepdims": 0, "noop_with_empty_axes": 0}
    assert (get_op("reduce_sum").reference([x], attrs)[0] == 0).all()
    assert (get_op("reduce_prod").reference([x], attrs)[0] == 1).all()
    assert (get_op("reduce_max").reference([x], attrs)[0] == -np.inf).all()
    assert (get_op("reduce_min").reference([x], attrs)[0] == np.inf).all()


def test_integer_mean_truncates_toward_zero():
    x = np.array([[-5, -4, 0, 4], [3, 3, -2, -3]], dtype="int32")
    (y,) = get_op("reduce_mean").reference([x], {"axes": [1], "keepdims": 0, "noop_with_empty_axes": 0})
    np.testing.assert_array_equal(y, [-1, 0])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_select_last_index_picks_the_last_tie(op):
    x = np.array([[1, 3, 3, 0], [2, 0, 2, 0]], np.int32)
    attrs = {"axis": 1, "keepdims": 0, "select_last_index": 1}
    want = [2, 2] if op == "argmax" else [3, 3]
    np.testing.assert_array_equal(get_op(op).reference([x], attrs)[0], want)
    np.testing.assert_array_equal(get_op(op).reference([x], {**attrs, "select_last_index": 0})[0],
                                  [1, 0] if op == "argmax" else [3, 1])
    check_instance(one_node(op, TensorType("int32", x.shape), attrs), {"x0": x})
