"""Operators on types and shapes: Shape, Size, ConstantOfShape, CastLike, BitCast.

Where their input's type is static, Shape and Size depend on that type only (`type_only_inputs`): the ONNX importer
folds them into constants, which is what lets the shape arithmetic of exported models and of ONNX's function bodies
(`_expanded` conformance cases) import. Of an input with a data-dependent extent (TensorType.unknown) they are
computed when the graph runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import ALL_DTYPES, DTYPES, FLOATS, TensorType
from dlcfuzz.ops.base import (
    ABSORBS,
    ANY,
    Attrs,
    Domain,
    OpSpec,
    ValueAttr,
    check_size,
    register,
    require_arity,
    require_dtype,
)
from dlcfuzz.ops.elementwise import CastOp


class MetaOp(OpSpec):
    family = "meta"
    dtypes = DTYPES


class ShapeOf(MetaOp):
    """ONNX Shape: the input's dimensions from `start` to `end` (Python slice semantics, clamped) as int64."""

    name = "shape"
    onnx_ops = ("Shape",)
    unknown_dims = ABSORBS
    type_only_inputs = (0,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0], ALL_DTYPES)
        start, end = attrs.get("start", 0), attrs.get("end")
        if not isinstance(start, int) or not (end is None or isinstance(end, int)):
            raise ShapeError(f"shape: start/end must be ints, got {start!r}, {end!r}")
        return [TensorType("int64", (len(ins[0].shape[start:end]),))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        r = first.rank
        # out-of-range start/end are legal and clamp: sample a little beyond the rank on both sides
        start = int(rng.integers(-r - 1, r + 2)) if rng.random() < 0.5 else 0
        end = int(rng.integers(-r - 1, r + 2)) if rng.random() < 0.5 else None
        return [first], {"start": start, "end": end}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.asarray(xs[0].shape[attrs.get("start", 0):attrs.get("end")], dtype=np.int64)]


class SizeOf(MetaOp):
    """ONNX Size: the number of elements, an int64 scalar."""

    name = "size"
    onnx_ops = ("Size",)
    unknown_dims = ABSORBS
    type_only_inputs = (0,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0], ALL_DTYPES)
        return [TensorType("int64", ())]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.asarray(xs[0].size, dtype=np.int64)]


class ConstantOfShape(MetaOp):
    """ONNX ConstantOfShape with its shape operand static (attribute `shape`): `value` of `dtype`
    everywhere. It has no tensor input; `sample` takes its shape from the type it is offered."""

    name = "constant_of_shape"
    n_inputs = 0
    onnx_ops = ("ConstantOfShape",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        dtype, shape = attrs.get("dtype"), attrs.get("shape")
        if dtype not in ALL_DTYPES:
            raise DTypeError(f"constant_of_shape: dtype {dtype!r} not in {list(ALL_DTYPES)}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ShapeError(f"constant_of_shape: shape must be a list of non-negative ints, got {shape!r}")
        if not isinstance(attrs.get("value"), (int, float, bool)):
            raise ShapeError(f"constant_of_shape: value must be a number, got {attrs.get('value')!r}")
        return [TensorType(dtype, tuple(shape))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        dtype = first.dtype
        if dtype == "bool":
            value: int | float | bool = bool(rng.random() < 0.5)
        elif dtype in FLOATS:
            value = float(rng.choice([0.0, 1.0, -2.5, 0.5]))
        else:
            info = np.iinfo(dtype)
            value = int(rng.choice([0, 1, int(info.max), int(info.min)]))
        attrs: Attrs = {"shape": list(first.shape), "value": value, "dtype": dtype}
        check_size(self, first.shape)
        return [], attrs

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return {} if attrs["dtype"] == "bool" else {"value": ValueAttr(attrs["dtype"])}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.full(tuple(attrs["shape"]), attrs["value"], dtype=attrs["dtype"])]


class CastLike(MetaOp):
    """ONNX CastLike: input 0 cast to the dtype of input 1 (whose values are not read), as Cast."""

    name = "cast_like"
    n_inputs = 2
    onnx_ops = ("CastLike",)
    type_only_inputs = (1,)
    _cast = CastOp()

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        require_dtype(self, ins[1], what="target")
        return [TensorType(ins[1].dtype, ins[0].shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        to = DTYPES[int(rng.integers(len(DTYPES)))]
        shape = tuple(int(d) for d in rng.integers(1, 3, size=int(rng.integers(0, 2))))
        return [first, TensorType(to, shape)], {}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return self._cast.domain(0, ins[:1], {"to": ins[1].dtype}) if index == 0 else ANY

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return self._cast.reference(xs[:1], {"to": str(xs[1].dtype)})


# dtypes of equal width whose every bit pattern is a valid value of the other (bool is not: 2..255)
BITCAST_PEERS: dict[str, tuple[str, ...]] = {
    "float16": ("int16", "uint16"), "int16": ("float16", "uint16"), "uint16": ("float16", "int16"),
    "float32": ("int32", "uint32"), "int32": ("float32", "uint32"), "uint32": ("float32", "int32"),
    "float64": ("int64", "uint64"), "int64": ("float64", "uint64"), "uint64": ("float64", "int64"),
    "int8": ("uint8",), "uint8": ("int8",),
}


class BitCast(MetaOp):
    """ONNX BitCast (opset 26): the same bits read as `to`, of the same width (little endian)."""

    name = "bitcast"
    # generated from floats (to integers) and between int8/uint8; any equal-width pair imports
    dtypes = ("float16", "float32", "float64", "int8", "uint8")
    onnx_ops = ("BitCast",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0], tuple(BITCAST_PEERS))
        to = attrs.get("to")
        if to not in BITCAST_PEERS.get(ins[0].dtype, ()):
            raise DTypeError(f"bitcast: {ins[0].dtype} cannot be reinterpreted as {to!r} (width differs)")
        return [TensorType(to, ins[0].shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        # never integers read as floats: small integers are denormals and NaN payloads there, which
        # flush-to-zero and NaN canonicalization may legally change
        peers = [d for d in BITCAST_PEERS[first.dtype] if d in DTYPES and not (d in FLOATS and first.dtype not in FLOATS)]
        return [first], {"to": peers[int(rng.integers(len(peers)))]}

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        # a float's bits: one legal ulp of difference upstream is a different integer here, so a
        # float read as an integer is never judged (crashes and rejections still are)
        return xs[0].dtype.kind == "f"

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, to = xs[0], np.dtype(attrs["to"])
        if x.dtype.itemsize != to.itemsize:  # a float16/32 the reference's exact mode holds in float64
            x = x.astype(f"float{8 * to.itemsize}")
        return [np.ascontiguousarray(x).view(to)]  # numpy's native order: little endian here


for _spec in (ShapeOf(), SizeOf(), ConstantOfShape(), CastLike(), BitCast()):
    register(_spec)
