"""loss operators (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss): every spec against ONNX,
ONNXRuntime, TVM Relax and the importer, the references against hand-computed losses, and the
sampling rules that keep targets defined (in [0, C) or ignore_index; under mean a single class is never ignored)."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.lower.onnx_import import import_model
from dlcfuzz.ops import check_graph, get_op
from op_harness import check_instance, instances

LOSS_OPS = ["negative_log_likelihood_loss", "softmax_cross_entropy_loss"]


def loss_graph(op: str, x: TensorType, target: np.ndarray, attrs: dict, weight: bool = False) -> Graph:
    ins = [x, TensorType.of(target)] + ([TensorType(x.dtype, (x.shape[1],))] if weight else [])
    outs = get_op(op).infer(ins, attrs)
    g = Graph(inputs=[Value("x", x)] + ([Value("w", ins[2])] if weight else []), constants={"t": target},
              nodes=[Node(op, ["x", "t"] + (["w"] if weight else []), [Value(f"y{i}", t) for i, t in enumerate(outs)],
                          attrs, name="n0")],
              outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


@pytest.mark.parametrize("op", LOSS_OPS)
def test_op_agrees_everywhere(op):
    spec = get_op(op)
    assert spec.family == "loss"
    got = instances(spec, seed=5, count=3)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


def test_ignored_targets_and_weights_agree_everywhere():
    # an in-range ignore_index under sum, with weights, and softmax cross-entropy's log_prob output
    x = TensorType("float32", (3, 4, 2))
    target = np.array([[0, 2], [2, 3], [1, 2]], dtype=np.int64)
    rng = np.random.default_rng(0)
    for op, attrs in [("negative_log_likelihood_loss", {"reduction": "sum", "ignore_index": 2}),
                      ("softmax_cross_entropy_loss", {"reduction": "none", "ignore_index": 2, "log_prob": 1})]:
        g = loss_graph(op, x, target, attrs, weight=True)
        check_instance(g, {"x": rng.uniform(-2, 2, x.shape).astype("float32"),
                           "w": rng.uniform(0.5, 2, (4,)).astype("float32")})


def test_nll_reference_matches_hand_computed_loss():
    x = np.array([[0.1, -0.5, 2.0], [1.5, 0.25, -1.0], [0.0, 3.0, 0.5]], dtype=np.float32)
    target = np.array([2, 0, 1], dtype=np.int32)
    w = np.array([0.5, 2.0, 4.0], dtype=np.float32)
    spec = get_op("negative_log_likelihood_loss")
    (none,) = spec.reference([x, target, w], {"reduction": "none", "ignore_index": 1})
    np.testing.assert_allclose(none, [-2.0 * 4.0, -1.5 * 0.5, 0.0])
    (mean,) = spec.reference([x, target, w], {"reduction": "mean", "ignore_index": 1})
    # mean divides by the summed weights of the targets not ignored (4 + 0.5), not by their count
    assert mean.dtype == np.float32 and mean.shape == ()
    np.testing.assert_allclose(mean, (-8.0 - 0.75) / 4.5, rtol=1e-6)
    (mean_unweighted,) = spec.reference([x, target], {"reduction": "mean", "ignore_index": 1})
    np.testing.assert_allclose(mean_unweighted, (-2.0 - 1.5) / 2, rtol=1e-6)
    with pytest.raises(ValueError):  # a target outside [0, C) that is not ignore_index is undefined
        spec.reference([x, np.array([3, 0, 1], dtype=np.int32)], {"reduction": "sum", "ignore_index": None})


def test_softmax_cross_entropy_is_nll_of_log_softmax():
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, (2, 5, 3)).astype(np.float64)
    target = rng.integers(0, 5, (2, 3))
    attrs = {"reduction": "sum", "ignore_index": None, "log_prob": 1}
    loss, logp = get_op("softmax_cross_entropy_loss").reference([x, target], attrs)
    want = x - np.log(np.sum(np.exp(x), axis=1, keepdims=True))
    np.testing.assert_allclose(logp, want, rtol=1e-12)
    (nll,) = get_op("negative_log_likelihood_loss").reference([want, target], {"reduction": "sum", "ignore_index": None})
    np.testing.assert_allclose(loss, nll, rtol=1e-12)


@pytest.mark.parametrize("op", LOSS_OPS)
def test_sample_covers_the_attributes_and_keeps_targets_defined(op):
    spec = get_op(op)
    rng = np.random.default_rng(2)
    seen = set()
    for _ in range(300):
        ins, attrs = spec.sample(rng, TensorType("float32", (2, 3, 2)))
        c = 3
        ii = attrs["ignore_index"]
        dom = spec.domain(1, ins, attrs)
        assert dom.strict and dom.lo >= min(0, -1) and dom.hi <= c
        if attrs["reduction"] == "mean":
            # ignored targets under mean too (the spec's quotient); the divisor's weights stay positive
            if len(ins) == 3:
                assert spec.domain(2, ins, attrs).lo > 0
        kind = None if ii is None else "in" if 0 <= ii < c else "edge" if ii in (-1, c) else "far"
        seen.add((attrs["reduction"], len(ins) == 3, kind, attrs.get("log_prob")))
    assert {r for r, *_ in seen} == {"none", "sum", "mean"}
    assert {k for _, _, k, _ in seen} == {None, "in", "edge", "far"}
    assert {k for r, _, k, _ in seen if r == "mean"} == {None, "in", "edge", "far"}
    assert {w for _, w, _, _ in seen} == {True, False}
    if op == "softmax_cross_entropy_loss":
        assert {p for *_, p in seen} == {0, 1}


def test_infer_rejects_malformed_instances():
    spec = get_op("negative_log_likelihood_loss")
    x = TensorType("float32", (2, 3))
    attrs = {"reduction": "mean", "ignore_index": None}
    with pytest.raises(ShapeError):
        spec.infer([x, TensorType("int64", (3,))], attrs)  # target must be (N,)
    with pytest.raises(ShapeError):
        spec.infer([x, TensorType("int64", (2,)), TensorType("float32", (2,))], attrs)  # weight must be (C,)
    with pytest.raises(DTypeError):
        spec.infer([x, TensorType("float32", (2,))], attrs)
    with pytest.raises(ShapeError):
        spec.infer([x, TensorType("int64", (2,))], {"reduction": "avg", "ignore_index": None})
    with pytest.raises(ShapeError):
        spec.infer([TensorType("float32", (3,)), TensorType("int64", ())], attrs)


@pytest.mark.parametrize("log_prob", [0, 1])
def test_import_reads_the_log_prob_output_and_ignore_index(log_prob):
    x = TensorType("float32", (2, 3))
    attrs = {"reduction": "none", "ignore_index": -1, "log_prob": log_prob}
    g = loss_graph("softmax_cross_entropy_loss", x, np.array([0, -1], dtype=np.int64), attrs)
    res = import_model(to_onnx(g))
    assert res.complete, res.skipped
    (node,) = res.graph.nodes
    assert node.op == "softmax_cross_entropy_loss" and node.attrs == attrs
    assert len(res.graph.outputs) == 1 + log_prob
