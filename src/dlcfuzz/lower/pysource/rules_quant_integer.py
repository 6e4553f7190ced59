"""The integer-product operators of ops/quant_integer.py (MatMulInteger, ConvInteger, QLinearMatMul,
QLinearConv), written once over each target's `IntegerProducts`: how it shifts by the zero points and
accumulates exactly (torch in float64, jax in int32: the accumulation really differs), and how it
requantizes; and DynamicQuantizeLinear's steps, each spelled by the target (`DynamicQuantize`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Types, literal
from dlcfuzz.lower.pysource.rules import shared
from dlcfuzz.ops.quant_integer import multiplier


class IntegerProducts:
    """A target's exact integer products (each target registers one in INTEGER_PRODUCTS)."""

    acc_dtype: str  # the dtype the products accumulate in, exactly

    def shifted(self, e: Emitter, x: str, zp: Any, zp_shape: tuple[int, ...] | None = None) -> str:
        """x - zp in the accumulation dtype (exact: both are small integers)."""
        if isinstance(zp, list):
            k = e.const(np.asarray(zp, dtype=self.acc_dtype).reshape(zp_shape or (-1,)), hint="zp")
            return e.bind(f"{e.sp.cast(x, self.acc_dtype)} - {k}")
        return e.bind(f"{e.sp.cast(x, self.acc_dtype)} - {literal(np.asarray(zp).astype(self.acc_dtype).item())}")

    def requantize(self, e: Emitter, acc: str, m: np.ndarray, zp: int, to: str, rank: int) -> str:
        """An accumulated product scaled by the multiplier `m` (in float64), rounded half to even as ONNX,
        shifted by zp and saturated to `to`."""
        info, sp = np.iinfo(to), e.sp
        if m.ndim:  # per output channel (axis 1)
            scale = e.const(m.reshape((1, -1) + (1,) * (rank - 2)), hint="multiplier")
        else:
            scale = self.float64_scalar(float(m))
        v = e.bind(f"{sp.mod}.round({self.as_float64(e, acc)} * {scale}) + {int(zp)}")
        return sp.cast(f"{sp.fn('clip')}({v}, {int(info.min)}, {int(info.max)})", to)

    # what each target says
    def float64_scalar(self, v: float) -> str:
        """A float64 scalar multiplier as source."""
        raise NotImplementedError

    def as_float64(self, e: Emitter, acc: str) -> str:
        """An accumulated product in float64."""
        raise NotImplementedError

    def matmul(self, x: str, w: str) -> str:
        """The accumulated matrix product of shifted operands."""
        raise NotImplementedError

    def conv(self, e: Emitter, x: str, w: str, attrs: dict, rank: int) -> str:
        """The accumulated convolution of shifted operands (a bound name)."""
        raise NotImplementedError

    def as_int32(self, acc: str) -> str:
        """An accumulated product as ONNX's int32 result."""
        raise NotImplementedError

    def plus_bias(self, acc: str, bias: str, rank: int) -> str:
        """An accumulated convolution plus QLinearConv's int32 bias per output channel."""
        raise NotImplementedError


INTEGER_PRODUCTS: dict[str, IntegerProducts] = {}  # target name -> its products


@dataclass(frozen=True)
class DynamicQuantize:
    """A target's expressions of DynamicQuantizeLinear's steps (uint8, float32 arithmetic), as templates."""

    empty: tuple[str, str, str]  # y, y_scale, y_zero_point of an empty input (a template of shape)
    high: str  # max(x, 0) over all of x (a template of x)
    low: str  # min(x, 0) (of x)
    scale: str  # (high - low) / 255, 1 where the range is empty (of hi, lo)
    zero_point: str  # round(clip(0 - low / scale, 0, 255)) (of lo, scale)
    quantized: str  # clip(round(x / scale) + zero_point, 0, 255) (of x, scale, zp)


DYNAMIC_QUANTIZE: dict[str, DynamicQuantize] = {}  # target name -> its DynamicQuantizeLinear


@shared("dynamic_quantize_linear")
def _dynamic_quantize_linear(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                             out_types: Types) -> list[str]:
    dq, x = DYNAMIC_QUANTIZE[e.sp.target], ins[0]
    if in_types[0].size == 0:  # no extremes: the range is [0, 0], the scale 1
        return [dq.empty[0].format(shape=literal(in_types[0].shape)), *dq.empty[1:]]
    hi, lo = e.bind(dq.high.format(x=x)), e.bind(dq.low.format(x=x))
    scale = e.bind(dq.scale.format(hi=hi, lo=lo))
    zp = e.bind(dq.zero_point.format(lo=lo, scale=scale))
    y = e.bind(dq.quantized.format(x=x, scale=scale, zp=zp))
    return [e.sp.cast(y, "uint8"), scale, e.sp.cast(zp, "uint8")]


def _operands(e: Emitter, ins: list[str], attrs: dict, zps: tuple[str, str], w_rank: int = 0) -> tuple[str, str]:
    """The two products' operands shifted by their zero points (attributes `zps`); a convolution's
    weight zero points (w_rank > 0) are per output channel."""
    q = INTEGER_PRODUCTS[e.sp.target]
    w_shape = (-1,) + (1,) * (w_rank - 1) if w_rank else None
    return q.shifted(e, ins[0], attrs[zps[0]]), q.shifted(e, ins[1], attrs[zps[1]], w_shape)


@shared("matmul_integer")
def _matmul_integer(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    q = INTEGER_PRODUCTS[e.sp.target]
    return [q.as_int32(q.matmul(*_operands(e, ins, attrs, ("a_zero_point", "b_zero_point"))))]


@shared("conv_integer")
def _conv_integer(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    q = INTEGER_PRODUCTS[e.sp.target]
    x, w = _operands(e, ins, attrs, ("x_zero_point", "w_zero_point"), in_types[1].rank)
    return [q.as_int32(q.conv(e, x, w, attrs, in_types[0].rank))]


@shared("qlinear_matmul")
def _qlinear_matmul(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    q = INTEGER_PRODUCTS[e.sp.target]
    acc = e.bind(q.matmul(*_operands(e, ins, attrs, ("a_zero_point", "b_zero_point"))))
    m = multiplier(attrs["a_scale"], attrs["b_scale"], out_scale=attrs["y_scale"])
    return [q.requantize(e, acc, m, attrs["y_zero_point"], attrs["to"], max(out_types[0].rank, 2))]


@shared("qlinear_conv")
def _qlinear_conv(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    q, rank = INTEGER_PRODUCTS[e.sp.target], in_types[0].rank
    acc = q.conv(e, *_operands(e, ins, attrs, ("x_zero_point", "w_zero_point")), attrs, rank)
    if len(ins) == 3:
        acc = e.bind(q.plus_bias(acc, ins[2], rank))
    m = multiplier(attrs["x_scale"], attrs["w_scale"], out_scale=attrs["y_scale"])
    return [q.requantize(e, acc, m, attrs["y_zero_point"], attrs["to"], rank)]
