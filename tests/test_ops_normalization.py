"""Normalization operators (RMS/Lp/mean-variance/group normalization, LpPool, GlobalLpPool): every spec
against ONNX, ONNXRuntime, TVM Relax and the importer, plus the edge cases ONNX defines."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.ops import check_graph, get_op, registry
from op_harness import check_instance, instances

NORM_OPS = sorted(name for name, spec in registry().items() if spec.family == "normalization")


def one_node(op: str, in_types: list[TensorType], attrs: dict) -> Graph:
    (out,) = get_op(op).infer(in_types, attrs)
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(in_types)],
              nodes=[Node(op, [f"x{i}" for i in range(len(in_types))], [Value("y0", out)], attrs, name="n0")],
              outputs=["y0"])
    check_graph(g)
    return g


def test_family_is_registered():
    assert set(NORM_OPS) == {"rms_norm", "lp_norm", "mean_variance_norm", "group_norm", "lp_pool", "global_lp_pool"}


@pytest.mark.parametrize("op", NORM_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=4, count=4)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


# ---- RMSNormalization ---------------------------------------------------------------------


@pytest.mark.parametrize("shape,axis,scale", [((2, 3, 4), -1, (4,)), ((2, 3, 4), 1, (3, 1)), ((3, 4), 0, (3, 4)),
                                              ((5,), 0, (5,))])
def test_rms_norm(shape, axis, scale):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=shape).astype("float32"), rng.normal(size=scale).astype("float32")
    attrs = {"axis": axis, "epsilon": 1e-5, "stash_type": 1}
    axes = tuple(range(axis % len(shape), len(shape)))
    want = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=axes, keepdims=True) + 1e-5) * w
    (y,) = get_op("rms_norm").reference([x, w], attrs)
    np.testing.assert_allclose(y, want, rtol=1e-5)
    # axis 0 is every axis: Relax's rms_norm does not build there, the rule writes the formula
    check_instance(one_node("rms_norm", [TensorType.of(x), TensorType.of(w)], attrs), {"x0": x, "x1": w})


def test_rms_norm_needs_opset_23_and_refuses_bad_attrs():
    f, w = TensorType("float32", (2, 3)), TensorType("float32", (3,))
    model = to_onnx(one_node("rms_norm", [f, w], {"axis": -1, "epsilon": 1e-5, "stash_type": 1}))
    assert [o.version for o in model.opset_import if o.domain == ""] == [23]
    for bad in ({"axis": 2, "epsilon": 1e-5, "stash_type": 1}, {"axis": -1, "epsilon": 0.0, "stash_type": 1},
                {"axis": -1, "epsilon": 1e-5, "stash_type": 10}):
        with pytest.raises(ShapeError):
            get_op("rms_norm").infer([f, w], bad)
    with pytest.raises(ShapeError):
        get_op("rms_norm").infer([f, TensorType("float32", (2,))], {"axis": -1, "epsilon": 1e-5, "stash_type": 1})


def test_float64_normalizes_in_float64():
    # in float32 (stash_type 1) a correct compiler is off by more than float64's tolerance
    rng = np.random.default_rng(1)
    for op, first in (("rms_norm", TensorType("float64", (2, 3))), ("group_norm", TensorType("float64", (2, 4, 3)))):
        assert all(get_op(op).sample(rng, first)[1]["stash_type"] == 11 for _ in range(10))


# ---- LpNormalization ----------------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2])
def test_lp_norm_keeps_zero_vectors(p):
    x = np.array([[3.0, -4.0], [0.0, 0.0]], dtype="float32")
    attrs = {"axis": -1, "p": p}
    (y,) = get_op("lp_norm").reference([x], attrs)
    norm = 7.0 if p == 1 else 5.0
    np.testing.assert_allclose(y, [[3 / norm, -4 / norm], [0.0, 0.0]], rtol=1e-6)
    check_instance(one_node("lp_norm", [TensorType.of(x)], attrs), {"x0": x})
    assert get_op("lp_norm").near_tie([np.array([[1e-9, 0.0]])], attrs, 1e-6)  # tiny: a unit vector, or zero
    assert not get_op("lp_norm").near_tie([x], attrs, 1e-6)
    with pytest.raises(ShapeError):
        get_op("lp_norm").infer([TensorType.of(x)], {"axis": -1, "p": 3})


# ---- MeanVarianceNormalization ------------------------------------------------------------


def test_mean_variance_norm_follows_the_function_body():
    x = np.random.default_rng(2).normal(size=(3, 3, 3, 1)).astype("float32")
    attrs = {"axes": [0, 2, 3]}
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(0, 2, 3), keepdims=True)
    var = (x64 ** 2).mean(axis=(0, 2, 3), keepdims=True) - mean ** 2  # the spec's E[X^2] - E[X]^2
    (y,) = get_op("mean_variance_norm").reference([x], attrs)
    np.testing.assert_allclose(y, (x64 - mean) / (np.sqrt(var) + 1e-9), rtol=1e-5)
    check_instance(one_node("mean_variance_norm", [TensorType.of(x)], attrs), {"x0": x})
    with pytest.raises(DTypeError):  # ONNX's function body adds a float constant: float32 only
        get_op("mean_variance_norm").infer([TensorType("float64", (2, 3))], {"axes": [1]})


def test_mean_variance_norm_of_constant_rows_is_not_judged():
    spec = get_op("mean_variance_norm")
    # exactly constant: ONNX's text gives 0/0, its function body 0 / 1e-9: undefined, NaN
    x = np.array([[0.7, 0.7, 0.7, 0.7], [0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]], dtype="float32")
    y = spec.reference([x], {"axes": [1]})[0]
    assert np.isnan(y[:2]).all() and np.isfinite(y[2]).all()
    # nearly constant: the 1e-9 epsilon normalizes rounding noise, and the error scale says so
    x = np.array([[0.7, 0.7, 0.7, np.nextafter(np.float32(0.7), np.float32(1))]], dtype="float32")
    y = spec.reference([x], {"axes": [1]})[0]
    scale = spec.error_scale([x], {"axes": [1]}, y)
    assert np.isfinite(scale).all()  # an infinite scale would perturb nothing
    assert (scale * np.finfo(np.float32).eps > 10).all()  # a legal error far past any tolerance


# ---- GroupNormalization -------------------------------------------------------------------


def test_group_norm():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 3)).astype("float32")
    w, b = rng.normal(size=4).astype("float32"), rng.normal(size=4).astype("float32")
    attrs = {"num_groups": 2, "epsilon": float(np.float32(1e-5)), "stash_type": 1}  # exact in ONNX's float
    g = x.astype(np.float64).reshape(2, 2, 6)
    norm = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + attrs["epsilon"])).reshape(x.shape)
    (y,) = get_op("group_norm").reference([x, w, b], attrs)
    np.testing.assert_allclose(y, norm * w.reshape(1, 4, 1) + b.reshape(1, 4, 1), rtol=1e-5)
    types = [TensorType.of(x), TensorType.of(w), TensorType.of(b)]
    check_instance(one_node("group_norm", types, attrs), {"x0": x, "x1": w, "x2": b})
    check_instance(one_node("group_norm", [t.with_dtype("float64") for t in types], {**attrs, "stash_type": 11}),
                   {"x0": x.astype("float64"), "x1": w.astype("float64"), "x2": b.astype("float64")})
    with pytest.raises(ShapeError):
        get_op("group_norm").infer(types, {**attrs, "num_groups": 3})
    with pytest.raises(ShapeError):  # opset 18's per-group scale needs scale_per_group
        get_op("group_norm").infer([types[0], types[1].with_shape((2,)), types[2].with_shape((2,))], attrs)


def test_group_norm_18_scales_per_group():
    import onnx
    from onnx.reference import ReferenceEvaluator

    from dlcfuzz import reference
    from dlcfuzz.lower.onnx_import import import_model

    node = onnx.helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    graph = onnx.helper.make_graph(
        [node], "g", [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, s)
                      for n, s in (("x", [2, 4, 3]), ("s", [2]), ("b", [2]))],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4, 3])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    res = import_model(model)
    assert res.complete and res.graph.nodes[0].attrs["scale_per_group"] == 1
    rng = np.random.default_rng(7)
    feeds = {"x": rng.normal(size=(2, 4, 3)).astype("float32"), "s": np.array([0.5, -2.0], "float32"),
             "b": np.array([0.25, 1.0], "float32")}
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = reference.outputs(res.graph, {v.name: feeds[n] for v, n in zip(res.graph.inputs, "xsb")})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    check_instance(res.graph, {v.name: feeds[n] for v, n in zip(res.graph.inputs, "xsb")})


# ---- LpPool, GlobalLpPool -----------------------------------------------------------------


def pool_attrs(**kw) -> dict:
    return {"strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0], "ceil_mode": 0, "auto_pad": "NOTSET",
            "p": 2, **kw}


@pytest.mark.parametrize("shape,attrs,out", [
    ((1, 2, 5, 5), pool_attrs(kernel=[2, 2], strides=[2, 2]), (2, 2)),
    ((1, 2, 5, 4), pool_attrs(kernel=[3, 2], strides=[2, 3], auto_pad="SAME_UPPER", p=3), (3, 2)),
    ((1, 2, 5, 4), pool_attrs(kernel=[2, 3], auto_pad="SAME_LOWER", p=1), (5, 4)),
    ((1, 2, 5, 4), pool_attrs(kernel=[2, 2], dilations=[2, 1], pads=[1, 0, 1, 1]), (5, 4)),
])
def test_lp_pool_matches_onnx(shape, attrs, out):
    import onnx
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(4).normal(size=shape).astype("float32")
    g = one_node("lp_pool", [TensorType.of(x)], attrs)
    assert g.output_types()[0].shape[2:] == out
    (y,) = get_op("lp_pool").reference([x], attrs)
    model = to_onnx(g)
    onnx.checker.check_model(model, full_check=True)
    (want,) = ReferenceEvaluator(model).run(None, {"x0": x})
    np.testing.assert_allclose(y, want, rtol=1e-5)
    check_instance(g, {"x0": x})


def test_lp_pool_ceil_mode_windows_past_the_end_hold_only_the_input():
    # the Lp norm of the values in the window: ONNX's reference instead scales a partial window's
    # mean by the full kernel size (its own comment: "there is a difference in computation")
    x = np.arange(1, 26, dtype="float32").reshape(1, 1, 5, 5)
    attrs = pool_attrs(kernel=[2, 2], strides=[2, 2], ceil_mode=1)
    (y,) = get_op("lp_pool").reference([x], attrs)
    assert y.shape == (1, 1, 3, 3)
    np.testing.assert_allclose(y[0, 0, :, 2], [np.hypot(5, 10), np.hypot(15, 20), 25.0], rtol=1e-6)
    np.testing.assert_allclose(y[0, 0, 0, 0], np.sqrt(1 + 4 + 36 + 49), rtol=1e-6)
    check_instance(one_node("lp_pool", [TensorType.of(x)], attrs), {"x0": x})
    # a last window that would start in the end padding: ONNX's shape inference keeps it, its
    # reference and onnxruntime drop it; infer drops it and sample() never asks
    spec, t = get_op("lp_pool"), TensorType("float32", (1, 2, 4))
    dropped = {"kernel": [2], "strides": [2], "dilations": [1], "pads": [0, 1], "ceil_mode": 1,
               "auto_pad": "NOTSET", "p": 2}
    assert spec.infer([t], dropped)[0].shape == (1, 2, 2) and spec.drops_a_window(t, dropped)


def test_lp_pool_one_and_three_spatial_dims_and_bad_attrs():
    rng = np.random.default_rng(5)
    for shape, k in (((1, 2, 7), [3]), ((1, 1, 3, 4, 3), [2, 2, 2])):
        nd = len(k)
        attrs = {"kernel": k, "strides": [1] * nd, "dilations": [1] * nd, "pads": [0] * 2 * nd, "ceil_mode": 0,
                 "auto_pad": "NOTSET", "p": 3}
        check_instance(one_node("lp_pool", [TensorType("float32", shape)], attrs),
                       {"x0": rng.normal(size=shape).astype("float32")})
    f = TensorType("float32", (1, 2, 4, 4))
    for bad in (pool_attrs(kernel=[2]), pool_attrs(kernel=[2, 2], p=0), pool_attrs(kernel=[5, 5]),
                pool_attrs(kernel=[2, 2], auto_pad="SAME"), pool_attrs(kernel=[2, 2], auto_pad="VALID", pads=[1] * 4)):
        with pytest.raises(ShapeError):
            get_op("lp_pool").infer([f], bad)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p):
    x = np.random.default_rng(6).normal(size=(2, 3, 4, 2)).astype("float32")
    (y,) = get_op("global_lp_pool").reference([x], {"p": p})
    want = (np.abs(x.astype(np.float64)) ** p).sum(axis=(2, 3), keepdims=True) ** (1 / p)
    np.testing.assert_allclose(y, want, rtol=1e-5)
    check_instance(one_node("global_lp_pool", [TensorType.of(x)], {"p": p}), {"x0": x})


@pytest.mark.parametrize("op", ["rms_norm", "layer_norm"])
def test_sampling_never_normalizes_over_an_empty_extent(op):
    """The mean over no element is 0/0: ORT refuses it ("Size of X.shape[axis:] must be at least 1"),
    TVM 0.27's build divides by zero; both were reported as findings of a campaign."""
    rng = np.random.default_rng(18)
    spec = get_op(op)
    with pytest.raises(ShapeError):
        spec.sample(rng, TensorType("float32", (8, 8, 6, 0)))
    seen = set()
    for _ in range(40):
        _, attrs = spec.sample(rng, TensorType("float32", (0, 3, 4)))
        seen.add(attrs["axis"] % 3)
    assert seen == {1, 2}


