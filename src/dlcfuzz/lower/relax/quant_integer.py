"""Relax lowering rules of the quant_integer operators (ops/quant_integer.py).

Integer products run in int32 (matmul / conv with out_dtype int32), as ONNX accumulates; the
requantization multiplies in float64 by the float32 multiplier and rounds (relax.op.round), then adds
the zero point and saturates. Only near ties depend on the rounding of halves, and those are not judged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.quant_integer import (
    ConvIntegerOp,
    DynamicQuantizeLinearOp,
    MatMulIntegerOp,
    QLinearConvOp,
    QLinearMatMulOp,
    multiplier,
)

RELAX = target("relax")


def _shifted(bb: Any, x: Any, zp: Any, zp_shape: tuple[int, ...] | None = None) -> Any:
    from tvm import relax

    z = np.asarray(zp, dtype=np.int32)
    if z.ndim and zp_shape is not None:
        z = z.reshape(zp_shape)
    return bb.emit(relax.op.subtract(bb.emit(relax.op.astype(x, "int32")), relax.const(z, "int32")))


def _conv(bb: Any, x: Any, w: Any, attrs: Attrs, rank: int) -> Any:
    from tvm import relax

    fn = relax.op.nn.conv1d if rank == 3 else relax.op.nn.conv2d
    return bb.emit(fn(x, w, strides=attrs["strides"], padding=attrs["pads"], dilation=attrs["dilations"],
                      groups=attrs.get("group", 1), out_dtype="int32"))


def _requantize(bb: Any, acc: Any, m: np.ndarray, zp: int, to: str, rank: int) -> Any:
    from tvm import relax

    info = np.iinfo(to)
    scale = m.reshape((1, -1) + (1,) * (rank - 2)) if m.ndim else np.asarray(m)
    v = bb.emit(relax.op.multiply(bb.emit(relax.op.astype(acc, "float64")), relax.const(scale.astype(np.float64), "float64")))
    v = bb.emit(relax.op.add(bb.emit(relax.op.round(v)), relax.const(np.float64(zp), "float64")))
    return relax.op.astype(bb.emit(relax.op.clip(v, int(info.min), int(info.max))), to)


@RELAX.register("matmul_integer")
def matmul_integer(spec: MatMulIntegerOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> list[Any]:
    from tvm import relax

    a = _shifted(bb, ins[0], attrs["a_zero_point"])
    b = _shifted(bb, ins[1], attrs["b_zero_point"])
    return [relax.op.matmul(a, b, out_dtype="int32")]


@RELAX.register("conv_integer")
def conv_integer(spec: ConvIntegerOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                 out_types: Any) -> list[Any]:
    x = _shifted(bb, ins[0], attrs["x_zero_point"])
    w = _shifted(bb, ins[1], attrs["w_zero_point"], (-1,) + (1,) * (in_types[1].rank - 1))
    return [_conv(bb, x, w, attrs, in_types[0].rank)]


@RELAX.register("qlinear_matmul")
def qlinear_matmul(spec: QLinearMatMulOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> list[Any]:
    from tvm import relax

    acc = bb.emit(relax.op.matmul(_shifted(bb, ins[0], attrs["a_zero_point"]), _shifted(bb, ins[1], attrs["b_zero_point"]),
                                  out_dtype="int32"))
    m = multiplier(attrs["a_scale"], attrs["b_scale"], out_scale=attrs["y_scale"])
    return [_requantize(bb, acc, m, attrs["y_zero_point"], attrs["to"], 2)]


@RELAX.register("qlinear_conv")
def qlinear_conv(spec: QLinearConvOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                 out_types: Any) -> list[Any]:
    from tvm import relax

    rank = in_types[0].rank
    acc = _conv(bb, _shifted(bb, ins[0], attrs["x_zero_point"]), _shifted(bb, ins[1], attrs["w_zero_point"]), attrs, rank)
    if len(ins) == 3:
        acc = bb.emit(relax.op.add(acc, bb.emit(relax.op.reshape(ins[2], (1, -1) + (1,) * (rank - 2)))))
    m = multiplier(attrs["x_scale"], attrs["w_scale"], out_scale=attrs["y_scale"])
    return [_requantize(bb, acc, m, attrs["y_zero_point"], attrs["to"], rank)]


@RELAX.register("dynamic_quantize_linear")
def dynamic_quantize_linear(spec: DynamicQuantizeLinearOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs,
                            in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    op = relax.op

    def f32(v: float) -> Any:
        return relax.const(np.float32(v), "float32")

    if in_types[0].size == 0:  # no extremes: the range is [0, 0], the scale 1
        return [relax.const(np.zeros(in_types[0].shape, np.uint8), "uint8"), f32(1.0), relax.const(np.uint8(0), "uint8")]
    x = ins[0]
    hi = bb.emit(op.maximum(bb.emit(op.max(x)), f32(0.0)))
    lo = bb.emit(op.minimum(bb.emit(op.min(x)), f32(0.0)))
    span = bb.emit(op.divide(bb.emit(op.subtract(hi, lo)), f32(255.0)))
    scale = bb.emit(op.where(bb.emit(op.equal(hi, lo)), f32(1.0), span))
    zp = bb.emit(op.round(bb.emit(op.clip(bb.emit(op.subtract(f32(0.0), bb.emit(op.divide(lo, scale)))), 0, 255))))
    y = bb.emit(op.clip(bb.emit(op.add(bb.emit(op.round(bb.emit(op.divide(x, scale)))), zp)), 0, 255))
    return [op.astype(y, "uint8"), scale, op.astype(zp, "uint8")]
