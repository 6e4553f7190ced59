"""Relax lowering rules of the quant operators (ops/quant.py), registered per operator."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.quant import DequantizeLinearOp, QuantizeLinearOp

RELAX = target("relax")


def _per_tensor(bb: Any, x: Any, rank: int, qdq: Any) -> Any:
    """qdq(x, axis) with a scalar scale and zero point. A rank-0 x goes through shape (1,): apache-tvm
    before 0.27 rejects every axis of a rank-0 input ("axis param is out of range (-1)")."""
    from tvm import relax

    if rank:
        return qdq(x, -1)
    return relax.op.reshape(bb.emit(qdq(bb.emit(relax.op.reshape(x, (1,))), 0)), ())


@RELAX.register("quantize_linear")
def quantize_linear(spec: QuantizeLinearOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                    out_types: Any) -> list[Any]:
    from tvm import relax

    scale = relax.const(np.float32(attrs["scale"]), "float32")
    zero = relax.const(np.array(attrs["zero_point"], attrs["to"]), attrs["to"])
    return [_per_tensor(bb, ins[0], len(in_types[0].shape),
                        lambda x, axis: relax.op.quantize(x, scale, zero, axis=axis, out_dtype=attrs["to"]))]


@RELAX.register("dequantize_linear")
def dequantize_linear(spec: DequantizeLinearOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                      out_types: Any) -> list[Any]:
    from tvm import relax

    dt = in_types[0].dtype
    scale = relax.const(np.float32(attrs["scale"]), "float32")
    zero = relax.const(np.array(attrs["zero_point"], dt), dt)
    return [_per_tensor(bb, ins[0], len(in_types[0].shape),
                        lambda x, axis: relax.op.dequantize(x, scale, zero, axis=axis, out_dtype="float32"))]
