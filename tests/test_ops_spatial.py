"""Spatial operators (GridSample, AffineGrid, Col2Im, RoiAlign, MaxRoiPool, MaxUnpool, DeformConv): every
spec against ONNX, ONNXRuntime, TVM Relax and the importer, every GridSample mode against every target in
one graph, the references against ONNX's reference implementation and conformance cases, and the
undefined or disputed cases sample() must never produce."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.ops import check_graph, get_op, registry
from dlcfuzz.oracle.numeric import compare
from op_harness import check_instance, instances, run_ort, run_relax

SPATIAL_OPS = sorted(name for name, spec in registry().items() if spec.family == "spatial")


def graph_of(nodes: list[tuple[str, list[str], dict]], inputs: dict[str, TensorType],
             constants: dict | None = None) -> Graph:
    """One graph of several nodes over shared inputs, each node's output a graph output."""
    env = dict(inputs)
    env.update({k: TensorType.of(v) for k, v in (constants or {}).items()})
    built = []
    for i, (op, args, attrs) in enumerate(nodes):
        outs = get_op(op).infer([env[a] for a in args], attrs)
        built.append(Node(op, args, [Value(f"y{i}_{k}", t) for k, t in enumerate(outs)], attrs, name=f"n{i}"))
    g = Graph(inputs=[Value(k, t) for k, t in inputs.items()], constants=dict(constants or {}), nodes=built,
              outputs=[v.name for n in built for v in n.outputs])
    check_graph(g)
    return g


def test_family_is_registered():
    assert set(SPATIAL_OPS) == {"grid_sample", "affine_grid", "col2im", "roi_align", "max_roi_pool", "max_unpool",
                                "deform_conv"}


@pytest.mark.parametrize("op", SPATIAL_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=5, count=3)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


def grid_sample_graph(rank: int) -> tuple[Graph, dict[str, np.ndarray]]:
    """Every mode x padding x align_corners of GridSample, one graph; in 3-D (linear and nearest only)
    every mode x padding, align_corners alternating (Relax compiles each node for a second)."""
    rng = np.random.default_rng(rank)
    x = TensorType("float32", (2, 3, 3, 4) if rank == 4 else (1, 2, 3, 2, 4))
    grid = TensorType("float32", (x.shape[0], 3, 2, 2) if rank == 4 else (1, 2, 3, 2, 3))
    modes = ("linear", "nearest", "cubic") if rank == 4 else ("linear", "nearest")
    combos = itertools.product(modes, ("zeros", "border", "reflection"), (0, 1)) if rank == 4 else \
        [(m, p, k % 2) for k, (m, p) in enumerate(itertools.product(modes, ("zeros", "border", "reflection")))]
    nodes = [("grid_sample", ["x", "grid"], {"mode": m, "padding_mode": p, "align_corners": a}) for m, p, a in combos]
    g = graph_of(nodes, {"x": x, "grid": grid})
    # positions up to twice the image's extent away: reflection bounces more than once
    inputs = {"x": rng.uniform(-2, 2, x.shape).astype(np.float32),
              "grid": rng.uniform(-3, 3, grid.shape).astype(np.float32)}
    spec = get_op("grid_sample")
    ties = [spec.near_tie([inputs["x"], inputs["grid"]], n.attrs, 1e-3) for n in g.nodes]
    assert ties == [spec.disputed_mode(n.attrs) for n in g.nodes]  # no tie but the disputed mode's
    return g, inputs


@pytest.mark.parametrize("rank", [4, 5])
def test_grid_sample_every_mode_agrees_on_every_target(rank):
    g, inputs = grid_sample_graph(rank)
    ref = reference.outputs(g, inputs)
    from onnx.reference import ReferenceEvaluator

    model = to_onnx(g)
    want = ReferenceEvaluator(model).run(None, inputs)
    for n, w, y in zip(g.nodes, want, ref):
        np.testing.assert_allclose(y, w, rtol=1e-5, atol=1e-5, err_msg=str(n.attrs))
    # ORT clamps each cubic tap with border padding, ONNX's reference the position (disputed_mode)
    disputed = [i for i, n in enumerate(g.nodes) if get_op("grid_sample").disputed_mode(n.attrs)]
    bad = compare([np.asarray(v) for v in run_ort(model, inputs)], ref)
    assert {m.index for m in bad} == set(disputed), bad
    assert not compare(run_relax(g, inputs), ref)
    from dlcfuzz.lower.jax import run_eager as run_jax
    from dlcfuzz.lower.torch import run_eager as run_torch

    assert not compare(run_torch(g, inputs), ref)
    assert not compare(run_jax(g, inputs), ref)


