"""Relax lowering rules of the spatial operators (ops/spatial.py).

GridSample is relax.op.image.grid_sample, whose grid is channel-first (N, r, O1..Or; its docstring
says (N, O1, O2, 2), its shape inference and topi read the channel-first layout): the ONNX grid is
transposed first. TVM's cubic kernel, like PyTorch's, applies the padding mode to the taps only,
ONNX first to the position: for cubic with border or reflection padding the grid is padded first,
in normalized coordinates. On float16 the (bi)linear and bicubic kernels compute in float32 and
LegalizeOps gives the call a float32 result where grid_sample's struct info said float16 (apache-tvm
0.27: the function's return type changes and the VM returns float32): float16 samples in float32
here and casts back. AffineGrid is relax.op.image.affine_grid (channel-first output,
transposed), except where a dim has one position with align_corners (topi asserts more than one;
ONNX's reference puts it at -1): there the product with the base positions. Col2Im, the RoI
operators and MaxUnpool gather at the static positions of their plans (ops/spatial.py) with
relax.op.take; DeformConv samples bilinearly at the offset positions (take on the flattened input)
and contracts per group with a matmul. Empty outputs are written as zeros."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import LoweringGap
from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_dtype_const, relax_type, reshape_to
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.spatial import affine_base

RELAX = target("relax")

TVM_GRID_MODES = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


def _register(name: str) -> Callable[[Callable[..., list[Any]]], Callable[..., list[Any]]]:
    """RELAX.register, with empty outputs (no values to compute) written as zeros."""

    def deco(rule: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
        def guarded(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                    out_types: Any) -> list[Any]:
            from tvm import relax

            if all(t.size == 0 for t in out_types) or in_types[0].size == 0:
                return [relax.op.zeros(t.shape, t.dtype) for t in out_types]
            return rule(spec, bb, ins, outs, attrs, in_types, out_types)

        RELAX.register(name)(guarded)
        return rule

    return deco


def _const(array: np.ndarray) -> Any:
    from tvm import relax

    a = np.ascontiguousarray(array)
    return relax.const(a, str(a.dtype))


def _reflect(bb: Any, g: Any, dtype: str) -> Any:
    """ONNX's reflection of g into [-1, 1] (the image's extent in normalized coordinates)."""
    from tvm.relax import op

    def c(v: float) -> Any:
        return relax_dtype_const(v, dtype)

    below, above = bb.emit(op.less(g, c(-1.0))), bb.emit(op.greater(g, c(1.0)))
    dx = bb.emit(op.where(below, op.subtract(c(-1.0), g), op.where(above, op.subtract(g, c(1.0)), op.zeros_like(g))))
    n = bb.emit(op.trunc(op.divide(dx, c(2.0))))
    r = bb.emit(op.subtract(dx, op.multiply(n, c(2.0))))
    even = bb.emit(op.equal(op.floor_mod(n, c(2.0)), c(0.0)))
    low_side = op.where(even, op.add(c(-1.0), r), op.subtract(c(1.0), r))
    high_side = op.where(even, op.subtract(c(1.0), r), op.add(c(-1.0), r))
    return bb.emit(op.where(below, low_side, op.where(above, high_side, g)))


def _prepad_grid(bb: Any, grid: Any, dims: Sequence[int], padding: str, align: int, dtype: str) -> Any:
    """The grid with ONNX's position padding applied (positions outside the image moved in)."""
    from tvm.relax import op

    r = len(dims)
    parts = []
    for j in range(r):
        g = bb.emit(op.squeeze(op.strided_slice(grid, axes=[r + 1], begin=[j], end=[j + 1]), axis=[r + 1]))
        if padding == "reflection":
            parts.append(_reflect(bb, g, dtype))
            continue
        d = dims[r - 1 - j]
        edge = 1.0 if align else 1.0 - 1.0 / d  # the first and last pixel centres
        outside = op.greater(op.abs(g), relax_dtype_const(1.0, dtype))
        parts.append(bb.emit(op.where(outside, op.clip(g, -edge, edge), g)))
    return bb.emit(op.stack(parts, axis=r + 1))


@functools.cache
def _volumetric_grid_sample() -> bool:
    """Whether this TVM's relax.op.image.grid_sample takes 5-D inputs (layout "NCDHW"): apache-tvm 0.25's
    documents NCHW alone and fails its layout check on NCDHW when the call is emitted; 0.27 takes it."""
    import tvm
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax_type(TensorType("float32", (1, 1, 2, 2, 2))))
    grid = relax.Var("grid", relax_type(TensorType("float32", (1, 3, 1, 1, 1))))
    with bb.function("probe", [x, grid]):
        try:
            y = bb.emit(relax.op.image.grid_sample(x, grid, method="bilinear", layout="NCDHW"))
        except tvm.error.InternalError:
            bb.emit_func_output(x)
            return False
        bb.emit_func_output(y)
    return True


