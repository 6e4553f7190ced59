"""PyTorch lowering rules of the linalg operators (ops/linalg.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype

R = TARGET.register


@R("einsum")
def einsum(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    y = f"torch.einsum({literal(attrs['equation'].replace(' ', ''))}, {', '.join(ins)})"
    # integer sums come back as int64 (torch.sum's promotion): ONNX keeps the input type
    return [f"{y}.to({torch_dtype(out_types[0].dtype)})" if out_types[0].dtype.startswith("int") else y]


@R("det")
def det(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    return [f"torch.linalg.det({ins[0]})"]
