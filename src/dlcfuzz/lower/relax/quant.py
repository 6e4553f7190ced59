"""Relax lowering rules of the quant operators (ops/quant.py), registered per operator."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.quant import DequantizeLinearOp, QuantizeLinearOp

RELAX = target("relax")


@RELAX.register("quantize_linear")
def quantize_linear(spec: QuantizeLinearOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.quantize(ins[0], relax.const(np.float32(attrs["scale"]), "float32"),
                              relax.const(np.array(attrs["zero_point"], attrs["to"]), attrs["to"]),
                              axis=-1, out_dtype=attrs["to"])]


@RELAX.register("dequantize_linear")
def dequantize_linear(spec: DequantizeLinearOp, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    dt = in_types[0].dtype
    return [relax.op.dequantize(ins[0], relax.const(np.float32(attrs["scale"]), "float32"),
                                relax.const(np.array(attrs["zero_point"], dt), dt), axis=-1, out_dtype="float32")]
