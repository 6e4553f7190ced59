"""JAX lowering rules of the normalization operators (ops/normalization.py).

JAX has no normalization layers in jax.numpy: each is its formula (statistics in the input dtype,
as XLA computes a jnp program). LpPool is lax.reduce_window's sum of |x|^p over the zero-padded
input, its end pads widened so that ceil_mode's last windows lie inside (they count as 0 in ONNX)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource import rules_normalization as pynorm
from dlcfuzz.lower.pysource.codegen import Emitter, Types

R = TARGET.register


@R("rms_norm")
def _rms_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    t = in_types[0]
    axes = literal(tuple(range(attrs["axis"] % t.rank, t.rank)))
    x = ins[0]
    square = e.bind(f"jnp.mean({x} * {x}, axis={axes}, keepdims=True)")
    return [f"{x} / jnp.sqrt({square} + {literal(attrs['epsilon'])}) * {ins[1]}"]


@R("lp_norm")
def _lp_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    x, p = ins[0], int(attrs["p"])
    total = f"jnp.sum({pynorm.powered(e.sp, x, p)}, axis={int(attrs['axis'])}, keepdims=True)"
    norm = e.bind(pynorm.root(e.sp, total, p))
    return [pynorm.unit_or_zero(e.sp, x, norm)]


@R("lp_pool")
def _lp_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    t, p = in_types[0], int(attrs["p"])
    k, s, d, begins, ends, _ = pynorm.lp_pool_window(t, attrs)
    padding = literal([(0, 0), (0, 0)] + list(zip(begins, ends)))
    zero = f"jnp.array(0, dtype={jnp_dtype(t.dtype)})"
    total = e.bind(f"lax.reduce_window({pynorm.powered(e.sp, ins[0], p)}, {zero}, lax.add, {literal((1, 1, *k))}, "
                   f"{literal((1, 1, *s))}, {padding}, window_dilation={literal((1, 1, *d))})")
    return [pynorm.root(e.sp, total, p)]