def test_lp_pool_never_samples_a_negative_same_pad():
    """SAME padding with a (dilated) window smaller than the stride has a negative pad by the spec's formula:
    ORT's LpPool crops, its MaxPool refuses, a clamping reference differs from both (three false
    wrong-results of the issue-18 campaign on onnxruntime 1.32)."""
    import math

    spec = get_op("lp_pool")
    rng = np.random.default_rng(18)
    same = 0
    for _ in range(400):
        _, attrs = spec.sample(rng, TensorType("float32", (1, 2, 6, 5)))
        if attrs["auto_pad"].startswith("SAME"):
            same += 1
            for n, s, k, d in zip((6, 5), attrs["strides"], attrs["kernel"], attrs["dilations"]):
                assert (math.ceil(n / s) - 1) * s + d * (k - 1) + 1 >= n, attrs  # the dilated window
    assert same >= 20


def test_group_norm_sampling_refuses_empty_groups():
    """A group over no element has no mean (TVM 0.25's build divided by zero; ORT's function body cannot
    reshape it)."""
    rng = np.random.default_rng(18)
    with pytest.raises(ShapeError):
        get_op("group_norm").sample(rng, TensorType("float32", (1, 4, 0)))
    ins, attrs = get_op("group_norm").sample(rng, TensorType("float32", (0, 4, 3)))  # an empty batch is fine
    assert 4 % attrs["num_groups"] == 0
