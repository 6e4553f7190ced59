"""ONNX lowering and import rules of the spatial operators (ops/spatial.py).

GridSample is written in its opset-20 form (mode linear/nearest/cubic; the opset-16 names
bilinear/bicubic would be invalid once another operator raises the model's opset) and AffineGrid
needs opset 20, DeformConv 19. Attributes that ONNX passes as inputs (AffineGrid's size, Col2Im's
image and block shapes, the RoIs and batch indices, MaxUnpool's indices and output_shape) are
written as initializers and imported from constants."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, decode
from dlcfuzz.ops.spatial import AffineGrid, Col2Im, DeformConv, GridSample, MaxRoiPool, MaxUnpool, RoiAlign

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")

GRID_SAMPLE_OPSET = 20  # opset 20 renamed the modes and allowed volumetric inputs
AFFINE_GRID_OPSET = 20
DEFORM_CONV_OPSET = 19
OPSET16_MODES = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}


def _const(node: Any, ctx: ImportContext, i: int, kinds: str = "iu") -> np.ndarray:
    """Input i, a required constant of one of the numpy `kinds`."""
    v = ctx.const_input(node, i)
    if v is None:
        raise Unsupported(f"{node.op_type}: input {i} is missing")
    v = np.asarray(v)
    if v.dtype.kind not in kinds:
        raise Unsupported(f"{node.op_type}: input {i} of {v.dtype}")
    return v


def _ints(v: Any) -> list[int]:
    return [int(i) for i in np.asarray(v).reshape(-1)]


@ONNX.register("grid_sample")
def grid_sample(spec: GridSample, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                out_types: Any) -> None:
    b.need_opset(GRID_SAMPLE_OPSET)
    b.node("GridSample", ins, outs, mode=attrs["mode"], padding_mode=attrs["padding_mode"],
           align_corners=attrs["align_corners"])


@ONNX_IMPORT.register("grid_sample")
def import_grid_sample(spec: GridSample, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"mode", "padding_mode", "align_corners"})
    mode = decode(onnx_attr(node, "mode", b"linear" if ctx.opset >= GRID_SAMPLE_OPSET else b"bilinear"))
    if ctx.opset < GRID_SAMPLE_OPSET:
        if mode not in OPSET16_MODES:
            raise Unsupported(f"GridSample-16: mode {mode!r}")
        mode = OPSET16_MODES[mode]
    return [node.input[0], node.input[1]], {
        "mode": mode, "padding_mode": decode(onnx_attr(node, "padding_mode", b"zeros")),
        "align_corners": int(onnx_attr(node, "align_corners", 0))}


@ONNX.register("affine_grid")
def affine_grid(spec: AffineGrid, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                out_types: Any) -> None:
    b.need_opset(AFFINE_GRID_OPSET)
    size = b.const(np.asarray(attrs["size"], dtype=np.int64), hint="size")
    b.node("AffineGrid", [ins[0], size], outs, align_corners=attrs["align_corners"])


@ONNX_IMPORT.register("affine_grid")
def import_affine_grid(spec: AffineGrid, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"align_corners"})
    return [node.input[0]], {"size": _ints(_const(node, ctx, 1)),
                             "align_corners": int(onnx_attr(node, "align_corners", 0))}


@ONNX.register("col2im")
def col2im(spec: Col2Im, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> None:
    image = b.const(np.asarray(attrs["image_shape"], dtype=np.int64), hint="image_shape")
    block = b.const(np.asarray(attrs["block_shape"], dtype=np.int64), hint="block_shape")
    b.node("Col2Im", [ins[0], image, block], outs, dilations=attrs["dilations"], pads=attrs["pads"],
           strides=attrs["strides"])


@ONNX_IMPORT.register("col2im")
def import_col2im(spec: Col2Im, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"dilations", "pads", "strides"})
    image, block = _ints(_const(node, ctx, 1)), _ints(_const(node, ctx, 2))
    nd = len(image)
    return [node.input[0]], {
        "image_shape": image, "block_shape": block,
        "dilations": [int(v) for v in onnx_attr(node, "dilations", [1] * nd)],
        "pads": [int(v) for v in onnx_attr(node, "pads", [0] * 2 * nd)],
        "strides": [int(v) for v in onnx_attr(node, "strides", [1] * nd)]}


@ONNX.register("roi_align")
def roi_align(spec: RoiAlign, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> None:
    rois = b.const(np.asarray(attrs["rois"], dtype=in_types[0].dtype).reshape(-1, 4), hint="rois")
    batch = b.const(np.asarray(attrs["batch_indices"], dtype=np.int64), hint="batch_indices")
    b.node("RoiAlign", [ins[0], rois, batch], outs, mode=attrs["mode"], output_height=attrs["output_height"],
           output_width=attrs["output_width"], sampling_ratio=attrs["sampling_ratio"],
           spatial_scale=float(attrs["spatial_scale"]),
           coordinate_transformation_mode=attrs["coordinate_transformation_mode"])


@ONNX_IMPORT.register("roi_align")
def import_roi_align(spec: RoiAlign, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale",
                        "coordinate_transformation_mode"})
    rois = _const(node, ctx, 1, "f")
    if rois.ndim != 2 or rois.shape[1] != 4 or str(rois.dtype) != ctx.type_of(node.input[0]).dtype:
        raise Unsupported(f"RoiAlign: rois {rois.dtype}{rois.shape} are not (R, 4) of X's dtype")
    # before opset 16 the only transformation was output_half_pixel (no half-pixel shift)
    default_ctm = b"half_pixel" if ctx.opset >= 16 else b"output_half_pixel"
    return [node.input[0]], {
        "rois": [float(v) for v in rois.reshape(-1)], "batch_indices": _ints(_const(node, ctx, 2)),
        "mode": decode(onnx_attr(node, "mode", b"avg")),
        "output_height": int(onnx_attr(node, "output_height", 1)),
        "output_width": int(onnx_attr(node, "output_width", 1)),
        "sampling_ratio": int(onnx_attr(node, "sampling_ratio", 0)),
        "spatial_scale": float(onnx_attr(node, "spatial_scale", 1.0)),
        "coordinate_transformation_mode": decode(onnx_attr(node, "coordinate_transformation_mode", default_ctm))}


@ONNX.register("max_roi_pool")
def max_roi_pool(spec: MaxRoiPool, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                 out_types: Any) -> None:
    rois = b.const(np.asarray(attrs["rois"], dtype=in_types[0].dtype).reshape(-1, 5), hint="rois")
    b.node("MaxRoiPool", [ins[0], rois], outs, pooled_shape=attrs["pooled_shape"],
           spatial_scale=float(attrs["spatial_scale"]))


@ONNX_IMPORT.register("max_roi_pool")
def import_max_roi_pool(spec: MaxRoiPool, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"pooled_shape", "spatial_scale"})
    rois = _const(node, ctx, 1, "f")
    if rois.ndim != 2 or rois.shape[1] != 5 or str(rois.dtype) != ctx.type_of(node.input[0]).dtype:
        raise Unsupported(f"MaxRoiPool: rois {rois.dtype}{rois.shape} are not (R, 5) of X's dtype")
    pooled = onnx_attr(node, "pooled_shape")
    if pooled is None:
        raise Unsupported("MaxRoiPool: pooled_shape is required")
    return [node.input[0]], {"rois": [float(v) for v in rois.reshape(-1)], "pooled_shape": [int(v) for v in pooled],
                             "spatial_scale": float(onnx_attr(node, "spatial_scale", 1.0))}


@ONNX.register("max_unpool")
def max_unpool(spec: MaxUnpool, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> None:
    idx = b.const(np.asarray(attrs["indices"], dtype=np.int64).reshape(in_types[0].shape), hint="indices")
    extra = [b.const(np.asarray(attrs["output_shape"], dtype=np.int64), hint="output_shape")] \
        if attrs.get("output_shape") is not None else []
    b.node("MaxUnpool", [ins[0], idx, *extra], outs, kernel_shape=attrs["kernel"], strides=attrs["strides"],
           pads=attrs["pads"])


@ONNX_IMPORT.register("max_unpool")
def import_max_unpool(spec: MaxUnpool, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"kernel_shape", "strides", "pads"})
    kernel = onnx_attr(node, "kernel_shape")
    if kernel is None:
        raise Unsupported("MaxUnpool: kernel_shape is required")
    nd = len(kernel)
    attrs: Attrs = {"kernel": [int(v) for v in kernel],
                    "strides": [int(v) for v in onnx_attr(node, "strides", [1] * nd)],
                    "pads": [int(v) for v in onnx_attr(node, "pads", [0] * 2 * nd)],
                    "indices": _ints(_const(node, ctx, 1))}
    if ctx.has_input(node, 2):
        attrs["output_shape"] = _ints(_const(node, ctx, 2))
    return [node.input[0]], attrs


@ONNX.register("deform_conv")
def deform_conv(spec: DeformConv, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                out_types: Any) -> None:
    b.need_opset(DEFORM_CONV_OPSET)
    names = ins[:3]
    if attrs.get("bias", 0):
        names.append(ins[3])
    if attrs.get("mask", 0):
        names += [""] * (4 - len(names)) + [ins[-1]]
    b.node("DeformConv", names, outs, kernel_shape=list(in_types[1].shape[2:]), strides=attrs["strides"],
           dilations=attrs["dilations"], pads=attrs["pads"], group=attrs["group"], offset_group=attrs["offset_group"])


@ONNX_IMPORT.register("deform_conv")
def import_deform_conv(spec: DeformConv, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"kernel_shape", "strides", "dilations", "pads", "group", "offset_group"})
    w = ctx.type_of(node.input[1])
    kernel = onnx_attr(node, "kernel_shape")
    if kernel is not None and [int(k) for k in kernel] != list(w.shape[2:]):
        raise Unsupported(f"DeformConv: kernel_shape {list(kernel)} differs from W's {w.shape[2:]}")
    nd = w.rank - 2
    bias, mask = ctx.has_input(node, 3), ctx.has_input(node, 4)
    ins = list(node.input[:3]) + ([node.input[3]] if bias else []) + ([node.input[4]] if mask else [])
    return ins, {"strides": [int(v) for v in onnx_attr(node, "strides", [1] * nd)],
                 "dilations": [int(v) for v in onnx_attr(node, "dilations", [1] * nd)],
                 "pads": [int(v) for v in onnx_attr(node, "pads", [0] * 2 * nd)],
                 "group": int(onnx_attr(node, "group", 1)), "offset_group": int(onnx_attr(node, "offset_group", 1)),
                 "bias": int(bias), "mask": int(mask)}
