"""Shape-family operators: every spec against ONNX, ONNXRuntime, TVM Relax and the importer, plus edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.gen.single import single_op_graph
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.ops import check_graph, get_op, registry
from op_harness import check_instance, instances

SHAPE_OPS = sorted(name for name, spec in registry().items() if spec.family == "shape")
F = TensorType("float32", (2, 3, 4))


def one_node(op: str, in_types: list[TensorType], attrs: dict, constants: dict | None = None) -> Graph:
    spec = get_op(op)
    outs = spec.infer(in_types, attrs)
    constants = constants or {}
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(in_types) if f"x{i}" not in constants],
              constants=constants,
              nodes=[Node(op, [f"x{i}" for i in range(len(in_types))],
                          [Value(f"y{i}", t) for i, t in enumerate(outs)], attrs, name="n0")],
              outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


def test_family_is_registered():
    expected = {"reshape", "transpose", "concat", "split", "slice", "pad", "squeeze", "unsqueeze", "expand",
                "flatten", "gather", "tile", "resize", "depth_to_space", "space_to_depth", "identity"}
    assert expected <= set(SHAPE_OPS)


@pytest.mark.parametrize("op", SHAPE_OPS)
def test_op_agrees_everywhere(op):
    spec = get_op(op)
    got = instances(spec, seed=1, count=6)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


# ---- slice ---------------------------------------------------------------

SLICE_CASES = [
    # (dim, start, end, step, numpy slice)
    (5, 4, -6, -1, slice(4, None, -1)),  # end before 0 with a negative step reaches index 0
    (5, -1, -100, -2, slice(-1, None, -2)),
    (5, 100, 0, -1, slice(4, 0, -1)),  # start clamps to dim-1 for negative steps
    (5, -100, 100, 2, slice(0, 5, 2)),
    (5, 1, 2**63 - 1, 1, slice(1, None, 1)),
    (5, 2**63 - 1, -(2**63), -1, slice(None, None, -1)),
    (5, 3, 1, 1, slice(3, 1, 1)),  # empty
]


@pytest.mark.parametrize("dim,start,end,step,expect", SLICE_CASES)
def test_slice_clamping_matches_numpy(dim, start, end, step, expect):
    x = np.arange(dim * 2, dtype="float32").reshape(2, dim)
    attrs = {"starts": [start], "ends": [end], "axes": [-1], "steps": [step]}
    (out,) = get_op("slice").reference([x], attrs)
    np.testing.assert_array_equal(out, x[:, expect])
    assert get_op("slice").infer([TensorType.of(x)], attrs) == [TensorType.of(x[:, expect])]


@pytest.mark.parametrize("dim,start,end,step,expect", [c for c in SLICE_CASES if c[0] and len(range(5)[c[4]])])
def test_slice_negative_steps_on_compilers(dim, start, end, step, expect):
    t = TensorType("float32", (2, dim))
    g = one_node("slice", [t], {"starts": [start, 0], "ends": [end, 1], "axes": [1, 0], "steps": [step, 1]})
    check_instance(g, {"x0": np.arange(2 * dim, dtype="float32").reshape(2, dim)})


def test_slice_rejects_bad_attrs():
    s = get_op("slice")
    base = {"starts": [0], "ends": [1], "axes": [0], "steps": [1]}
    for bad in ({"steps": [0]}, {"axes": [3]}, {"axes": [0, 0], "starts": [0, 0], "ends": [1, 1], "steps": [1, 1]},
                {"ends": [1, 2]}, {"starts": [0.5]}):
        with pytest.raises(ShapeError):
            s.infer([F], {**base, **bad})


# ---- type rules ----------------------------------------------------------


@pytest.mark.parametrize("op,attrs", [
    ("transpose", {"perm": [0, 1]}),
    ("transpose", {"perm": [0, 1, 1]}),
    ("transpose", {"perm": [0, 1, 3]}),
    ("reshape", {"shape": [5, 5]}),
    ("reshape", {"shape": [-1, -1]}),
    ("reshape", {"shape": [5, -1]}),
    ("reshape", {"shape": [0, 0, 0, 0]}),
    ("reshape", {"shape": [-2, 12]}),
    ("flatten", {"axis": 4}),
    ("flatten", {"axis": -4}),
    ("squeeze", {"axes": [0]}),
    ("squeeze", {"axes": []}),
    ("unsqueeze", {"axes": [5]}),
    ("unsqueeze", {"axes": [1, 1]}),
    ("unsqueeze", {"axes": []}),
    ("split", {"axis": 1, "split": [1, 1]}),
    ("split", {"axis": 3, "split": [2]}),
    ("split", {"axis": 1, "split": [4, -1]}),
    ("expand", {"shape": [5, 4]}),
    ("expand", {"shape": [-1]}),
    ("tile", {"repeats": [1, 2]}),
    ("tile", {"repeats": [1, -1, 1]}),
    ("pad", {"pads": [0, 0, 0, 0], "mode": "constant", "value": 0.0}),
    ("pad", {"pads": [0, 0, 4, 0, 0, 0], "mode": "reflect", "value": 0}),
    ("pad", {"pads": [0, 0, -1, 0, 0, 0], "mode": "edge", "value": 0}),
    ("pad", {"pads": [0, 0, -5, 0, 0, 0], "mode": "constant", "value": 0}),
    ("pad", {"pads": [0, 0, -1, 0, 0, 0], "mode": "wrap", "value": 0}),  # wrap crops nothing
    ("concat", {"axis": 3}),
    ("resize", {"scales": [1.0, 2.0], "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
    ("resize", {"scales": [1.0, 1.0, -2.0], "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
    ("resize", {"sizes": [2, 3, 4], "scales": [1.0, 1.0, 1.0], "coordinate_transformation_mode": "asymmetric",
                "nearest_mode": "floor"}),
    ("resize", {"sizes": [2, 3, 4], "coordinate_transformation_mode": "tf_crop_and_resize", "nearest_mode": "floor"}),
    ("resize", {"sizes": [2, 3, 4], "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round"}),
])
def test_invalid_attrs_raise_shape_error(op, attrs):
    with pytest.raises(ShapeError):
        get_op(op).infer([F], attrs)


def test_reshape_zero_and_minus_one():
    r = get_op("reshape")
    assert r.infer([F], {"shape": [0, -1]}) == [F.with_shape((2, 12))]
    assert r.infer([F], {"shape": [-1]}) == [F.with_shape((24,))]
    assert r.infer([F], {"shape": [0, 0, 2, 2]}) == [F.with_shape((2, 3, 2, 2))]
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    np.testing.assert_array_equal(r.reference([x], {"shape": [0, -1]})[0], x.reshape(2, 12))


def test_concat_and_gather_type_rules():
    c = get_op("concat")
    with pytest.raises(ShapeError):
        c.infer([F, F.with_shape((2, 4, 4))], {"axis": 2})
    with pytest.raises(DTypeError):
        c.infer([F, F.with_dtype("int32")], {"axis": 0})
    with pytest.raises(ShapeError):
        c.infer([TensorType("float32", ())], {"axis": 0})
    assert c.infer([F, F.with_shape((2, 5, 4))], {"axis": -2}) == [F.with_shape((2, 8, 4))]
    gth = get_op("gather")
    with pytest.raises(DTypeError):
        gth.infer([F, TensorType("float32", (2,))], {"axis": 0})
    with pytest.raises(ShapeError):
        gth.infer([F, TensorType("int64", (2,))], {"axis": 3})
    d = gth.domain(1, [F, TensorType("int64", (2,))], {"axis": -1})
    assert (d.lo, d.hi, d.strict) == (-4, 3, True)


def test_split_outputs_follow_sizes():
    g = one_node("split", [F], {"axis": -1, "split": [1, 2, 1]})
    assert [v.type.shape for v in g.nodes[0].outputs] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    check_instance(g, {"x0": x})
    outs = reference.outputs(g, {"x0": x})
    np.testing.assert_array_equal(outs[1], x[..., 1:3])


def test_gather_negative_indices():
    idx = np.array([[-1, 0], [2, -3]], dtype="int64")
    g = one_node("gather", [F, TensorType.of(idx)], {"axis": 1}, constants={"x1": idx})
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    check_instance(g, {"x0": x})
    np.testing.assert_array_equal(reference.outputs(g, {"x0": x})[0], np.take(x, idx % 3, axis=1))


def test_pad_modes_and_negative_pads():
    x = np.arange(12, dtype="int32").reshape(3, 4)
    t = TensorType.of(x)
    for attrs, expect in [
        ({"pads": [1, 0, 0, 2], "mode": "reflect", "value": 0}, np.pad(x, ((1, 0), (0, 2)), mode="reflect")),
        ({"pads": [0, 2, 1, 0], "mode": "edge", "value": 0}, np.pad(x, ((0, 1), (2, 0)), mode="edge")),
        ({"pads": [-1, 1, 0, -2], "mode": "constant", "value": 7},
         np.pad(x[1:, :2], ((0, 0), (1, 0)), constant_values=7)),
    ]:
        np.testing.assert_array_equal(get_op("pad").reference([x], attrs)[0], expect)
        check_instance(one_node("pad", [t], attrs), {"x0": x})


@pytest.mark.parametrize("ctm,nm,sizes", [
    ("asymmetric", "floor", [1, 1, 6, 8]),
    ("half_pixel", "round_prefer_floor", [1, 1, 6, 8]),
    ("half_pixel", "round_prefer_floor", [1, 1, 2, 2]),
    ("align_corners", "round_prefer_ceil", [1, 1, 5, 7]),
    ("pytorch_half_pixel", "ceil", [1, 1, 1, 8]),
])
def test_resize_nearest_modes(ctm, nm, sizes):
    t = TensorType("float32", (1, 1, 3, 4))
    attrs = {"sizes": sizes, "coordinate_transformation_mode": ctm, "nearest_mode": nm}
    x = np.arange(12, dtype="float32").reshape(t.shape)
    check_instance(one_node("resize", [t], attrs), {"x0": x})


def test_resize_asymmetric_floor_upsample_is_repeat():
    x = np.arange(6, dtype="float32").reshape(1, 1, 2, 3)
    attrs = {"scales": [1.0, 1.0, 2.0, 2.0], "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    (y,) = get_op("resize").reference([x], attrs)
    np.testing.assert_array_equal(y, x.repeat(2, axis=2).repeat(2, axis=3))


def test_sample_refuses_unfit_inputs():
    rng = np.random.default_rng(0)
    with pytest.raises(ShapeError):
        single_op_graph(get_op("squeeze"), rng, TensorType("float32", (2, 3)))
    with pytest.raises(ShapeError):
        single_op_graph(get_op("depth_to_space"), rng, TensorType("float32", (1, 4, 2)))
    with pytest.raises(ShapeError):
        single_op_graph(get_op("concat"), rng, TensorType("float32", ()))


@pytest.mark.parametrize("attrs,shape", [
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric", "scales": [1.0, 1.0, 0.5, 2.0],
      "antialias": 1, "exclude_outside": 0}, (1, 2, 4, 3)),
    ({"mode": "cubic", "coordinate_transformation_mode": "align_corners", "sizes": [1, 1, 3, 5],
      "cubic_coeff_a": -0.5, "exclude_outside": 1, "antialias": 0}, (1, 1, 4, 4)),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "sizes": [3, 5],
      "roi": [0.25, -0.25, 1.25, 1.0], "extrapolation_value": 10.0, "antialias": 0, "exclude_outside": 0}, (4, 3)),
])
def test_resize_linear_and_cubic_agree_everywhere(attrs, shape):
    attrs = {**attrs, "nearest_mode": "round_prefer_floor"}
    t = TensorType("float32", shape)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_instance(one_node("resize", [t], attrs), {"x0": x})


def test_resize_linear_reference_by_hand():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners", "nearest_mode": "floor",
             "sizes": [2, 3]}
    np.testing.assert_allclose(get_op("resize").reference([x], attrs)[0], [[1, 1.5, 2], [3, 3.5, 4]])
    # tf_crop_and_resize writes extrapolation_value where the source coordinate leaves the input
    crop = {**attrs, "coordinate_transformation_mode": "tf_crop_and_resize", "roi": [0, 0, 1, 2],
            "extrapolation_value": -1.0}
    np.testing.assert_allclose(get_op("resize").reference([x], crop)[0], [[1, 2, -1], [3, 4, -1]])


def test_pad_wrap_and_space_to_depth_crd():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    attrs = {"pads": [0, 2, 1, 1], "mode": "wrap", "value": 0}
    np.testing.assert_array_equal(get_op("pad").reference([x], attrs)[0][0], [1, 2, 0, 1, 2, 0])
    check_instance(one_node("pad", [TensorType("float32", (2, 3))], attrs), {"x0": x})
    y = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    s2d = {"blocksize": 2, "mode": "CRD"}
    np.testing.assert_array_equal(get_op("space_to_depth").reference([y], s2d)[0].reshape(-1), np.arange(8))
    check_instance(one_node("space_to_depth", [TensorType("float32", (1, 2, 2, 2))], s2d), {"x0": y})


def test_a_long_interpolating_resize_axis_is_refused_and_an_unchanged_one_is_not() -> None:
    """A linear/cubic Resize is a matrix product per resized axis (in the reference and every lowering): an edge
    campaign's [10239, 1] -> [30717, 1] linear Resize needed a 2.5 GB float64 matrix and the reference died of its
    memory (a false 'oom' finding). Such an axis is refused as the IR's form; a long axis left unchanged builds no
    matrix and stays, its result equal to the input's along it."""
    from dlcfuzz.ops.shape import MAX_INTERP_ENTRIES

    spec = get_op("resize")
    linear = {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric", "nearest_mode": "floor"}
    with pytest.raises(ShapeError, match="interpolation matrix"):
        spec.infer([TensorType("float32", (10239, 1))], {**linear, "scales": [3.0, 1.0]})
    assert 10239 * 30717 > MAX_INTERP_ENTRIES
    assert spec.infer([TensorType("float32", (10239, 1))], {"mode": "nearest", "coordinate_transformation_mode":
                                                           "asymmetric", "nearest_mode": "floor",
                                                           "scales": [3.0, 1.0]})[0].shape == (30717, 1)
    long_kept = TensorType("float32", (20000, 2))
    attrs = {**linear, "scales": [1.0, 2.0]}
    assert spec.infer([long_kept], attrs)[0].shape == (20000, 4)
    assert spec.interp(long_kept, attrs)[0] is None
    x = np.random.default_rng(0).standard_normal((20000, 2)).astype(np.float32)
    (y,) = spec.reference([x], attrs)
    assert y.shape == (20000, 4)
    np.testing.assert_allclose(y[:, [0, 3]], x, rtol=1e-6)  # half_pixel_symmetric keeps the border samples


def test_a_nearest_resize_reads_an_unchanged_long_axis_by_its_own_index() -> None:
    """ORT acceptance campaign finding 9 (a suspected reference error): align_corners on a [5798, 3] int32 axis of
    scale 1 computed o * 5797 in float32, which rounds past 2^24 (o >= 2,895), and nearest_mode ceil then read the
    next row for 302 rows. ONNXRuntime and ONNX's reference return the input unchanged; so must the reference."""
    spec = get_op("resize")
    x = np.random.default_rng(0).integers(-5, 6, size=(5798, 3)).astype(np.int32)
    attrs = {"coordinate_transformation_mode": "align_corners", "nearest_mode": "ceil"}
    np.testing.assert_array_equal(spec.reference([x], {**attrs, "scales": [1.0, 1.0]})[0], x)
    np.testing.assert_array_equal(spec.reference([x], {**attrs, "sizes": [5798, 3]})[0], x)
    # another axis resized: the long one still reads itself
    (y,) = spec.reference([x], {**attrs, "scales": [1.0, 2.0]})
    np.testing.assert_array_equal(y[:, [0, 5]], x[:, [0, 2]])
