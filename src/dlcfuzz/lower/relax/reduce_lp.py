"""Relax lowering rules of the reduce_lp operators (ops/reduce_lp.py).

Relax has no L1/L2/log-sum reductions: each is its element-wise steps around relax.op.sum (or max
for the shifted log-sum-exp). With no axis to reduce (noop_with_empty_axes) only the element-wise
steps remain."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.reduce_lp import ReduceLpOp

RELAX = target("relax")


@RELAX.register("reduce_l1", "reduce_l2", "reduce_sum_square", "reduce_log_sum", "reduce_log_sum_exp")
def reduce_lp(spec: ReduceLpOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    from tvm import relax

    t, x = in_types[0], ins[0]
    axes = list(spec.reduced_or_empty(t, attrs))
    keep = bool(attrs["keepdims"])
    out = out_types[0]
    if axes and spec.count(t, attrs) == 0:  # a reduction over no values: its identity, statically
        fill = -np.inf if spec.kind in ("log_sum", "log_sum_exp") else 0
        return [relax.const(np.full(out.shape, fill, dtype=out.dtype), out.dtype)]

    def total(v: Any) -> Any:
        return relax.op.sum(v, axis=axes, keepdims=keep) if axes else v

    if spec.kind == "l1":
        return [total(relax.op.abs(x))]
    if spec.kind == "sum_square":
        return [total(relax.op.multiply(x, x))]
    if spec.kind == "l2":
        if t.dtype.startswith("int"):  # the float root truncated back to the integer type
            s = relax.op.astype(bb.emit(total(relax.op.multiply(x, x))), "float64")
            return [relax.op.astype(relax.op.sqrt(s), t.dtype)]
        return [relax.op.sqrt(bb.emit(total(relax.op.multiply(x, x))))]
    if spec.kind == "log_sum":
        return [relax.op.log(bb.emit(total(x)))]
    if not axes:  # log(exp(x)) over no axis is x itself
        return [x]
    m = bb.emit(relax.op.max(x, axis=axes, keepdims=True))
    s = bb.emit(relax.op.sum(relax.op.exp(relax.op.subtract(x, m)), axis=axes, keepdims=True))
    y = relax.op.add(relax.op.log(s), m)
    return [relax.op.squeeze(bb.emit(y), axis=axes) if not keep else y]
