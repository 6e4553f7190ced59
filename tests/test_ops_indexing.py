"""Indexing operators (GatherElements, GatherND, ScatterElements/Scatter, ScatterND, OneHot, Compress,
ReverseSequence, CenterCropPad, TensorScatter): every spec against ONNX, ONNXRuntime, TVM Relax and the
importer, the ONNX documentation's examples, and the undefined cases sample() must never produce."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.lower.onnx_import import import_model
from dlcfuzz.ops import check_graph, get_op, registry
from op_harness import check_instance, instances

INDEXING_OPS = sorted(name for name, spec in registry().items() if spec.family == "indexing")


def one_node(op: str, in_types: list[TensorType], attrs: dict, constants: dict | None = None) -> Graph:
    outs = get_op(op).infer(in_types, attrs)
    constants = constants or {}
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(in_types) if f"x{i}" not in constants],
              constants=constants,
              nodes=[Node(op, [f"x{i}" for i in range(len(in_types))],
                          [Value(f"y{i}", t) for i, t in enumerate(outs)], attrs, name="n0")],
              outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


def test_family_is_registered():
    assert set(INDEXING_OPS) == {"gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "one_hot",
                                 "compress", "reverse_sequence", "center_crop_pad", "tensor_scatter"}
    assert "Scatter" in get_op("scatter_elements").onnx_ops  # the pre-opset-11 alias imports onto it


@pytest.mark.parametrize("op", INDEXING_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=5, count=3)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


@pytest.mark.parametrize("op", INDEXING_OPS)
def test_reference_matches_onnx_reference_implementation(op):
    from onnx.reference import ReferenceEvaluator

    compared = 0
    for g, inputs in instances(get_op(op), seed=11, count=12):
        first = g.constants.get(g.nodes[0].inputs[0], inputs.get(g.nodes[0].inputs[0]))
        if op == "one_hot" and first.dtype.kind == "f":  # onnx.reference wraps negative float indices before
            continue  # the cast to int64 that the spec does first (ORT casts first, as our reference does)
        model = to_onnx(g)
        try:
            want = ReferenceEvaluator(model).run(None, inputs)
        except ValueError as e:  # onnx.reference's GatherElements wants index dims equal to data's off the axis;
            assert op == "gather_elements" and "same size" in str(e)  # the spec (and ORT) allow them smaller
            continue
        compared += 1
        got = get_op(op).reference([g.constants.get(i, inputs.get(i)) for i in g.nodes[0].inputs], g.nodes[0].attrs)
        for w, y in zip(want, got):
            assert y.dtype == w.dtype and y.shape == w.shape
            np.testing.assert_array_equal(y, w, err_msg=str(g.nodes[0].attrs))
    assert compared >= 3


def test_sampling_covers_every_mode():
    seen: dict[str, set] = {"reduction_e": set(), "reduction_nd": set(), "mode": set(), "compress_axis": set()}
    rng = np.random.default_rng(0)
    for _ in range(60):
        t = TensorType("float32", (3, 4, 2))
        seen["reduction_e"].add(get_op("scatter_elements").sample(rng, t)[1]["reduction"])
        seen["reduction_nd"].add(get_op("scatter_nd").sample(rng, t)[1]["reduction"])
        seen["mode"].add(get_op("tensor_scatter").sample(rng, t)[1]["mode"])
        seen["compress_axis"].add("axis" in get_op("compress").sample(rng, t)[1])
    assert seen["reduction_e"] == seen["reduction_nd"] == {"none", "add", "mul", "max", "min"}
    assert seen["mode"] == {"linear", "circular"} and seen["compress_axis"] == {True, False}


# ---- undefined behaviour is refused ---------------------------------------


def test_duplicate_targets_are_refused_without_reduction():
    data, upd = TensorType("float32", (3, 2)), TensorType("float32", (2, 2))
    attrs = {"axis": 0, "reduction": "none", "indices": [1, 0, -2, 2], "index_dtype": "int64"}  # -2 is 1
    with pytest.raises(ShapeError, match="duplicate"):
        get_op("scatter_elements").infer([data, upd], attrs)
    get_op("scatter_elements").infer([data, upd], {**attrs, "reduction": "add"})
    nd = {"reduction": "none", "indices": [0, -3], "index_shape": [2, 1]}
    with pytest.raises(ShapeError, match="duplicate"):
        get_op("scatter_nd").infer([data, upd], nd)
    with pytest.raises(ShapeError, match="outside"):
        get_op("scatter_nd").infer([data, upd], {**nd, "indices": [0, 3]})
    with pytest.raises(DTypeError):
        get_op("scatter_nd").infer([data.with_dtype("bool"), upd.with_dtype("bool")], {**nd, "reduction": "max"})


def test_sampled_scatters_never_repeat_a_target_without_reduction():
    rng = np.random.default_rng(3)
    spec = get_op("scatter_elements")
    for _ in range(200):
        t = TensorType("int32", tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 4)))))
        (d, u), attrs = spec.sample(rng, t)
        if attrs["reduction"] == "none":
            where = spec.targets(d, u, attrs)
            assert len(set(zip(*[w.reshape(-1) for w in where]))) == u.size


# ---- the ONNX documentation's examples ----------------------------------------


def test_gather_elements_example():
    data = np.array([[1, 2], [3, 4]], dtype=np.float32)
    idx = np.array([[0, 0], [1, -2]], dtype=np.int64)
    (y,) = get_op("gather_elements").reference([data, idx], {"axis": 1})
    np.testing.assert_array_equal(y, [[1, 1], [4, 3]])
    idx = np.array([[1, 2, 0], [2, 0, 0]], dtype=np.int32)  # fewer rows than data: its leading block
    data = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    (y,) = get_op("gather_elements").reference([data, idx], {"axis": 0})
    np.testing.assert_array_equal(y, [[4, 8, 3], [7, 2, 3]])


def test_gather_nd_batch_dims_example():
    data = np.array([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], dtype=np.int32)
    (y,) = get_op("gather_nd").reference([data, np.array([[1], [0]], dtype=np.int64)], {"batch_dims": 1})
    np.testing.assert_array_equal(y, [[2, 3], [4, 5]])


def test_scatter_nd_reductions_example():
    data = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
    upd = np.array([[10, 20, 30, 40], [1, 1, 1, 1]], dtype=np.float32)
    attrs = {"indices": [0, 0], "index_shape": [2, 1]}
    (y,) = get_op("scatter_nd").reference([data, upd], {**attrs, "reduction": "add"})
    np.testing.assert_array_equal(y, [[12, 23, 34, 45], [5, 6, 7, 8]])
    (y,) = get_op("scatter_nd").reference([data, upd], {**attrs, "reduction": "mul"})
    np.testing.assert_array_equal(y, [[10, 40, 90, 160], [5, 6, 7, 8]])


def test_one_hot_out_of_range_gives_all_off():
    attrs = {"depth": 3, "values": [0.5, 2.0], "dtype": "float32", "depth_dtype": "int64", "axis": 0}
    x = np.array([0, -1, 3, -4, 2], dtype=np.int64)
    (y,) = get_op("one_hot").reference([x], attrs)
    np.testing.assert_array_equal(y.T, [[2, .5, .5], [.5, .5, 2], [.5, .5, .5], [.5, .5, .5], [.5, .5, 2]])
    check_instance(one_node("one_hot", [TensorType("int64", (5,))], attrs), {"x0": x})


def test_compress_shorter_condition_and_flattening():
    x = np.arange(6, dtype=np.int8).reshape(3, 2)
    (y,) = get_op("compress").reference([x], {"condition": [0, 1], "axis": 0})
    np.testing.assert_array_equal(y, [[2, 3]])
    (y,) = get_op("compress").reference([x], {"condition": [1, 0, 0, 1, 1]})
    np.testing.assert_array_equal(y, [0, 3, 4])
    with pytest.raises(ShapeError):
        get_op("compress").infer([TensorType.of(x)], {"condition": [1, 1, 1, 1], "axis": -1})


def test_reverse_sequence_example():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)  # [batch, time]
    (y,) = get_op("reverse_sequence").reference([x], {"batch_axis": 0, "time_axis": 1, "sequence_lens": [1, 2, 3, 4]})
    np.testing.assert_array_equal(y, [[0, 1, 2, 3], [5, 4, 6, 7], [10, 9, 8, 11], [15, 14, 13, 12]])


def test_center_crop_pad_odd_differences():
    x = np.arange(1, 6, dtype=np.float32)
    assert get_op("center_crop_pad").reference([x], {"shape": [2]})[0].tolist() == [2, 3]  # start rounds down
    assert get_op("center_crop_pad").reference([x], {"shape": [8]})[0].tolist() == [0, 1, 2, 3, 4, 5, 0, 0]


def test_tensor_scatter_circular_wraps():
    past = np.zeros((2, 4), dtype=np.float32)
    upd = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    attrs = {"axis": -1, "mode": "circular", "write_indices": [2, 0]}
    (y,) = get_op("tensor_scatter").reference([past, upd], attrs)
    np.testing.assert_array_equal(y, [[3, 0, 1, 2], [4, 5, 6, 0]])
    with pytest.raises(ShapeError, match="overrun"):
        get_op("tensor_scatter").infer([TensorType.of(past), TensorType.of(upd)], {**attrs, "mode": "linear"})


# ---- compilers ------------------------------------------------------------------


def test_tvm_scatter_elements_layout_workaround():
    # topi.scatter_elements (apache-tvm 0.27) misplaces updates that are smaller than data at a dim
    # other than 0 and axis+1; the Relax rule scatters the flattened data there. Both paths checked.
    from dlcfuzz.lower.relax.indexing import topi_scatter_layout_ok

    for data, upd, axis in [((3, 4, 2), (2, 3, 2), 2), ((2, 4, 3), (2, 3, 3), 0)]:
        n = data[axis]
        picks = np.moveaxis(np.broadcast_to(np.arange(upd[axis]) % n, upd[:axis] + upd[axis + 1:] + (upd[axis],)),
                            -1, axis)
        attrs = {"axis": axis, "reduction": "none", "indices": [int(i) for i in picks.reshape(-1)],
                 "index_dtype": "int64"}
        t, u = TensorType("float32", data), TensorType("float32", upd)
        rng = np.random.default_rng(0)
        inputs = {"x0": rng.normal(size=data).astype("float32"), "x1": rng.normal(size=upd).astype("float32")}
        assert topi_scatter_layout_ok(data, upd, axis) == (axis == 0)
        check_instance(one_node("scatter_elements", [t, u], attrs), inputs, ort=False, importer=False)


def test_scatter_opset_10_imports_onto_scatter_elements():
    import onnx
    from onnx import helper

    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("u", onnx.TensorProto.FLOAT, [2, 1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])],
        initializer=[onnx.numpy_helper.from_array(np.array([[2], [-3]], dtype=np.int32), "i")])
    res = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)]))
    assert res.complete, res.skipped
    (n,) = res.graph.nodes
    assert n.op == "scatter_elements" and n.attrs["indices"] == [2, -3] and n.attrs["reduction"] == "none"
    (y,) = get_op("scatter_elements").reference([np.zeros((2, 3), "float32"), np.array([[1], [2]], "float32")],
                                                n.attrs)
    np.testing.assert_array_equal(y, [[0, 0, 1], [2, 0, 0]])


@pytest.mark.parametrize("op,in_types,attrs", [
    ("scatter_elements", [TensorType("int32", (3, 0)), TensorType("int32", (2, 0))],
     {"axis": 0, "reduction": "add", "indices": [], "index_dtype": "int64"}),
    ("center_crop_pad", [TensorType("float32", (2, 2, 0))], {"shape": [5, 0, 1]}),
    ("compress", [TensorType("int8", (2, 3))], {"condition": [], "axis": 1}),
    ("compress", [TensorType("int8", (2, 0))], {"condition": []}),
    ("gather_elements", [TensorType("float32", (2, 0)), TensorType("int64", (2, 0))], {"axis": 0}),
    ("reverse_sequence", [TensorType("float32", (0, 0))], {"batch_axis": 0, "time_axis": 1, "sequence_lens": []}),
])
def test_empty_tensors(op, in_types, attrs):
    # empty inputs or outputs are legal ONNX: the Relax rules avoid TVM 0.27's crashes on them
    # (see lower/relax/indexing.py)
    g = one_node(op, in_types, attrs)
    check_instance(g, {v.name: np.zeros(v.type.shape, v.type.dtype) for v in g.inputs})
