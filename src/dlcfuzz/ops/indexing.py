"""Indexing operators: gathers and scatters by index tensors, one-hot, compress, reverse-sequence, center-crop-pad.

Gather indices stay tensor inputs with a strict domain (generators feed them only in-range
constants; an imported model may compute them). Scatter indices are attributes (flat int lists):
with reduction "none" ONNX leaves duplicate targets undefined, and only a sampled attribute can
promise uniqueness (two strict constants of equal domain may be shared by the generator). Shape-like
ONNX inputs (OneHot's depth and values, Compress's condition, ReverseSequence's sequence_lens,
CenterCropPad's shape, TensorScatter's write_indices) are attributes too, so output shapes are static.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import DTYPES, FLOATS, INTS, WIDE_UNSIGNED, TensorType
from dlcfuzz.ops.base import (
    ANY,
    Attrs,
    Domain,
    OpSpec,
    ValueAttr,
    check_size,
    magnitude_of_terms,
    register,
    require_arity,
    require_dtype,
)
from dlcfuzz.ops.shape import INDEX_DTYPES, _axis, _choice, _int, _ints, _maybe_negative

REDUCTIONS = ("none", "add", "mul", "max", "min")


class IndexingOp(OpSpec):
    family = "indexing"
    dtypes = DTYPES


def _small_dims(rng: np.random.Generator, n: int, hi: int = 4) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, hi + 1, size=n))


def _index_dtype(spec: OpSpec, attrs: Attrs) -> str:
    return _choice(spec, attrs, "index_dtype", INDEX_DTYPES)


def _sample_reduction(rng: np.random.Generator, dtype: str) -> str:
    return "none" if dtype == "bool" else str(rng.choice(REDUCTIONS))


def scatter_apply(out: np.ndarray, where: tuple[np.ndarray, ...], updates: np.ndarray, reduction: str) -> None:
    """out[where] (op)= updates in place, every duplicate target taking its turn (np.ufunc.at)."""
    if reduction == "none":
        out[where] = updates
    else:
        {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction].at(out, where, updates)


# ---- gather_elements -----------------------------------------------------


class GatherElements(IndexingOp):
    """Inputs: data, indices (int32/int64, same rank, in [-n, n-1] along axis); attrs: axis."""

    name = "gather_elements"
    n_inputs = 2
    onnx_ops = ("GatherElements",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        data, idx = ins
        require_dtype(self, data)
        require_dtype(self, idx, INDEX_DTYPES, what="indices")
        if data.rank == 0 or idx.rank != data.rank:
            raise ShapeError(f"{self.name}: data {data.shape} and indices {idx.shape} need one rank >= 1")
        a = _axis(self, _int(self, attrs, "axis"), data.rank)
        # ORT and torch.gather read only data's leading block off the axis
        if any(i > d for k, (i, d) in enumerate(zip(idx.shape, data.shape)) if k != a):
            raise ShapeError(f"{self.name}: indices {idx.shape} exceed data {data.shape} off axis {a}")
        if data.shape[a] == 0 and idx.size:
            raise ShapeError(f"{self.name}: no index fits an empty axis")
        return [data.with_shape(idx.shape)]

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if index != 1:
            return ANY
        try:
            n = ins[0].shape[_axis(self, _int(self, attrs, "axis"), ins[0].rank)]
        except ShapeError:
            return Domain(strict=True)
        return Domain(lo=-n, hi=n - 1, strict=True)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: data must have rank >= 1")
        axis = int(rng.integers(first.rank))
        if first.shape[axis] == 0:
            raise ShapeError(f"{self.name}: no index fits an empty axis")
        shape = [int(rng.integers(1, d + 1)) if d else 0 for d in first.shape]
        shape[axis] = int(rng.integers(1, 2 * first.shape[axis] + 1))  # along the axis: any count
        idx = TensorType(str(rng.choice(INDEX_DTYPES)), tuple(shape))
        attrs = {"axis": _maybe_negative(rng, axis, first.rank)}
        check_size(self, self.infer([first, idx], attrs)[0].shape)
        return [first, idx], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        data, idx = xs
        a = attrs["axis"] % data.ndim
        n = data.shape[a]
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise ValueError(f"{self.name}: indices outside [-{n}, {n - 1}]")
        block = data[tuple(slice(None) if k == a else slice(0, s) for k, s in enumerate(idx.shape))]
        i64 = idx.astype(np.int64)
        return [np.take_along_axis(block, np.where(i64 < 0, i64 + n, i64), axis=a)]


# ---- gather_nd -----------------------------------------------------------


class GatherND(IndexingOp):
    """Inputs: data, indices (int64; last dim k indexes data dims b..b+k-1); attrs: batch_dims (b)."""

    name = "gather_nd"
    n_inputs = 2
    onnx_ops = ("GatherND",)
    ranks = (1, 2, 3, 4)

    def parse(self, data: TensorType, idx: TensorType, attrs: Attrs) -> tuple[int, int]:
        b = _int(self, attrs, "batch_dims")
        if data.rank == 0 or idx.rank == 0:
            raise ShapeError(f"{self.name}: data and indices need rank >= 1")
        if not 0 <= b < min(data.rank, idx.rank):
            raise ShapeError(f"{self.name}: batch_dims {b} not below ranks {data.rank}, {idx.rank}")
        if data.shape[:b] != idx.shape[:b]:
            raise ShapeError(f"{self.name}: batch dims {data.shape[:b]} and {idx.shape[:b]} differ")
        k = idx.shape[-1]
        if not 1 <= k <= data.rank - b:
            raise ShapeError(f"{self.name}: indices' last dim {k} not in [1, {data.rank - b}]")
        if idx.size and any(d == 0 for d in data.shape[b:b + k]):
            raise ShapeError(f"{self.name}: no index fits an empty dim")
        return b, k

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        data, idx = ins
        require_dtype(self, data)
        require_dtype(self, idx, ("int64",), what="indices")
        b, k = self.parse(data, idx, attrs)
        return [data.with_shape(idx.shape[:-1] + data.shape[b + k:])]

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if index != 1:
            return ANY
        try:
            b, k = self.parse(ins[0], ins[1], attrs)
        except ShapeError:
            return Domain(strict=True)
        m = min(ins[0].shape[b:b + k])  # one range for every component: the smallest indexed dim's
        return Domain(lo=-m, hi=m - 1, strict=True)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: data must have rank >= 1")
        b = int(rng.integers(0, first.rank))
        k = int(rng.integers(1, first.rank - b + 1))
        mid = _small_dims(rng, int(rng.integers(0, 3)), 3)
        idx = TensorType("int64", first.shape[:b] + mid + (k,))
        attrs = {"batch_dims": b}
        check_size(self, self.infer([first, idx], attrs)[0].shape)
        return [first, idx], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        data, idx = xs
        b, k = self.parse(TensorType.of(data), TensorType.of(idx), attrs)
        dims = np.asarray(data.shape[b:b + k], dtype=np.int64)
        i64 = idx.astype(np.int64)
        if i64.size and ((i64 < -dims).any() or (i64 >= dims).any()):
            raise ValueError(f"{self.name}: indices outside the data dims {tuple(dims)}")
        i64 = np.where(i64 < 0, i64 + dims, i64)
        batch = int(np.prod(data.shape[:b], dtype=np.int64))
        flat_data = data.reshape((batch,) + data.shape[b:])
        flat_idx = i64.reshape(batch, int(np.prod(idx.shape[b:-1], dtype=np.int64)), k)
        out = np.stack([flat_data[i][tuple(flat_idx[i].T)] for i in range(batch)]) if batch else \
            np.zeros((0, flat_idx.shape[1]) + data.shape[b + k:], data.dtype)
        return [out.reshape(idx.shape[:-1] + data.shape[b + k:]).astype(data.dtype)]


# ---- scatter_elements ----------------------------------------------------


def _check_reduction(spec: OpSpec, attrs: Attrs, dtype: str) -> str:
    reduction = _choice(spec, attrs, "reduction", REDUCTIONS)
    if reduction != "none" and dtype == "bool":
        raise DTypeError(f"{spec.name}: reduction {reduction!r} of bool tensors is not modelled")
    return reduction


class ScatterElements(IndexingOp):
    """Inputs: data, updates (same rank). attrs: axis, reduction, indices (flat, in updates' shape,
    each in [-n, n-1] along axis; targets unique when reduction is none), index_dtype."""

    name = "scatter_elements"
    n_inputs = 2
    onnx_ops = ("ScatterElements", "Scatter")
    ranks = (1, 2, 3, 4)

    def targets(self, data: TensorType, upd: TensorType, attrs: Attrs) -> tuple[np.ndarray, ...]:
        """The data position each update element lands on (one index array per dim)."""
        if data.rank == 0 or upd.rank != data.rank:
            raise ShapeError(f"{self.name}: data {data.shape} and updates {upd.shape} need one rank >= 1")
        a = _axis(self, _int(self, attrs, "axis"), data.rank)
        if any(u > d for k, (u, d) in enumerate(zip(upd.shape, data.shape)) if k != a):
            raise ShapeError(f"{self.name}: updates {upd.shape} exceed data {data.shape} off axis {a}")
        flat = _ints(self, attrs, "indices", length=upd.size)
        n = data.shape[a]
        if any(not -n <= i < n for i in flat):
            raise ShapeError(f"{self.name}: indices outside [-{n}, {n - 1}]")
        idx = np.asarray(flat, dtype=np.int64).reshape(upd.shape)
        where = list(np.indices(upd.shape, dtype=np.int64))
        where[a] = np.where(idx < 0, idx + n, idx)
        return tuple(where)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        data, upd = ins
        require_dtype(self, data)
        if upd.dtype != data.dtype:
            raise DTypeError(f"{self.name}: updates dtype {upd.dtype} differs from data's {data.dtype}")
        _index_dtype(self, attrs)
        reduction = _check_reduction(self, attrs, data.dtype)
        where = self.targets(data, upd, attrs)
        if reduction == "none":
            linear = np.ravel_multi_index(where, data.shape) if upd.size else np.zeros(0, np.int64)
            if len(np.unique(linear)) != upd.size:
                raise ShapeError(f"{self.name}: duplicate targets are undefined with reduction none")
        return [data]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: data must have rank >= 1")
        axis = int(rng.integers(first.rank))
        n = first.shape[axis]
        if n == 0:
            raise ShapeError(f"{self.name}: no index fits an empty axis")
        reduction = _sample_reduction(rng, first.dtype)
        shape = [int(rng.integers(1, d + 1)) if d else 0 for d in first.shape]
        shape[axis] = int(rng.integers(1, (n if reduction == "none" else 2 * n) + 1))
        upd = first.with_shape(tuple(shape))
        off_axis = [s for k, s in enumerate(shape) if k != axis]
        lines = int(np.prod(off_axis, dtype=np.int64))
        # per line along the axis: distinct targets (reduction none) or any, duplicates included
        picks = [rng.permutation(n)[: shape[axis]] if reduction == "none" else rng.integers(0, n, shape[axis])
                 for _ in range(lines)]
        along = np.asarray(picks, dtype=np.int64).reshape(off_axis + [shape[axis]])
        along = np.moveaxis(along, -1, axis)
        along = np.where(rng.random(along.shape) < 0.3, along - n, along)  # negative indices count from the end
        attrs = {"axis": _maybe_negative(rng, axis, first.rank), "reduction": reduction,
                 "indices": [int(i) for i in along.reshape(-1)], "index_dtype": str(rng.choice(INDEX_DTYPES))}
        self.infer([first, upd], attrs)
        return [first, upd], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        data, upd = xs
        out = data.copy()
        scatter_apply(out, self.targets(TensorType.of(data), TensorType.of(upd), attrs), upd, attrs["reduction"])
        return [out]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # duplicates accumulate in any order: an add of terms of either sign loses relative accuracy
        return magnitude_of_terms(self, xs, attrs) if attrs["reduction"] == "add" else np.abs(y)


# ---- scatter_nd ----------------------------------------------------------


class ScatterND(IndexingOp):
    """Inputs: data, updates. attrs: reduction, indices (flat int64), index_shape (its shape; the last
    dim k indexes data dims 0..k-1; tuples unique when reduction is none)."""

    name = "scatter_nd"
    n_inputs = 2
    onnx_ops = ("ScatterND",)
    ranks = (1, 2, 3, 4)

    def tuples(self, data: TensorType, attrs: Attrs) -> np.ndarray:
        """The index tuples, normalized to [0, d): shape (count, k)."""
        ishape = _ints(self, attrs, "index_shape", lo=0)
        if not ishape:
            raise ShapeError(f"{self.name}: indices need rank >= 1")
        k = ishape[-1]
        if data.rank == 0 or not 1 <= k <= data.rank:
            raise ShapeError(f"{self.name}: indices' last dim {k} not in [1, {data.rank}]")
        count = int(np.prod(ishape[:-1], dtype=np.int64))
        flat = np.asarray(_ints(self, attrs, "indices", length=count * k), dtype=np.int64).reshape(count, k)
        dims = np.asarray(data.shape[:k], dtype=np.int64)
        if ((flat < -dims) | (flat >= dims)).any():
            raise ShapeError(f"{self.name}: indices outside the data dims {tuple(dims)}")
        return np.where(flat < 0, flat + dims, flat)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        data, upd = ins
        require_dtype(self, data)
        if upd.dtype != data.dtype:
            raise DTypeError(f"{self.name}: updates dtype {upd.dtype} differs from data's {data.dtype}")
        reduction = _check_reduction(self, attrs, data.dtype)
        tuples = self.tuples(data, attrs)
        ishape = tuple(attrs["index_shape"])
        want = ishape[:-1] + data.shape[ishape[-1]:]
        if upd.shape != want:
            raise ShapeError(f"{self.name}: updates {upd.shape} must be {want}")
        if reduction == "none" and len({tuple(t) for t in tuples.tolist()}) != len(tuples):
            raise ShapeError(f"{self.name}: duplicate index tuples are undefined with reduction none")
        return [data]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0 or 0 in first.shape:
            raise ShapeError(f"{self.name}: data must be a non-empty tensor of rank >= 1")
        reduction = _sample_reduction(rng, first.dtype)
        k = int(rng.integers(1, first.rank + 1))
        slots = int(np.prod(first.shape[:k]))
        lead = _small_dims(rng, int(rng.integers(0, 3)), 3)
        count = int(np.prod(lead, dtype=np.int64))
        if reduction == "none" and count > slots:
            lead, count = (slots,), slots
        picked = rng.permutation(slots)[:count] if reduction == "none" else rng.integers(0, slots, count)
        tuples = np.stack(np.unravel_index(picked, first.shape[:k]), axis=-1).reshape(count, k)
        dims = np.asarray(first.shape[:k])
        tuples = np.where(rng.random(tuples.shape) < 0.3, tuples - dims, tuples)
        attrs = {"reduction": reduction, "indices": [int(i) for i in tuples.reshape(-1)],
                 "index_shape": [*lead, k]}
        upd = first.with_shape(tuple(lead) + first.shape[k:])
        check_size(self, upd.shape)
        self.infer([first, upd], attrs)
        return [first, upd], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        data, upd = xs
        tuples = self.tuples(TensorType.of(data), attrs)
        k = tuples.shape[1]
        out = data.copy()
        flat_out = out.reshape((int(np.prod(data.shape[:k], dtype=np.int64)),) + data.shape[k:])
        linear = np.ravel_multi_index(tuple(tuples.T), data.shape[:k]) if len(tuples) else np.zeros(0, np.int64)
        scatter_apply(flat_out, (linear,), upd.reshape((len(tuples),) + data.shape[k:]), attrs["reduction"])
        return [flat_out.reshape(data.shape)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs) if attrs["reduction"] == "add" else np.abs(y)


# ---- one_hot -------------------------------------------------------------

DEPTH_DTYPES = INTS + FLOATS


class OneHot(IndexingOp):
    """Input: indices (any numeric; floats truncate). attrs: depth (>= 1), values ([off, on]),
    dtype (of values and the output), depth_dtype, axis (in [-r-1, r])."""

    name = "one_hot"
    onnx_ops = ("OneHot",)
    dtypes = INTS + FLOATS  # ONNX's T1 is any numeric type (the wide unsigned ones: imported only)
    accepted = INTS + WIDE_UNSIGNED + FLOATS  # imported (float indices truncate)
    ranks = (1, 2, 3)

    def parse(self, t: TensorType, attrs: Attrs) -> tuple[int, int, str]:
        if t.rank == 0:
            raise ShapeError(f"{self.name}: indices must have rank >= 1")
        depth = _int(self, attrs, "depth")
        if depth < 1:
            raise ShapeError(f"{self.name}: depth {depth} must be >= 1")
        dtype = attrs.get("dtype")
        if dtype not in DTYPES:
            raise DTypeError(f"{self.name}: values dtype {dtype!r} not in {list(DTYPES)}")
        _choice(self, attrs, "depth_dtype", DEPTH_DTYPES)
        values = attrs.get("values")
        if not isinstance(values, list) or len(values) != 2 or \
                not all(isinstance(v, (int, float)) for v in values):
            raise ShapeError(f"{self.name}: values must be [off, on], got {values!r}")
        axis = _axis(self, _int(self, attrs, "axis"), t.rank + 1)
        return depth, axis, dtype

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t, self.accepted)
        depth, axis, dtype = self.parse(t, attrs)
        return [TensorType(dtype, t.shape[:axis] + (depth,) + t.shape[axis:])]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        # ONNX's values (T3) may have any type and depth (T2) any numeric one
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        depth = int(rng.integers(1, 7))
        if dtype == "bool":
            values: list[Any] = [bool(v) for v in rng.permutation([False, True])]
        elif dtype in FLOATS:
            values = [float(v) for v in rng.choice([0.0, 1.0, -1.5, 2.25, 0.5], size=2, replace=False)]
        else:
            values = [int(v) for v in rng.choice([0, 1, 5, 7] if dtype == "uint8" else [0, 1, -3, 5, 7], size=2,
                                                   replace=False)]
        attrs = {"depth": depth, "values": values, "dtype": dtype,
                 "depth_dtype": DEPTH_DTYPES[int(rng.integers(len(DEPTH_DTYPES)))],
                 "axis": int(rng.integers(-first.rank - 1, first.rank + 1))}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        # [off, on]; depth decides the output's shape: structure
        return {} if attrs["dtype"] == "bool" else {"values": ValueAttr(attrs["dtype"])}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        depth = attrs.get("depth", 4)
        return Domain(lo=-depth - 2, hi=depth + 2)  # out of range is defined (all off): sample some

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        depth, axis, dtype = self.parse(TensorType.of(x), attrs)
        idx = np.trunc(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)
        idx = np.where(idx < 0, idx + depth, idx)  # out of [-depth, depth-1] matches nothing
        shape = [1] * (x.ndim + 1)
        shape[axis] = depth
        hot = np.expand_dims(idx, axis) == np.arange(depth).reshape(shape)
        off, on = np.asarray(attrs["values"]).astype(dtype)
        return [np.where(hot, on, off).astype(dtype)]


# ---- compress ------------------------------------------------------------


def sample_compress_form(spec: OpSpec, rng: np.random.Generator, first: TensorType) -> tuple[Attrs, int]:
    """A Compress of input 0 `first` (this one, or ops/data_shape.py's with a computed condition): its attributes (an
    axis, or none: the input flattened) and its condition's length, at most that extent (shorter: the rest dropped)."""
    require_dtype(spec, first)
    if first.rank == 0:
        raise ShapeError(f"{spec.name}: input must have rank >= 1")
    attrs: Attrs = {}
    if rng.random() < 0.7:
        axis = int(rng.integers(first.rank))
        n = first.shape[axis]
        attrs["axis"] = _maybe_negative(rng, axis, first.rank)
    else:
        n = first.size
    return attrs, n if rng.random() < 0.7 else int(rng.integers(0, n + 1))


