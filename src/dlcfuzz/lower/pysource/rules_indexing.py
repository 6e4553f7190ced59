"""The indexing operators (ops/indexing.py) that every Python target writes alike up to spelling, and
the negative-index wrap the targets' own gathers share."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Spelling, Types
from dlcfuzz.lower.pysource.rules import shared


def wrapped(sp: Spelling, idx: str, n: int | str) -> str:
    """`idx` with ONNX's negative indices (in [-n, -1]) counted from the end: the targets' gathers do
    not wrap them (torch), or wrap or fill them by a mode (jnp)."""
    return f"{sp.mod}.where({idx} < 0, {idx} + {n}, {idx})"


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
