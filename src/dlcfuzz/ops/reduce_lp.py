"""Reductions beyond sum/mean/max/min/prod: L1, L2, log-sum, log-sum-exp, sum of squares.

They share ReduceOp's attributes (axes, an opset-18 input in ONNX; keepdims; noop_with_empty_axes)
and shape rules. With noop_with_empty_axes=1 and no axes, ONNX reduces over an empty set of axes:
the reduction is the identity but the operator's element-wise steps still apply (ReduceSumSquare
gives x*x, ReduceL1 |x|, ReduceLogSum log(x)). Over an empty set of values L1, L2 and SumSquare
give 0, LogSum and LogSumExp -inf. References compute in float64 (int64 for integers) and round once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops.base import ANY, POSITIVE, Attrs, Domain, magnitude_of_terms, register
from dlcfuzz.ops.reduce import F16_MAX_REDUCED, ReduceOp

SQUARED_INT = Domain(lo=-20, hi=20)  # integer squares summed over <= 4096 elements stay far inside int32


class ReduceLpOp(ReduceOp):
    """kind: l1, l2, log_sum, log_sum_exp or sum_square. attrs as ReduceOp."""

    def __init__(self, name: str, onnx_op: str, kind: str, dtypes: Sequence[str]) -> None:
        super().__init__(name, onnx_op, kind, dtypes, axes_input_since=18)

    def reduced_or_empty(self, t: TensorType, attrs: Attrs) -> tuple[int, ...]:
        """The reduced axes; () for the noop case (a reduction over no axis: element-wise steps only)."""
        axes = self.reduced(t, attrs)
        return () if axes is None else axes

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if self.kind == "log_sum":  # log of a non-positive sum is undefined (NaN) or -inf
            return POSITIVE
        if self.kind in ("l2", "sum_square") and np.issubdtype(ins[0].np_dtype, np.integer):
            return SQUARED_INT
        return ANY

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        for _ in range(10):
            ins, attrs = super().sample(rng, first)
            if first.dtype == "float16" and self.count(first, attrs) > F16_MAX_REDUCED:
                continue  # float16 accumulation order differs between compilers; keep sums short
            return ins, attrs
        raise ShapeError(f"{self.name}: float16 reductions over {first.shape} would be too long to compare")

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        if self.kind in ("log_sum", "log_sum_exp"):
            # a sum with relative error e has a log off by about e: absolute, so at least 1; log-sum-exp
            # also rounds x - max(x) at the magnitude of x
            return magnitude_of_terms(self, xs, attrs) + 1.0 if self.kind == "log_sum_exp" else np.abs(y) + 1.0
        return np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axes = self.reduced_or_empty(TensorType.of(x), attrs)
        keep = bool(attrs["keepdims"])
        w = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.kind == "l1":
                y = np.sum(np.abs(w), axis=axes, keepdims=keep)
            elif self.kind == "sum_square":
                y = np.sum(w * w, axis=axes, keepdims=keep)
            elif self.kind == "l2":
                # integers: the float square root truncated, as ONNX's cast back to the input type
                y = np.sqrt(np.sum(w * w, axis=axes, keepdims=keep).astype(np.float64))
            elif self.kind == "log_sum":
                y = np.log(np.sum(w, axis=axes, keepdims=keep))
            else:  # log_sum_exp, shifted by the maximum so that large inputs do not overflow
                m = np.max(w, axis=axes, keepdims=True, initial=-np.inf)
                shift = np.where(np.isfinite(m), m, 0.0)
                y = np.log(np.sum(np.exp(w - shift), axis=axes, keepdims=True)) + shift
                if not keep:
                    y = np.squeeze(y, axis=axes)
        return [np.asarray(y).astype(x.dtype)]


_SQUARE_TYPES = ("float16", "float32", "float64", "int32", "int64")

for _spec in [
    ReduceLpOp("reduce_l1", "ReduceL1", "l1", _SQUARE_TYPES),
    ReduceLpOp("reduce_l2", "ReduceL2", "l2", _SQUARE_TYPES),
    ReduceLpOp("reduce_sum_square", "ReduceSumSquare", "sum_square", _SQUARE_TYPES),
    # integer inputs are legal in ONNX but ONNX's own reference refuses them (a log of an integer sum)
    ReduceLpOp("reduce_log_sum", "ReduceLogSum", "log_sum", FLOATS),
    ReduceLpOp("reduce_log_sum_exp", "ReduceLogSumExp", "log_sum_exp", FLOATS),
]:
    register(_spec)
