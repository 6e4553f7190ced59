"""Shape operators: data movement whose shape-like operands are attributes.

Target shapes, perms, axes, pads, starts/ends/steps, repeats, split sizes and
resize scales/sizes are node attributes (JSON lists) in our IR; to_onnx emits
them as opset-18 initializers and from_onnx reads them back from constants
(or from the attribute forms of older opsets). Gather indices stay a tensor
input with a strict domain, so generators feed them only in-range constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError, Unsupported
from dlcfuzz.ir.types import DTYPES, TensorType
from dlcfuzz.ops.base import (
    ANY,
    Attrs,
    Domain,
    OpSpec,
    check_size,
    expect_attrs,
    onnx_attr,
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


def _i64(b: Any, values: Sequence[int], hint: str = "c") -> str:
    return b.const(np.asarray(list(values), dtype=np.int64).reshape(-1), "int64", hint=hint)


def _const_ints(node: Any, ctx: Any, i: int) -> list[int] | None:
    v = ctx.const_input(node, i)
    if v is None:
        return None
    if v.dtype.kind not in "iu":
        raise Unsupported(f"{node.op_type}: input {i} must be integers, got {v.dtype}")
    return [int(x) for x in np.asarray(v).reshape(-1)]


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


def _relax_slice(x: Any, axes: list[int], begin: list[int], end: list[int], strides: list[int] | None = None) -> Any:
    from tvm import relax

    return relax.op.strided_slice(x, axes, begin, end, strides if strides is not None else [1] * len(axes))


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Reshape", [ins[0], _i64(b, attrs["shape"], "shape")], outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [relax.op.reshape(ins[0], out_types[0].shape)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"allowzero"})
        shape = _const_ints(node, ctx, 1)
        if shape is None:
            raise Unsupported("Reshape without a shape input")
        if onnx_attr(node, "allowzero", 0) and 0 in shape:
            raise Unsupported("Reshape with allowzero=1 and a 0 in the target shape is not modelled")
        return [node.input[0]], {"shape": shape}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Transpose", ins, outs, perm=list(attrs["perm"]) or None)  # rank 0: the default perm is []

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [relax.op.permute_dims(ins[0], list(attrs["perm"]))]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"perm"})
        perm = onnx_attr(node, "perm")
        if perm is None:
            perm = list(range(ctx.type_of(node.input[0]).rank))[::-1]
        return [node.input[0]], {"perm": [int(p) for p in perm]}


# ---- concat --------------------------------------------------------------


class Concat(ShapeOp):
    name = "concat"
    n_inputs = -1
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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Concat", ins, outs, axis=attrs["axis"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [relax.op.concat(list(ins), axis=attrs["axis"] % in_types[0].rank)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"axis"})
        axis = onnx_attr(node, "axis")
        if axis is None:
            raise Unsupported("Concat without axis")
        if any(i == "" for i in node.input):
            raise Unsupported("Concat with an empty input name")
        return list(node.input), {"axis": int(axis)}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Split", [ins[0], _i64(b, attrs["split"], "split")], outs, axis=attrs["axis"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        axis = attrs["axis"] % in_types[0].rank
        sizes = list(attrs["split"])
        if len(sizes) == 1:  # Relax folds a one-section split to the tensor itself
            return [relax.op.split(ins[0], 1, axis=axis)]
        t = bb.emit(relax.op.split(ins[0], [int(c) for c in np.cumsum(sizes)[:-1]], axis=axis))
        return [relax.TupleGetItem(t, i) for i in range(len(sizes))]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"axis", "split", "num_outputs"})
        t = ctx.type_of(node.input[0])
        axis = int(onnx_attr(node, "axis", 0))
        if t.rank == 0 or not -t.rank <= axis < t.rank:
            raise Unsupported(f"Split axis {axis} for rank {t.rank}")
        d = t.shape[axis % t.rank]
        n = len(node.output)
        if ctx.opset >= 13:
            if onnx_attr(node, "split") is not None:
                raise Unsupported("Split attribute 'split' is not part of opset >= 13")
            sizes = _const_ints(node, ctx, 1)
        else:
            sizes = onnx_attr(node, "split")
            sizes = None if sizes is None else [int(s) for s in sizes]
        num = onnx_attr(node, "num_outputs")
        if ctx.opset < 18 and num is not None:
            raise Unsupported("Split num_outputs needs opset >= 18")
        if sizes is not None and num is not None:
            raise Unsupported("Split with both split sizes and num_outputs")
        if sizes is None:
            if num is not None:
                if num != n:
                    raise Unsupported(f"Split num_outputs={num} but {n} outputs")
                chunk = -(-d // n)
                sizes = [chunk] * (n - 1) + [d - chunk * (n - 1)]
                if sizes[-1] < 0:
                    raise Unsupported(f"Split of {d} into {n} chunks leaves a negative last chunk")
            else:
                if ctx.opset >= 18:
                    raise Unsupported("Split opset 18 needs split sizes or num_outputs")
                if d % n:
                    raise Unsupported(f"Split of {d} into {n} equal parts")
                sizes = [d // n] * n
        return [node.input[0]], {"axis": axis, "split": sizes}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Slice", [ins[0], _i64(b, attrs["starts"], "starts"), _i64(b, attrs["ends"], "ends"),
                         _i64(b, attrs["axes"], "axes"), _i64(b, attrs["steps"], "steps")], outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        t = in_types[0]
        parts = self.parse(t, attrs)
        if not parts:
            return [ins[0]]
        axes, begin, end, strides = [], [], [], []
        for a, s, e, st in parts:
            d = t.shape[a]
            b0, e0, _ = slice_bounds(d, s, e, st)
            axes.append(a)
            begin.append(b0)
            end.append(e0 if e0 >= 0 else -d - 1)  # Relax reads -1 as "last"; -d-1 is "before 0"
            strides.append(st)
        return [_relax_slice(ins[0], axes, begin, end, strides)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        if ctx.opset >= 10:
            expect_attrs(node)
            starts, ends = _const_ints(node, ctx, 1), _const_ints(node, ctx, 2)
            axes, steps = _const_ints(node, ctx, 3), _const_ints(node, ctx, 4)
        else:
            expect_attrs(node, {"starts", "ends", "axes"})
            starts, ends, axes = (onnx_attr(node, k) for k in ("starts", "ends", "axes"))
            steps = None
        if starts is None or ends is None:
            raise Unsupported("Slice without starts/ends")
        starts, ends = [int(v) for v in starts], [int(v) for v in ends]
        axes = list(range(len(starts))) if axes is None else [int(v) for v in axes]
        steps = [1] * len(starts) if steps is None else [int(v) for v in steps]
        return [node.input[0]], {"starts": starts, "ends": ends, "axes": axes, "steps": steps}


# ---- pad -----------------------------------------------------------------

PAD_MODES = ("constant", "reflect", "edge")


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
            if d + pb + pe < 0:
                raise ShapeError(f"{self.name}: pads ({pb}, {pe}) shrink dim {d} below 0")
            if mode != "constant" and (pb < 0 or pe < 0):
                raise ShapeError(f"{self.name}: negative pads are only modelled for constant mode")
            if mode == "reflect" and (pb or pe) and (pb >= d or pe >= d):
                raise ShapeError(f"{self.name}: reflect pads ({pb}, {pe}) must be smaller than dim {d}")
            if mode == "edge" and (pb or pe) and d == 0:
                raise ShapeError(f"{self.name}: edge padding of an empty dim")
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
        return [np.pad(x, width, mode="reflect" if mode == "reflect" else "edge")]

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        inputs = [ins[0], _i64(b, attrs["pads"], "pads")]
        if attrs["mode"] == "constant":
            inputs.append(b.const(np.array(attrs.get("value", 0)).astype(in_types[0].dtype), in_types[0].dtype, "value"))
        b.node("Pad", inputs, outs, mode=attrs["mode"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        t = in_types[0]
        before, after, mode, value = self.parse(t, attrs)
        x = ins[0]
        cropped = [a for a in range(t.rank) if before[a] < 0 or after[a] < 0]
        if cropped:
            x = bb.emit(_relax_slice(x, cropped, [max(-before[a], 0) for a in cropped],
                                     [t.shape[a] - max(-after[a], 0) for a in cropped]))
        width = [w for pb, pe in zip(before, after) for w in (max(pb, 0), max(pe, 0))]
        if not any(width):
            return [x]
        pad_value = float(value) if np.issubdtype(t.np_dtype, np.floating) else int(value)
        return [relax.op.nn.pad(x, width, {"edge": "replicate"}.get(mode, mode), pad_value)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        t = ctx.type_of(node.input[0])
        mode = onnx_attr(node, "mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode not in PAD_MODES:
            raise Unsupported(f"Pad mode {mode!r} is not modelled")
        if ctx.opset >= 11:
            expect_attrs(node, {"mode"})
            pads = _const_ints(node, ctx, 1)
            if pads is None:
                raise Unsupported("Pad without pads")
            cv = ctx.const_input(node, 2)
            value: Any = 0 if cv is None or cv.size == 0 else cv.reshape(-1)[0].item()
            axes = _const_ints(node, ctx, 3)
            if axes is not None:
                if len(pads) != 2 * len(axes):
                    raise Unsupported("Pad axes and pads lengths disagree")
                full = [0] * (2 * t.rank)
                for k, a in enumerate(axes):
                    if not -t.rank <= a < t.rank:
                        raise Unsupported(f"Pad axis {a} out of range")
                    full[a % t.rank] = pads[k]
                    full[a % t.rank + t.rank] = pads[k + len(axes)]
                pads = full
        else:
            expect_attrs(node, {"mode", "pads", "value"})
            pads = [int(p) for p in onnx_attr(node, "pads", [])]
            value = float(onnx_attr(node, "value", 0.0))
        if isinstance(value, float) and value.is_integer() and t.dtype not in ("float16", "float32", "float64"):
            value = int(value)
        return [node.input[0]], {"pads": pads, "mode": mode, "value": value if mode == "constant" else 0}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Squeeze", [ins[0], _i64(b, attrs["axes"], "axes")], outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [relax.op.squeeze(ins[0], [a % in_types[0].rank for a in attrs["axes"]])]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        if ctx.opset >= 13:
            expect_attrs(node)
            axes = _const_ints(node, ctx, 1)
        else:
            expect_attrs(node, {"axes"})
            axes = onnx_attr(node, "axes")
        if axes is None or len(axes) == 0:
            axes = [i for i, d in enumerate(ctx.type_of(node.input[0]).shape) if d == 1]
            if not axes:
                raise Unsupported("Squeeze with no dim of size 1 (an identity) is not modelled")
        return [node.input[0]], {"axes": [int(a) for a in axes]}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Unsqueeze", [ins[0], _i64(b, attrs["axes"], "axes")], outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        r = out_types[0].rank
        return [relax.op.expand_dims(ins[0], sorted(a % r for a in attrs["axes"]))]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        if ctx.opset >= 13:
            expect_attrs(node)
            axes = _const_ints(node, ctx, 1)
        else:
            expect_attrs(node, {"axes"})
            axes = onnx_attr(node, "axes")
        if axes is None:
            raise Unsupported("Unsqueeze without axes")
        return [node.input[0]], {"axes": [int(a) for a in axes]}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Expand", [ins[0], _i64(b, attrs["shape"], "shape")], outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [relax.op.broadcast_to(ins[0], out_types[0].shape)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node)
        shape = _const_ints(node, ctx, 1)
        if shape is None:
            raise Unsupported("Expand without a shape")
        return [node.input[0]], {"shape": shape}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Flatten", ins, outs, axis=attrs["axis"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [relax.op.reshape(ins[0], out_types[0].shape)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"axis"})
        return [node.input[0]], {"axis": int(onnx_attr(node, "axis", 1))}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Tile", [ins[0], _i64(b, attrs["repeats"], "repeats")], outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        return [relax.op.tile(ins[0], list(attrs["repeats"]))]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node)
        reps = _const_ints(node, ctx, 1)
        if reps is None:
            raise Unsupported("Tile without repeats")
        return [node.input[0]], {"repeats": reps}


# ---- gather --------------------------------------------------------------


class Gather(ShapeOp):
    """Inputs: data, indices (int32/int64, in [-n, n-1]); attrs: axis."""

    name = "gather"
    n_inputs = 2
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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Gather", ins, outs, axis=attrs["axis"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        # in-range negative indices count from the end; "wrap" maps exactly those and leaves the rest alone
        return [relax.op.take(ins[0], ins[1], axis=attrs["axis"] % in_types[0].rank, mode="wrap")]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"axis"})
        return [node.input[0], node.input[1]], {"axis": int(onnx_attr(node, "axis", 0))}


# ---- resize (nearest) ----------------------------------------------------

# tf_half_pixel_for_nn is deprecated (opset 13) and ONNXRuntime skips it on scale-1 axes: not modelled.
COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
NICE_SCALES = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)


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


class Resize(ShapeOp):
    """Nearest-neighbour Resize. attrs: exactly one of scales (floats) / sizes (ints), one per dim;
    coordinate_transformation_mode; nearest_mode."""

    name = "resize"
    onnx_ops = ("Resize",)
    ranks = (1, 2, 3, 4)

    def parse(self, t: TensorType, attrs: Attrs) -> tuple[tuple[int, ...], list[float], str, str]:
        """(output shape, per-axis scale as ONNXRuntime uses it, ctm, nearest_mode)."""
        if t.rank == 0:
            raise ShapeError(f"{self.name}: input must have rank >= 1")
        ctm = _choice(self, attrs, "coordinate_transformation_mode", COORD_MODES)
        nm = _choice(self, attrs, "nearest_mode", NEAREST_MODES)
        has_scales, has_sizes = "scales" in attrs, "sizes" in attrs
        if has_scales == has_sizes:
            raise ShapeError(f"{self.name}: exactly one of scales / sizes is required")
        if has_sizes:
            sizes = _ints(self, attrs, "sizes", length=t.rank, lo=1)
            if 0 in t.shape:
                raise ShapeError(f"{self.name}: cannot resize an empty dim to a size")
            scales = [float(np.float32(o) / np.float32(i)) for o, i in zip(sizes, t.shape)]
            return tuple(sizes), scales, ctm, nm
        scales = attrs["scales"]
        if not isinstance(scales, (list, tuple)) or len(scales) != t.rank or not all(
                isinstance(s, (int, float, np.integer, np.floating)) and not isinstance(s, (bool, np.bool_))
                for s in scales):
            raise ShapeError(f"{self.name}: scales must be {t.rank} numbers, got {scales!r}")
        s32 = [np.float32(s) for s in scales]
        if not all(np.isfinite(s) and s > 0 for s in s32):
            raise ShapeError(f"{self.name}: scales {list(scales)} must be finite and > 0")
        out = tuple(int(np.floor(np.float32(d) * s)) for d, s in zip(t.shape, s32))
        return out, [float(s) for s in s32], ctm, nm

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
            return [first], attrs
        raise ShapeError(f"{self.name}: no unambiguous resize found for {first.shape}")

    def indices(self, t: TensorType, attrs: Attrs) -> list[np.ndarray]:
        out, scales, ctm, nm = self.parse(t, attrs)
        return [nearest_indices(i, o, s, ctm, nm) for i, o, s in zip(t.shape, out, scales)]

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        for axis, idx in enumerate(self.indices(TensorType.of(x), attrs)):
            x = np.take(x, idx, axis=axis)
        return [x]

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        if "sizes" in attrs:
            inputs = [ins[0], "", "", _i64(b, attrs["sizes"], "sizes")]
        else:
            inputs = [ins[0], "", b.const(np.asarray(attrs["scales"], dtype=np.float32), "float32", "scales")]
        b.node("Resize", inputs, outs, mode="nearest",
               coordinate_transformation_mode=attrs["coordinate_transformation_mode"],
               nearest_mode=attrs["nearest_mode"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        t, out = in_types[0], out_types[0].shape
        _, scales, ctm, nm = self.parse(t, attrs)
        # Relax's resize2d derives the scale from the sizes: use it where that equals the ONNX scale.
        # (align_corners to a size-1 dim divides by zero inside TVM's resize2d: gathers there too.)
        if t.rank == 4 and out[:2] == t.shape[:2] and all(
                ("sizes" in attrs or t.shape[i] * scales[i] == out[i])
                and not (ctm == "align_corners" and out[i] == 1) for i in (2, 3)):
            return [relax.op.image.resize2d(
                ins[0], (out[2], out[3]), layout="NCHW", method="nearest_neighbor",
                coordinate_transformation_mode=ctm, rounding_method=nm)]
        x = ins[0]
        for axis, idx in enumerate(self.indices(t, attrs)):
            if len(idx) == t.shape[axis] and (idx == np.arange(len(idx))).all():
                continue
            x = bb.emit(relax.op.take(x, relax.const(idx, "int64"), axis=axis))
        return [x]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        if ctx.opset < 11:
            raise Unsupported("Resize before opset 11 is not modelled")
        expect_attrs(node, {"mode", "coordinate_transformation_mode", "nearest_mode", "antialias", "axes",
                            "keep_aspect_ratio_policy", "exclude_outside", "cubic_coeff_a", "extrapolation_value"})

        def text(name: str, default: str) -> str:
            v = onnx_attr(node, name, default)
            return v.decode() if isinstance(v, bytes) else v

        if text("mode", "nearest") != "nearest":
            raise Unsupported(f"Resize mode {text('mode', 'nearest')!r} is not modelled")
        ctm = text("coordinate_transformation_mode", "half_pixel")
        nm = text("nearest_mode", "round_prefer_floor")
        if ctm not in COORD_MODES or nm not in NEAREST_MODES:
            raise Unsupported(f"Resize {ctm}/{nm} is not modelled")
        if onnx_attr(node, "antialias", 0):
            raise Unsupported("Resize antialias is not modelled")
        t = ctx.type_of(node.input[0])
        scales = ctx.const_input(node, 2) if len(node.input) > 2 else None
        sizes = _const_ints(node, ctx, 3) if len(node.input) > 3 else None
        if scales is not None and scales.size == 0:
            scales = None
        if sizes is not None and len(sizes) == 0:
            sizes = None
        if (scales is None) == (sizes is None):
            raise Unsupported("Resize needs exactly one of scales / sizes")
        if sizes is not None and text("keep_aspect_ratio_policy", "stretch") != "stretch":
            raise Unsupported("Resize keep_aspect_ratio_policy other than stretch is not modelled")
        axes = onnx_attr(node, "axes")
        if axes is not None:
            axes = [int(a) % max(t.rank, 1) for a in axes]
            given = [float(v) for v in scales.reshape(-1)] if scales is not None else sizes
            if len(given) != len(axes) or len(set(axes)) != len(axes):
                raise Unsupported("Resize axes do not match scales/sizes")
            full: list[Any] = [1.0] * t.rank if scales is not None else list(t.shape)
            for a, v in zip(axes, given):
                full[a] = v
            if scales is not None:
                scales = np.asarray(full, dtype=np.float32)
            else:
                sizes = [int(v) for v in full]
        attrs: Attrs = {"coordinate_transformation_mode": ctm, "nearest_mode": nm}
        if scales is not None:
            attrs["scales"] = [float(np.float32(v)) for v in np.asarray(scales).reshape(-1)]
        else:
            attrs["sizes"] = sizes
        return [node.input[0]], attrs


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("DepthToSpace", ins, outs, blocksize=attrs["blocksize"], mode=attrs["mode"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        a, p, o = self._steps(in_types[0].shape, attrs["blocksize"], attrs["mode"])
        x = bb.emit(relax.op.reshape(ins[0], a))
        x = bb.emit(relax.op.permute_dims(x, list(p)))
        return [relax.op.reshape(x, o)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"blocksize", "mode"})
        mode = onnx_attr(node, "mode", b"DCR")
        b = onnx_attr(node, "blocksize")
        if b is None:
            raise Unsupported("DepthToSpace without blocksize")
        return [node.input[0]], {"blocksize": int(b), "mode": mode.decode() if isinstance(mode, bytes) else mode}


class SpaceToDepth(ShapeOp):
    """attrs: blocksize. NCHW input."""

    name = "space_to_depth"
    onnx_ops = ("SpaceToDepth",)
    ranks = (4,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        t = _one_input(self, ins)
        if t.rank != 4:
            raise ShapeError(f"{self.name}: input must have rank 4, got {t.rank}")
        b = _int(self, attrs, "blocksize")
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
        return [first], attrs

    @staticmethod
    def _steps(shape: Sequence[int], b: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        n, c, h, w = shape
        return (n, c, h // b, b, w // b, b), (0, 3, 5, 1, 2, 4), (n, c * b * b, h // b, w // b)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, p, o = self._steps(xs[0].shape, attrs["blocksize"])
        return [np.transpose(xs[0].reshape(a), p).reshape(o)]

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("SpaceToDepth", ins, outs, blocksize=attrs["blocksize"])

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        from tvm import relax

        a, p, o = self._steps(in_types[0].shape, attrs["blocksize"])
        x = bb.emit(relax.op.reshape(ins[0], a))
        x = bb.emit(relax.op.permute_dims(x, list(p)))
        return [relax.op.reshape(x, o)]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node, {"blocksize"})
        b = onnx_attr(node, "blocksize")
        if b is None:
            raise Unsupported("SpaceToDepth without blocksize")
        return [node.input[0]], {"blocksize": int(b)}


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

    def to_onnx(self, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
        b.node("Identity", ins, outs)

    def to_relax(self, bb: Any, ins: list[Any], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
        return [ins[0]]

    def from_onnx(self, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
        expect_attrs(node)
        return [node.input[0]], {}


for _spec in (Reshape(), Transpose(), Concat(), Split(), Slice(), Pad(), Squeeze(), Unsqueeze(), Expand(),
              Flatten(), Gather(), Tile(), Resize(), DepthToSpace(), SpaceToDepth(), Identity()):
    register(_spec)
