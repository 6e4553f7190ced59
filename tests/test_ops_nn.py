"""Every nn operator agrees across the reference, ONNX, ONNXRuntime, TVM Relax and the importer."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import TensorType
from dlcfuzz.ops import check_graph, get_op, registry
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
    with pytest.raises(ShapeError, match="smaller than the window"):
        mp.infer([x], {**win, "pads": [2, 0, 0, 0]})
    with pytest.raises(ShapeError, match="larger than padded"):
        mp.infer([x], {**win, "kernel": [5, 5], "pads": [0, 0, 0, 0]})
    # AveragePool dilations (opset 19): the window spans 3, the output 2 x 2
    assert ap.infer([x], {**win, "dilations": [2, 2], "count_include_pad": 0})[0].shape == (1, 2, 2, 2)
    with pytest.raises(ShapeError):
        mp.infer([x], {**win, "auto_pad": "SAME_UPPER", "pads": [1, 0, 0, 0]})  # auto_pad takes no pads
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


def test_onnx_import_picks_conv_by_weight_rank_and_turns_auto_pad_into_pads():
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
    res = import_model(model((1, 2, 5, 5), (3, 2, 2, 2), auto_pad="SAME_UPPER", strides=[2, 2]))
    # output ceil(5 / 2) = 3: (3 - 1) * 2 + 2 - 5 = 1 pad, at the end for SAME_UPPER
    assert res.complete and res.graph.nodes[0].attrs["pads"] == [0, 0, 1, 1]
    res = import_model(model((1, 2, 5, 5), (3, 2, 2, 2), auto_pad="SAME_LOWER", strides=[2, 2]))
    assert res.graph.nodes[0].attrs["pads"] == [1, 1, 0, 0]


def one_node(op: str, types: list[TensorType], attrs: dict):
    from dlcfuzz.ir import Graph, Node, Value

    outs = get_op(op).infer(types, attrs)
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(types)],
              nodes=[Node(op, [f"x{i}" for i in range(len(types))], [Value(f"y{i}", t) for i, t in enumerate(outs)],
                          attrs, name="n0")], outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


def test_layer_norm_mean_and_inv_std_dev_outputs():
    x = TensorType("float16", (2, 3, 4))
    p = TensorType("float16", (3, 4))
    attrs = {"axis": -2, "epsilon": 1e-5, "outputs": 3}
    y, mean, inv = get_op("layer_norm").infer([x, p], attrs)
    assert (y, mean, inv) == (x, TensorType("float32", (2, 1, 1)), TensorType("float32", (2, 1, 1)))
    rng = np.random.default_rng(0)
    xs = {"x0": rng.standard_normal(x.shape).astype(np.float16), "x1": rng.standard_normal(p.shape).astype(np.float16)}
    _, m, s = get_op("layer_norm").reference(list(xs.values()), attrs)
    flat = xs["x0"].astype(np.float64).reshape(2, -1)
    np.testing.assert_allclose(m.reshape(-1), flat.mean(1), rtol=1e-6)
    np.testing.assert_allclose(s.reshape(-1), 1 / np.sqrt(flat.var(1) + 1e-5), rtol=1e-6)
    check_instance(one_node("layer_norm", [x, p], attrs), xs)


def test_pool_ceil_mode_auto_pad_indices_and_more_dims():
    mp, ap = get_op("max_pool2d"), get_op("avg_pool2d")
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    ceil = {"kernel": [3, 3], "strides": [2, 2], "pads": [0, 0, 0, 0], "dilations": [1, 1], "ceil_mode": 1}
    # ONNX's test_averagepool_2d_ceil: the last windows hang past the input and average what they read
    np.testing.assert_array_equal(ap.reference([x], {**ceil, "count_include_pad": 1})[0],
                                  [[[[5.0, 6.5], [11.0, 12.5]]]])
    y, idx = mp.reference([x], {**ceil, "indices": 1, "storage_order": 1})
    np.testing.assert_array_equal(y, [[[[10, 11], [14, 15]]]])
    np.testing.assert_array_equal(idx, [[[[10, 14], [11, 15]]]])  # column-major offsets
    same = {"kernel": [2, 2], "strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1], "auto_pad": "SAME_LOWER"}
    np.testing.assert_array_equal(mp.reference([x], same)[0][0, 0, 0], [0, 1, 2, 3])  # the pad is in front
    rng = np.random.default_rng(3)
    for op, attrs, shape in [
            ("max_pool1d", {"kernel": [2], "strides": [2], "pads": [0, 0], "dilations": [1], "ceil_mode": 1,
                            "indices": 1}, (1, 2, 5)),
            ("avg_pool3d", {"kernel": [2, 2, 2], "strides": [1, 1, 1], "pads": [0, 0, 0, 0, 0, 0],
                            "dilations": [2, 1, 1], "count_include_pad": 0, "auto_pad": "VALID"}, (1, 1, 4, 3, 3)),
            ("avg_pool2d", {"kernel": [2, 2], "strides": [1, 2], "pads": [1, 0, 0, 1], "dilations": [1, 2],
                            "count_include_pad": 1, "ceil_mode": 1}, (1, 2, 4, 5))]:
        t = TensorType("float32", shape)
        check_instance(one_node(op, [t], attrs), {"x0": rng.standard_normal(shape).astype(np.float32)})


def test_dropout_mask_is_all_true():
    t = TensorType("float32", (2, 3))
    attrs = {"ratio": 0.25, "mask": 1}
    assert get_op("dropout").infer([t], attrs) == [t, TensorType("bool", (2, 3))]
    x = np.ones((2, 3), np.float32)
    assert get_op("dropout").reference([x], attrs)[1].all()
    check_instance(one_node("dropout", [t], attrs), {"x0": x})


def test_conv_transpose_output_shape_becomes_pads():
    from onnx import TensorProto, helper

    from dlcfuzz.lower.onnx_import import import_model

    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3, 2], output_shape=[10, 8])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 1, 3, 3)),
                                        helper.make_tensor_value_info("w", TensorProto.FLOAT, (1, 2, 3, 3))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    res = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    # full output 9 x 7: one more row and column of output_padding
    assert res.complete and res.graph.nodes[0].attrs["output_padding"] == [1, 1]
    assert res.graph.nodes[0].outputs[0].type.shape == (1, 2, 10, 8)


def test_batch_norm_training_mode_outputs_running_statistics():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    scale, bias = np.array([1.0, 0.5], np.float32), np.array([0.0, 1.0], np.float32)
    mean, var = np.array([0.5, -0.5], np.float32), np.array([1.0, 2.0], np.float32)
    attrs = {"epsilon": 1e-5, "training_mode": 1, "momentum": 0.75}
    y, rm, rv = get_op("batch_norm").reference([x, scale, bias, mean, var], attrs)
    bm, bv = x.astype(np.float64).mean(axis=(0, 2)), x.astype(np.float64).var(axis=(0, 2))
    np.testing.assert_allclose(rm, mean * 0.75 + bm * 0.25, rtol=1e-6)
    np.testing.assert_allclose(rv, var * 0.75 + bv * 0.25, rtol=1e-6)
    np.testing.assert_allclose(y[:, 0], (x[:, 0] - bm[0]) / np.sqrt(bv[0] + 1e-5), rtol=1e-5, atol=1e-6)
    ts = [TensorType.of(a) for a in (x, scale, bias, mean, var)]
    g = one_node("batch_norm", ts, attrs)
    inputs = {f"x{i}": a for i, a in enumerate((x, scale, bias, mean, var))}
    check_instance(g, inputs)
    for target in ("torch", "jax"):
        mod = pytest.importorskip(f"dlcfuzz.lower.{target}")
        got = mod.run_eager(g, inputs)
        for a, b in zip(got, (y, rm, rv)):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-4, atol=1e-5)


def test_empty_tensors_in_global_pool_and_conv_transpose():
    """Found by a hirgen campaign (internal errors of the reference): NumPy's max refuses any empty
    array, and ConvTranspose's accumulation sliced an empty input's positions out of range."""
    rng = np.random.default_rng(0)
    pool = get_op("global_max_pool")
    (y,) = pool.reference([np.zeros((0, 3, 2, 2), np.float32)], {})
    assert y.shape == (0, 3, 1, 1)
    (y,) = pool.reference([np.zeros((2, 3, 2, 0), np.float32)], {})
    assert y.shape == (2, 3, 1, 1) and np.isnan(y).all()  # the max of nothing is undefined
    for name in ("global_max_pool", "global_avg_pool", "conv_transpose2d"):
        with pytest.raises(ShapeError, match="empty spatial"):
            get_op(name).sample(rng, TensorType("float32", (6, 1, 2, 0)))
    ct = get_op("conv_transpose2d")
    attrs = {"strides": [2, 2], "dilations": [2, 2], "pads": [0, 0, 0, 0], "output_padding": [0, 0], "group": 1}
    x, w = np.zeros((6, 1, 2, 0), np.float32), np.ones((1, 1, 1, 3), np.float32)
    (want,) = ct.infer([TensorType("float32", x.shape), TensorType("float32", w.shape)], attrs)
    (y,) = ct.reference([x, w], attrs)
    assert y.shape == want.shape == (6, 1, 3, 3) and not y.any()