@pytest.mark.parametrize("op", ["affine_grid", "col2im", "roi_align", "max_unpool", "deform_conv"])
def test_reference_matches_onnx_reference_implementation(op):
    from onnx.reference import ReferenceEvaluator

    compared = 0
    for g, inputs in instances(get_op(op), seed=11, count=8):
        node = g.nodes[0]
        if op == "deform_conv" and min(g.types()[node.inputs[0]].shape[2:]) < 2:
            continue  # ONNX's reference normalizes by (size - 1): it divides by zero on one row
        if op == "col2im" and len(node.attrs["image_shape"]) != 2:
            continue  # ONNX's reference folds 2-D images only
        want = ReferenceEvaluator(to_onnx(g)).run(None, inputs)
        got = get_op(op).reference([g.constants.get(i, inputs.get(i)) for i in node.inputs], node.attrs)
        for w, y in zip(want, got):
            assert y.shape == w.shape
            tol = 1e-2 if y.dtype == np.float16 else 1e-5  # ONNX's reference rounds positions to float32
            np.testing.assert_allclose(y.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol,
                                       err_msg=str(node.attrs))
        compared += 1
    assert compared >= 3


def test_conformance_cases_pass():
    import runpy
    from pathlib import Path

    bench = runpy.run_path(str(Path(__file__).parent.parent / "bench" / "onnx_conformance.py"))
    ops = {"gridsample", "affinegrid", "col2im", "roialign", "maxroipool", "maxunpool", "deformconv"}
    passed, supported, total, excluded, failures = bench["run"](ops)
    assert (passed, supported, total) == (36, 36, 36), failures


def test_sampling_covers_the_attribute_space():
    rng = np.random.default_rng(0)
    seen: dict[str, set] = {k: set() for k in ("gs", "gs5", "ag", "c2i", "ra", "mu", "dc")}
    for _ in range(200):
        _, a = get_op("grid_sample").sample(rng, TensorType("float32", (1, 2, 3, 4)))
        seen["gs"].add((a["mode"], a["padding_mode"], a["align_corners"]))
        _, a = get_op("grid_sample").sample(rng, TensorType("float32", (1, 2, 3, 2, 4)))
        seen["gs5"].add(a["mode"])
        for theta in ((2, 2, 3), (2, 3, 4)):
            _, a = get_op("affine_grid").sample(rng, TensorType("float32", theta))
            seen["ag"].add((a["align_corners"], len(a["size"])))
        _, a = get_op("col2im").sample(rng, TensorType("float32", (2, 4, 4)))
        seen["c2i"].add((len(a["image_shape"]), any(a["pads"]), max(a["dilations"]) > 1, max(a["strides"]) > 1))
        _, a = get_op("roi_align").sample(rng, TensorType("float32", (2, 2, 4, 4)))
        seen["ra"].add((a["mode"], a["coordinate_transformation_mode"], a["sampling_ratio"] > 0))
        try:
            _, a = get_op("max_unpool").sample(rng, TensorType("float32", (1, 1, 2, 3)))
            seen["mu"].add("output_shape" in a)
        except ShapeError:  # overlapping windows with fewer positions than elements
            pass
        ins, a = get_op("deform_conv").sample(rng, TensorType("float32", (1, 2, 4, 4)))
        seen["dc"].add((a["bias"], a["mask"], a["group"] > 1, a["offset_group"] > 1))
    assert len(seen["gs"]) == 18 and seen["gs5"] == {"linear", "nearest"}
    assert seen["ag"] == {(0, 4), (1, 4), (0, 5), (1, 5)}
    assert {k[0] for k in seen["c2i"]} == {1, 2, 3} and all(any(k[i] for k in seen["c2i"]) for i in (1, 2, 3))
    assert len(seen["ra"]) == 8 and seen["mu"] == {True, False} and len(seen["dc"]) == 16


