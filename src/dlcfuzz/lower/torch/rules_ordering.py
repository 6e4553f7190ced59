"""PyTorch lowering rules of the ordering operators (ops/ordering.py).

EyeLike compares two aranges (torch.eye has no diagonal offset). The other ordering operators are
shared (pysource/rules_ordering.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype

R = TARGET.register


@R("eye_like")
def eye_like(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    rows, cols = in_types[0].shape
    k = int(attrs.get("k", 0))
    return [f"(torch.arange({cols})[None, :] - torch.arange({rows})[:, None] == {literal(k)})"
            f".to({torch_dtype(out_types[0].dtype)})"]
