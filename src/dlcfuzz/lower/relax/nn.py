"""Relax lowering rules of the nn operators (ops/nn.py), registered per operator."""

from __future__ import annotations

from typing import Any

import numpy as np

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
def conv(spec: ConvOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    fn = relax.op.nn.conv1d if spec.spatial == 1 else relax.op.nn.conv2d
    y = fn(ins[0], ins[1], strides=attrs["strides"], padding=attrs["pads"], dilation=attrs["dilations"],
           groups=attrs["group"])
    if len(ins) == 3:
        y = relax.op.add(bb.emit(y), relax.op.reshape(ins[2], (1, -1) + (1,) * spec.spatial))
    return [y]


@RELAX.register("conv_transpose2d")
def conv_transpose2d(spec: ConvTranspose2dOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    y = relax.op.nn.conv2d_transpose(ins[0], ins[1], strides=attrs["strides"], padding=attrs["pads"],
                                     output_padding=attrs.get("output_padding", [0, 0]),
                                     dilation=attrs["dilations"], groups=attrs["group"])
    if len(ins) == 3:
        y = relax.op.add(bb.emit(y), relax.op.reshape(ins[2], (1, -1, 1, 1)))
    return [y]


@RELAX.register("max_pool2d", "avg_pool2d")
def pool2d(spec: Pool2dOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    if spec.kind == "max":
        return [relax.op.nn.max_pool2d(ins[0], attrs["kernel"], attrs["strides"], attrs["pads"], attrs["dilations"])]
    return [relax.op.nn.avg_pool2d(ins[0], attrs["kernel"], attrs["strides"], attrs["pads"],
                                   count_include_pad=bool(attrs["count_include_pad"]))]


@RELAX.register("global_avg_pool", "global_max_pool")
def global_pool(spec: GlobalPoolOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    axes = list(range(2, in_types[0].rank))
    return [(relax.op.max if spec.kind == "max" else relax.op.mean)(ins[0], axis=axes, keepdims=True)]


@RELAX.register("matmul")
def mat_mul(spec: MatMulOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.matmul(ins[0], ins[1])]


@RELAX.register("gemm")
def gemm(spec: GemmOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    dt = in_types[0].dtype
    a = relax.op.permute_dims(ins[0]) if attrs["transA"] else ins[0]
    b = relax.op.permute_dims(ins[1]) if attrs["transB"] else ins[1]
    y = relax.op.multiply(bb.emit(relax.op.matmul(a, b)), relax_dtype_const(attrs["alpha"], dt))
    if len(ins) == 3:
        y = relax.op.add(bb.emit(y), relax.op.multiply(ins[2], relax_dtype_const(attrs["beta"], dt)))
    return [y]


@RELAX.register("batch_norm")
def batch_norm(spec: BatchNormOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    t = bb.emit(relax.op.nn.batch_norm(*ins, axis=1, epsilon=attrs["epsilon"], training=False))
    return [relax.TupleGetItem(t, 0)]


@RELAX.register("layer_norm")
def layer_norm(spec: LayerNormOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    rank = in_types[0].rank
    axis = attrs["axis"] % rank
    norm = in_types[0].shape[axis:]
    dt = in_types[0].dtype
    gamma = relax.op.broadcast_to(ins[1], norm) if tuple(in_types[1].shape) != tuple(norm) else ins[1]
    beta = (relax.op.broadcast_to(ins[2], norm) if tuple(in_types[2].shape) != tuple(norm) else ins[2]) \
        if len(ins) == 3 else relax.const(np.zeros(norm, dt), dt)
    return [relax.op.nn.layer_norm(ins[0], gamma, beta, axes=list(range(axis, rank)), epsilon=attrs["epsilon"])]


@RELAX.register("instance_norm")
def instance_norm(spec: InstanceNormOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.nn.instance_norm(ins[0], ins[1], ins[2], channel_axis=1,
                                      axes=list(range(2, in_types[0].rank)), epsilon=attrs["epsilon"])]


@RELAX.register("lrn")
def lrn(spec: LrnOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
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
def softmax(spec: SoftmaxOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    return [(relax.op.nn.log_softmax if spec.log else relax.op.nn.softmax)(ins[0], axis=attrs["axis"])]


@RELAX.register("dropout")
def dropout(spec: DropoutOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    t = bb.emit(relax.op.nn.dropout(ins[0], attrs["ratio"]))
    return [relax.TupleGetItem(t, 0)]
