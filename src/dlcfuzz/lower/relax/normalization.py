"""Relax lowering rules of the normalization operators (ops/normalization.py).

RMS and group normalization are Relax operators; Lp and mean-variance normalization, LpPool and
GlobalLpPool are composed: LpPool is avg_pool (count_include_pad, so a window sum over K elements)
of |x|^p times K, with the end pads widened so that ceil_mode's last windows lie inside the padded
input (elements past it count as 0 in ONNX, like padding)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_dtype_const
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.normalization import (
    MVN_EPSILON,
    GlobalLpPoolOp,
    GroupNormOp,
    LpNormOp,
    LpPoolOp,
    MeanVarianceNormOp,
    RmsNormOp,
)

RELAX = target("relax")


def _powered(x: Any, p: int, dtype: str) -> Any:
    """|x|^p."""
    from tvm import relax

    if p == 1:
        return relax.op.abs(x)
    if p == 2:
        return relax.op.multiply(x, x)
    return relax.op.power(relax.op.abs(x), relax_dtype_const(float(p), dtype))


def _root(s: Any, p: int, dtype: str) -> Any:
    """s^(1/p)."""
    from tvm import relax

    if p == 1:
        return s
    if p == 2:
        return relax.op.sqrt(s)
    return relax.op.power(s, relax_dtype_const(1.0 / p, dtype))


@RELAX.register("rms_norm")
def rms_norm(spec: RmsNormOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> list[Any]:
    from tvm import relax

    rank, dt = in_types[0].rank, in_types[0].dtype
    axis = attrs["axis"] % rank
    norm = in_types[0].shape[axis:]
    if axis == 0:
        # apache-tvm 0.27's rms_norm over every axis fails to build ("Tensor dimension mismatch in
        # read ndim = 1, indices.size=0"): the formula instead
        x = ins[0]
        square = relax.op.mean(relax.op.multiply(x, x), axis=list(range(rank)), keepdims=True)
        rms = relax.op.sqrt(relax.op.add(bb.emit(square), relax_dtype_const(attrs["epsilon"], dt)))
        return [relax.op.multiply(relax.op.divide(x, bb.emit(rms)), ins[1])]
    scale = relax.op.broadcast_to(ins[1], norm) if tuple(in_types[1].shape) != tuple(norm) else ins[1]
    return [relax.op.nn.rms_norm(ins[0], scale, axes=list(range(axis, rank)), epsilon=attrs["epsilon"])]


@RELAX.register("group_norm")
def group_norm(spec: GroupNormOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> list[Any]:
    from tvm import relax

    t, g = in_types[0], int(attrs["num_groups"])
    scale, bias = ins[1], ins[2]
    if attrs.get("scale_per_group", 0):  # GroupNormalization-18's per-group parameters, per channel
        scale, bias = (bb.emit(relax.op.repeat(p, t.shape[1] // g, axis=0)) for p in (scale, bias))
    if t.dtype != "float64":
        return [relax.op.nn.group_norm(ins[0], scale, bias, num_groups=g, channel_axis=1,
                                       axes=list(range(2, t.rank)), epsilon=attrs["epsilon"])]
    # Relax's group_norm is float16/float32 only ("only support float32 and float16 for now"): the formula
    grouped = bb.emit(relax.op.reshape(ins[0], (t.shape[0], g, -1)))
    centred = bb.emit(relax.op.subtract(grouped, relax.op.mean(grouped, axis=[2], keepdims=True)))
    var = relax.op.mean(relax.op.multiply(centred, centred), axis=[2], keepdims=True)
    sd = relax.op.sqrt(relax.op.add(bb.emit(var), relax_dtype_const(attrs["epsilon"], t.dtype)))
    normalized = relax.op.reshape(bb.emit(relax.op.divide(centred, bb.emit(sd))), t.shape)
    channel = (1, -1) + (1,) * (t.rank - 2)
    return [relax.op.add(relax.op.multiply(bb.emit(normalized), relax.op.reshape(scale, channel)),
                         relax.op.reshape(bias, channel))]


@RELAX.register("lp_norm")
def lp_norm(spec: LpNormOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    x, dt = ins[0], in_types[0].dtype
    axis = attrs["axis"] % in_types[0].rank
    norm = bb.emit(_root(relax.op.sum(_powered(x, attrs["p"], dt), axis=[axis], keepdims=True), attrs["p"], dt))
    zero = relax_dtype_const(0, dt)
    # a zero vector stays zero (ONNX's reference), not 0/0
    return [relax.op.where(relax.op.equal(norm, zero), zero, relax.op.divide(x, norm))]


@RELAX.register("mean_variance_norm")
def mean_variance_norm(spec: MeanVarianceNormOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                       out_types: Any) -> list[Any]:
    from tvm import relax

    x, dt = ins[0], in_types[0].dtype
    axes = list(spec.axes(in_types[0], attrs))
    centred = bb.emit(relax.op.subtract(x, relax.op.mean(x, axis=axes, keepdims=True)))
    var = relax.op.mean(relax.op.multiply(centred, centred), axis=axes, keepdims=True)
    return [relax.op.divide(centred, relax.op.add(relax.op.sqrt(var), relax_dtype_const(MVN_EPSILON, dt)))]


@RELAX.register("lp_pool")
def lp_pool(spec: LpPoolOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    t, dt, p = in_types[0], in_types[0].dtype, attrs["p"]
    k, s, d, pads, _ = spec.geometry(t, attrs)
    nd = len(k)
    fn = {1: relax.op.nn.avg_pool1d, 2: relax.op.nn.avg_pool2d, 3: relax.op.nn.avg_pool3d}[nd]
    avg = fn(bb.emit(_powered(ins[0], p, dt)), pool_size=k, strides=s, dilation=d,
             padding=pads[:nd] + spec.padded_ends(t, attrs), ceil_mode=False, count_include_pad=True)
    total = relax.op.multiply(bb.emit(avg), relax_dtype_const(float(np.prod(k)), dt))
    return [_root(bb.emit(total), p, dt)]


@RELAX.register("global_lp_pool")
def global_lp_pool(spec: GlobalLpPoolOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> list[Any]:
    from tvm import relax

    dt, p = in_types[0].dtype, attrs["p"]
    axes = list(range(2, in_types[0].rank))
    return [_root(bb.emit(relax.op.sum(_powered(ins[0], p, dt), axis=axes, keepdims=True)), p, dt)]