@_register("grid_sample")
def grid_sample(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                out_types: Any) -> list[Any]:
    from tvm.relax import op

    x_t = in_types[0]
    r = x_t.rank - 2
    if r == 3 and not _volumetric_grid_sample():
        raise LoweringGap("grid_sample: this TVM's relax.op.image.grid_sample has no 3-D (NCDHW) layout")
    mode, padding, align = attrs["mode"], attrs["padding_mode"], int(attrs["align_corners"])
    grid = ins[1]
    if mode == "cubic" and padding != "zeros":
        grid = _prepad_grid(bb, grid, x_t.shape[2:], padding, align, x_t.dtype)
    channel_first = bb.emit(op.permute_dims(grid, [0, r + 1, *range(1, r + 1)]))
    x = ins[0]
    widen = x_t.dtype == "float16" and mode != "nearest"
    if widen:  # see the module docstring: topi's (bi)linear and bicubic kernels return float32 for float16
        x, channel_first = bb.emit(op.astype(x, "float32")), bb.emit(op.astype(channel_first, "float32"))
    y = op.image.grid_sample(x, channel_first, method=TVM_GRID_MODES[mode], layout="NCHW" if r == 2 else "NCDHW",
                             padding_mode=padding, align_corners=bool(align))
    return [op.astype(bb.emit(y), "float16") if widen else y]


@_register("affine_grid")
def affine_grid(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                out_types: Any) -> list[Any]:
    from tvm.relax import op

    size, align = list(attrs["size"]), int(attrs["align_corners"])
    r = len(size) - 2
    if align and 1 in size[2:]:
        base = affine_base(size[2:], align).reshape(-1, r + 1).T.astype(in_types[0].dtype)  # (r + 1, P)
        y = bb.emit(op.matmul(ins[0], _const(base)))  # (N, r, P)
        return [reshape_to(op.permute_dims(y, [0, 2, 1]), out_types[0].shape, out_types[0].dtype)]
    try:
        grid = op.image.affine_grid(ins[0], tuple(size[2:]), align_corners=bool(align))
    except TypeError:  # apache-tvm 0.25: no align_corners parameter (its convention is undocumented)
        raise LoweringGap("affine_grid: this TVM's relax.op.image.affine_grid has no align_corners") from None
    g = bb.emit(grid)
    return [op.permute_dims(g, [0, *range(2, r + 2), 1])]


