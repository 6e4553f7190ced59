"""Relax lowering rules of the reduce operators (ops/reduce.py), registered per operator."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.reduce import ArgOp, ReduceOp

RELAX = target("relax")


@RELAX.register("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")
def reduce(spec: ReduceOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    axes = spec.reduced(in_types[0], attrs)
    if axes is None:
        return [ins[0]]
    fn = getattr(relax.op, spec.kind)
    x = ins[0]
    if in_types[0].dtype == "bool":  # max/min of bool (any/all) on uint8 0/1
        x = bb.emit(relax.op.astype(x, "uint8"))
    y = fn(x, axis=list(axes) if attrs["axes"] else None, keepdims=bool(attrs["keepdims"]))
    return [relax.op.astype(bb.emit(y), "bool") if in_types[0].dtype == "bool" else y]


@RELAX.register("argmax", "argmin")
def arg(spec: ArgOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
        out_types: Any) -> list[Any]:
    from tvm import relax

    fn = getattr(relax.op, spec.kind)
    axis = attrs["axis"] % in_types[0].rank
    if not attrs.get("select_last_index", 0):
        return [fn(ins[0], axis=axis, keepdims=bool(attrs["keepdims"]))]
    # the last index on ties: the first of the reversed axis, mirrored
    first = fn(relax.op.flip(ins[0], axis), axis=axis, keepdims=bool(attrs["keepdims"]))
    last = relax.const(np.int64(in_types[0].shape[axis] - 1), "int64")
    return [relax.op.subtract(last, first)]
