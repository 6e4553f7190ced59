"""Relax lowering rules of the linalg operators (ops/linalg.py)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, OpSpec

RELAX = target("relax")


@RELAX.register("einsum")
def einsum(spec: OpSpec, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.einsum(list(ins), attrs["equation"].replace(" ", ""))]


RELAX.gap("det", "Relax has no determinant operator (no relax.op.linalg.det); TVM's ONNX frontend also "
                 "has no Det converter")
