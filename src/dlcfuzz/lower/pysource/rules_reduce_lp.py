"""The reduce_lp operators (ops/reduce_lp.py), one rule for every Python target.

The noop case (no axis to reduce) keeps only the element-wise steps (torch.sum(dim=[]) would reduce
every dimension); an empty set of values gives the identity (0, or -inf for the log forms)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Rule, Types
from dlcfuzz.lower.pysource.rules import shared


def _reduce_lp(kind: str) -> Rule:
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        sp, t, x, out = e.sp, in_types[0], ins[0], out_types[0]
        axes = list(spec.reduced_or_empty(t, attrs))
        keep, dt = bool(attrs["keepdims"]), sp.dtype(t.dtype)
        if axes and spec.count(t, attrs) == 0:
            fill = '-float("inf")' if kind.startswith("log") else "0"
            return [f"{sp.mod}.full({sp.shape(out.shape)}, {fill}, dtype={dt})"]

        def total(v: str) -> str:
            return f"{sp.mod}.sum({v}, {sp.axes(axes, keep)}, dtype={dt})" if axes else v

        if kind == "l1":
            return [total(f"{sp.mod}.abs({x})")]
        if kind == "sum_square":
            return [total(f"{x} * {x}")]
        if kind == "l2":
            s = e.bind(total(f"{x} * {x}"))
            if t.dtype.startswith("int"):  # the float root truncated back to the integer type
                return [sp.cast(f"{sp.mod}.sqrt({sp.cast(s, 'float64')})", t.dtype)]
            return [f"{sp.mod}.sqrt({s})"]
        if kind == "log_sum":
            return [f"{sp.mod}.log({total(x)})"]
        if not axes:  # log(exp(x)) over no axis is x itself
            return [sp.copy(x)]
        return [f"{sp.fn('logsumexp')}({x}, {sp.axes(axes, keep)})"]

    return rule


for _kind in ("l1", "l2", "sum_square", "log_sum", "log_sum_exp"):
    shared(f"reduce_{_kind}")(_reduce_lp(_kind))
