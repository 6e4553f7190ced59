"""JAX lowering rules of the spatial operators (ops/spatial.py).

JAX has no grid-sample, fold, RoI or unpool primitive: all are explicit math. GridSample follows
ONNX's steps (denormalize, round for nearest, pad the position, read each tap through the padding
mode) and sums the taps' weighted gathers; AffineGrid is the product with the base positions;
Col2Im and MaxUnpool gather at the static positions of their plans (ops/spatial.py). The RoI
operators and DeformConv are written alike for every Python target (pysource/rules_spatial.py)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.lower.jax.codegen import TARGET, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_spatial import reflected
from dlcfuzz.ops.spatial import CUBIC_A, affine_base

R = TARGET.register


def _spec(name: str):  # noqa: ANN202 - the spec class varies
    from dlcfuzz.ops import get_op

    return get_op(name)


def _cubic(e: Emitter, t: str) -> list[str]:
    a = CUBIC_A
    u, v, w = e.bind(f"{t} + 1"), e.bind(f"1 - {t}"), e.bind(f"2 - {t}")
    return [e.bind(f"(({a!r} * {u} - {5 * a!r}) * {u} + {8 * a!r}) * {u} - {4 * a!r}"),
            e.bind(f"(({a + 2!r} * {t} - {a + 3!r}) * {t} * {t} + 1)"),
            e.bind(f"(({a + 2!r} * {v} - {a + 3!r}) * {v} * {v} + 1)"),
            e.bind(f"(({a!r} * {w} - {5 * a!r}) * {w} + {8 * a!r}) * {w} - {4 * a!r}")]


@R("grid_sample")
def _grid_sample(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
    mode, padding, align = attrs["mode"], attrs["padding_mode"], int(attrs["align_corners"])
    x, grid = ins
    n, c, *dims = in_types[0].shape
    out_sp = list(out_types[0].shape[2:])
    r = len(dims)
    if out_types[0].size == 0:
        return [f"jnp.zeros({literal(tuple(out_types[0].shape))}, {x}.dtype)"]
    taps_per_dim = []
    for i, d in enumerate(dims):
        g = e.bind(f"{grid}[..., {r - 1 - i}]")
        p = e.bind(f"({g} + 1) / 2 * {d - 1}" if align else f"(({g} + 1) * {d} - 1) / 2")
        lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
        if mode == "nearest":
            p = e.bind(f"jnp.round({p})")  # half to even
        outside = e.bind(f"({p} < {lo!r}) | ({p} > {hi!r})")
        if padding == "border":
            p = e.bind(f"jnp.where({outside}, jnp.clip({p}, 0, {d - 1}), {p})")
        elif padding == "reflection":
            p = e.bind(f"jnp.where({outside}, {reflected(e, p, lo, hi)}, {p})")
        if mode == "nearest":
            taps = [(p, None)]
        else:
            base = e.bind(f"jnp.floor({p})")
            t = e.bind(f"{p} - {base}")
            if mode == "linear":
                taps = [(base, f"(1 - {t})"), (e.bind(f"{base} + 1"), t)]
            else:
                taps = [(e.bind(f"{base} + {k - 1}"), w) for k, w in enumerate(_cubic(e, t))]
        padded = []
        for idx, w in taps:  # each tap read through the padding mode again
            valid = None
            if padding == "zeros":
                valid = e.bind(f"({idx} >= 0) & ({idx} <= {d - 1})")
            elif padding == "reflection":
                idx = e.bind(f"jnp.trunc({reflected(e, idx, lo, hi)})")
            pos = e.bind(f"jnp.clip(jnp.nan_to_num({idx}), 0, {d - 1}).astype(jnp.int64)")
            padded.append((pos, w, valid))
        taps_per_dim.append(padded)
    flat_x = e.bind(f"{x}.reshape({n}, {c}, -1)")
    total = None
    for combo in itertools.product(*taps_per_dim):
        flat, weight, valid = None, None, None
        for d, (pos, w, ok) in zip(dims, combo):
            flat = pos if flat is None else f"({flat} * {d} + {pos})"
            if w is not None:
                weight = w if weight is None else f"{weight} * {w}"
            if ok is not None:
                valid = ok if valid is None else f"{valid} & {ok}"
        vals = e.bind(f"jnp.take_along_axis({flat_x}, ({flat}).reshape({n}, 1, -1), axis=2)"
                      f".reshape({literal((n, c, *out_sp))})")
        if valid is not None:
            vals = e.bind(f"jnp.where(({valid})[:, None], {vals}, 0.0)")
        term = e.bind(f"({weight})[:, None] * {vals}" if weight is not None else vals)
        total = term if total is None else e.bind(f"{total} + {term}")
    return [total]


@R("affine_grid")
def _affine_grid(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
    base = e.const(affine_base(attrs["size"][2:], int(attrs["align_corners"])).astype(in_types[0].dtype), "base")
    return [f"jnp.einsum('...j,nkj->n...k', {base}, {ins[0]})"]


def _gather_sum(e: Emitter, x: str, n: int, src: np.ndarray, out_shape: Sequence[int]) -> str:
    flat = e.bind(f"jnp.concatenate([{x}.reshape({n}, -1), jnp.zeros(({n}, 1), {x}.dtype)], axis=1)")
    return f"{flat}[:, {e.const(src, 'src')}].sum(-1).reshape({literal(tuple(out_shape))})"


@R("col2im")
def _col2im(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    src = _spec("col2im").sources(in_types[0], attrs)  # type: ignore[attr-defined]
    return [_gather_sum(e, ins[0], in_types[0].shape[0], src, out_types[0].shape)]


@R("max_unpool")
def _max_unpool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    src = _spec("max_unpool").sources(in_types[0], attrs)  # type: ignore[attr-defined]
    flat = e.bind(f"jnp.concatenate([{ins[0]}.reshape(-1), jnp.zeros((1,), {ins[0]}.dtype)])")
    return [f"{flat}[{e.const(src, 'src')}].reshape({literal(tuple(out_types[0].shape))})"]