class Compress(IndexingOp):
    """attrs: condition (0/1 list, at most the length of the axis or of the flattened input),
    axis (absent: the input is flattened)."""

    name = "compress"
    onnx_ops = ("Compress",)
    ranks = (1, 2, 3, 4)

    def kept(self, t: TensorType, attrs: Attrs) -> tuple[int | None, list[int]]:
        cond = _ints(self, attrs, "condition")
        if any(c not in (0, 1) for c in cond):
            raise ShapeError(f"{self.name}: condition must be 0/1, got {cond}")
        if t.rank == 0:  # ONNX's shape inference refuses scalars
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        axis = None
        if "axis" in attrs:
            axis = _axis(self, _int(self, attrs, "axis"), t.rank)
        n = t.size if axis is None else t.shape[axis]
        if len(cond) > n:
            raise ShapeError(f"{self.name}: condition of {len(cond)} longer than {n}")
        return axis, [i for i, c in enumerate(cond) if c]

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = ins[0]
        require_arity(self, ins)
        require_dtype(self, t)
        axis, kept = self.kept(t, attrs)
        if axis is None:
            return [t.with_shape((len(kept),))]
        return [t.with_shape(t.shape[:axis] + (len(kept),) + t.shape[axis + 1:])]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        attrs, length = sample_compress_form(self, rng, first)
        attrs["condition"] = [int(c) for c in rng.random(length) < 0.6]
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axis, kept = self.kept(TensorType.of(x), attrs)
        if axis is None:
            return [x.reshape(-1)[kept]]
        return [np.take(x, np.asarray(kept, dtype=np.int64), axis=axis)]