def _gather_sum(bb: Any, x: Any, t: Any, src: np.ndarray, out_shape: Sequence[int]) -> Any:
    """Each output element the sum of the input elements `src` lists (per batch; a zero appended)."""
    from tvm.relax import op

    n = t.shape[0]
    flat = bb.emit(op.concat([op.reshape(x, (n, t.size // n)), op.zeros((n, 1), t.dtype)], axis=1))
    picked = bb.emit(op.take(flat, _const(src), axis=1))
    return op.reshape(op.sum(picked, axis=[2]), out_shape)


@_register("col2im")
def col2im(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    return [_gather_sum(bb, ins[0], in_types[0], spec.sources(in_types[0], attrs), out_types[0].shape)]


@_register("roi_align")
def roi_align(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    from tvm.relax import op

    t = in_types[0]
    rows, weights, valid, count = spec.plan(t, attrs)
    table = bb.emit(op.reshape(op.permute_dims(ins[0], [0, 2, 3, 1]), (t.size // t.shape[1], t.shape[1])))
    terms = bb.emit(op.multiply(op.take(table, _const(rows), axis=0), _const(weights.astype(t.dtype)[..., None])))
    ok = _const(valid[..., None])
    if attrs.get("mode", "avg") == "avg":
        total = bb.emit(op.sum(op.where(ok, op.sum(terms, axis=[4]), relax_dtype_const(0.0, t.dtype)), axis=[3]))
        y = bb.emit(op.divide(total, _const(count[..., None].astype(t.dtype))))
    else:
        best = bb.emit(op.max(op.where(ok, op.max(terms, axis=[4]), relax_dtype_const(-np.inf, t.dtype)), axis=[3]))
        y = bb.emit(op.where(_const(valid.any(axis=3)[..., None]), best, relax_dtype_const(0.0, t.dtype)))
    return [op.permute_dims(y, [0, 3, 1, 2])]


@_register("max_roi_pool")
def max_roi_pool(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                 out_types: Any) -> list[Any]:
    from tvm.relax import op

    t = in_types[0]
    batch, mask, empty = spec.plan(t, attrs)
    n, c, h, w = t.shape
    picked = bb.emit(op.take(op.reshape(ins[0], (n, c, h * w)), _const(batch), axis=0))  # (R, C, H * W)
    spread = bb.emit(op.expand_dims(picked, axis=2))
    best = bb.emit(op.max(op.where(_const(mask[:, None]), spread, relax_dtype_const(-np.inf, t.dtype)), axis=[3]))
    y = bb.emit(op.where(_const(empty[:, None]), relax_dtype_const(0.0, t.dtype), best))
    return [reshape_to(y, out_types[0].shape, out_types[0].dtype)]


@_register("max_unpool")
def max_unpool(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> list[Any]:
    from tvm.relax import op

    t = in_types[0]
    flat = bb.emit(op.concat([op.reshape(ins[0], (t.size,)), op.zeros((1,), t.dtype)], axis=0))
    return [op.reshape(op.take(flat, _const(spec.sources(t, attrs)), axis=0), out_types[0].shape)]


@_register("deform_conv")
def deform_conv(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                out_types: Any) -> list[Any]:
    from tvm.relax import op

    k, s, d, p, g, og = spec.geometry(in_types, attrs)
    dt = in_types[0].dtype
    n, c, h, w = in_types[0].shape
    m = in_types[1].shape[0]
    oh, ow = out_types[0].shape[2:]
    taps = k[0] * k[1] * oh * ow

    def c_(v: float) -> Any:
        return relax_dtype_const(v, dt)

    off = bb.emit(op.reshape(ins[2], (n, og, k[0], k[1], 2, oh, ow)))
    dy = bb.emit(op.squeeze(op.strided_slice(off, axes=[4], begin=[0], end=[1]), axis=[4]))
    dx = bb.emit(op.squeeze(op.strided_slice(off, axes=[4], begin=[1], end=[2]), axis=[4]))
    base_y = ((np.arange(oh) * s[0] - p[0])[None, :] + (np.arange(k[0]) * d[0])[:, None]).reshape(1, 1, k[0], 1, oh, 1)
    base_x = ((np.arange(ow) * s[1] - p[1])[None, :] + (np.arange(k[1]) * d[1])[:, None]).reshape(1, 1, 1, k[1], 1, ow)
    py = bb.emit(op.add(_const(base_y.astype(dt)), dy))
    px = bb.emit(op.add(_const(base_x.astype(dt)), dx))
    y0, x0 = bb.emit(op.floor(py)), bb.emit(op.floor(px))
    ly, lx = bb.emit(op.subtract(py, y0)), bb.emit(op.subtract(px, x0))
    # flat positions in X: channel c of offset group q reads ((n * C + c) * H + y) * W + x
    chan = _const((np.arange(n)[:, None, None, None] * c + np.arange(c).reshape(1, og, c // og, 1)) * (h * w))
    flat_x = bb.emit(op.reshape(ins[0], (n * c * h * w,)))
    y1, x1 = bb.emit(op.add(y0, c_(1.0))), bb.emit(op.add(x0, c_(1.0)))
    cols = None
    for cy, wy in ((y0, bb.emit(op.subtract(c_(1.0), ly))), (y1, ly)):
        for cx, wx in ((x0, bb.emit(op.subtract(c_(1.0), lx))), (x1, lx)):
            ok = bb.emit(op.logical_and(
                op.logical_and(op.greater_equal(cy, c_(0.0)), op.less_equal(cy, c_(h - 1.0))),
                op.logical_and(op.greater_equal(cx, c_(0.0)), op.less_equal(cx, c_(w - 1.0)))))
            pos = bb.emit(op.astype(op.where(ok, op.add(op.multiply(cy, c_(float(w))), cx), c_(0.0)), "int64"))
            vals = bb.emit(op.take(flat_x, op.add(chan, op.reshape(pos, (n, og, 1, taps))), axis=0))
            ok4 = bb.emit(op.reshape(ok, (n, og, 1, taps)))
            weight = bb.emit(op.reshape(op.where(ok, op.multiply(wy, wx), c_(0.0)), (n, og, 1, taps)))
            term = bb.emit(op.multiply(weight, op.where(ok4, vals, c_(0.0))))
            cols = term if cols is None else bb.emit(op.add(cols, term))
    if attrs.get("mask", 0):
        cols = bb.emit(op.multiply(cols, op.reshape(ins[-1], (n, og, 1, taps))))
    grouped = bb.emit(op.reshape(cols, (n, g, (c // g) * k[0] * k[1], oh * ow)))
    wg = bb.emit(op.reshape(ins[1], (1, g, m // g, (c // g) * k[0] * k[1])))
    y = bb.emit(op.reshape(op.matmul(wg, grouped), (n, m, oh, ow)))
    if attrs.get("bias", 0):
        y = bb.emit(op.add(y, op.reshape(ins[3], (1, m, 1, 1))))
    return [y]
