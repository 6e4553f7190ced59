"""The indexing operators (ops/indexing.py) that every Python target writes alike up to spelling, and
the pieces the targets' own rules share."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter, Types, wrapped
from dlcfuzz.lower.pysource.rules import shared


@shared("gather_nd")
def _gather_nd(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    sp, (t, itype) = e.sp, in_types
    b, k = spec.parse(t, itype, attrs)
    dims = np.asarray(t.shape[b:b + k], dtype=np.int64)
    strides = np.asarray([int(np.prod(dims[j + 1:])) for j in range(k)], dtype=np.int64)
    batch = int(np.prod(t.shape[:b], dtype=np.int64))
    count = int(np.prod(itype.shape[b:-1], dtype=np.int64))
    rest = list(t.shape[b + k:])
    i64 = e.bind(sp.cast(ins[1], "int64"))
    fixed = e.bind(wrapped(sp, i64, e.const(dims, "dims")))
    linear = e.bind(f"({fixed} * {e.const(strides, 'strides')}).sum(-1).reshape({batch}, {count})")
    flat = e.bind(f"{ins[0]}.reshape({sp.shape([batch, int(np.prod(dims))] + rest)})")
    rows = e.const(np.arange(batch, dtype=np.int64).reshape(batch, 1), "rows")
    return [f"{flat}[{rows}, {linear}].reshape({sp.shape(out_types[0].shape)})"]


@shared("one_hot")
def _one_hot(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    sp, t = e.sp, in_types[0]
    depth, axis, dtype = spec.parse(t, attrs)
    i64 = e.bind(sp.cast(ins[0], "int64"))  # floats truncate toward zero
    fixed = e.bind(wrapped(sp, i64, depth))
    shape = [1] * (t.rank + 1)
    shape[axis] = depth
    steps = e.const(np.arange(depth, dtype=np.int64).reshape(shape), "steps")
    off, on = (e.const(np.asarray(v).astype(dtype), "v") for v in attrs["values"])
    return [f"{sp.mod}.where({sp.fn('expand_dims')}({fixed}, {axis}) == {steps}, {on}, {off})"]


def scatter_nd_rows(t: TensorType, attrs: dict) -> tuple[int, int, np.ndarray, int]:
    """ScatterND as rows: the data's (slots, width) rows, the row each update slice lands on, and the
    number of update slices."""
    from dlcfuzz.ops import get_op

    tuples = get_op("scatter_nd").tuples(t, attrs)  # type: ignore[attr-defined]
    k = tuples.shape[1]
    slots, width = int(np.prod(t.shape[:k], dtype=np.int64)), int(np.prod(t.shape[k:], dtype=np.int64))
    linear = np.ravel_multi_index(tuple(tuples.T), t.shape[:k]) if len(tuples) else np.zeros(0, np.int64)
    return slots, width, linear, len(tuples)


@shared("compress")
def _compress(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    axis, kept = get_op("compress").kept(in_types[0], attrs)  # type: ignore[attr-defined]
    k = e.const(np.asarray(kept, dtype=np.int64), "kept")
    if axis is None:
        return [e.sp.take.format(x=f"{ins[0]}.reshape(-1)", idx=k, axis=0)]
    return [e.sp.take.format(x=ins[0], idx=k, axis=axis)]


@shared("reverse_sequence")
def _reverse_sequence(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    tm, src = get_op("reverse_sequence").source(in_types[0], attrs)  # type: ignore[attr-defined]
    return [e.sp.take_along.format(x=ins[0], idx=e.const(src, "src"), axis=tm)]


@shared("tensor_scatter")
def _tensor_scatter(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    past, upd = in_types
    ax, src = get_op("tensor_scatter").source(past, upd, attrs)  # type: ignore[attr-defined]
    if upd.shape[ax] == 0:
        return [e.sp.copy(ins[0])]
    # the gather's index may be longer than its input along the gathered axis: read update at each position
    picked = e.bind(e.sp.take_along.format(x=ins[1], idx=e.const(np.clip(src, 0, None), "src"), axis=ax))
    return [f"{e.sp.mod}.where({e.const(src >= 0, 'written')}, {picked}, {ins[0]})"]