# ---- reverse_sequence ----------------------------------------------------


class ReverseSequence(IndexingOp):
    """attrs: sequence_lens (one per batch entry, in [0, time]), batch_axis, time_axis ({0, 1})."""

    name = "reverse_sequence"
    onnx_ops = ("ReverseSequence",)
    ranks = (2, 3, 4)

    def parse(self, t: TensorType, attrs: Attrs) -> tuple[int, int, list[int]]:
        b, tm = _int(self, attrs, "batch_axis"), _int(self, attrs, "time_axis")
        if t.rank < 2 or {b, tm} != {0, 1}:
            raise ShapeError(f"{self.name}: batch_axis/time_axis must be 0 and 1 of a rank >= 2 input")
        lens = _ints(self, attrs, "sequence_lens", length=t.shape[b], lo=0)
        if any(n > t.shape[tm] for n in lens):
            raise ShapeError(f"{self.name}: sequence_lens {lens} exceed time dim {t.shape[tm]}")
        return b, tm, lens

    def source(self, t: TensorType, attrs: Attrs) -> tuple[int, np.ndarray]:
        """time_axis and, for every element, the time step it is read from (in the input's shape)."""
        b, tm, lens = self.parse(t, attrs)
        steps = np.arange(t.shape[tm])
        table = np.stack([np.where(steps < n, n - 1 - steps, steps) for n in lens]) if lens else \
            np.zeros((0, t.shape[tm]), np.int64)  # [batch, time]
        if b == 1:
            table = table.T
        return tm, np.broadcast_to(table.reshape(table.shape + (1,) * (t.rank - 2)), t.shape).astype(np.int64)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        self.parse(ins[0], attrs)
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2:
            raise ShapeError(f"{self.name}: input must have rank >= 2")
        b = int(rng.integers(2))
        tm = 1 - b
        lens = [int(n) for n in rng.integers(0, first.shape[tm] + 1, size=first.shape[b])]
        return [first], {"batch_axis": b, "time_axis": tm, "sequence_lens": lens}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        tm, src = self.source(TensorType.of(xs[0]), attrs)
        return [np.take_along_axis(xs[0], src, axis=tm)]


