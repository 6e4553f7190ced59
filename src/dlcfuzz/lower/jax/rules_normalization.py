"""JAX lowering rules of the normalization operators (ops/normalization.py).

JAX has no normalization layers in jax.numpy: each is its formula (statistics in the input dtype,
as XLA computes a jnp program). LpPool is lax.reduce_window's sum of |x|^p over the zero-padded
input, its end pads widened so that ceil_mode's last windows lie inside (they count as 0 in ONNX)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.ops.normalization import MVN_EPSILON

R = TARGET.register


def _powered(x: str, p: int) -> str:
    return f"jnp.abs({x})" if p == 1 else f"({x} * {x})" if p == 2 else f"jnp.abs({x}) ** {p}"


def _root(s: str, p: int) -> str:
    return s if p == 1 else f"jnp.sqrt({s})" if p == 2 else f"{s} ** {literal(1.0 / p)}"


@R("rms_norm")
def _rms_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    t = in_types[0]
    axes = literal(tuple(range(attrs["axis"] % t.rank, t.rank)))
    x = ins[0]
    square = e.bind(f"jnp.mean({x} * {x}, axis={axes}, keepdims=True)")
    return [f"{x} / jnp.sqrt({square} + {literal(attrs['epsilon'])}) * {ins[1]}"]


@R("group_norm")
def _group_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    t, g = in_types[0], int(attrs["num_groups"])
    grouped = e.bind(f"{ins[0]}.reshape({literal((t.shape[0], g, -1))})")
    centred = e.bind(f"{grouped} - jnp.mean({grouped}, axis=2, keepdims=True)")
    var = e.bind(f"jnp.mean({centred} * {centred}, axis=2, keepdims=True)")
    normalized = e.bind(f"({centred} / jnp.sqrt({var} + {literal(attrs['epsilon'])})).reshape({literal(t.shape)})")
    channel = literal((1, -1) + (1,) * (t.rank - 2))
    scale, bias = ins[1], ins[2]
    if attrs.get("scale_per_group", 0):  # GroupNormalization-18's per-group parameters, per channel
        scale, bias = (f"jnp.repeat({p}, {t.shape[1] // g})" for p in (scale, bias))
    return [f"{normalized} * ({scale}).reshape({channel}) + ({bias}).reshape({channel})"]


@R("lp_norm")
def _lp_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    x, p = ins[0], int(attrs["p"])
    norm = e.bind(_root(f"jnp.sum({_powered(x, p)}, axis={int(attrs['axis'])}, keepdims=True)", p))
    return [f"jnp.where({norm} == 0, jnp.zeros_like({x}), {x} / {norm})"]  # a zero vector stays zero


@R("mean_variance_norm")
def _mean_variance_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                        out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    axes = literal(tuple(get_op("mean_variance_norm").axes(in_types[0], attrs)))  # type: ignore[attr-defined]
    centred = e.bind(f"{ins[0]} - jnp.mean({ins[0]}, axis={axes}, keepdims=True)")
    var = e.bind(f"jnp.mean({centred} * {centred}, axis={axes}, keepdims=True)")
    return [f"{centred} / (jnp.sqrt({var}) + {literal(MVN_EPSILON)})"]


@R("lp_pool")
def _lp_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    spec = get_op("lp_pool")
    t, p = in_types[0], int(attrs["p"])
    k, s, d, pads, _ = spec.geometry(t, attrs)  # type: ignore[attr-defined]
    nd = len(k)
    ends = spec.padded_ends(t, attrs)  # type: ignore[attr-defined]
    padding = literal([(0, 0), (0, 0)] + [(pads[i], ends[i]) for i in range(nd)])
    zero = f"jnp.array(0, dtype={jnp_dtype(t.dtype)})"
    total = e.bind(f"lax.reduce_window({_powered(ins[0], p)}, {zero}, lax.add, {literal((1, 1, *k))}, "
                   f"{literal((1, 1, *s))}, {padding}, window_dilation={literal((1, 1, *d))})")
    return [_root(total, p)]


@R("global_lp_pool")
def _global_lp_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    p = int(attrs["p"])
    axes = literal(tuple(range(2, in_types[0].rank)))
    return [_root(e.bind(f"jnp.sum({_powered(ins[0], p)}, axis={axes}, keepdims=True)"), p)]
