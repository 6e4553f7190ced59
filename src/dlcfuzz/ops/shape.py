"""Shape operators: data movement whose shape-like operands are attributes.

Target shapes, perms, axes, pads, starts/ends/steps, repeats, split sizes and
resize scales/sizes are node attributes (JSON lists) in our IR; the ONNX rules
(lower/onnx/shape.py) emit them as opset-18 initializers and import them back from
constants (or from the attribute forms of older opsets). Gather indices stay a tensor
input with a strict domain, so generators feed them only in-range constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import DTYPES, FLOATS, TensorType
from dlcfuzz.ops.base import (
    ANY,
    FOLLOWS,
    Attrs,
    Domain,
    OpSpec,
    check_size,
    register,
    require_arity,
    require_dtype,
)

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INDEX_DTYPES = ("int32", "int64")


# ---- attribute helpers ---------------------------------------------------


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _int(spec: OpSpec, attrs: Attrs, key: str) -> int:
    if key not in attrs:
        raise ShapeError(f"{spec.name}: attribute {key!r} is missing")
    v = attrs[key]
    if not _is_int(v):
        raise ShapeError(f"{spec.name}: attribute {key!r} must be an int, got {v!r}")
    return int(v)


def _ints(spec: OpSpec, attrs: Attrs, key: str, length: int | None = None, lo: int | None = None) -> list[int]:
    if key not in attrs:
        raise ShapeError(f"{spec.name}: attribute {key!r} is missing")
    v = attrs[key]
    if not isinstance(v, (list, tuple)) or not all(_is_int(x) for x in v):
        raise ShapeError(f"{spec.name}: attribute {key!r} must be a list of ints, got {v!r}")
    out = [int(x) for x in v]
    if any(not INT64_MIN <= x <= INT64_MAX for x in out):
        raise ShapeError(f"{spec.name}: attribute {key!r} values must fit in int64, got {out}")
    if length is not None and len(out) != length:
        raise ShapeError(f"{spec.name}: attribute {key!r} needs {length} values, got {len(out)}")
    if lo is not None and any(x < lo for x in out):
        raise ShapeError(f"{spec.name}: attribute {key!r} values must be >= {lo}, got {out}")
    return out


def _choice(spec: OpSpec, attrs: Attrs, key: str, allowed: Sequence[str]) -> str:
    v = attrs.get(key)
    if not isinstance(v, str) or v not in allowed:
        raise ShapeError(f"{spec.name}: attribute {key!r} must be one of {list(allowed)}, got {v!r}")
    return v


def _axis(spec: OpSpec, axis: int, rank: int, extra: int = 0) -> int:
    """Normalize an axis in [-rank-extra, rank+extra-1]... with `extra` slack at the top (flatten)."""
    if not -rank <= axis < rank + extra:
        raise ShapeError(f"{spec.name}: axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _axes(spec: OpSpec, axes: Sequence[int], rank: int) -> list[int]:
    """Normalize a list of axes in [-rank, rank-1]; duplicates are an error."""
    out = [_axis(spec, a, rank) for a in axes]
    if len(set(out)) != len(out):
        raise ShapeError(f"{spec.name}: repeated axes {list(axes)}")
    return out


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _maybe_negative(rng: np.random.Generator, axis: int, rank: int) -> int:
    return axis - rank if rng.random() < 0.3 else axis


def _one_input(spec: OpSpec, ins: Sequence[TensorType]) -> TensorType:
    require_arity(spec, ins)
    require_dtype(spec, ins[0])
    return ins[0]


class ShapeOp(OpSpec):
    family = "shape"
    dtypes = DTYPES


# ---- reshape -------------------------------------------------------------


class Reshape(ShapeOp):
    """attrs: shape (ONNX Reshape semantics with allowzero=0: 0 copies the input dim, one -1 is inferred)."""

    name = "reshape"
    onnx_ops = ("Reshape",)

    def resolve(self, t: TensorType, shape: list[int]) -> tuple[int, ...]:
        if any(s < -1 for s in shape):
            raise ShapeError(f"{self.name}: target shape {shape} has values below -1")
        if shape.count(-1) > 1:
            raise ShapeError(f"{self.name}: target shape {shape} has more than one -1")
        out = []
        for i, s in enumerate(shape):
            if s == 0:
                if i >= t.rank:
                    raise ShapeError(f"{self.name}: 0 at position {i} has no input dim to copy (rank {t.rank})")
                out.append(t.shape[i])
            else:
                out.append(s)
        if -1 in out:
            known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
            if known == 0 or t.size % known:
                raise ShapeError(f"{self.name}: cannot infer -1 in {shape} for {t.size} elements")
            out[out.index(-1)] = t.size // known
        if int(np.prod(out, dtype=np.int64)) != t.size:
            raise ShapeError(f"{self.name}: target shape {shape} does not hold {t.size} elements of {t.shape}")
        return tuple(out)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        return [t.with_shape(self.resolve(t, _ints(self, attrs, "shape")))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        n = first.size
        if n == 0:
            raise ShapeError(f"{self.name}: no sampling for empty tensors")
        rank = int(rng.integers(0 if n == 1 else 1, 5))
        dims = [1] * rank
        for p in _prime_factors(n):
            dims[int(rng.integers(rank))] *= p
        shape = list(dims)
        if rank and rng.random() < 0.3:
            shape[int(rng.integers(rank))] = -1
        for i in range(min(rank, first.rank)):
            if shape[i] == first.shape[i] and rng.random() < 0.3:
                shape[i] = 0
        return [first], {"shape": shape}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [xs[0].reshape(self.resolve(TensorType.of(xs[0]), list(attrs["shape"])))]


# ---- transpose -----------------------------------------------------------


class Transpose(ShapeOp):
    name = "transpose"
    onnx_ops = ("Transpose",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        perm = _ints(self, attrs, "perm")
        if sorted(perm) != list(range(t.rank)):
            raise ShapeError(f"{self.name}: perm {perm} is not a permutation of range({t.rank})")
        return [t.with_shape(tuple(t.shape[p] for p in perm))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {"perm": [int(p) for p in rng.permutation(first.rank)]}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.transpose(xs[0], attrs["perm"])]


# ---- concat --------------------------------------------------------------


class Concat(ShapeOp):
    name = "concat"
    n_inputs = -1
    unknown_dims = FOLLOWS
    onnx_ops = ("Concat",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        t = ins[0]
        require_dtype(self, t)
        if any(u.dtype != t.dtype for u in ins):
            raise DTypeError(f"{self.name}: inputs must share a dtype, got {[u.dtype for u in ins]}")
        if t.rank == 0:
            raise ShapeError(f"{self.name}: inputs must have rank >= 1")
        if any(u.rank != t.rank for u in ins):
            raise ShapeError(f"{self.name}: inputs must share a rank, got {[u.shape for u in ins]}")
        axis = _axis(self, _int(self, attrs, "axis"), t.rank)
        for u in ins:
            if any(a != b for i, (a, b) in enumerate(zip(u.shape, t.shape)) if i != axis):
                raise ShapeError(f"{self.name}: shapes {[u.shape for u in ins]} differ off axis {axis}")
        shape = list(t.shape)
        shape[axis] = sum(u.shape[axis] for u in ins)
        return [t.with_shape(tuple(shape))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: inputs must have rank >= 1")
        axis = int(rng.integers(first.rank))
        ins = [first]
        for _ in range(int(rng.integers(0, 3))):
            shape = list(first.shape)
            shape[axis] = int(rng.integers(1, 5))
            ins.append(first.with_shape(tuple(shape)))
        attrs = {"axis": _maybe_negative(rng, axis, first.rank)}
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.concatenate(list(xs), axis=attrs["axis"])]


# ---- split ---------------------------------------------------------------


class Split(ShapeOp):
    """attrs: axis, split (sizes, one output per size)."""

    name = "split"
    onnx_ops = ("Split",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        if t.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        axis = _axis(self, _int(self, attrs, "axis"), t.rank)
        sizes = _ints(self, attrs, "split", lo=0)
        if not sizes:
            raise ShapeError(f"{self.name}: split needs at least one size")
        if sum(sizes) != t.shape[axis]:
            raise ShapeError(f"{self.name}: sizes {sizes} do not sum to dim {t.shape[axis]} of axis {axis}")
        out = []
        for s in sizes:
            shape = list(t.shape)
            shape[axis] = s
            out.append(t.with_shape(tuple(shape)))
        return out

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        axis = int(rng.integers(first.rank))
        d = first.shape[axis]
        if d == 0:
            raise ShapeError(f"{self.name}: no sampling for empty tensors")
        k = int(rng.integers(1, min(d, 3) + 1))
        cuts = sorted(int(c) for c in rng.choice(np.arange(1, d), size=k - 1, replace=False)) if k > 1 else []
        bounds = [0, *cuts, d]
        sizes = [bounds[i + 1] - bounds[i] for i in range(k)]
        return [first], {"axis": _maybe_negative(rng, axis, first.rank), "split": sizes}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        cuts = np.cumsum(attrs["split"])[:-1]
        return list(np.split(xs[0], cuts, axis=attrs["axis"]))


# ---- slice ---------------------------------------------------------------


def slice_bounds(d: int, start: int, end: int, step: int) -> tuple[int, int, int]:
    """ONNX Slice clamping for one axis: (start, end, length); end may be -1 for negative steps."""
    if start < 0:
        start += d
    if end < 0:
        end += d
    if step > 0:
        start = min(max(start, 0), d)
        end = min(max(end, 0), d)
        n = max(0, -(-(end - start) // step))
    else:
        start = min(max(start, 0), d - 1)
        end = min(max(end, -1), d - 1)
        n = max(0, -(-(start - end) // -step))
    return start, end, n


class Slice(ShapeOp):
    """attrs: starts, ends, axes, steps (same length; ONNX clamping, negative steps allowed)."""

    name = "slice"
    onnx_ops = ("Slice",)
    ranks = (1, 2, 3, 4)

    def parse(self, t: TensorType, attrs: Attrs) -> list[tuple[int, int, int, int]]:
        starts = _ints(self, attrs, "starts")
        n = len(starts)
        ends = _ints(self, attrs, "ends", length=n)
        axes = _axes(self, _ints(self, attrs, "axes", length=n), t.rank)
        steps = _ints(self, attrs, "steps", length=n)
        if 0 in steps:
            raise ShapeError(f"{self.name}: steps {steps} contain 0")
        return list(zip(axes, starts, ends, steps))

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        shape = list(t.shape)
        for a, s, e, st in self.parse(t, attrs):
            shape[a] = slice_bounds(t.shape[a], s, e, st)[2]
        return [t.with_shape(tuple(shape))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        r = first.rank
        if r == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        k = int(rng.integers(1, r + 1))
        attrs: Attrs = {"starts": [], "ends": [], "axes": [], "steps": []}
        for a in rng.choice(r, size=k, replace=False):
            d = first.shape[int(a)]
            if d == 0:
                raise ShapeError(f"{self.name}: no sampling for empty tensors")
            for _ in range(30):
                step = int(rng.choice([1, 1, 1, 2, 3, -1, -1, -2]))
                start = int(rng.integers(-d - 2, d + 3))
                end = int(rng.integers(-d - 2, d + 3))
                if rng.random() < 0.15:
                    end = INT64_MAX if step > 0 else INT64_MIN
                if rng.random() < 0.1:
                    start = INT64_MIN if step > 0 else INT64_MAX
                if slice_bounds(d, start, end, step)[2] >= 1:
                    break
            else:
                start, end, step = 0, d, 1
            attrs["axes"].append(_maybe_negative(rng, int(a), r))
            attrs["starts"].append(start)
            attrs["ends"].append(end)
            attrs["steps"].append(step)
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        index: list[slice] = [slice(None)] * x.ndim
        for a, s, e, st in self.parse(TensorType.of(x), attrs):
            start, end, _ = slice_bounds(x.shape[a], s, e, st)
            index[a] = slice(start, end if end >= 0 else None, st)
        return [x[tuple(index)]]


# ---- pad -----------------------------------------------------------------

PAD_MODES = ("constant", "reflect", "edge", "wrap")  # wrap: opset 19 (the ONNX rule asks for it)


class Pad(ShapeOp):
    """attrs: pads ([begin_0.., end_0..], negative crops; constant mode only), mode, value."""

    name = "pad"
    onnx_ops = ("Pad",)
    ranks = (1, 2, 3, 4)

    def parse(self, t: TensorType, attrs: Attrs) -> tuple[list[int], list[int], str, Any]:
        pads = _ints(self, attrs, "pads", length=2 * t.rank)
        mode = _choice(self, attrs, "mode", PAD_MODES)
        value = attrs.get("value", 0)
        if not isinstance(value, (int, float, np.integer, np.floating)):
            raise ShapeError(f"{self.name}: value must be a number, got {value!r}")
        if t.dtype == "bool":
            if value not in (0, 1):
                raise ShapeError(f"{self.name}: value {value!r} is not a bool")
        elif np.issubdtype(t.np_dtype, np.integer):
            info = np.iinfo(t.np_dtype)
            if not float(value).is_integer() or not info.min <= value <= info.max:
                raise ShapeError(f"{self.name}: value {value!r} is not a {t.dtype}")
        return pads[: t.rank], pads[t.rank:], mode, value

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        before, after, mode, _ = self.parse(t, attrs)
        shape = []
        for d, pb, pe in zip(t.shape, before, after):
            if d + min(pb, 0) + min(pe, 0) < 0:  # crops come first (the reference and ONNX slice, then pad)
                raise ShapeError(f"{self.name}: pads ({pb}, {pe}) crop more than dim {d}")
            if mode != "constant" and (pb < 0 or pe < 0):
                raise ShapeError(f"{self.name}: negative pads are only modelled for constant mode")
            if mode == "reflect" and (pb or pe) and (pb >= d or pe >= d):
                raise ShapeError(f"{self.name}: reflect pads ({pb}, {pe}) must be smaller than dim {d}")
            if mode in ("edge", "wrap") and (pb or pe) and d == 0:
                raise ShapeError(f"{self.name}: {mode} padding of an empty dim")
            shape.append(d + pb + pe)
        return [t.with_shape(tuple(shape))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: no padding of scalars")
        mode = str(rng.choice(["constant", "constant", "reflect", "edge"]))
        pads = []
        for d in list(first.shape) * 2:
            if mode == "reflect":
                pads.append(int(rng.integers(0, min(d - 1, 2) + 1)) if d > 1 else 0)
            elif mode == "edge":
                pads.append(int(rng.integers(0, 3)))
            else:
                pads.append(-1 if d > 2 and rng.random() < 0.15 else int(rng.integers(0, 3)))
        if first.dtype == "bool":
            value: Any = int(rng.integers(0, 2))
        elif np.issubdtype(first.np_dtype, np.integer):
            value = int(rng.integers(-5, 6)) if first.dtype != "uint8" else int(rng.integers(0, 10))
        else:
            value = float(rng.choice([0.0, 1.5, -2.25, 0.5]))
        attrs = {"pads": pads, "mode": mode, "value": value if mode == "constant" else 0}
        if rng.random() < 0.15 and all(0 <= p <= d for p, d in zip(pads, list(first.shape) * 2)):
            attrs = {"pads": pads, "mode": "wrap", "value": 0}  # circular: pads up to the dim itself
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        before, after, mode, value = self.parse(TensorType.of(x), attrs)
        crop = tuple(slice(max(-pb, 0), d - max(-pe, 0)) for d, pb, pe in zip(x.shape, before, after))
        x = x[crop]
        width = [(max(pb, 0), max(pe, 0)) for pb, pe in zip(before, after)]
        if mode == "constant":
            return [np.pad(x, width, mode="constant", constant_values=np.array(value).astype(x.dtype))]
        return [np.pad(x, width, mode=mode)]


# ---- squeeze / unsqueeze -------------------------------------------------


class Squeeze(ShapeOp):
    """attrs: axes (non-empty; every named dim must be 1)."""

    name = "squeeze"
    onnx_ops = ("Squeeze",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        axes = _axes(self, _ints(self, attrs, "axes"), t.rank)
        if not axes:
            raise ShapeError(f"{self.name}: axes must not be empty")
        if any(t.shape[a] != 1 for a in axes):
            raise ShapeError(f"{self.name}: dims {[t.shape[a] for a in axes]} at axes {axes} are not all 1")
        return [t.with_shape(tuple(d for i, d in enumerate(t.shape) if i not in axes))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        ones = [i for i, d in enumerate(first.shape) if d == 1]
        if not ones:
            raise ShapeError(f"{self.name}: {first.shape} has no dim of size 1")
        k = int(rng.integers(1, len(ones) + 1))
        axes = [_maybe_negative(rng, int(a), first.rank) for a in rng.choice(ones, size=k, replace=False)]
        return [first], {"axes": axes}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.squeeze(xs[0], axis=tuple(attrs["axes"]))]


class Unsqueeze(ShapeOp):
    """attrs: axes (non-empty; positions in the output)."""

    name = "unsqueeze"
    onnx_ops = ("Unsqueeze",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        raw = _ints(self, attrs, "axes")
        if not raw:
            raise ShapeError(f"{self.name}: axes must not be empty")
        r = t.rank + len(raw)
        axes = set(_axes(self, raw, r))
        it = iter(t.shape)
        return [t.with_shape(tuple(1 if i in axes else next(it) for i in range(r)))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        k = int(rng.integers(1, 3))
        r = first.rank + k
        return [first], {"axes": [_maybe_negative(rng, int(a), r) for a in rng.choice(r, size=k, replace=False)]}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        r = xs[0].ndim + len(attrs["axes"])
        return [np.expand_dims(xs[0], axis=tuple(sorted(a % r for a in attrs["axes"])))]


# ---- expand / flatten / tile ---------------------------------------------


class Expand(ShapeOp):
    """attrs: shape (broadcast bidirectionally with the input, like ONNX Expand)."""

    name = "expand"
    onnx_ops = ("Expand",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        shape = _ints(self, attrs, "shape", lo=0)
        try:
            out = tuple(np.broadcast_shapes(t.shape, tuple(shape)))
        except ValueError:
            raise ShapeError(f"{self.name}: {t.shape} does not broadcast with {tuple(shape)}") from None
        return [t.with_shape(out)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        shape = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
        for d in first.shape:
            if d == 1:
                shape.append(int(rng.integers(1, 4)))
            else:
                shape.append(1 if rng.random() < 0.3 else d)
        if rng.random() < 0.3 and shape:  # a shorter target is legal too
            drop = int(rng.integers(0, len(shape) + 1))
            shape = shape[drop:]
        attrs = {"shape": shape}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        out = np.broadcast_shapes(xs[0].shape, tuple(attrs["shape"]))
        return [np.broadcast_to(xs[0], out).copy()]


class Flatten(ShapeOp):
    """attrs: axis in [-r, r]."""

    name = "flatten"
    onnx_ops = ("Flatten",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        a = _axis(self, _int(self, attrs, "axis"), t.rank, extra=1)
        return [t.with_shape((int(np.prod(t.shape[:a], dtype=np.int64)), int(np.prod(t.shape[a:], dtype=np.int64))))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {"axis": int(rng.integers(-first.rank, first.rank + 1))}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [xs[0].reshape(self.infer([TensorType.of(xs[0])], attrs)[0].shape)]


class Tile(ShapeOp):
    """attrs: repeats (one per dim, >= 0)."""

    name = "tile"
    onnx_ops = ("Tile",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        reps = _ints(self, attrs, "repeats", length=t.rank, lo=0)
        return [t.with_shape(tuple(d * r for d, r in zip(t.shape, reps)))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: no tiling of scalars")
        reps = [int(rng.choice([1, 1, 2, 3])) for _ in first.shape]
        attrs = {"repeats": reps}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.tile(xs[0], tuple(attrs["repeats"])) if xs[0].ndim else xs[0].copy()]


# ---- gather --------------------------------------------------------------


class Gather(ShapeOp):
    """Inputs: data, indices (int32/int64, in [-n, n-1]); attrs: axis."""

    name = "gather"
    n_inputs = 2
    unknown_dims = FOLLOWS  # the data's; gathering along a data-dependent axis moves no output: refused
    onnx_ops = ("Gather",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        data, idx = ins
        require_dtype(self, data)
        require_dtype(self, idx, INDEX_DTYPES, what="indices")
        if data.rank == 0:
            raise ShapeError(f"{self.name}: data must have rank >= 1")
        a = _axis(self, _int(self, attrs, "axis"), data.rank)
        return [data.with_shape(data.shape[:a] + idx.shape + data.shape[a + 1:])]

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if index != 1:
            return ANY
        data = ins[0]
        try:
            n = data.shape[_axis(self, _int(self, attrs, "axis"), data.rank)]
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
        idx_shape = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        idx = TensorType(str(rng.choice(INDEX_DTYPES)), idx_shape)
        attrs = {"axis": _maybe_negative(rng, axis, first.rank)}
        check_size(self, self.infer([first, idx], attrs)[0].shape)
        return [first, idx], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        data, idx = xs
        n = data.shape[attrs["axis"] % data.ndim]
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise ValueError(f"{self.name}: indices outside [-{n}, {n - 1}]")
        return [np.take(data, idx.astype(np.int64), axis=attrs["axis"])]


# ---- resize (nearest) ----------------------------------------------------

# tf_half_pixel_for_nn is deprecated (opset 13) and ONNXRuntime skips it on scale-1 axes: not modelled.
COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
NICE_SCALES = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
# linear and cubic Resize: every coordinate transformation mode of opset 19
INTERP_MODES = ("linear", "cubic")
INTERP_COORD_MODES = COORD_MODES + ("half_pixel_symmetric", "tf_crop_and_resize")


def _interp_coords(in_n: int, out_n: int, scale: float, ctm: str, roi: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Source coordinates (float64, as ONNX's reference) of each output index, and where
    tf_crop_and_resize extrapolates."""
    y = np.arange(out_n, dtype=np.float64)
    out_w = scale * in_n  # ONNX's reference: the real-valued output length
    outside = np.zeros(out_n, dtype=bool)
    if ctm == "align_corners":
        x = np.zeros(out_n) if out_w == 1 else y * (in_n - 1) / (out_w - 1)
    elif ctm == "asymmetric":
        x = y / scale
    elif ctm == "tf_crop_and_resize":
        lo, hi = roi
        x = np.full(out_n, (hi - lo) * (in_n - 1) / 2) if out_w == 1 else y * (hi - lo) * (in_n - 1) / (out_w - 1)
        x = x + lo * (in_n - 1)
        outside = (x < 0) | (x > in_n - 1)
    elif ctm == "pytorch_half_pixel":  # a length-1 output reads coordinate 0, as the spec (and ORT) say;
        # ONNX's reference implementation reads -0.5 there
        x = np.zeros(out_n) if out_n == 1 else (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = in_n / 2 * (1 - out_n / out_w)
        x = offset + (y + 0.5) / scale - 0.5
    return x, outside


def _interp_coeffs(ratio: float, scale: float, mode: str, a: float, antialias: bool) -> tuple[int, np.ndarray]:
    """(offset of the first tap from the left neighbour, tap weights) for a source coordinate whose
    distance from its left neighbour is `ratio` in (0, 1] (ONNX's reference)."""
    if antialias and scale < 1:  # the kernel widens by 1/scale when downsampling
        start = int(np.floor((-1 if mode == "linear" else -2) / scale) + 1)
        d = np.abs((np.arange(start, 2 - start) - ratio) * scale)
        if mode == "linear":
            w = np.clip(1 - d, 0, 1)
        else:
            w = np.where(d <= 1, (a + 2) * d**3 - (a + 3) * d**2 + 1,
                         np.where(d < 2, a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a, 0.0))
        return start, w / w.sum()
    if mode == "linear":
        return 0, np.array([1 - ratio, ratio])
    r = ratio
    return -1, np.array([
        ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
        ((a + 2) * r - (a + 3)) * r * r + 1,
        ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
        ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a,
    ])


def interp_matrix(in_n: int, out_n: int, scale: float, attrs: Attrs, roi: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Linear/cubic Resize along one axis as a matrix W (out_n x in_n, y = W @ x) and the mask of
    output indices tf_crop_and_resize extrapolates. Taps beyond the input read its edge (ONNX's
    edge padding), or are dropped and the rest renormalized with exclude_outside."""
    mode, ctm = attrs["mode"], attrs["coordinate_transformation_mode"]
    x, outside = _interp_coords(in_n, out_n, scale, ctm, roi)
    w = np.zeros((out_n, in_n))
    for o in range(out_n):
        base = int(np.ceil(x[o])) - 1  # the left neighbour; an integer coordinate is its right one
        start, c = _interp_coeffs(float(x[o] - base), scale, mode, attrs.get("cubic_coeff_a", -0.75),
                                  bool(attrs.get("antialias", 0)))
        idx = base + start + np.arange(len(c))
        if attrs.get("exclude_outside", 0):
            c = np.where((idx >= 0) & (idx < in_n), c, 0.0)
            total = c.sum()
            c = c / total if total else c  # every tap outside: the coordinate is extrapolated
        np.add.at(w[o], np.clip(idx, 0, in_n - 1), c)
    return w, outside


def _resize_coords(in_n: int, out_n: int, scale: np.float32, ctm: str) -> np.ndarray:
    """Source coordinates in float32, as ONNXRuntime computes them."""
    o = np.arange(out_n, dtype=np.float32)
    half = np.float32(0.5)
    with np.errstate(all="ignore"):
        if ctm == "half_pixel":
            return (o + half) / scale - half
        if ctm == "asymmetric":
            return o / scale
        if ctm == "pytorch_half_pixel":
            return (o + half) / scale - half if out_n > 1 else np.zeros_like(o)
        # align_corners
        if out_n == 1:
            return np.zeros_like(o)
        return o * np.float32(in_n - 1) / np.float32(out_n - 1)


def nearest_indices(in_n: int, out_n: int, scale: float, ctm: str, nm: str) -> np.ndarray:
    """Source index of each output index along one axis of a nearest Resize."""
    if in_n == out_n and np.float32(scale) == 1:
        # an unchanged axis reads its own index, as ONNXRuntime and ONNX's reference give it: align_corners'
        # float32 product o * (in - 1) rounds past 2^24 (an axis of 5,798 from o = 2,895), and ceil then
        # moved a third of the rows by one, a false 'wrong-result' finding
        return np.arange(out_n, dtype=np.int64)
    x = _resize_coords(in_n, out_n, np.float32(scale), ctm).astype(np.float64)  # exact widening
    if nm == "floor":
        i = np.floor(x)
    elif nm == "ceil":
        i = np.ceil(x)
    else:
        away = np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5))  # std::round: ties away from zero
        if nm == "round_prefer_floor":
            tie = x == np.trunc(x) + 0.5
            i = np.where(tie, np.floor(x), away)
        else:
            i = away
    return np.clip(i, 0, max(in_n - 1, 0)).astype(np.int64)


def _pow2(f: Fraction) -> bool:
    return f > 0 and f.numerator & (f.numerator - 1) == 0 and f.denominator & (f.denominator - 1) == 0


def _ambiguous(in_n: int, out_n: int, scale: Fraction, ctm: str, nm: str) -> bool:
    """Does some exact source coordinate fall on a rounding boundary that float error could move?

    Compilers compute coordinates in float32 in different orders (x/s, x*(in/out), with epsilons);
    a boundary hit is only reproducible when every factor involved is a power of two.
    """
    half = Fraction(1, 2)
    if ctm == "align_corners":
        exact = out_n == 1 or in_n == 1 or _pow2(Fraction(in_n - 1, out_n - 1))
    else:
        exact = _pow2(scale)
    if exact:
        return False
    for o in range(out_n):
        if ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and out_n > 1):
            x = (o + half) / scale - half
        elif ctm == "asymmetric":
            x = o / scale
        elif ctm == "align_corners" and out_n > 1:
            x = Fraction(o * (in_n - 1), out_n - 1)
        else:
            continue
        if o == 0 and ctm in ("asymmetric", "align_corners"):
            continue  # 0 times anything is exact
        if nm in ("floor", "ceil"):
            if x.denominator == 1:
                return True
        elif x.denominator == 2:
            return True
    return False


MAX_INTERP_ENTRIES = 1 << 22  # a linear/cubic Resize axis' interpolation matrix: 32 MiB of float64


class Resize(ShapeOp):
    """Resize. attrs: exactly one of scales (floats) / sizes (ints), one per dim;
    coordinate_transformation_mode; nearest_mode; mode ("nearest" when absent, "linear", "cubic").
    linear/cubic (float inputs) also take every coordinate mode of opset 19, cubic_coeff_a,
    exclude_outside, antialias, and for tf_crop_and_resize roi (2 * rank floats, starts then ends)
    and extrapolation_value; they are a matrix product per resized axis (interp_matrix)."""

    name = "resize"
    onnx_ops = ("Resize",)
    ranks = (1, 2, 3, 4)

    def parse(self, t: TensorType, attrs: Attrs) -> tuple[tuple[int, ...], list[float], str, str]:
        """(output shape, per-axis scale as ONNXRuntime uses it, ctm, nearest_mode)."""
        if t.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        mode = attrs.get("mode", "nearest")
        if mode not in ("nearest",) + INTERP_MODES:
            raise ShapeError(f"{self.name}: mode {mode!r} is not nearest, linear or cubic")
        if mode != "nearest":
            self._check_interp(t, attrs)
        ctm = _choice(self, attrs, "coordinate_transformation_mode", COORD_MODES if mode == "nearest" else INTERP_COORD_MODES)
        nm = _choice(self, attrs, "nearest_mode", NEAREST_MODES)
        has_scales, has_sizes = "scales" in attrs, "sizes" in attrs
        if has_scales == has_sizes:
            raise ShapeError(f"{self.name}: exactly one of scales / sizes is required")
        if has_sizes:
            sizes = _ints(self, attrs, "sizes", length=t.rank, lo=1)
            if 0 in t.shape:
                raise ShapeError(f"{self.name}: cannot resize an empty dim to a size")
            scales = [float(np.float32(o) / np.float32(i)) for o, i in zip(sizes, t.shape)]
            return self._within_matrices(t, tuple(sizes), scales, attrs), scales, ctm, nm
        scales = attrs["scales"]
        if not isinstance(scales, (list, tuple)) or len(scales) != t.rank or not all(
                isinstance(s, (int, float, np.integer, np.floating)) and not isinstance(s, (bool, np.bool_))
                for s in scales):
            raise ShapeError(f"{self.name}: scales must be {t.rank} numbers, got {scales!r}")
        s32 = [np.float32(s) for s in scales]
        if not all(np.isfinite(s) and s > 0 for s in s32):
            raise ShapeError(f"{self.name}: scales {list(scales)} must be finite and > 0")
        out = tuple(int(np.floor(np.float32(d) * s)) for d, s in zip(t.shape, s32))
        per_axis = [float(s) for s in s32]
        return self._within_matrices(t, out, per_axis, attrs), per_axis, ctm, nm

    def _within_matrices(self, t: TensorType, out: tuple[int, ...], scales: list[float], attrs: Attrs
                         ) -> tuple[int, ...]:
        """`out`, where each linear/cubic axis that interpolates has an interpolation matrix (in x out: the
        reference's and every lowering's form) within MAX_INTERP_ENTRIES: a long axis resized (10,239 -> 30,717,
        2.5 GB of float64) made the reference exceed a worker's memory, a false 'oom' finding."""
        if attrs.get("mode", "nearest") != "nearest":
            for ax, (i, o) in enumerate(zip(t.shape, out)):
                if i * o > MAX_INTERP_ENTRIES and self._axis_coords(t, ax, i, o, scales[ax], attrs) is not None:
                    raise ShapeError(f"{self.name}: a {attrs['mode']} axis of {i} -> {o} needs a {i}x{o} "
                                     f"interpolation matrix, over {MAX_INTERP_ENTRIES} entries")
        return out

    @staticmethod
    def _axis_coords(t: TensorType, ax: int, i: int, o: int, sc: float, attrs: Attrs
                     ) -> tuple[float, tuple[float, float]] | None:
        """(scale, roi) of a linear/cubic axis that interpolates, None where it is the identity (every output
        reads its own input index: no matrix is built)."""
        if "sizes" in attrs:  # the exact ratio (ONNX's reference): output_width is then exactly o
            sc = o / i
        roi = attrs.get("roi") or [0.0] * t.rank + [1.0] * t.rank
        pair = (roi[ax], roi[t.rank + ax])
        if i == o:
            x, outside = _interp_coords(i, o, sc, attrs["coordinate_transformation_mode"], pair)
            if not outside.any() and np.array_equal(x, np.arange(i)):
                return None
        return sc, pair

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        return [t.with_shape(self.parse(t, attrs)[0])]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        r = first.rank
        if r == 0 or 0 in first.shape:
            raise ShapeError(f"{self.name}: needs a non-empty tensor of rank >= 1")
        for _ in range(30):
            ctm = str(rng.choice(COORD_MODES))
            nm = str(rng.choice(NEAREST_MODES))
            use_sizes = rng.random() < 0.5
            spatial = r == 4 and rng.random() < 0.8  # NCHW, resizing H and W only: Relax's resize2d
            changed = [i for i in range(r) if not spatial or i >= 2]
            scales, sizes = [], []
            ok = True
            for i, d in enumerate(first.shape):
                if i not in changed:
                    scales.append(1.0)
                    sizes.append(d)
                    continue
                if use_sizes:
                    o = int(rng.integers(1, min(2 * d, 8) + 1))
                    sizes.append(o)
                    f = Fraction(o, d)
                else:
                    fits = [s for s in NICE_SCALES if np.floor(d * s) >= 1]
                    whole = [s for s in fits if float(d * s).is_integer()]
                    s = float(rng.choice(whole if whole and rng.random() < 0.8 else fits))
                    scales.append(s)
                    o = int(np.floor(d * s))
                    f = Fraction(s)
                if _ambiguous(d, o, f, ctm, nm) or (ctm == "align_corners" and o == 1 and d > 1):
                    ok = False
                    break
            if not ok:
                continue
            attrs: Attrs = {"coordinate_transformation_mode": ctm, "nearest_mode": nm}
            attrs["sizes" if use_sizes else "scales"] = sizes if use_sizes else scales
            out = self.infer([first], attrs)[0].shape
            if 0 in out:
                continue
            check_size(self, out)
            if first.dtype in FLOATS and rng.random() < 0.5:
                attrs = self._sample_interp(rng, first, attrs, out)
            return [first], attrs
        raise ShapeError(f"{self.name}: no unambiguous resize found for {first.shape}")

    def _sample_interp(self, rng: np.random.Generator, first: TensorType, attrs: Attrs,
                       out: tuple[int, ...]) -> Attrs:
        """Linear or cubic on the nearest instance's shapes, over any axes. Coordinates that depend on the
        real-valued output length (align_corners, half_pixel_symmetric, tf_crop_and_resize) only where
        it is whole."""
        whole = "sizes" in attrs or all(float(np.float32(d) * np.float32(s)).is_integer()
                                        for d, s in zip(first.shape, attrs["scales"]))
        modes = INTERP_COORD_MODES if whole else ("half_pixel", "asymmetric", "pytorch_half_pixel")
        ctm = str(rng.choice(modes))
        if ctm == "align_corners" and any(o == 1 and d > 1 for o, d in zip(out, first.shape)):
            ctm = "half_pixel"
        mode = str(rng.choice(INTERP_MODES))
        antialias = int(rng.random() < 0.3)
        exclude = int(rng.random() < 0.3)
        new: Attrs = {**attrs, "mode": mode, "coordinate_transformation_mode": ctm,
                      "antialias": antialias, "exclude_outside": exclude}
        if mode == "cubic":
            new["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5, -0.25]))
        if ctm == "tf_crop_and_resize":
            # mostly on the resized axes; the roi crops an axis of scale 1 too
            cropped = [k for k in range(first.rank) if out[k] != first.shape[k] or rng.random() < 0.2]
            starts = [float(rng.choice([0.0, 0.0, 0.25, -0.25])) if k in cropped else 0.0 for k in range(first.rank)]
            new["roi"] = starts + [float(s + rng.choice([1.0, 0.5, 1.25])) if k in cropped else 1.0
                                   for k, s in enumerate(starts)]
            new["extrapolation_value"] = float(rng.choice([0.0, 10.0, -1.5]))
        return new

    def _check_interp(self, t: TensorType, attrs: Attrs) -> None:
        if t.dtype not in FLOATS:
            raise DTypeError(f"{self.name}: {attrs.get('mode')} interpolation of {t.dtype} is not modelled")
        a = attrs.get("cubic_coeff_a", -0.75)
        ev = attrs.get("extrapolation_value", 0.0)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in (a, ev)):
            raise ShapeError(f"{self.name}: cubic_coeff_a / extrapolation_value must be finite numbers")
        if attrs.get("exclude_outside", 0) not in (0, 1) or attrs.get("antialias", 0) not in (0, 1):
            raise ShapeError(f"{self.name}: exclude_outside and antialias are 0 or 1")
        if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
            roi = attrs.get("roi")
            if not isinstance(roi, (list, tuple)) or len(roi) != 2 * t.rank or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in roi):
                raise ShapeError(f"{self.name}: tf_crop_and_resize needs roi, {2 * t.rank} finite numbers")

    def interp(self, t: TensorType, attrs: Attrs) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """Per axis: (W, extrapolated mask) of linear/cubic, None where the axis is unchanged."""
        out, scales, _, _ = self.parse(t, attrs)
        mats: list[tuple[np.ndarray, np.ndarray] | None] = []
        for ax, (i, o, sc) in enumerate(zip(t.shape, out, scales)):
            axis = self._axis_coords(t, ax, i, o, sc, attrs)
            mats.append(None if axis is None else interp_matrix(i, o, axis[0], attrs, axis[1]))
        return mats

    def extrapolated(self, t: TensorType, attrs: Attrs) -> np.ndarray | None:
        """Where tf_crop_and_resize writes extrapolation_value (broadcastable to the output), or None."""
        mats = self.interp(t, attrs)
        masks = [m[1] for m in mats if m is not None]
        if not any(mk.any() for mk in masks):
            return None
        full = np.zeros([1] * t.rank, dtype=bool)
        for ax, m in enumerate(mats):
            if m is not None:
                full = full | m[1].reshape([-1 if k == ax else 1 for k in range(t.rank)])
        return full

    def indices(self, t: TensorType, attrs: Attrs) -> list[np.ndarray]:
        out, scales, ctm, nm = self.parse(t, attrs)
        return [nearest_indices(i, o, s, ctm, nm) for i, o, s in zip(t.shape, out, scales)]

    def _interp_ref(self, x: np.ndarray, attrs: Attrs, magnitudes: bool = False) -> np.ndarray:
        t = TensorType.of(x)
        y = np.abs(x.astype(np.float64)) if magnitudes else x.astype(np.float64)
        for ax, m in enumerate(self.interp(t, attrs)):
            if m is not None:
                w = np.abs(m[0]) if magnitudes else m[0]
                y = np.moveaxis(np.moveaxis(y, ax, -1) @ w.T, -1, ax)
        mask = self.extrapolated(t, attrs)
        if mask is not None:
            ev = attrs.get("extrapolation_value", 0.0)
            y = np.where(mask, abs(ev) if magnitudes else ev, y)
        return y

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        if attrs.get("mode", "nearest") == "nearest":
            return np.abs(y)
        return self._interp_ref(xs[0], attrs, magnitudes=True)  # cubic taps have either sign

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        if attrs.get("mode", "nearest") != "nearest":
            return [self._interp_ref(x, attrs).astype(x.dtype)]
        for axis, idx in enumerate(self.indices(TensorType.of(x), attrs)):
            x = np.take(x, idx, axis=axis)
        return [x]


# ---- depth_to_space / space_to_depth / identity --------------------------


class DepthToSpace(ShapeOp):
    """attrs: blocksize, mode (DCR or CRD). NCHW input."""

    name = "depth_to_space"
    onnx_ops = ("DepthToSpace",)
    ranks = (4,)

    def parse(self, t: TensorType, attrs: Attrs) -> tuple[int, str]:
        if t.rank != 4:
            raise ShapeError(f"{self.name}: input must have rank 4, got {t.rank}")
        b = _int(self, attrs, "blocksize")
        mode = _choice(self, attrs, "mode", ("DCR", "CRD"))
        if b < 1 or t.shape[1] % (b * b):
            raise ShapeError(f"{self.name}: channels {t.shape[1]} not divisible by blocksize {b} squared")
        return b, mode

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        b, _ = self.parse(t, attrs)
        n, c, h, w = t.shape
        return [t.with_shape((n, c // (b * b), h * b, w * b))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 4:
            raise ShapeError(f"{self.name}: input must have rank 4")
        fits = [b for b in (2, 3) if first.shape[1] % (b * b) == 0 and first.shape[1]] or [1]
        attrs = {"blocksize": int(rng.choice(fits)), "mode": str(rng.choice(["DCR", "CRD"]))}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    @staticmethod
    def _steps(shape: Sequence[int], b: int, mode: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        n, c, h, w = shape
        if mode == "DCR":
            return (n, b, b, c // (b * b), h, w), (0, 3, 4, 1, 5, 2), (n, c // (b * b), h * b, w * b)
        return (n, c // (b * b), b, b, h, w), (0, 1, 4, 2, 5, 3), (n, c // (b * b), h * b, w * b)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, p, o = self._steps(xs[0].shape, attrs["blocksize"], attrs["mode"])
        return [np.transpose(xs[0].reshape(a), p).reshape(o)]


class SpaceToDepth(ShapeOp):
    """attrs: blocksize; mode (optional, opset 28): "DCR" (the default, channels ordered (bh, bw, c))
    or "CRD" ((c, bh, bw)). NCHW input."""

    name = "space_to_depth"
    onnx_ops = ("SpaceToDepth",)
    ranks = (4,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        if t.rank != 4:
            raise ShapeError(f"{self.name}: input must have rank 4, got {t.rank}")
        b = _int(self, attrs, "blocksize")
        if attrs.get("mode", "DCR") not in ("DCR", "CRD"):
            raise ShapeError(f"{self.name}: mode must be DCR or CRD, got {attrs.get('mode')!r}")
        n, c, h, w = t.shape
        if b < 1 or h % b or w % b:
            raise ShapeError(f"{self.name}: spatial dims {(h, w)} not divisible by blocksize {b}")
        return [t.with_shape((n, c * b * b, h // b, w // b))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 4:
            raise ShapeError(f"{self.name}: input must have rank 4")
        h, w = first.shape[2:]
        fits = [b for b in (2, 3) if h and w and h % b == 0 and w % b == 0] or [1]  # blocksize 1 is legal
        attrs = {"blocksize": int(rng.choice(fits))}
        if rng.random() < 0.3:
            attrs["mode"] = "CRD"
        return [first], attrs

    @staticmethod
    def _steps(shape: Sequence[int], b: int, mode: str = "DCR") -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        n, c, h, w = shape
        perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
        return (n, c, h // b, b, w // b, b), perm, (n, c * b * b, h // b, w // b)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, p, o = self._steps(xs[0].shape, attrs["blocksize"], attrs.get("mode", "DCR"))
        return [np.transpose(xs[0].reshape(a), p).reshape(o)]


class Identity(ShapeOp):
    name = "identity"
    onnx_ops = ("Identity",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        return [_one_input(self, ins)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [xs[0].copy()]


for _spec in (Reshape(), Transpose(), Concat(), Split(), Slice(), Pad(), Squeeze(), Unsqueeze(), Expand(),
              Flatten(), Gather(), Tile(), Resize(), DepthToSpace(), SpaceToDepth(), Identity()):
    register(_spec)
