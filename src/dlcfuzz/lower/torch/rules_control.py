"""Regions (ops/regions.py) in PyTorch: `torch.cond` for a conditional (each branch a nested function of its
parameters, its outputs cloned: torch.cond refuses a branch whose output aliases an input, which a view rule
such as reshape or transpose makes, and branches whose outputs' strides are ordered differently, which a
permuted result in one branch only (Attention's through SDPA, then a Neg in the other) made even eagerly
(issue 37's Inductor run, finding 6): ONNX has no layout, so each output is a contiguous copy); loops and
scans are documented gaps of this slice (issue 40)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.registry import target

TORCH = target("torch")


@TORCH.register("if")
def _if(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    branches = []
    for attr in ("then_branch", "else_branch"):
        body = e.function(attrs[attr], f"{attr.split('_')[0]}_")
        cloned = e.fresh(f"{body}_cloned")
        e.lines += [f"def {cloned}(*args):", f"    return tuple(o.clone(memory_format=torch.contiguous_format) for o in {body}(*args))"]
        branches.append(cloned)
    caps = "".join(f"{c}, " for c in ins[1:])
    r = e.bind(f"torch.cond({ins[0]}.reshape(()), {branches[0]}, {branches[1]}, ({caps}))", "r")
    return [f"{r}[{k}]" for k in range(len(outs))]


TORCH.gap("loop", "a trip count that is a tensor needs torch.while_loop, which has no scan outputs, or a Python int "
                  "that Dynamo would specialize; not written yet (issue 40's next slice)")
TORCH.gap("scan", "torch's scan higher-order operator is private (torch._higher_order_ops.scan); not written yet "
                  "(issue 40's next slice)")
