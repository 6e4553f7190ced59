"""Relax lowering rules of the nn operators (ops/nn.py), registered per operator."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS
from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_dtype_const
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.nn import (
    BatchNormOp,
    ConvOp,
    ConvTranspose2dOp,
    DropoutOp,
    GemmOp,
    GlobalPoolOp,
    InstanceNormOp,
    LayerNormOp,
    LrnOp,
    MatMulOp,
    Pool2dOp,
    SoftmaxOp,
)

RELAX = target("relax")


@RELAX.register("conv1d", "conv2d")
def conv(spec: ConvOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
         out_types: Any) -> list[Any]:
    from tvm import relax

    fn = relax.op.nn.conv1d if spec.spatial == 1 else relax.op.nn.conv2d
    y = fn(ins[0], ins[1], strides=attrs["strides"], padding=attrs["pads"], dilation=attrs["dilations"],
           groups=attrs["group"])
    if len(ins) == 3:
        y = relax.op.add(bb.emit(y), relax.op.reshape(ins[2], (1, -1) + (1,) * spec.spatial))
    return [y]


@RELAX.register("conv_transpose2d")
def conv_transpose2d(spec: ConvTranspose2dOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> list[Any]:
    from tvm import relax

    y = relax.op.nn.conv2d_transpose(ins[0], ins[1], strides=attrs["strides"], padding=attrs["pads"],
                                     output_padding=attrs.get("output_padding", [0, 0]),
                                     dilation=attrs["dilations"], groups=attrs["group"])
    if len(ins) == 3:
        y = relax.op.add(bb.emit(y), relax.op.reshape(ins[2], (1, -1, 1, 1)))
    return [y]


def _pool_any(spec: Pool2dOp, bb: Any, x: Any, attrs: Attrs, t: Any) -> list[Any]:
    """Any MaxPool/AveragePool (1-3 spatial dims, ceil_mode, auto_pad, dilations, Indices): the input
    padded explicitly (ceil_mode's extra included), one strided slice per kernel offset, combined; the
    average divides by the static count of what each window reads, the Indices come from a constant
    grid of ONNX's flat offsets (the first maximum in window order wins, as in ORT)."""
    from tvm import relax

    k, s, d, before, after, out = spec.geometry(t, attrs)
    nd = spec.spatial
    width = [0, 0, 0, 0] + [v for b, f in zip(before, after) for v in (b, f)]
    axes = list(range(2, 2 + nd))

    def views(src: Any) -> list[Any]:
        return [bb.emit(relax.op.strided_slice(src, axes, [o * dd for o, dd in zip(off, d)],
                                               [o * dd + ss * (n - 1) + 1 for o, dd, ss, n in zip(off, d, s, out)], s))
                for off in itertools.product(*[range(kk) for kk in k])]

    if spec.kind == "avg":
        acc = "float32" if t.dtype == "float16" else t.dtype
        xa = bb.emit(relax.op.astype(x, acc)) if acc != t.dtype else x
        xp = bb.emit(relax.op.nn.pad(xa, width, pad_value=0.0)) if any(width) else xa
        vs = views(xp)
        total = vs[0]
        for v in vs[1:]:
            total = bb.emit(relax.op.add(total, v))
        y = relax.op.divide(total, relax.const(spec.window_count(t, attrs).astype(acc), acc))
        return [relax.op.astype(bb.emit(y), t.dtype) if acc != t.dtype else y]
    low = float("-inf") if t.dtype in FLOATS else int(np.iinfo(t.dtype).min)
    xp = bb.emit(relax.op.nn.pad(x, width, pad_value=low)) if any(width) else x
    vs = views(xp)
    y = vs[0]
    for v in vs[1:]:
        y = bb.emit(relax.op.maximum(y, v))
    if not attrs.get("indices", 0):
        return [y]
    grid = np.pad(spec.flat_index(t, attrs), [(0, 0), (0, 0)] + list(zip(before, after)), constant_values=-1)
    ivs = views(relax.const(grid, "int64"))
    best, idx = vs[0], ivs[0]
    for v, iv in zip(vs[1:], ivs[1:]):
        better = bb.emit(relax.op.greater(v, best))
        best = bb.emit(relax.op.where(better, v, best))
        idx = bb.emit(relax.op.where(better, iv, idx))
    return [y, idx]


@RELAX.register("max_pool1d", "max_pool3d", "avg_pool1d", "avg_pool3d")
def pool_nd(spec: Pool2dOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    return _pool_any(spec, bb, ins[0], attrs, in_types[0])


@RELAX.register("max_pool2d", "avg_pool2d")
def pool2d(spec: Pool2dOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    if not spec.legacy(attrs):
        return _pool_any(spec, bb, ins[0], attrs, in_types[0])
    if spec.kind == "max":
        return [relax.op.nn.max_pool2d(ins[0], attrs["kernel"], attrs["strides"], attrs["pads"], attrs["dilations"])]
    return [relax.op.nn.avg_pool2d(ins[0], attrs["kernel"], attrs["strides"], attrs["pads"],
                                   count_include_pad=bool(attrs["count_include_pad"]))]


@RELAX.register("global_avg_pool", "global_max_pool")
def global_pool(spec: GlobalPoolOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                out_types: Any) -> list[Any]:
    from tvm import relax

    axes = list(range(2, in_types[0].rank))
    return [(relax.op.max if spec.kind == "max" else relax.op.mean)(ins[0], axis=axes, keepdims=True)]


@RELAX.register("matmul")
def mat_mul(spec: MatMulOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.matmul(ins[0], ins[1])]


@RELAX.register("gemm")
def gemm(spec: GemmOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
         out_types: Any) -> list[Any]:
    from tvm import relax

    dt = in_types[0].dtype
    a = relax.op.permute_dims(ins[0]) if attrs["transA"] else ins[0]
    b = relax.op.permute_dims(ins[1]) if attrs["transB"] else ins[1]
    y = relax.op.multiply(bb.emit(relax.op.matmul(a, b)), relax_dtype_const(attrs["alpha"], dt))
    if len(ins) == 3:
        y = relax.op.add(bb.emit(y), relax.op.multiply(ins[2], relax_dtype_const(attrs["beta"], dt)))
    return [y]


@RELAX.register("batch_norm")
def batch_norm(spec: BatchNormOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> list[Any]:
    from tvm import relax

    if not attrs.get("training_mode", 0):
        t = bb.emit(relax.op.nn.batch_norm(*ins, axis=1, epsilon=attrs["epsilon"], training=False))
        return [relax.TupleGetItem(t, 0)]
    # training: normalize by the batch's mean and population variance, written out (Relax's training
    # batch_norm blends its running statistics with its own momentum convention)
    x, scale, bias, mean_in, var_in = ins
    dt, r = in_types[0].dtype, in_types[0].rank
    axes = [0, *range(2, r)]
    mean = bb.emit(relax.op.mean(x, axis=axes))
    var = bb.emit(relax.op.variance(x, axis=axes))
    t = bb.emit(relax.op.nn.batch_norm(x, scale, bias, mean, var, axis=1, epsilon=attrs["epsilon"], training=False))
    outs = [relax.TupleGetItem(t, 0)]
    if len(out_types) == 3:
        m = attrs.get("momentum", 0.9)
        for given, batch in ((mean_in, mean), (var_in, var)):
            outs.append(relax.op.add(relax.op.multiply(given, relax_dtype_const(m, dt)),
                                     relax.op.multiply(batch, relax_dtype_const(1 - m, dt))))
    return outs


@RELAX.register("layer_norm")
def layer_norm(spec: LayerNormOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> list[Any]:
    from tvm import relax

    rank = in_types[0].rank
    axis = attrs["axis"] % rank
    norm = in_types[0].shape[axis:]
    dt = in_types[0].dtype
    gamma = relax.op.broadcast_to(ins[1], norm) if tuple(in_types[1].shape) != tuple(norm) else ins[1]
    beta = (relax.op.broadcast_to(ins[2], norm) if tuple(in_types[2].shape) != tuple(norm) else ins[2]) \
        if len(ins) == 3 else relax.const(np.zeros(norm, dt), dt)
    axes = list(range(axis, rank))
    outs = [relax.op.nn.layer_norm(ins[0], gamma, beta, axes=axes, epsilon=attrs["epsilon"])]
    if len(out_types) > 1:  # Mean and InvStdDev, in the float32 stash type
        x32 = bb.emit(relax.op.astype(ins[0], "float32")) if dt != "float32" else ins[0]
        outs.append(bb.emit(relax.op.mean(x32, axis=axes, keepdims=True)))
        if len(out_types) > 2:
            var = relax.op.variance(x32, axis=axes, keepdims=True)
            outs.append(relax.op.rsqrt(relax.op.add(var, relax.const(np.float32(attrs["epsilon"]), "float32"))))
    return outs


@RELAX.register("instance_norm")
def instance_norm(spec: InstanceNormOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                  out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.nn.instance_norm(ins[0], ins[1], ins[2], channel_axis=1,
                                      axes=list(range(2, in_types[0].rank)), epsilon=attrs["epsilon"])]


@RELAX.register("lrn")
def lrn(spec: LrnOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
        out_types: Any) -> list[Any]:
    from tvm import relax

    # Relax has no LRN: the channel window sum is a matmul with a 0/1 band matrix.
    x, t = ins[0], in_types[0]
    dt, r = t.dtype, t.rank
    band = relax.const(spec._band(t.shape[1], attrs["size"]).astype(dt), dt)
    sq = bb.emit(relax.op.permute_dims(relax.op.multiply(x, x), [0, *range(2, r), 1]))
    ss = bb.emit(relax.op.permute_dims(relax.op.matmul(sq, band), [0, r - 1, *range(1, r - 1)]))
    scale = relax_dtype_const(attrs["alpha"] / attrs["size"], dt)
    den = relax.op.power(relax.op.add(relax_dtype_const(attrs["bias"], dt), relax.op.multiply(ss, scale)),
                         relax_dtype_const(attrs["beta"], dt))
    return [relax.op.divide(x, bb.emit(den))]


@RELAX.register("softmax", "log_softmax")
def softmax(spec: SoftmaxOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    return [(relax.op.nn.log_softmax if spec.log else relax.op.nn.softmax)(ins[0], axis=attrs["axis"])]


@RELAX.register("dropout")
def dropout(spec: DropoutOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    t = bb.emit(relax.op.nn.dropout(ins[0], attrs["ratio"]))
    if len(out_types) > 1:  # the mask: nothing dropped in inference
        return [relax.TupleGetItem(t, 0), relax.const(np.ones(in_types[0].shape, dtype=bool), "bool")]
    return [relax.TupleGetItem(t, 0)]
