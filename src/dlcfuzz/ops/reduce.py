"""Reductions: ReduceSum/Mean/Max/Min/Prod (axes attribute, keepdims, noop_with_empty_axes) and ArgMax/ArgMin.

The axes are an attribute in our IR; the ONNX lowering emits them as the opset-18 `axes` input.
float16 references are computed in float32 and cast back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import FLOATS, INTS, TensorType
from dlcfuzz.ops.base import (
    ABSORBS,
    ANY,
    FOLLOWS,
    Attrs,
    Domain,
    OpSpec,
    magnitude_of_terms,
    register,
    require_arity,
    require_dtype,
)

F16_MAX_REDUCED = 8  # float16 accumulation order differs between compilers; keep sums short


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _flag(spec: OpSpec, attrs: Attrs, key: str) -> bool:
    v = attrs.get(key)
    if not _is_int(v) or v not in (0, 1):
        raise ShapeError(f"{spec.name}: attribute {key!r} must be 0 or 1, got {v!r}")
    return bool(v)


def _axis(spec: OpSpec, axis: Any, rank: int) -> int:
    if not _is_int(axis) or not -rank <= axis < rank:
        raise ShapeError(f"{spec.name}: axis {axis!r} out of range for rank {rank}")
    return int(axis) % rank


class ReduceOp(OpSpec):
    """attrs: axes (list; empty = all axes, or identity when noop_with_empty_axes=1), keepdims, noop_with_empty_axes."""

    family = "reduce"

    def __init__(self, name: str, onnx_op: str, kind: str, dtypes: Sequence[str], axes_input_since: int) -> None:
        self.name = name
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.kind = kind
        self.dtypes = tuple(dtypes)
        self.axes_input_since = axes_input_since
        # a sum or product over an empty axis is defined (0, 1): over a data-dependent axis too; a mean, max or min
        # is not, so those keep it
        self.unknown_dims = ABSORBS if kind in ("sum", "prod") else FOLLOWS

    def reduced(self, t: TensorType, attrs: Attrs) -> tuple[int, ...] | None:
        """The normalized reduced axes, or None for the noop (identity) case."""
        axes = attrs.get("axes")
        if not isinstance(axes, (list, tuple)):
            raise ShapeError(f"{self.name}: attribute 'axes' must be a list of ints, got {axes!r}")
        norm = [_axis(self, a, t.rank) for a in axes]
        if len(set(norm)) != len(norm):
            raise ShapeError(f"{self.name}: repeated axes {list(axes)}")
        _flag(self, attrs, "keepdims")
        if not norm:
            return None if _flag(self, attrs, "noop_with_empty_axes") else tuple(range(t.rank))
        _flag(self, attrs, "noop_with_empty_axes")
        return tuple(sorted(norm))

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        axes = self.reduced(t, attrs)
        if axes is None:
            return [t]
        keep = attrs["keepdims"]
        return [t.with_shape(tuple(1 if i in axes else d for i, d in enumerate(t.shape) if keep or i not in axes))]

    def count(self, t: TensorType, attrs: Attrs) -> int:
        axes = self.reduced(t, attrs)
        return 1 if axes is None else int(np.prod([t.shape[a] for a in axes], dtype=np.int64))

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if self.kind != "prod":
            return ANY
        try:
            n = self.count(ins[0], attrs)
        except ShapeError:
            n = ins[0].size
        if np.issubdtype(ins[0].np_dtype, np.integer):
            return Domain(lo=-2, hi=2) if n <= 16 else Domain(lo=-1, hi=1)
        return Domain(lo=0.5, hi=1.5) if n <= 16 else Domain(lo=0.9, hi=1.1)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        r = first.rank
        for _ in range(10):
            u = rng.random()
            noop = 0
            if r == 0 or u < 0.2:
                axes: list[int] = []
                noop = int(rng.random() < 0.25)
            else:
                k = int(rng.integers(1, r + 1))
                axes = [int(a) - (r if rng.random() < 0.3 else 0) for a in rng.choice(r, size=k, replace=False)]
            attrs = {"axes": axes, "keepdims": int(rng.integers(0, 2)), "noop_with_empty_axes": noop}
            if first.dtype == "float16" and self.kind in ("sum", "mean", "prod") \
                    and self.count(first, attrs) > F16_MAX_REDUCED:
                continue
            return [first], attrs
        raise ShapeError(f"{self.name}: float16 reductions over {first.shape} would be too long to compare")

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs) if self.kind in ("sum", "mean") else np.abs(y)

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """A float product whose partial products can leave the dtype's range in some order of multiplication:
        the factors above 1 taken first overflow, or the nonzero ones below 1 taken first underflow to 0. Then
        the result depends on the order a compiler picks (inf times a 0 factor is NaN where the reference's order
        gives 0: ORT 1.32 acceptance finding 41, a [19, 3] float32 product of 3.6e37, 7.9e20, ... and zeros)."""
        x = xs[0]
        if self.kind != "prod" or not np.issubdtype(x.dtype, np.floating):
            return False
        axes = self.reduced(TensorType.of(x), attrs)
        if axes is None or self.count(TensorType.of(x), attrs) < 2:
            return False
        info = np.finfo(x.dtype)  # a compiler may multiply float16 in float16
        with np.errstate(divide="ignore", invalid="ignore"):
            log2 = np.log2(np.abs(x.astype(np.float64)))  # -inf for 0, inf for inf, nan for nan
        finite_nonzero = np.isfinite(log2)
        up = np.sum(np.where(finite_nonzero & (log2 > 0), log2, 0.0), axis=axes)
        down = np.sum(np.where(finite_nonzero & (log2 < 0), log2, 0.0), axis=axes)
        return bool(np.any(up > np.log2(float(info.max))) or np.any(down < np.log2(float(info.smallest_subnormal))))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axes = self.reduced(TensorType.of(x), attrs)
        if axes is None:
            return [x.copy()]
        keep = bool(attrs["keepdims"])
        w = x.astype(np.float32) if x.dtype == np.float16 else x
        if self.kind == "sum":
            y = np.sum(w, axis=axes, keepdims=keep, dtype=w.dtype)
        elif self.kind == "prod":
            y = np.prod(w, axis=axes, keepdims=keep, dtype=w.dtype)
        elif self.kind == "mean":
            n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
            if np.issubdtype(w.dtype, np.integer):  # integer mean truncates toward zero, like ONNXRuntime
                s = np.sum(w, axis=axes, keepdims=keep, dtype=np.int64)
                y = np.sign(s) * (np.abs(s) // max(n, 1))
            else:
                y = np.sum(w, axis=axes, keepdims=keep, dtype=w.dtype) / w.dtype.type(n) if n else \
                    np.full(np.sum(w, axis=axes, keepdims=keep).shape, np.nan, dtype=w.dtype)
        else:  # max / min over an empty set give the identity (-inf / +inf or the dtype's bound)
            if np.issubdtype(w.dtype, np.floating):
                lo, hi = -np.inf, np.inf
            elif w.dtype == np.bool_:  # any / all
                lo, hi = False, True
            else:
                info = np.iinfo(w.dtype)
                lo, hi = info.min, info.max
            if self.kind == "max":
                y = np.max(w, axis=axes, keepdims=keep, initial=lo)
            else:
                y = np.min(w, axis=axes, keepdims=keep, initial=hi)
        return [np.asarray(y).astype(x.dtype)]


class ArgOp(OpSpec):
    """ArgMax/ArgMin. attrs: axis, keepdims, select_last_index (0 when absent: the first index on
    ties; 1: the last). Output int64."""

    family = "reduce"
    ranks = (1, 2, 3, 4)

    def __init__(self, name: str, onnx_op: str, kind: str) -> None:
        self.name = name
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.kind = kind
        self.dtypes = FLOATS + INTS

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        a = _axis(self, attrs.get("axis"), t.rank)
        if t.shape[a] == 0:
            raise ShapeError(f"{self.name}: no index to select along an empty axis {a}")
        keep = _flag(self, attrs, "keepdims")
        if attrs.get("select_last_index", 0) not in (0, 1):
            raise ShapeError(f"{self.name}: select_last_index must be 0 or 1")
        return [TensorType("int64", tuple(1 if i == a else d for i, d in enumerate(t.shape) if keep or i != a))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        a = int(rng.integers(first.rank))
        attrs = {"axis": a - (first.rank if rng.random() < 0.3 else 0), "keepdims": int(rng.integers(0, 2))}
        if rng.random() < 0.3:
            attrs["select_last_index"] = 1
        self.infer([first], attrs)
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        fn = np.argmax if self.kind == "argmax" else np.argmin
        x, axis, keep = xs[0], attrs["axis"], bool(attrs["keepdims"])
        if attrs.get("select_last_index", 0):  # the first index of the reversed axis, mirrored
            return [(x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis, keepdims=keep)).astype(np.int64)]
        return [fn(x, axis=axis, keepdims=keep).astype(np.int64)]

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        x = xs[0]
        if not np.issubdtype(x.dtype, np.floating) or x.shape[attrs["axis"]] < 2:
            return False
        s = np.sort(x.astype(np.float64), axis=attrs["axis"])
        best, second = (np.take(s, -1, attrs["axis"]), np.take(s, -2, attrs["axis"])) if self.kind == "argmax" \
            else (np.take(s, 0, attrs["axis"]), np.take(s, 1, attrs["axis"]))
        return bool(np.any(np.abs(best - second) <= tol * np.maximum(1.0, np.abs(best))))


_SUM_TYPES = ("float16", "float32", "float64", "int32", "int64")
_MAX_TYPES = ("float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool")  # bool: opset 20

register(ReduceOp("reduce_sum", "ReduceSum", "sum", _SUM_TYPES, axes_input_since=13))
register(ReduceOp("reduce_mean", "ReduceMean", "mean", _SUM_TYPES, axes_input_since=18))
register(ReduceOp("reduce_max", "ReduceMax", "max", _MAX_TYPES, axes_input_since=18))
register(ReduceOp("reduce_min", "ReduceMin", "min", _MAX_TYPES, axes_input_since=18))
register(ReduceOp("reduce_prod", "ReduceProd", "prod", _SUM_TYPES, axes_input_since=18))
register(ArgOp("argmax", "ArgMax", "argmax"))
register(ArgOp("argmin", "ArgMin", "argmin"))