def test_affine_grid_3d_and_sizes_of_one():
    spec = get_op("affine_grid")
    theta = np.array([[[1.0, 0, 0, 0.5], [0, 1, 0, 0], [0, 0, 1, 0]]])
    y = spec.reference([theta], {"size": [1, 1, 2, 1, 3], "align_corners": 0})[0]
    assert y.shape == (1, 2, 1, 3, 3)
    np.testing.assert_allclose(y[0, 1, 0, :, 0], [-2 / 3 + 0.5, 0.5, 2 / 3 + 0.5])
    np.testing.assert_allclose(y[0, :, 0, 0, 2], [-0.5, 0.5])  # z runs over D
    # one position: at 0 without align_corners; with it, ONNX's reference puts it at -1 (ORT at 1,
    # PyTorch at 0), so sample() never makes it
    y = spec.reference([np.eye(2, 3)[None]], {"size": [1, 1, 1, 2], "align_corners": 1})[0]
    np.testing.assert_allclose(y[0, 0, :, 1], [-1, -1])
    rng = np.random.default_rng(1)
    for _ in range(40):
        _, a = spec.sample(rng, TensorType("float32", (1, 2, 3)))
        assert not (a["align_corners"] and 1 in a["size"][2:])


def test_grid_sample_nearest_near_a_half_pixel_is_a_tie():
    spec = get_op("grid_sample")
    x = np.zeros((1, 1, 2, 4), np.float32)
    half = np.array([[[[(2 * 1.5 + 1) / 4 - 1, 0.0]]]], np.float32)  # x = 1.5 pixels, align_corners 0
    attrs = {"mode": "nearest", "padding_mode": "zeros", "align_corners": 0}
    assert spec.near_tie([x, half], attrs, 1e-3)
    assert not spec.near_tie([x, half + np.float32(0.1)], attrs, 1e-3)
    assert not spec.near_tie([x, half], dict(attrs, mode="linear"), 1e-3)
    # cubic with border padding jumps where a position leaves [-0.5, d - 0.5], and is disputed outside
    cubic_border = {"mode": "cubic", "padding_mode": "border", "align_corners": 0}
    edge = np.array([[[[-1.0, 0.0]]]], np.float32)
    assert spec.near_tie([x, edge], cubic_border, 1e-3)
    assert spec.near_tie([x, edge - np.float32(0.5)], cubic_border, 1e-3)
    assert not spec.near_tie([x, edge + np.float32(0.5)], cubic_border, 1e-3)
    assert not spec.near_tie([x, edge], {"mode": "cubic", "padding_mode": "zeros", "align_corners": 0}, 1e-3)
    assert spec.domain(1, [], cubic_border).hi < 1


def test_grid_sample_refuses_what_no_target_runs():
    spec = get_op("grid_sample")
    x5, g5 = TensorType("float32", (1, 1, 2, 2, 2)), TensorType("float32", (1, 2, 2, 2, 3))
    with pytest.raises(ShapeError):
        spec.infer([x5, g5], {"mode": "cubic", "padding_mode": "zeros", "align_corners": 0})
    with pytest.raises(ShapeError):  # the grid's last dim is the number of spatial dims
        spec.infer([TensorType("float32", (1, 1, 2, 2)), TensorType("float32", (1, 2, 2, 3))], {})
    rng = np.random.default_rng(2)
    for _ in range(60):  # reflecting into [0, 0] divides by its zero width
        _, a = spec.sample(rng, TensorType("float32", (1, 1, 1, 3)))
        assert not (a["padding_mode"] == "reflection" and a["align_corners"])


