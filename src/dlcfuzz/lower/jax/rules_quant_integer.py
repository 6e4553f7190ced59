"""JAX lowering rules of the quant_integer operators (ops/quant_integer.py).

The integer products run in int32 (XLA's integer dot and convolution, preferred_element_type int32),
exactly as ONNX accumulates; the requantization multiplies in float64 by the float32 multiplier and
rounds half to even (jnp.round)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.ops.quant_integer import multiplier

R = TARGET.register
_DIMS = {3: "('NCH', 'OIH', 'NCH')", 4: "('NCHW', 'OIHW', 'NCHW')"}


def _shifted(e: Emitter, x: str, zp: Any, zp_shape: tuple[int, ...] | None = None) -> str:
    """x - zp in int32 (exact)."""
    if isinstance(zp, list):
        k = e.const(np.asarray(zp, dtype=np.int32).reshape(zp_shape or (-1,)), hint="zp")
        return e.bind(f"{x}.astype(jnp.int32) - {k}")
    return e.bind(f"{x}.astype(jnp.int32) - {int(zp)}")


def _conv(e: Emitter, x: str, w: str, attrs: dict, rank: int) -> str:
    nd = rank - 2
    pads = list(attrs["pads"])
    padding = literal([(pads[i], pads[nd + i]) for i in range(nd)])
    return e.bind(f"lax.conv_general_dilated({x}, {w}, {literal(tuple(attrs['strides']))}, {padding}, "
                  f"rhs_dilation={literal(tuple(attrs['dilations']))}, dimension_numbers={_DIMS[rank]}, "
                  f"feature_group_count={int(attrs.get('group', 1))}, preferred_element_type=jnp.int32)")


def _requantize(e: Emitter, acc: str, m: np.ndarray, zp: int, to: str, rank: int) -> str:
    info = np.iinfo(to)
    if m.ndim:  # per output channel (axis 1)
        scale = e.const(m.reshape((1, -1) + (1,) * (rank - 2)), hint="multiplier")
    else:
        scale = f"jnp.float64({literal(float(m))})"
    v = e.bind(f"jnp.round({acc}.astype(jnp.float64) * {scale}) + {int(zp)}")  # half to even
    return f"jnp.clip({v}, {int(info.min)}, {int(info.max)}).astype({jnp_dtype(to)})"


@R("matmul_integer")
def _matmul_integer(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    x = _shifted(e, ins[0], attrs["a_zero_point"])
    w = _shifted(e, ins[1], attrs["b_zero_point"])
    return [f"jnp.matmul({x}, {w}, preferred_element_type=jnp.int32)"]


@R("conv_integer")
def _conv_integer(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    x = _shifted(e, ins[0], attrs["x_zero_point"])
    w = _shifted(e, ins[1], attrs["w_zero_point"], (-1,) + (1,) * (in_types[1].rank - 1))
    return [_conv(e, x, w, attrs, in_types[0].rank)]


@R("qlinear_matmul")
def _qlinear_matmul(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    acc = e.bind(f"jnp.matmul({_shifted(e, ins[0], attrs['a_zero_point'])}, {_shifted(e, ins[1], attrs['b_zero_point'])}, "
                 "preferred_element_type=jnp.int32)")
    m = multiplier(attrs["a_scale"], attrs["b_scale"], out_scale=attrs["y_scale"])
    return [_requantize(e, acc, m, attrs["y_zero_point"], attrs["to"], max(out_types[0].rank, 2))]


@R("qlinear_conv")
def _qlinear_conv(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    rank = in_types[0].rank
    acc = _conv(e, _shifted(e, ins[0], attrs["x_zero_point"]), _shifted(e, ins[1], attrs["w_zero_point"]), attrs, rank)
    if len(ins) == 3:
        acc = e.bind(f"{acc} + {ins[2]}.reshape({literal((1, -1) + (1,) * (rank - 2))})")
    m = multiplier(attrs["x_scale"], attrs["w_scale"], out_scale=attrs["y_scale"])
    return [_requantize(e, acc, m, attrs["y_zero_point"], attrs["to"], rank)]


@R("dynamic_quantize_linear")
def _dynamic_quantize_linear(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                             out_types: Types) -> list[str]:
    x = ins[0]
    if in_types[0].size == 0:  # no extremes: the range is [0, 0], the scale 1
        return [f"jnp.zeros({literal(in_types[0].shape)}, dtype=jnp.uint8)", "jnp.float32(1.0)", "jnp.uint8(0)"]
    hi = e.bind(f"jnp.maximum(jnp.max({x}), jnp.float32(0))")
    lo = e.bind(f"jnp.minimum(jnp.min({x}), jnp.float32(0))")
    scale = e.bind(f"jnp.where({hi} == {lo}, jnp.float32(1), ({hi} - {lo}) / jnp.float32(255))")
    zp = e.bind(f"jnp.round(jnp.clip(jnp.float32(0) - {lo} / {scale}, 0, 255))")
    y = e.bind(f"jnp.clip(jnp.round({x} / {scale}) + {zp}, 0, 255)")
    return [f"{y}.astype(jnp.uint8)", scale, f"{zp}.astype(jnp.uint8)"]
