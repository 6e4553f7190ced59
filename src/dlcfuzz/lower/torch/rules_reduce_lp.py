"""PyTorch lowering rules of the reduce_lp operators (ops/reduce_lp.py).

torch.sum(dim=[]) reduces every dimension, so the noop case (no axis to reduce) keeps only the
element-wise steps; an empty set of values gives the identity (0, or -inf for the log forms)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype

Types = Sequence[TensorType]


def _reduce_lp(kind: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        from dlcfuzz.ops import get_op

        t, x, out = in_types[0], ins[0], out_types[0]
        spec = get_op(f"reduce_{kind}")
        axes = list(spec.reduced_or_empty(t, attrs))  # type: ignore[attr-defined]
        keep, dt = bool(attrs["keepdims"]), torch_dtype(t.dtype)
        if axes and spec.count(t, attrs) == 0:  # type: ignore[attr-defined]
            fill = '-float("inf")' if kind.startswith("log") else "0"
            return [f"torch.full({literal(list(out.shape))}, {fill}, dtype={dt})"]

        def total(v: str) -> str:
            return f"torch.sum({v}, dim={literal(axes)}, keepdim={keep}, dtype={dt})" if axes else v

        if kind == "l1":
            return [total(f"torch.abs({x})")]
        if kind == "sum_square":
            return [total(f"{x} * {x}")]
        if kind == "l2":
            s = e.bind(total(f"{x} * {x}"))
            if t.dtype.startswith("int"):  # the float root truncated back to the integer type
                return [f"torch.sqrt({s}.to(torch.float64)).to({dt})"]
            return [f"torch.sqrt({s})"]
        if kind == "log_sum":
            return [f"torch.log({total(x)})"]
        if not axes:  # log(exp(x)) over no axis is x itself
            return [f"{x}.clone()"]
        return [f"torch.logsumexp({x}, dim={literal(axes)}, keepdim={keep})"]

    return rule


for _kind in ("l1", "l2", "sum_square", "log_sum", "log_sum_exp"):
    TARGET.register(f"reduce_{_kind}")(_reduce_lp(_kind))
