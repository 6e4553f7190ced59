"""JAX lowering rules of the indexing operators (ops/indexing.py).

Gathers map negative indices into range first (then mode="clip" is a no-op, never JAX's default
fill or wrap). Scatter indices are static (attributes): each scatter is `.at[...]` on the data
flattened over the scattered positions, with the reduction as the update method."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.lower.jax.codegen import TARGET, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types, wrapped
from dlcfuzz.lower.pysource.rules_indexing import scatter_nd_rows

R = TARGET.register

AT_METHOD = {"none": "set", "add": "add", "mul": "multiply", "max": "max", "min": "min"}


def _spec(name: str):  # noqa: ANN202 - the spec class varies
    from dlcfuzz.ops import get_op

    return get_op(name)


def _block(x: str, shape: Sequence[int], skip: int) -> str:
    """x[:s0, :s1, ...] (the leading block of `shape`), leaving dim `skip` whole."""
    return f"{x}[{', '.join(':' if k == skip else f':{s}' for k, s in enumerate(shape))},]"


@R("gather_elements")
def _gather_elements(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                     out_types: Types) -> list[str]:
    t, itype = in_types
    ax = int(attrs["axis"]) % t.rank
    fixed = e.bind(wrapped(e.sp, ins[1], t.shape[ax]))
    block = e.bind(_block(ins[0], itype.shape, ax))  # take_along_axis needs equal dims off the axis
    return [f"jnp.take_along_axis({block}, {fixed}, axis={ax}, mode='clip')"]


def _scatter_rows(e: Emitter, data: str, shape: tuple[int, ...], rows: tuple[int, int], linear: np.ndarray,
                  upd: str, width_upd: tuple[int, int], reduction: str) -> str:
    at = e.const(np.ascontiguousarray(linear.astype(np.int64)), "pos")
    flat = e.bind(f"jnp.asarray({data}).reshape({literal(rows)})")
    src = e.bind(f"{upd}.reshape({literal(width_upd)})")
    return f"{flat}.at[{at}].{AT_METHOD[reduction]}({src}).reshape({literal(tuple(shape))})"


@R("scatter_elements")
def _scatter_elements(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    t, u = in_types
    where = _spec("scatter_elements").targets(t, u, attrs)  # type: ignore[attr-defined]
    linear = np.ravel_multi_index(where, t.shape).reshape(-1) if u.size else np.zeros(0, np.int64)
    return [_scatter_rows(e, ins[0], t.shape, (t.size,), linear, ins[1], (u.size,), attrs["reduction"])]


@R("scatter_nd")
def _scatter_nd(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    t = in_types[0]
    slots, width, linear, n = scatter_nd_rows(t, attrs)
    return [_scatter_rows(e, ins[0], t.shape, (slots, width), linear, ins[1], (n, width), attrs["reduction"])]


@R("center_crop_pad")
def _center_crop_pad(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                     out_types: Types) -> list[str]:
    win = _spec("center_crop_pad").windows(in_types[0], attrs)  # type: ignore[attr-defined]
    x = f"{ins[0]}[{', '.join(f'{s}:{s + n}' for s, n, _, _ in win)},]"
    width = tuple((pb, pe) for _, _, pb, pe in win)
    if not any(pb or pe for pb, pe in width):
        return [x]
    return [f"jnp.pad({x}, {literal(width)}, mode='constant')"]
