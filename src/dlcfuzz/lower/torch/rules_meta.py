"""PyTorch lowering rules of the meta operators (ops/meta.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, torch_dtype

R = TARGET.register


@R("shape")
def _shape(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    # read from the tensor, not from our static type: with dynamic=True the dims are symbolic
    return [f"torch.tensor(list({ins[0]}.shape)[{attrs.get('start', 0)}:{attrs.get('end')}], dtype=torch.int64)"]


@R("size")
def _size(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    return [f"torch.tensor({ins[0]}.numel(), dtype=torch.int64)"]


@R("bitcast")
def _bitcast(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    return [f"{ins[0]}.view({torch_dtype(attrs['to'])})"]  # same width: view reinterprets the bytes
