"""ONNX lowering and import rules of the shape operators (ops/shape.py), registered per operator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.shape import (
    COORD_MODES,
    INTERP_COORD_MODES,
    INTERP_MODES,
    NEAREST_MODES,
    PAD_MODES,
    Concat,
    DepthToSpace,
    Expand,
    Flatten,
    Gather,
    Identity,
    Pad,
    Reshape,
    Resize,
    Slice,
    SpaceToDepth,
    Split,
    Squeeze,
    Tile,
    Transpose,
    Unsqueeze,
)

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


def _i64(b: Any, values: Sequence[int], hint: str = "c") -> str:
    return b.const(np.asarray(list(values), dtype=np.int64).reshape(-1), "int64", hint=hint)


def _const_ints(node: Any, ctx: ImportContext, i: int) -> list[int] | None:
    v = ctx.const_input(node, i)
    if v is None:
        return None
    if v.dtype.kind not in "iu":
        raise Unsupported(f"{node.op_type}: input {i} must be integers, got {v.dtype}")
    return [int(x) for x in np.asarray(v).reshape(-1)]


@ONNX.register("reshape")
def reshape(spec: Reshape, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Reshape", [ins[0], _i64(b, attrs["shape"], "shape")], outs)


@ONNX_IMPORT.register("reshape")
def import_reshape(spec: Reshape, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"allowzero"})
    shape = _const_ints(node, ctx, 1)
    if shape is None:
        raise Unsupported("Reshape without a shape input")
    if onnx_attr(node, "allowzero", 0) and 0 in shape:
        raise Unsupported("Reshape with allowzero=1 and a 0 in the target shape is not modelled")
    return [node.input[0]], {"shape": shape}


@ONNX.register("transpose")
def transpose(spec: Transpose, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Transpose", ins, outs, perm=list(attrs["perm"]) or None)  # rank 0: the default perm is []


@ONNX_IMPORT.register("transpose")
def import_transpose(spec: Transpose, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"perm"})
    perm = onnx_attr(node, "perm")
    if perm is None:
        perm = list(range(ctx.type_of(node.input[0]).rank))[::-1]
    return [node.input[0]], {"perm": [int(p) for p in perm]}


@ONNX.register("concat")
def concat(spec: Concat, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Concat", ins, outs, axis=attrs["axis"])


@ONNX_IMPORT.register("concat")
def import_concat(spec: Concat, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    axis = onnx_attr(node, "axis")
    if axis is None:
        raise Unsupported("Concat without axis")
    if any(i == "" for i in node.input):
        raise Unsupported("Concat with an empty input name")
    return list(node.input), {"axis": int(axis)}


@ONNX.register("split")
def split(spec: Split, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Split", [ins[0], _i64(b, attrs["split"], "split")], outs, axis=attrs["axis"])


@ONNX_IMPORT.register("split")
def import_split(spec: Split, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "split", "num_outputs"})
    t = ctx.type_of(node.input[0])
    axis = int(onnx_attr(node, "axis", 0))
    if t.rank == 0 or not -t.rank <= axis < t.rank:
        raise Unsupported(f"Split axis {axis} for rank {t.rank}")
    d = t.shape[axis % t.rank]
    n = len(node.output)
    if ctx.opset >= 13:
        if onnx_attr(node, "split") is not None:
            raise Unsupported("Split attribute 'split' is not part of opset >= 13")
        sizes = _const_ints(node, ctx, 1)
    else:
        sizes = onnx_attr(node, "split")
        sizes = None if sizes is None else [int(s) for s in sizes]
    num = onnx_attr(node, "num_outputs")
    if ctx.opset < 18 and num is not None:
        raise Unsupported("Split num_outputs needs opset >= 18")
    if sizes is not None and num is not None:
        raise Unsupported("Split with both split sizes and num_outputs")
    if sizes is None:
        if num is not None:
            if num != n:
                raise Unsupported(f"Split num_outputs={num} but {n} outputs")
            chunk = -(-d // n)
            sizes = [chunk] * (n - 1) + [d - chunk * (n - 1)]
            if sizes[-1] < 0:
                raise Unsupported(f"Split of {d} into {n} chunks leaves a negative last chunk")
        else:
            if ctx.opset >= 18:
                raise Unsupported("Split opset 18 needs split sizes or num_outputs")
            if d % n:
                raise Unsupported(f"Split of {d} into {n} equal parts")
            sizes = [d // n] * n
    return [node.input[0]], {"axis": axis, "split": sizes}


@ONNX.register("slice")
def slice_(spec: Slice, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Slice", [ins[0], _i64(b, attrs["starts"], "starts"), _i64(b, attrs["ends"], "ends"),
                     _i64(b, attrs["axes"], "axes"), _i64(b, attrs["steps"], "steps")], outs)


@ONNX_IMPORT.register("slice")
def import_slice(spec: Slice, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset >= 10:
        expect_attrs(node)
        starts, ends = _const_ints(node, ctx, 1), _const_ints(node, ctx, 2)
        axes, steps = _const_ints(node, ctx, 3), _const_ints(node, ctx, 4)
    else:
        expect_attrs(node, {"starts", "ends", "axes"})
        starts, ends, axes = (onnx_attr(node, k) for k in ("starts", "ends", "axes"))
        steps = None
    if starts is None or ends is None:
        raise Unsupported("Slice without starts/ends")
    starts, ends = [int(v) for v in starts], [int(v) for v in ends]
    axes = list(range(len(starts))) if axes is None else [int(v) for v in axes]
    steps = [1] * len(starts) if steps is None else [int(v) for v in steps]
    return [node.input[0]], {"starts": starts, "ends": ends, "axes": axes, "steps": steps}


@ONNX.register("pad")
def pad(spec: Pad, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    inputs = [ins[0], _i64(b, attrs["pads"], "pads")]
    if attrs["mode"] == "constant":
        inputs.append(b.const(np.array(attrs.get("value", 0)).astype(in_types[0].dtype), in_types[0].dtype, "value"))
    if attrs["mode"] == "wrap":
        b.need_opset(19)
    b.node("Pad", inputs, outs, mode=attrs["mode"])


@ONNX_IMPORT.register("pad")
def import_pad(spec: Pad, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    t = ctx.type_of(node.input[0])
    mode = onnx_attr(node, "mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in PAD_MODES:
        raise Unsupported(f"Pad mode {mode!r} is not modelled")
    if ctx.opset >= 11:
        expect_attrs(node, {"mode"})
        pads = _const_ints(node, ctx, 1)
        if pads is None:
            raise Unsupported("Pad without pads")
        cv = ctx.const_input(node, 2)
        value: Any = 0 if cv is None or cv.size == 0 else cv.reshape(-1)[0].item()
        axes = _const_ints(node, ctx, 3)
        if axes is not None:
            if len(pads) != 2 * len(axes):
                raise Unsupported("Pad axes and pads lengths disagree")
            full = [0] * (2 * t.rank)
            for k, a in enumerate(axes):
                if not -t.rank <= a < t.rank:
                    raise Unsupported(f"Pad axis {a} out of range")
                full[a % t.rank] = pads[k]
                full[a % t.rank + t.rank] = pads[k + len(axes)]
            pads = full
    else:
        expect_attrs(node, {"mode", "pads", "value"})
        pads = [int(p) for p in onnx_attr(node, "pads", [])]
        value = float(onnx_attr(node, "value", 0.0))
    if isinstance(value, float) and value.is_integer() and t.dtype not in ("float16", "float32", "float64"):
        value = int(value)
    return [node.input[0]], {"pads": pads, "mode": mode, "value": value if mode == "constant" else 0}


@ONNX.register("squeeze")
def squeeze(spec: Squeeze, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Squeeze", [ins[0], _i64(b, attrs["axes"], "axes")], outs)


@ONNX_IMPORT.register("squeeze")
def import_squeeze(spec: Squeeze, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset >= 13:
        expect_attrs(node)
        axes = _const_ints(node, ctx, 1)
    else:
        expect_attrs(node, {"axes"})
        axes = onnx_attr(node, "axes")
    if axes is None or len(axes) == 0:
        axes = [i for i, d in enumerate(ctx.type_of(node.input[0]).shape) if d == 1]
        if not axes:
            raise Unsupported("Squeeze with no dim of size 1 (an identity) is not modelled")
    return [node.input[0]], {"axes": [int(a) for a in axes]}


@ONNX.register("unsqueeze")
def unsqueeze(spec: Unsqueeze, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Unsqueeze", [ins[0], _i64(b, attrs["axes"], "axes")], outs)


@ONNX_IMPORT.register("unsqueeze")
def import_unsqueeze(spec: Unsqueeze, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset >= 13:
        expect_attrs(node)
        axes = _const_ints(node, ctx, 1)
    else:
        expect_attrs(node, {"axes"})
        axes = onnx_attr(node, "axes")
    if axes is None:
        raise Unsupported("Unsqueeze without axes")
    return [node.input[0]], {"axes": [int(a) for a in axes]}


@ONNX.register("expand")
def expand(spec: Expand, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Expand", [ins[0], _i64(b, attrs["shape"], "shape")], outs)


@ONNX_IMPORT.register("expand")
def import_expand(spec: Expand, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    shape = _const_ints(node, ctx, 1)
    if shape is None:
        raise Unsupported("Expand without a shape")
    return [node.input[0]], {"shape": shape}


@ONNX.register("flatten")
def flatten(spec: Flatten, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Flatten", ins, outs, axis=attrs["axis"])


@ONNX_IMPORT.register("flatten")
def import_flatten(spec: Flatten, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    return [node.input[0]], {"axis": int(onnx_attr(node, "axis", 1))}


@ONNX.register("tile")
def tile(spec: Tile, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Tile", [ins[0], _i64(b, attrs["repeats"], "repeats")], outs)


@ONNX_IMPORT.register("tile")
def import_tile(spec: Tile, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    reps = _const_ints(node, ctx, 1)
    if reps is None:
        raise Unsupported("Tile without repeats")
    return [node.input[0]], {"repeats": reps}


@ONNX.register("gather")
def gather(spec: Gather, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Gather", ins, outs, axis=attrs["axis"])


@ONNX_IMPORT.register("gather")
def import_gather(spec: Gather, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    return [node.input[0], node.input[1]], {"axis": int(onnx_attr(node, "axis", 0))}


@ONNX.register("resize")
def resize(spec: Resize, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    mode = attrs.get("mode", "nearest")
    ctm = attrs["coordinate_transformation_mode"]
    roi = b.const(np.asarray(attrs["roi"], dtype=np.float32), "float32", "roi") if ctm == "tf_crop_and_resize" else ""
    if "sizes" in attrs:
        inputs = [ins[0], roi, "", _i64(b, attrs["sizes"], "sizes")]
    else:
        inputs = [ins[0], roi, b.const(np.asarray(attrs["scales"], dtype=np.float32), "float32", "scales")]
    extra: dict[str, Any] = {}
    if mode != "nearest":
        extra = {"cubic_coeff_a": attrs.get("cubic_coeff_a") if mode == "cubic" else None,
                 "exclude_outside": attrs.get("exclude_outside") or None, "antialias": attrs.get("antialias") or None,
                 "extrapolation_value": attrs.get("extrapolation_value") if ctm == "tf_crop_and_resize" else None}
    if ctm == "half_pixel_symmetric":
        b.need_opset(19)
    b.node("Resize", inputs, outs, mode=mode, coordinate_transformation_mode=ctm,
           nearest_mode=attrs["nearest_mode"], **extra)


@ONNX_IMPORT.register("resize")
def import_resize(spec: Resize, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset < 11:
        raise Unsupported("Resize before opset 11 is not modelled")
    expect_attrs(node, {"mode", "coordinate_transformation_mode", "nearest_mode", "antialias", "axes",
                        "keep_aspect_ratio_policy", "exclude_outside", "cubic_coeff_a", "extrapolation_value"})

    def text(name: str, default: str) -> str:
        v = onnx_attr(node, name, default)
        return v.decode() if isinstance(v, bytes) else v

    mode = text("mode", "nearest")
    if mode not in ("nearest",) + INTERP_MODES:
        raise Unsupported(f"Resize mode {mode!r} is not modelled")
    ctm = text("coordinate_transformation_mode", "half_pixel")
    nm = text("nearest_mode", "round_prefer_floor")
    if ctm not in (COORD_MODES if mode == "nearest" else INTERP_COORD_MODES) or nm not in NEAREST_MODES:
        raise Unsupported(f"Resize {mode} {ctm}/{nm} is not modelled")
    if mode == "nearest" and onnx_attr(node, "antialias", 0):
        raise Unsupported("Resize antialias of nearest is not modelled")
    t = ctx.type_of(node.input[0])
    interp: Attrs = {}
    if mode != "nearest":
        interp = {"mode": mode, "cubic_coeff_a": float(onnx_attr(node, "cubic_coeff_a", -0.75)),
                  "exclude_outside": int(onnx_attr(node, "exclude_outside", 0)),
                  "antialias": int(onnx_attr(node, "antialias", 0))}
        if ctm == "tf_crop_and_resize":
            roi = ctx.const_input(node, 1)
            if roi is None:
                raise Unsupported("Resize tf_crop_and_resize without roi")
            interp["roi"] = [float(v) for v in np.asarray(roi, dtype=np.float64).reshape(-1)]
            interp["extrapolation_value"] = float(onnx_attr(node, "extrapolation_value", 0.0))
    scales = ctx.const_input(node, 2) if len(node.input) > 2 else None
    sizes = _const_ints(node, ctx, 3) if len(node.input) > 3 else None
    if scales is not None and scales.size == 0:
        scales = None
    if sizes is not None and len(sizes) == 0:
        sizes = None
    if (scales is None) == (sizes is None):
        raise Unsupported("Resize needs exactly one of scales / sizes")
    policy = text("keep_aspect_ratio_policy", "stretch")
    if sizes is not None and policy not in ("stretch", "not_larger", "not_smaller"):
        raise Unsupported(f"Resize keep_aspect_ratio_policy {policy!r}")
    axes = onnx_attr(node, "axes")
    if axes is not None:
        axes = [int(a) % max(t.rank, 1) for a in axes]
        given = [float(v) for v in scales.reshape(-1)] if scales is not None else sizes
        if len(given) != len(axes) or len(set(axes)) != len(axes):
            raise Unsupported("Resize axes do not match scales/sizes")
        full: list[Any] = [1.0] * t.rank if scales is not None else list(t.shape)
        for a, v in zip(axes, given):
            full[a] = v
        if scales is not None:
            scales = np.asarray(full, dtype=np.float32)
        else:
            sizes = [int(v) for v in full]
    if sizes is not None and policy != "stretch":
        # one scale for the resized axes (the smallest / largest ratio); each of their sizes is then
        # round(scale * in) (ONNX's reference). That is our scales form where it equals floor.
        kept = axes if axes is not None else list(range(t.rank))
        ratio = (min if policy == "not_larger" else max)(sizes[a] / t.shape[a] for a in kept)
        sc = np.float32(ratio)
        if any(int(np.floor(np.float32(t.shape[a]) * sc)) != int(ratio * t.shape[a] + 0.5) for a in kept):
            raise Unsupported("Resize keep_aspect_ratio_policy whose rounded size is not floor(scale * size)")
        scales = np.asarray([float(sc) if a in kept else 1.0 for a in range(t.rank)], dtype=np.float32)
        sizes = None
    if "roi" in interp and axes is not None:  # roi lists the given axes only: the others keep [0, 1]
        given_roi = interp["roi"]
        full_roi = [0.0] * t.rank + [1.0] * t.rank
        for k, a in enumerate(axes):
            full_roi[a], full_roi[t.rank + a] = given_roi[k], given_roi[len(axes) + k]
        interp["roi"] = full_roi
    attrs: Attrs = {"coordinate_transformation_mode": ctm, "nearest_mode": nm, **interp}
    if scales is not None:
        attrs["scales"] = [float(np.float32(v)) for v in np.asarray(scales).reshape(-1)]
    else:
        attrs["sizes"] = sizes
    return [node.input[0]], attrs


@ONNX.register("depth_to_space")
def depth_to_space(spec: DepthToSpace, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("DepthToSpace", ins, outs, blocksize=attrs["blocksize"], mode=attrs["mode"])


@ONNX_IMPORT.register("depth_to_space")
def import_depth_to_space(spec: DepthToSpace, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"blocksize", "mode"})
    mode = onnx_attr(node, "mode", b"DCR")
    b = onnx_attr(node, "blocksize")
    if b is None:
        raise Unsupported("DepthToSpace without blocksize")
    return [node.input[0]], {"blocksize": int(b), "mode": mode.decode() if isinstance(mode, bytes) else mode}


@ONNX.register("space_to_depth")
def space_to_depth(spec: SpaceToDepth, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    if attrs.get("mode", "DCR") != "DCR":  # SpaceToDepth's mode: opset 28
        b.need_opset(28)
    b.node("SpaceToDepth", ins, outs, blocksize=attrs["blocksize"], mode=attrs.get("mode"))


@ONNX_IMPORT.register("space_to_depth")
def import_space_to_depth(spec: SpaceToDepth, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"blocksize", "mode"})
    b = onnx_attr(node, "blocksize")
    if b is None:
        raise Unsupported("SpaceToDepth without blocksize")
    attrs: Attrs = {"blocksize": int(b)}
    mode = onnx_attr(node, "mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "DCR":
        attrs["mode"] = mode
    return [node.input[0]], attrs


@ONNX.register("identity")
def identity(spec: Identity, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Identity", ins, outs)


@ONNX_IMPORT.register("identity")
def import_identity(spec: Identity, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0]], {}
