"""Quantization operators: QuantizeLinear / DequantizeLinear with per-tensor scale and zero point.

They dominate the test models of ONNXRuntime's optimizer (Q/DQ propagation, node-unit selection,
double-pair removal), so pattern extraction needs them. Scale and zero point are attributes here
(ONNX takes them as constant inputs; the importer requires scalar constants: per-axis and blocked
quantization are not modelled). Quantization rounds x / scale half to even; results within the
tolerance of a half are near ties (legal rounding differences flip them) and are not judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError, Unsupported
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops.base import Attrs, OpSpec, register, require_arity, require_dtype

QTYPES = ("uint8", "int8", "int16", "uint16")  # 16-bit: opset 21 (the ONNX rules ask for it)
SAMPLED_QTYPES = ("uint8", "int8", "int16")  # uint16 only where a capability probe admits it (dequantize's input)
SCALES = (0.0625, 0.125, 0.25, 0.5, 1.0, 0.0078125)  # exact in float32: no rounding of the scale itself


def _check_params(spec: OpSpec, attrs: Attrs, qtype: str) -> None:
    scale, zp = attrs.get("scale"), attrs.get("zero_point")
    if not isinstance(scale, (int, float)) or not np.isfinite(scale) or scale <= 0:
        raise ShapeError(f"{spec.name}: scale must be a positive finite number, got {scale!r}")
    info = np.iinfo(qtype)
    if not isinstance(zp, (int, np.integer)) or not info.min <= int(zp) <= info.max:
        raise ShapeError(f"{spec.name}: zero_point {zp!r} outside {qtype}")


class ConstInputs(Protocol):
    """What this module reads of the ONNX importer's context (`lower.onnx_import.ImportContext`, a floor above)."""

    def const_input(self, node: Any, i: int) -> np.ndarray | None: ...


def _scalar_input(node: Any, ctx: ConstInputs, i: int, what: str) -> np.ndarray | None:
    a = ctx.const_input(node, i)
    if a is not None and a.size != 1:
        raise Unsupported(f"{node.op_type}: per-axis {what} is not modelled")
    return a


class QuantizeLinearOp(OpSpec):
    """attrs: scale (float), zero_point (int), to (uint8 | int8 | int16 | uint16)."""

    name = "quantize_linear"
    family = "quant"
    dtypes = ("float32",)
    onnx_ops = ("QuantizeLinear",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        to = attrs.get("to")
        if to not in QTYPES:
            raise DTypeError(f"{self.name}: target {to!r} not in {list(QTYPES)}")
        _check_params(self, attrs, to)
        return [TensorType(to, ins[0].shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        to = SAMPLED_QTYPES[int(rng.integers(len(SAMPLED_QTYPES)))]
        info = np.iinfo(to)
        zp = int(rng.integers(int(info.min), int(info.max) + 1)) if rng.random() < 0.5 else (128 if to == "uint8" else 0)
        return [first], {"scale": SCALES[int(rng.integers(len(SCALES)))], "zero_point": zp, "to": to}

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        q = xs[0].astype(np.float64) / attrs["scale"]
        return bool(np.any(np.abs(np.abs(q - np.floor(q)) - 0.5) <= tol * np.maximum(1.0, np.abs(q))))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        info = np.iinfo(attrs["to"])
        q = np.rint(xs[0].astype(np.float32) / np.float32(attrs["scale"])).astype(np.float64) + attrs["zero_point"]
        return [np.clip(q, info.min, info.max).astype(attrs["to"])]


class DequantizeLinearOp(OpSpec):
    """attrs: scale (float), zero_point (int in the input's dtype). Output float32."""

    name = "dequantize_linear"
    family = "quant"
    dtypes = QTYPES
    onnx_ops = ("DequantizeLinear",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        _check_params(self, attrs, ins[0].dtype)
        return [TensorType("float32", ins[0].shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        info = np.iinfo(first.dtype)
        return [first], {"scale": SCALES[int(rng.integers(len(SCALES)))],
                         "zero_point": int(rng.integers(int(info.min), int(info.max) + 1))}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        d = (xs[0].astype(np.int32) - np.int32(attrs["zero_point"])).astype(np.float32)
        return [d * np.float32(attrs["scale"])]


register(QuantizeLinearOp())
register(DequantizeLinearOp())
