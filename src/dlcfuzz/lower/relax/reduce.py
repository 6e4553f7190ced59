"""Relax lowering rules of the reduce operators (ops/reduce.py), registered per operator."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.reduce import ArgOp, ReduceOp

RELAX = target("relax")


@RELAX.register("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")
def reduce(spec: ReduceOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    axes = spec.reduced(in_types[0], attrs)
    if axes is None:
        return [ins[0]]
    fn = getattr(relax.op, spec.kind)
    return [fn(ins[0], axis=list(axes) if attrs["axes"] else None, keepdims=bool(attrs["keepdims"]))]


@RELAX.register("argmax", "argmin")
def arg(spec: ArgOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    fn = getattr(relax.op, spec.kind)
    return [fn(ins[0], axis=attrs["axis"] % in_types[0].rank, keepdims=bool(attrs["keepdims"]))]
