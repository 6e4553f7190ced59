"""Relax lowering rules of the shape operators (ops/shape.py), registered per operator."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import reshape_to
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.shape import (
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
    slice_bounds,
)

RELAX = target("relax")


def _relax_slice(x: Any, axes: list[int], begin: list[int], end: list[int], strides: list[int] | None = None) -> Any:
    from tvm import relax

    return relax.op.strided_slice(x, axes, begin, end, strides if strides is not None else [1] * len(axes))


@RELAX.register("reshape")
def reshape(spec: Reshape, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:

    return [reshape_to(ins[0], out_types[0].shape, out_types[0].dtype)]


@RELAX.register("transpose")
def transpose(spec: Transpose, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.permute_dims(ins[0], list(attrs["perm"]))]


@RELAX.register("concat")
def concat(spec: Concat, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.concat(list(ins), axis=attrs["axis"] % in_types[0].rank)]


@RELAX.register("split")
def split(spec: Split, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
          out_types: Any) -> list[Any]:
    from tvm import relax

    axis = attrs["axis"] % in_types[0].rank
    sizes = list(attrs["split"])
    if len(sizes) == 1:  # Relax folds a one-section split to the tensor itself
        return [relax.op.split(ins[0], 1, axis=axis)]
    t = bb.emit(relax.op.split(ins[0], [int(c) for c in np.cumsum(sizes)[:-1]], axis=axis))
    return [relax.TupleGetItem(t, i) for i in range(len(sizes))]


@RELAX.register("slice")
def slice_(spec: Slice, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    t = in_types[0]
    parts = spec.parse(t, attrs)
    if not parts:
        return [ins[0]]
    axes, begin, end, strides = [], [], [], []
    for a, s, e, st in parts:
        d = t.shape[a]
        b0, e0, _ = slice_bounds(d, s, e, st)
        axes.append(a)
        begin.append(b0)
        end.append(e0 if e0 >= 0 else -d - 1)  # Relax reads -1 as "last"; -d-1 is "before 0"
        strides.append(st)
    return [_relax_slice(ins[0], axes, begin, end, strides)]


@RELAX.register("pad")
def pad(spec: Pad, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    t = in_types[0]
    before, after, mode, value = spec.parse(t, attrs)
    x = ins[0]
    if mode == "wrap":  # circular: a take of static indices per padded axis
        for ax, (pb, pe) in enumerate(zip(before, after)):
            if pb or pe:
                src = np.arange(-pb, t.shape[ax] + pe) % t.shape[ax]
                x = bb.emit(relax.op.take(x, relax.const(src.astype("int64"), "int64"), axis=ax))
        return [x]
    cropped = [a for a in range(t.rank) if before[a] < 0 or after[a] < 0]
    if cropped:
        x = bb.emit(_relax_slice(x, cropped, [max(-before[a], 0) for a in cropped],
                                 [t.shape[a] - max(-after[a], 0) for a in cropped]))
    width = [w for pb, pe in zip(before, after) for w in (max(pb, 0), max(pe, 0))]
    if not any(width):
        return [x]
    pad_value = float(value) if np.issubdtype(t.np_dtype, np.floating) else int(value)
    return [relax.op.nn.pad(x, width, {"edge": "replicate"}.get(mode, mode), pad_value)]


@RELAX.register("squeeze")
def squeeze(spec: Squeeze, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.squeeze(ins[0], [a % in_types[0].rank for a in attrs["axes"]])]


@RELAX.register("unsqueeze")
def unsqueeze(spec: Unsqueeze, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    from tvm import relax

    r = out_types[0].rank
    return [relax.op.expand_dims(ins[0], sorted(a % r for a in attrs["axes"]))]


@RELAX.register("expand")
def expand(spec: Expand, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.broadcast_to(ins[0], out_types[0].shape)]


@RELAX.register("flatten")
def flatten(spec: Flatten, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:

    return [reshape_to(ins[0], out_types[0].shape, out_types[0].dtype)]


@RELAX.register("tile")
def tile(spec: Tile, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
         out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.tile(ins[0], list(attrs["repeats"]))]


@RELAX.register("gather")
def gather(spec: Gather, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    # in-range negative indices count from the end; "wrap" maps exactly those and leaves the rest alone
    return [relax.op.take(ins[0], ins[1], axis=attrs["axis"] % in_types[0].rank, mode="wrap")]


def _resize_interp(spec: Resize, bb: Any, x: Any, attrs: Attrs, t: Any) -> Any:
    """Linear/cubic Resize: the static interpolation matrix of each resized axis, as a matmul on the
    axis moved last (float32 for float16)."""
    from tvm import relax

    acc = "float32" if t.dtype == "float16" else t.dtype
    y = bb.emit(relax.op.astype(x, acc)) if acc != t.dtype else x
    r = t.rank
    for ax, m in enumerate(spec.interp(t, attrs)):
        if m is None:
            continue
        perm = [k for k in range(r) if k != ax] + [ax]
        inv = [perm.index(k) for k in range(r)]
        moved = bb.emit(relax.op.permute_dims(y, perm)) if r > 1 else y
        y = bb.emit(relax.op.matmul(moved, relax.const(m[0].T.astype(acc), acc)))
        y = bb.emit(relax.op.permute_dims(y, inv)) if r > 1 else y
    mask = spec.extrapolated(t, attrs)
    if mask is not None:
        ev = relax.const(np.asarray(attrs.get("extrapolation_value", 0.0), acc), acc)
        y = bb.emit(relax.op.where(relax.const(mask, "bool"), ev, y))
    return relax.op.astype(y, t.dtype) if acc != t.dtype else y


@RELAX.register("resize")
def resize(spec: Resize, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    t, out = in_types[0], out_types[0].shape
    if attrs.get("mode", "nearest") != "nearest":
        return [_resize_interp(spec, bb, ins[0], attrs, t)]
    _, scales, ctm, nm = spec.parse(t, attrs)
    # Relax's resize2d derives the scale from the sizes: use it where that equals the ONNX scale.
    # (align_corners to a size-1 dim divides by zero inside TVM's resize2d: gathers there too.)
    if t.rank == 4 and out[:2] == t.shape[:2] and all(
            ("sizes" in attrs or t.shape[i] * scales[i] == out[i])
            and not (ctm == "align_corners" and out[i] == 1) for i in (2, 3)):
        return [relax.op.image.resize2d(
            ins[0], (out[2], out[3]), layout="NCHW", method="nearest_neighbor",
            coordinate_transformation_mode=ctm, rounding_method=nm)]
    x = ins[0]
    for axis, idx in enumerate(spec.indices(t, attrs)):
        if len(idx) == t.shape[axis] and (idx == np.arange(len(idx))).all():
            continue
        x = bb.emit(relax.op.take(x, relax.const(idx, "int64"), axis=axis))
    return [x]


@RELAX.register("depth_to_space")
def depth_to_space(spec: DepthToSpace, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> list[Any]:
    from tvm import relax

    a, p, o = spec._steps(in_types[0].shape, attrs["blocksize"], attrs["mode"])
    x = bb.emit(reshape_to(ins[0], a, in_types[0].dtype))
    x = bb.emit(relax.op.permute_dims(x, list(p)))
    return [reshape_to(x, o, in_types[0].dtype)]


@RELAX.register("space_to_depth")
def space_to_depth(spec: SpaceToDepth, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> list[Any]:
    from tvm import relax

    a, p, o = spec._steps(in_types[0].shape, attrs["blocksize"], attrs.get("mode", "DCR"))
    x = bb.emit(reshape_to(ins[0], a, in_types[0].dtype))
    x = bb.emit(relax.op.permute_dims(x, list(p)))
    return [reshape_to(x, o, in_types[0].dtype)]


@RELAX.register("identity")
def identity(spec: Identity, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> list[Any]:
    return [ins[0]]
