"""reduce_lp operators (ReduceL1/L2/LogSum/LogSumExp/SumSquare): every spec against ONNX, ONNXRuntime,
TVM Relax and the importer, plus the edge cases ONNX defines (noop axes, empty sets, large inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.ops import check_graph, get_op
from op_harness import check_instance, instances

LP_OPS = ["reduce_l1", "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square"]
F = TensorType("float32", (2, 3, 4))


def one_node(op: str, t: TensorType, attrs: dict) -> Graph:
    (out,) = get_op(op).infer([t], attrs)
    g = Graph(inputs=[Value("x0", t)], nodes=[Node(op, ["x0"], [Value("y0", out)], attrs, name="n0")], outputs=["y0"])
    check_graph(g)
    return g


def numpy_of(op: str, x: np.ndarray, axis, keep: bool) -> np.ndarray:
    x = x.astype(np.float64)
    return {"reduce_l1": lambda: np.sum(np.abs(x), axis=axis, keepdims=keep),
            "reduce_l2": lambda: np.sqrt(np.sum(x * x, axis=axis, keepdims=keep)),
            "reduce_log_sum": lambda: np.log(np.sum(x, axis=axis, keepdims=keep)),
            "reduce_log_sum_exp": lambda: np.log(np.sum(np.exp(x), axis=axis, keepdims=keep)),
            "reduce_sum_square": lambda: np.sum(x * x, axis=axis, keepdims=keep)}[op]()


@pytest.mark.parametrize("op", LP_OPS)
def test_op_agrees_everywhere(op):
    spec = get_op(op)
    assert spec.family == "reduce"
    got = instances(spec, seed=3, count=4)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


@pytest.mark.parametrize("op", LP_OPS)
@pytest.mark.parametrize("axes,keep", [([1], 0), ([-1, 0], 1), ([], 1)])
def test_reference_matches_numpy(op, axes, keep):
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=F.shape).astype("float32")
    attrs = {"axes": axes, "keepdims": keep, "noop_with_empty_axes": 0}
    (y,) = get_op(op).reference([x], attrs)
    want = numpy_of(op, x, tuple(axes) if axes else None, bool(keep))
    assert y.dtype == np.float32 and y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-6)


@pytest.mark.parametrize("op,elementwise", [
    ("reduce_l1", np.abs), ("reduce_l2", np.abs), ("reduce_log_sum", np.log),
    ("reduce_log_sum_exp", lambda x: x), ("reduce_sum_square", np.square)])
def test_noop_axes_keep_the_element_wise_steps(op, elementwise):
    # ONNX: a reduction over an empty set of axes is the identity, but "ReduceLogSum returns the Log
    # of input tensor, and ReduceSumSquare returns the Square of the input tensor"
    attrs = {"axes": [], "keepdims": 0, "noop_with_empty_axes": 1}
    x = np.random.default_rng(1).uniform(0.5, 1.5, size=F.shape).astype("float32")
    assert get_op(op).infer([F], attrs) == [F]
    np.testing.assert_allclose(get_op(op).reference([x], attrs)[0], elementwise(x), rtol=1e-6)
    check_instance(one_node(op, F, attrs), {"x0": x})


@pytest.mark.parametrize("op,identity", [("reduce_l1", 0.0), ("reduce_l2", 0.0), ("reduce_sum_square", 0.0),
                                         ("reduce_log_sum", -np.inf), ("reduce_log_sum_exp", -np.inf)])
def test_empty_set(op, identity):
    t = TensorType("float32", (2, 0, 4))
    attrs = {"axes": [1], "keepdims": 1, "noop_with_empty_axes": 0}
    (y,) = get_op(op).reference([np.zeros(t.shape, "float32")], attrs)
    assert y.shape == (2, 1, 4) and (y == identity).all()


def test_log_sum_exp_does_not_overflow():
    x = np.array([[1000.0, 1000.0], [-1000.0, -1001.0]], dtype="float32")
    (y,) = get_op("reduce_log_sum_exp").reference([x], {"axes": [1], "keepdims": 0, "noop_with_empty_axes": 0})
    np.testing.assert_allclose(y, [1000 + np.log(2), -1000 + np.log1p(np.exp(-1))], rtol=1e-6)
    check_instance(one_node("reduce_log_sum_exp", TensorType.of(x), {"axes": [1], "keepdims": 0,
                                                                     "noop_with_empty_axes": 0}), {"x0": x})


def test_integer_l2_truncates_and_domains():
    x = np.array([[3, 4], [1, 1]], dtype="int32")
    attrs = {"axes": [1], "keepdims": 0, "noop_with_empty_axes": 0}
    np.testing.assert_array_equal(get_op("reduce_l2").reference([x], attrs)[0], [5, 1])  # sqrt(2) -> 1
    check_instance(one_node("reduce_l2", TensorType.of(x), attrs), {"x0": x})
    assert get_op("reduce_log_sum").domain(0, [F], attrs).lo > 0  # a non-positive sum has no log
    with pytest.raises(DTypeError):
        get_op("reduce_log_sum").infer([TensorType("int32", (2,))], attrs)


def test_samples_cover_the_attribute_space():
    spec = get_op("reduce_sum_square")
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(200):
        _, a = spec.sample(rng, F)
        seen.add(("noop" if a["noop_with_empty_axes"] else "all") if not a["axes"] else
                 "negative" if min(a["axes"]) < 0 else "positive")
        seen.add(f"keep{a['keepdims']}")
    assert seen == {"noop", "all", "negative", "positive", "keep0", "keep1"}
