"""PyTorch lowering rules of the quant_integer operators (ops/quant_integer.py).

torch has no integer convolution or matmul kernels on CPU ("not implemented for 'Int'") and its
quantized tensors are a separate backend Inductor does not lower, so the integer products are
computed in float64: every product and partial sum is an integer far below 2**53, hence exact.
The requantization multiplies by the float32 multiplier and rounds half to even (torch.round).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype
from dlcfuzz.ops.quant_integer import multiplier

R = TARGET.register


def _shifted(e: Emitter, x: str, zp: Any, zp_shape: tuple[int, ...] | None = None) -> str:
    """x - zp in float64 (exact: both are small integers)."""
    if isinstance(zp, list):
        k = e.const(np.asarray(zp, dtype=np.float64).reshape(zp_shape or (-1,)), hint="zp")
        return e.bind(f"{x}.to(torch.float64) - {k}")
    return e.bind(f"{x}.to(torch.float64) - {literal(float(zp))}")


def _conv(e: Emitter, x: str, w: str, attrs: dict, rank: int) -> str:
    nd = rank - 2
    pads = list(attrs["pads"])
    if pads[:nd] != pads[nd:]:
        flat: list[int] = []
        for i in reversed(range(nd)):  # F.pad lists the last dim first
            flat += [pads[i], pads[nd + i]]
        x = e.bind(f"F.pad({x}, {literal(flat)})")  # zero: x is already shifted by its zero point
        pads = [0] * (2 * nd)
    fn = "F.conv1d" if nd == 1 else "F.conv2d"
    return e.bind(f"{fn}({x}, {w}, None, stride={literal(list(attrs['strides']))}, padding={literal(pads[:nd])}, "
                  f"dilation={literal(list(attrs['dilations']))}, groups={int(attrs.get('group', 1))})")


def _requantize(e: Emitter, acc: str, m: np.ndarray, zp: int, to: str, rank: int) -> str:
    info = np.iinfo(to)
    if m.ndim:  # per output channel (axis 1)
        scale = e.const(m.reshape((1, -1) + (1,) * (rank - 2)), hint="multiplier")
    else:
        scale = literal(float(m))
    v = e.bind(f"torch.round({acc} * {scale}) + {int(zp)}")  # half to even, as ONNX
    return f"torch.clamp({v}, {int(info.min)}, {int(info.max)}).to({torch_dtype(to)})"


@R("matmul_integer")
def _matmul_integer(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    x = _shifted(e, ins[0], attrs["a_zero_point"])
    w = _shifted(e, ins[1], attrs["b_zero_point"])
    return [f"torch.matmul({x}, {w}).to(torch.int32)"]


@R("conv_integer")
def _conv_integer(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    x = _shifted(e, ins[0], attrs["x_zero_point"])
    w = _shifted(e, ins[1], attrs["w_zero_point"], (-1,) + (1,) * (in_types[1].rank - 1))
    return [f"{_conv(e, x, w, attrs, in_types[0].rank)}.to(torch.int32)"]


@R("qlinear_matmul")
def _qlinear_matmul(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    acc = e.bind(f"torch.matmul({_shifted(e, ins[0], attrs['a_zero_point'])}, {_shifted(e, ins[1], attrs['b_zero_point'])})")
    m = multiplier(attrs["a_scale"], attrs["b_scale"], out_scale=attrs["y_scale"])
    return [_requantize(e, acc, m, attrs["y_zero_point"], attrs["to"], max(out_types[0].rank, 2))]


@R("qlinear_conv")
def _qlinear_conv(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    rank = in_types[0].rank
    acc = _conv(e, _shifted(e, ins[0], attrs["x_zero_point"]), _shifted(e, ins[1], attrs["w_zero_point"]), attrs, rank)
    if len(ins) == 3:
        acc = e.bind(f"{acc} + {ins[2]}.to(torch.float64).reshape({literal((1, -1) + (1,) * (rank - 2))})")
    m = multiplier(attrs["x_scale"], attrs["w_scale"], out_scale=attrs["y_scale"])
    return [_requantize(e, acc, m, attrs["y_zero_point"], attrs["to"], rank)]


@R("dynamic_quantize_linear")
def _dynamic_quantize_linear(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                             out_types: Types) -> list[str]:
    x = ins[0]
    if in_types[0].size == 0:  # no extremes: the range is [0, 0], the scale 1
        return [f"torch.zeros({literal(in_types[0].shape)}, dtype=torch.uint8)", "torch.tensor(1.0, dtype=torch.float32)",
                "torch.tensor(0, dtype=torch.uint8)"]
    hi = e.bind(f"torch.clamp(torch.amax({x}), min=0.0)")
    lo = e.bind(f"torch.clamp(torch.amin({x}), max=0.0)")
    scale = e.bind(f"torch.where({hi} == {lo}, torch.ones_like({hi}), ({hi} - {lo}) / 255.0)")
    zp = e.bind(f"torch.round(torch.clamp(0.0 - {lo} / {scale}, 0.0, 255.0))")
    y = e.bind(f"torch.clamp(torch.round({x} / {scale}) + {zp}, 0.0, 255.0)")
    return [f"{y}.to(torch.uint8)", scale, f"{zp}.to(torch.uint8)"]