# ---- center_crop_pad -----------------------------------------------------


class CenterCropPad(IndexingOp):
    """attrs: shape (target sizes), axes (the dims they apply to; absent: all)."""

    name = "center_crop_pad"
    onnx_ops = ("CenterCropPad",)
    ranks = (1, 2, 3, 4)

    def windows(self, t: TensorType, attrs: Attrs) -> list[tuple[int, int, int, int]]:
        """Per dim: (crop start, kept length, pad before, pad after)."""
        axes = list(range(t.rank)) if "axes" not in attrs else \
            [_axis(self, a, t.rank) for a in _ints(self, attrs, "axes")]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"{self.name}: repeated axes {axes}")
        target = _ints(self, attrs, "shape", length=len(axes), lo=0)
        out = [(0, d, 0, 0) for d in t.shape]
        for a, s in zip(axes, target):
            d = t.shape[a]
            out[a] = ((d - s) // 2, s, 0, 0) if s <= d else (0, d, (s - d) // 2, s - d - (s - d) // 2)
        return out

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        return [ins[0].with_shape(tuple(n + pb + pe for _, n, pb, pe in self.windows(ins[0], attrs)))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        attrs: Attrs = {}
        if rng.random() < 0.6:
            k = int(rng.integers(1, first.rank + 1))
            axes = [int(a) for a in rng.choice(first.rank, size=k, replace=False)]
            attrs["axes"] = [_maybe_negative(rng, a, first.rank) for a in axes]
        else:
            axes = list(range(first.rank))
        attrs["shape"] = [max(0, first.shape[a] + int(rng.integers(-3, 4))) for a in axes]
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        win = self.windows(TensorType.of(x), attrs)
        x = x[tuple(slice(s, s + n) for s, n, _, _ in win)]
        return [np.pad(x, [(pb, pe) for _, _, pb, pe in win], mode="constant")]


# ---- tensor_scatter ------------------------------------------------------

TENSOR_SCATTER_MODES = ("linear", "circular")


class TensorScatter(IndexingOp):
    """Inputs: past_cache, update (past's shape but along axis). attrs: axis (not 0, the batch),
    mode (linear: writes stay inside the cache; circular: they wrap), write_indices (one per batch
    entry; absent: zeros)."""

    name = "tensor_scatter"
    n_inputs = 2
    onnx_ops = ("TensorScatter",)
    ranks = (2, 3, 4)

    def source(self, past: TensorType, upd: TensorType, attrs: Attrs) -> tuple[int, np.ndarray]:
        """axis and, per cache element, the update step written there (-1: the cache keeps its value)."""
        if past.rank < 2 or upd.rank != past.rank:
            raise ShapeError(f"{self.name}: past {past.shape} and update {upd.shape} need one rank >= 2")
        a = _axis(self, _int(self, attrs, "axis"), past.rank)
        if a == 0:
            raise ShapeError(f"{self.name}: axis 0 is the batch")
        mode = _choice(self, attrs, "mode", TENSOR_SCATTER_MODES)
        if any(u != p for k, (u, p) in enumerate(zip(upd.shape, past.shape)) if k != a):
            raise ShapeError(f"{self.name}: update {upd.shape} differs from past {past.shape} off axis {a}")
        m, s = past.shape[a], upd.shape[a]
        if s > m:
            raise ShapeError(f"{self.name}: update length {s} exceeds the cache's {m}")
        writes = _ints(self, attrs, "write_indices", length=past.shape[0], lo=0) if "write_indices" in attrs \
            else [0] * past.shape[0]
        if mode == "linear" and any(w + s > m for w in writes):
            raise ShapeError(f"{self.name}: linear writes at {writes} of {s} overrun the cache of {m}")
        if mode == "circular" and s and any(w >= m for w in writes):
            raise ShapeError(f"{self.name}: circular write indices {writes} must be below {m}")
        table = np.full((past.shape[0], m), -1, dtype=np.int64)  # [batch, cache position]
        for b, w in enumerate(writes):
            for step in range(s):
                table[b, (w + step) % m if m else 0] = step
        shape = [past.shape[0]] + [1] * (past.rank - 1)
        shape[a] = m
        return a, np.broadcast_to(table.reshape(shape), past.shape)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        past, upd = ins
        require_dtype(self, past)
        if upd.dtype != past.dtype:
            raise DTypeError(f"{self.name}: update dtype {upd.dtype} differs from the cache's {past.dtype}")
        self.source(past, upd, attrs)
        return [past]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2:
            raise ShapeError(f"{self.name}: the cache must have rank >= 2")
        a = int(rng.integers(1, first.rank))
        m = first.shape[a]
        s = int(rng.integers(0, m + 1))
        mode = str(rng.choice(TENSOR_SCATTER_MODES))
        attrs: Attrs = {"axis": a - first.rank if rng.random() < 0.5 else a, "mode": mode}
        if rng.random() < 0.7:
            top = m - s if mode == "linear" else max(m - 1, 0)
            attrs["write_indices"] = [int(w) for w in rng.integers(0, top + 1, size=first.shape[0])]
        upd = first.with_shape(first.shape[:a] + (s,) + first.shape[a + 1:])
        self.infer([first, upd], attrs)
        return [first, upd], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        past, upd = xs
        a, src = self.source(TensorType.of(past), TensorType.of(upd), attrs)
        if upd.shape[a] == 0:
            return [past.copy()]
        picked = _take_along(upd, np.clip(src, 0, upd.shape[a] - 1), a)
        return [np.where(src >= 0, picked, past)]


def _take_along(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """x[..., idx, ...] along `axis` where idx has the shape of the result (may be longer along axis)."""
    grid = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    return x[tuple(grid)]


for _spec in (GatherElements(), GatherND(), ScatterElements(), ScatterND(), OneHot(), Compress(),
              ReverseSequence(), CenterCropPad(), TensorScatter()):
    register(_spec)
