"""Operators whose output extent depends on their input values: NonZero, Unique, Compress with a computed condition.

Each output axis whose extent the data decides is an unknown axis of its type (TensorType.unknown), holding its upper
bound: NonZero's count (at most the input's size), Unique's number of distinct values or slices (at most their count),
the number of true conditions (at most the condition's length). The reference resolves the extent when it runs; a
consumer takes such a type only where its rule says so (OpSpec.unknown_dims).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import DTYPES, TensorType
from dlcfuzz.ops.base import Attrs, OpSpec, register, require_arity, require_dtype
from dlcfuzz.ops.indexing import sample_compress_form
from dlcfuzz.ops.shape import _axis, _int, _maybe_negative


class DataShapeOp(OpSpec):
    family = "data_shape"
    dtypes = DTYPES
    ranks = (1, 2, 3, 4)


def _near_zero(x: np.ndarray, tol: float) -> bool:
    """A float element so close to zero that legal rounding may make it zero (or a zero computed otherwise not)."""
    return x.dtype.kind == "f" and bool(np.any((x != 0) & (np.abs(x) <= tol)))


# ---- non_zero --------------------------------------------------------------


class NonZero(DataShapeOp):
    """ONNX NonZero: the indices of the non-zero elements, int64[rank, count], in row-major order."""

    name = "non_zero"
    onnx_ops = ("NonZero",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank == 0:  # ONNX defines a scalar's as [0, count]; NumPy no longer indexes a scalar
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        return [TensorType("int64", (t.rank, t.size), (1,))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        self.infer([first], {})
        return [first], {}

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        return _near_zero(xs[0], tol)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.asarray(np.nonzero(xs[0]), dtype=np.int64).reshape(xs[0].ndim, -1)]


# ---- unique ----------------------------------------------------------------


class Unique(DataShapeOp):
    """ONNX Unique: the distinct elements (no `axis`: of the flattened input) or slices along `axis`, sorted
    ascending (`sorted` 1) or in order of first occurrence (0); outputs Y, indices (each one's first occurrence),
    inverse_indices (each element's or slice's position in Y: static, as long as the input) and counts."""

    name = "unique"
    n_outputs = 4
    onnx_ops = ("Unique",)
    dtypes = tuple(d for d in DTYPES if d != "bool")  # ONNX's kernels (and its reference) order numbers

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if _int(self, attrs, "sorted") not in (0, 1):
            raise ShapeError(f"{self.name}: sorted must be 0 or 1")
        if "axis" not in attrs:
            n = t.size
            y = TensorType(t.dtype, (n,), (0,))
        else:
            if t.rank == 0:
                raise ShapeError(f"{self.name}: an axis needs rank >= 1")
            a = _axis(self, _int(self, attrs, "axis"), t.rank)
            n = t.shape[a]
            y = TensorType(t.dtype, t.shape, (a,))
        count = TensorType("int64", (n,), (0,))
        return [y, count, TensorType("int64", (n,)), count]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        attrs: Attrs = {"sorted": int(rng.random() < 0.6)}
        if first.rank and rng.random() < 0.5:
            attrs["axis"] = _maybe_negative(rng, int(rng.integers(first.rank)), first.rank)
        self.infer([first], attrs)
        return [first], attrs

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """Two distinct float values within the tolerance: legal rounding may merge them (or part two equal ones)."""
        x = xs[0]
        if x.dtype.kind != "f" or x.size < 2:
            return False
        v = np.unique(x.astype(np.float64))
        return bool(np.any(np.diff(v) <= tol * np.maximum(1.0, np.abs(v[1:]))))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axis = None if "axis" not in attrs else int(attrs["axis"]) % max(x.ndim, 1)
        y, first, inverse, counts = np.unique(x.reshape(-1) if axis is None else x, return_index=True,
                                              return_inverse=True, return_counts=True, axis=axis)
        inverse = inverse.reshape(-1)
        if not attrs["sorted"]:  # in order of first occurrence
            order = np.argsort(first, kind="stable")
            y = np.take(y, order, axis=0 if axis is None else axis)
            first, counts = first[order], counts[order]
            inverse = np.argsort(order)[inverse]
        return [y.astype(x.dtype), *(np.asarray(a, dtype=np.int64) for a in (first, inverse, counts))]


# ---- compress_computed -----------------------------------------------------


class CompressComputed(DataShapeOp):
    """ONNX Compress whose condition is a tensor the graph computes (or reads): inputs x and a bool condition of
    length at most the axis's (absent axis: the flattened input's); the kept extent is the number of true elements.
    A condition known when the graph is built is `compress`'s attribute (ops/indexing.py), a static shape."""

    name = "compress_computed"
    n_inputs = 2
    onnx_ops = ("Compress",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t, cond = ins
        require_dtype(self, t)
        require_dtype(self, cond, ("bool",), what="condition")
        if t.rank == 0 or cond.rank != 1:
            raise ShapeError(f"{self.name}: input rank >= 1 and a 1-D condition, got {t.shape} and {cond.shape}")
        n = t.size if "axis" not in attrs else t.shape[_axis(self, _int(self, attrs, "axis"), t.rank)]
        if cond.shape[0] > n:
            raise ShapeError(f"{self.name}: condition of {cond.shape[0]} longer than {n}")
        if "axis" not in attrs:
            return [TensorType(t.dtype, cond.shape, (0,))]
        a = _axis(self, _int(self, attrs, "axis"), t.rank)
        return [TensorType(t.dtype, t.shape[:a] + cond.shape + t.shape[a + 1:], (a,))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        attrs, length = sample_compress_form(self, rng, first)
        ins = [first, TensorType("bool", (length,))]
        self.infer(ins, attrs)
        return ins, attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, cond = xs
        kept = np.flatnonzero(np.asarray(cond, dtype=bool))
        if "axis" not in attrs:
            return [x.reshape(-1)[kept]]
        return [np.take(x, kept, axis=int(attrs["axis"]))]


for _spec in (NonZero(), Unique(), CompressComputed()):
    register(_spec)
