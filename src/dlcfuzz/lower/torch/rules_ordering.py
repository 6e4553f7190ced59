"""PyTorch lowering rules of the ordering operators (ops/ordering.py).

TopK is a stable sort and a narrow: torch.topk does not promise ONNX's tie order (the lower index
first), a stable sort does. The scans are shared (pysource/rules_ordering.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype

R = TARGET.register


@R("trilu")
def trilu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    fn = "torch.triu" if attrs.get("upper", 1) else "torch.tril"
    return [f"{fn}({ins[0]}, diagonal={int(attrs.get('k', 0))})"]


@R("hardmax")
def hardmax(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    t = in_types[0]
    d = int(attrs.get("axis", -1)) % t.rank
    n = t.shape[d]
    if n == 0 or t.size == 0:
        return [f"{ins[0]}.clone()"]
    best = e.bind(f"torch.argmax({ins[0]}, dim={d})")
    hot = f"F.one_hot({best}, {n}).movedim(-1, {d})"
    return [f"{hot}.to({torch_dtype(t.dtype)})"]


@R("topk")
def topk(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    t = in_types[0]
    d = int(attrs.get("axis", -1)) % t.rank
    k = int(attrs["k"])
    # keys in a type where negation is exact and the order is the values' order
    keys = ins[0] if t.dtype.startswith("float") else f"{ins[0]}.to(torch.int64)"
    if attrs.get("largest", 1):
        keys = f"-{keys}"
    order = e.bind(f"torch.sort({keys}, dim={d}, stable=True).indices.narrow({d}, 0, {k})")
    return [f"torch.gather({ins[0]}, {d}, {order})", order]


@R("eye_like")
def eye_like(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    rows, cols = in_types[0].shape
    k = int(attrs.get("k", 0))
    return [f"(torch.arange({cols})[None, :] - torch.arange({rows})[:, None] == {literal(k)})"
            f".to({torch_dtype(out_types[0].dtype)})"]


@R("range")
def range_(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    import numpy as np

    dt = out_types[0].dtype
    if out_types[0].shape[0] == 0:  # torch.arange refuses a limit on the wrong side of start; ONNX gives []
        return [f"torch.zeros(0, dtype={torch_dtype(dt)})"]
    start, limit, delta = (np.asarray(attrs[k]).astype(dt).item() for k in ("start", "limit", "delta"))
    return [f"torch.arange({literal(start)}, {literal(limit)}, {literal(delta)}, dtype={torch_dtype(dt)})"]
