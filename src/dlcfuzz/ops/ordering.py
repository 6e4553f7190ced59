"""Ordering and cumulative operators: top-k, hardmax, cumulative sum/product, triangular masks, eye-like, range.

Trilu's k, CumSum's axis and TopK's K are ONNX inputs; in our IR they are attributes (the ONNX rule
writes them as initializers, the import rule reads them as constants).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import DTYPES, FLOATS, TensorType
from dlcfuzz.ops.base import (
    Attrs,
    Domain,
    OpSpec,
    ValueAttr,
    check_size,
    magnitude_of_terms,
    norm_axis,
    register,
    require_arity,
    require_dtype,
)

F16_MAX_SCANNED = 16  # float16 running sums longer than this differ between legal accumulation orders
INT_SUMMANDS = Domain(lo=-20, hi=20)  # int32 running sums over <= 4096 elements stay far from overflow


def _flag(spec: OpSpec, attrs: Attrs, name: str) -> int:
    v = attrs.get(name, 0)
    if v not in (0, 1):
        raise ShapeError(f"{spec.name}: {name} must be 0 or 1, got {v!r}")
    return int(v)


class Trilu(OpSpec):
    """attrs: upper (1: keep j - i >= k; 0: keep j - i <= k), k (any integer, the diagonal offset)."""

    name = "trilu"
    family = "ordering"
    dtypes = DTYPES
    onnx_ops = ("Trilu",)
    ranks = (2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank < 2:
            raise ShapeError(f"{self.name}: input must have rank >= 2, got {t.rank}")
        _flag(self, attrs, "upper")
        if not isinstance(attrs.get("k", 0), int):
            raise ShapeError(f"{self.name}: k must be an integer")
        return [t]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        self.infer([first], {})
        rows, cols = first.shape[-2:]
        u = rng.random()
        if u < 0.15:
            k = 0
        elif u < 0.3:  # beyond the matrix: everything or nothing kept
            k = int(rng.choice([-1, 1])) * int(rng.integers(max(rows, cols) + 1, max(rows, cols) + 100))
        else:
            k = int(rng.integers(-rows - 1, cols + 2))
        return [first], {"upper": int(rng.integers(0, 2)), "k": k}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, k = xs[0], int(attrs.get("k", 0))
        rows, cols = x.shape[-2:]
        offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
        keep = offset >= k if attrs.get("upper", 1) else offset <= k
        return [np.where(keep, x, np.zeros((), x.dtype)).astype(x.dtype)]


class Cumulative(OpSpec):
    """CumSum/CumProd. attrs: axis, exclusive (the running result before each element, starting from
    the identity), reverse (running from the end of the axis)."""

    family = "ordering"
    dtypes = FLOATS + ("int32", "int64")
    ranks = (1, 2, 3, 4)

    def __init__(self, name: str, onnx_op: str, kind: str) -> None:
        self.name = name
        self.onnx_ops = (onnx_op,)
        self.kind = kind

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        norm_axis(self, int(attrs.get("axis", 0)), t.rank)
        _flag(self, attrs, "exclusive")
        _flag(self, attrs, "reverse")
        return [t]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        self.infer([first], {})
        a = int(rng.integers(first.rank))
        if first.dtype == "float16" and first.shape[a] > F16_MAX_SCANNED:
            raise ShapeError(f"{self.name}: float16 running sums of {first.shape[a]} terms are too long to compare")
        attrs = {"axis": a - (first.rank if rng.random() < 0.3 else 0),
                 "exclusive": int(rng.integers(0, 2)), "reverse": int(rng.integers(0, 2))}
        return [first], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if self.kind == "prod":  # running products stay finite and far from integer overflow
            n = max(ins[0].shape[int(attrs.get("axis", 0))], 1)
            bound = float(min(1.5, 2.0 ** (20.0 / n)))
            return Domain(lo=-bound, hi=bound)
        return INT_SUMMANDS if ins[0].dtype.startswith("int") else Domain()

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axis = int(attrs.get("axis", 0)) % x.ndim
        w = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
        if attrs.get("reverse", 0):
            w = np.flip(w, axis)
        scan = np.cumsum if self.kind == "sum" else np.cumprod
        if attrs.get("exclusive", 0):  # shifted by one along the axis, the identity first
            identity = np.full_like(np.take(w, [0], axis=axis) if w.shape[axis] else w, 0 if self.kind == "sum" else 1)
            head = np.take(w, np.arange(max(w.shape[axis] - 1, 0)), axis=axis)
            w = np.concatenate([identity, head], axis=axis) if w.shape[axis] else w
        with np.errstate(over="ignore", invalid="ignore"):
            y = scan(w, axis=axis)
        if attrs.get("reverse", 0):
            y = np.flip(y, axis)
        return [np.ascontiguousarray(y).astype(x.dtype)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        if self.kind == "sum":  # terms of either sign cancel: the running sum of magnitudes bounds the error
            return magnitude_of_terms(self, xs, attrs)
        n = xs[0].shape[int(attrs.get("axis", 0))] if xs[0].ndim else 1
        return np.abs(y) * max(n, 1)  # a product of n terms rounds n times


class Hardmax(OpSpec):
    """attrs: axis. 1 at the first maximum along the axis, 0 elsewhere (opset 13 semantics)."""

    name = "hardmax"
    family = "ordering"
    dtypes = FLOATS
    onnx_ops = ("Hardmax",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        norm_axis(self, int(attrs.get("axis", -1)), t.rank)
        return [t]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        self.infer([first], {})
        a = int(rng.integers(first.rank))
        return [first], {"axis": a - (first.rank if rng.random() < 0.4 else 0)}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axis = int(attrs.get("axis", -1)) % x.ndim
        if x.shape[axis] == 0:
            return [x.copy()]
        best = np.expand_dims(np.argmax(x, axis=axis), axis)
        y = np.zeros_like(x)
        np.put_along_axis(y, best, 1, axis=axis)
        return [y]

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        x = xs[0]
        axis = int(attrs.get("axis", -1)) % x.ndim
        if x.shape[axis] < 2:
            return False
        s = np.sort(x.astype(np.float64), axis=axis)
        best, second = np.take(s, -1, axis), np.take(s, -2, axis)
        return bool(np.any(np.abs(best - second) <= tol * np.maximum(1.0, np.abs(best))))


class TopK(OpSpec):
    """attrs: k, axis, largest, sorted. Outputs values and int64 indices; equal values keep the lower
    index first. Only sorted=1 is modelled: with sorted=0 ONNX leaves the output order unspecified, so
    element-wise comparison could not judge it (the importer refuses sorted=0 as Unsupported)."""

    name = "topk"
    family = "ordering"
    n_outputs = 2
    dtypes = FLOATS + ("int8", "int16", "int32", "int64", "uint8")
    onnx_ops = ("TopK",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        a = norm_axis(self, int(attrs.get("axis", -1)), t.rank)
        k = attrs.get("k")
        # ONNX: K is "a single positive value" (onnxruntime accepts 0, TVM's importer returns every
        # element for it: a finding there would be about a model the standard does not define)
        if not isinstance(k, int) or not 1 <= k <= t.shape[a]:
            raise ShapeError(f"{self.name}: k={k!r} must be in [1, {t.shape[a]}]")
        _flag(self, attrs, "largest")
        if attrs.get("sorted", 1) != 1:
            raise ShapeError(f"{self.name}: only sorted=1 has a defined output order")
        shape = tuple(k if i == a else d for i, d in enumerate(t.shape))
        return [t.with_shape(shape), TensorType("int64", shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        a = int(rng.integers(first.rank))
        n = first.shape[a]
        if n == 0:
            raise ShapeError(f"{self.name}: no positive k for an empty axis")
        k = int(rng.integers(1, n + 1)) if rng.random() < 0.8 else int(rng.choice([1, n]))
        attrs = {"k": k, "axis": a - (first.rank if rng.random() < 0.4 else 0),
                 "largest": int(rng.integers(0, 2)), "sorted": 1}
        self.infer([first], attrs)
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axis, k = int(attrs.get("axis", -1)) % x.ndim, int(attrs["k"])
        # a stable sort of the keys: equal values keep the lower index first, as ONNX requires. Integers are
        # ranked in their own dtype (float64 would merge int64 values past 2^53 into false ties), descending by
        # their bitwise complement (-x - 1, or max - x unsigned: order-reversing, and it cannot overflow)
        if x.dtype.kind in "iu":
            keys = ~x if attrs.get("largest", 1) else x
        else:
            keys = -x.astype(np.float64) if attrs.get("largest", 1) else x.astype(np.float64)
        order = np.argsort(keys, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis)
        return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """Any two values along the axis within tol of each other can swap places (and so change the
        indices, and which values are chosen at the k-th boundary)."""
        x = xs[0]
        if x.dtype.kind != "f" or int(attrs["k"]) == 0:
            return False
        axis = int(attrs.get("axis", -1)) % x.ndim
        if x.shape[axis] < 2:
            return False
        s = np.sort(x.astype(np.float64), axis=axis)
        lo, hi = np.take(s, np.arange(s.shape[axis] - 1), axis), np.take(s, np.arange(1, s.shape[axis]), axis)
        scale = np.maximum(1.0, np.maximum(np.abs(lo), np.abs(hi)))
        return bool(np.any(hi - lo <= tol * scale))


class EyeLike(OpSpec):
    """attrs: k (diagonal offset), dtype (the output's; None: the input's). Ones on the k-th diagonal."""

    name = "eye_like"
    family = "ordering"
    dtypes = DTYPES
    onnx_ops = ("EyeLike",)
    ranks = (2,)
    type_only_inputs = (0,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if t.rank != 2:
            raise ShapeError(f"{self.name}: input must have rank 2, got {t.rank}")
        dtype = attrs.get("dtype") or t.dtype
        if dtype not in DTYPES:
            raise ShapeError(f"{self.name}: output dtype {dtype!r} not supported")
        if not isinstance(attrs.get("k", 0), int):
            raise ShapeError(f"{self.name}: k must be an integer")
        return [TensorType(dtype, t.shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        self.infer([first], {})
        rows, cols = first.shape
        k = int(rng.integers(-rows - 1, cols + 2)) if rng.random() < 0.7 else 0
        dtype = None if rng.random() < 0.4 else str(rng.choice(DTYPES))
        return [first], {"k": k, "dtype": dtype}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        rows, cols = xs[0].shape
        dtype = attrs.get("dtype") or str(xs[0].dtype)
        return [np.eye(rows, cols, k=int(attrs.get("k", 0)), dtype=dtype)]


class Range(OpSpec):
    """No tensor inputs; attrs start, limit, delta (numbers) and dtype. Output 1-D of
    max(ceil((limit - start) / delta), 0) elements start + i * delta, computed in the dtype."""

    name = "range"
    family = "ordering"
    n_inputs = 0
    dtypes = ("float16", "float32", "float64", "int16", "int32", "int64")  # float16: from opset 27
    onnx_ops = ("Range",)
    ranks = (0, 1)

    @staticmethod
    def _scalars(attrs: Attrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        dt = np.dtype(attrs["dtype"])
        return tuple(np.asarray(attrs[k]).astype(dt) for k in ("start", "limit", "delta"))  # type: ignore[return-value]

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        if attrs.get("dtype") not in self.dtypes:
            raise ShapeError(f"{self.name}: dtype {attrs.get('dtype')!r} not in {list(self.dtypes)}")
        start, limit, delta = self._scalars(attrs)
        if delta == 0:
            raise ShapeError(f"{self.name}: delta must not be zero")
        # ONNX's count: in the dtype for integers, ceil of the float quotient for floats
        n = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
        return [TensorType(attrs["dtype"], (n,))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        for _ in range(10):
            if first.dtype.startswith("int"):
                start = int(rng.integers(-20, 21))
                delta = int(rng.choice([-3, -2, -1, 1, 2, 3, 5]))
                limit = start + int(rng.integers(-10, 40))
            else:  # dyadic steps: every start + i * delta is exact, no element near a rounding boundary
                start = float(rng.integers(-40, 41)) / 4
                delta = float(rng.choice([-1.5, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0]))
                limit = start + float(rng.integers(-20, 60)) / 4 + 0.125  # never an exact multiple
            attrs: Attrs = {"start": start, "limit": limit, "delta": delta, "dtype": first.dtype}
            try:
                check_size(self, self.infer([], attrs)[0].shape)
            except ShapeError:
                continue
            return [], attrs
        raise ShapeError(f"{self.name}: no small range sampled")

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        # limit follows start and delta (with_values): the length is structure
        return {"start": ValueAttr(attrs["dtype"]), "delta": ValueAttr(attrs["dtype"], Domain(nonzero=True))}

    def with_values(self, ins: Sequence[TensorType], attrs: Attrs, drawn: Attrs) -> Attrs | None:
        """The drawn start and delta with limit moved to keep the length n; None where an element (or the limit)
        leaves the dtype, or a float element, its i * delta or the limit is not exact in it (a kernel may add delta
        up or multiply it out: both give the exact elements only then)."""
        new = {**attrs, **drawn}
        n = self.infer([], attrs)[0].shape[0]
        dt = np.dtype(attrs["dtype"])
        start, delta = Fraction(new["start"]), Fraction(new["delta"])
        if dt.kind in "iu":
            info = np.iinfo(dt)
            # the elements lie between the first and the limit; a kernel counts limit - start in the dtype too,
            # and divides it by delta in float64
            ends = (int(start), int(start + n * delta), int(n * delta))
            if not all(info.min <= e <= info.max for e in ends) or math.ceil(float(n * delta) / float(delta)) != n:
                return None
            new["limit"] = ends[1]
        else:
            limit = start + (n - Fraction(1, 2)) * delta
            values = [start + i * delta for i in range(n)] + [i * delta for i in range(n)] + [limit]
            if not all(abs(e) <= Fraction(float(np.finfo(dt).max)) for e in values):
                return None
            if not all(Fraction(float(np.asarray(float(e)).astype(dt))) == e for e in values[:-1]):
                return None
            new["limit"] = float(np.asarray(float(limit)).astype(dt))
        try:
            return new if self.infer([], new)[0].shape[0] == n else None
        except ShapeError:
            return None

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        start, _, delta = self._scalars(attrs)
        n = self.infer([], attrs)[0].shape[0]
        return [(start + np.arange(n).astype(start.dtype) * delta).astype(attrs["dtype"])]


register(Trilu())
register(Cumulative("cumsum", "CumSum", "sum"))
register(Cumulative("cumprod", "CumProd", "prod"))
register(Hardmax())
register(TopK())
register(EyeLike())
register(Range())