def test_max_unpool_indices_are_distinct_and_inside_their_windows():
    spec = get_op("max_unpool")
    rng = np.random.default_rng(3)
    t = TensorType("float32", (2, 2, 3, 3))
    for _ in range(20):
        try:
            _, a = spec.sample(rng, t)
        except ShapeError:
            continue
        k, s, p, inferred, out = spec.geometry(t, a)
        idx = np.asarray(a["indices"]).reshape(t.shape)
        assert len(set(idx.reshape(-1))) == idx.size
        plane = int(np.prod(inferred[2:]))
        for n, c, i, j in itertools.product(*[range(d) for d in t.shape]):
            v = int(idx[n, c, i, j]) - (n * t.shape[1] + c) * plane
            row, col = divmod(v, inferred[3])
            assert i * s[0] - p[0] <= row < i * s[0] - p[0] + k[0] and j * s[1] - p[1] <= col < j * s[1] - p[1] + k[1]
        if "output_shape" in a and a["output_shape"] != list(inferred):
            assert t.shape[0] * t.shape[1] == 1  # where ONNX's reference and ORT disagree: never
    with pytest.raises(ShapeError):
        spec.infer([TensorType("float32", (1, 1, 1, 2))], {"kernel": [2, 2], "strides": [2, 2], "pads": [0] * 4,
                                                           "indices": [1, 1]})


def test_max_unpool_with_output_shape_places_the_inferred_result_first():
    spec = get_op("max_unpool")
    x = np.array([[[[5.0, 6], [7, 8]]]], np.float32)
    attrs = {"kernel": [2, 2], "strides": [2, 2], "pads": [0] * 4, "indices": [5, 7, 13, 15],
             "output_shape": [1, 1, 5, 4]}
    y = spec.reference([x], attrs)[0]
    assert y.shape == (1, 1, 5, 4) and y[0, 0, 1, 1] == 5 and y[0, 0, 3, 3] == 8 and y.sum() == 26


def test_roi_ops_refuse_bad_batch_indices_and_sample_whole_pixel_rois():
    with pytest.raises(ShapeError):
        get_op("roi_align").infer([TensorType("float32", (1, 1, 4, 4))], {"rois": [0, 0, 1, 1], "batch_indices": [1]})
    with pytest.raises(ShapeError):  # a fractional batch index in MaxRoiPool's float column
        get_op("max_roi_pool").infer([TensorType("float32", (2, 1, 4, 4))],
                                     {"rois": [0.5, 0, 0, 1, 1], "pooled_shape": [1, 1]})
    rng = np.random.default_rng(4)
    spec = get_op("max_roi_pool")
    for _ in range(30):
        _, a = spec.sample(rng, TensorType("float32", (2, 1, 5, 6)))
        scaled = np.asarray(a["rois"]).reshape(-1, 5)[:, 1:] * a["spatial_scale"]
        assert np.array_equal(scaled, np.round(scaled))  # no rounding tie at half a pixel


def test_max_roi_pool_matches_a_hand_computation():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    attrs = {"rois": [0, 0, 0, 2, 3], "pooled_shape": [2, 2], "spatial_scale": 1.0}
    y = get_op("max_roi_pool").reference([x], attrs)[0]
    # rows 0..3 (extent 4, bins [0, 2) and [2, 4)), columns 0..2 (extent 3, bins [0, 2) and [1, 3))
    np.testing.assert_array_equal(y[0, 0], [[5, 6], [13, 14]])


def test_opset16_grid_sample_and_opset10_roi_align_import_onto_todays_names():
    import onnx
    from onnx import TensorProto, helper

    from dlcfuzz.lower.onnx_import import import_model

    def model(node, inputs, opset, inits=()):
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    gs = helper.make_node("GridSample", ["x", "g"], ["y"], mode="bicubic", padding_mode="border")
    res = import_model(model(gs, [("x", [1, 1, 3, 3]), ("g", [1, 2, 2, 2])], 16))
    assert res.complete and res.graph.nodes[0].attrs["mode"] == "cubic"
    plain = helper.make_node("GridSample", ["x", "g"], ["y"])  # the default: bilinear at 16, linear at 20
    assert import_model(model(plain, [("x", [1, 1, 3, 3]), ("g", [1, 2, 2, 2])], 16)).graph.nodes[0].attrs["mode"] == "linear"
    rois = [onnx.numpy_helper.from_array(np.array([[0, 0, 2, 2]], np.float32), "r"),
            onnx.numpy_helper.from_array(np.array([0], np.int64), "b")]
    ra = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=2, output_width=2)
    attrs = import_model(model(ra, [("x", [1, 1, 4, 4])], 10, rois)).graph.nodes[0].attrs
    assert attrs["coordinate_transformation_mode"] == "output_half_pixel"  # RoiAlign-10 had no half-pixel shift
