"""Tensor types: a dtype name and a shape, whose data-dependent axes (`unknown`) hold their upper bound."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

# Every dtype dlcfuzz generates, in a fixed order (seeds must replay identically).
DTYPES: tuple[str, ...] = (
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
)
# Accepted in types (imported models, ONNX conformance cases) but generated only where a compiler's
# capability probe admits an operator/dtype pair: most targets have few kernels for them.
WIDE_UNSIGNED: tuple[str, ...] = ("uint16", "uint32", "uint64")
ALL_DTYPES: tuple[str, ...] = DTYPES + WIDE_UNSIGNED
_NP_DTYPES = {d: np.dtype(d) for d in ALL_DTYPES}  # TensorType.np_dtype is asked for per value per test
_DTYPE_NAMES = {t: d for d, t in _NP_DTYPES.items()}  # str(np.dtype) costs ~9 us, TensorType.of runs per value
UNSIGNED: tuple[str, ...] = ("uint8",) + WIDE_UNSIGNED
FLOATS: tuple[str, ...] = ("float16", "float32", "float64")
SIGNED_INTS: tuple[str, ...] = ("int8", "int16", "int32", "int64")
INTS: tuple[str, ...] = SIGNED_INTS + ("uint8",)
NUMERIC: tuple[str, ...] = FLOATS + INTS
SIGNED: tuple[str, ...] = FLOATS + SIGNED_INTS


@dataclass(frozen=True, repr=False)
class TensorType:
    """`unknown`: the axes whose extent is known only when the data is seen (NonZero's count, Unique's values,
    a computed Compress condition), in increasing order; `shape` holds their upper bound there, so sizes, work
    and element limits stay bounds. A type with no unknown axis is static, as every type was before."""

    dtype: str
    shape: tuple[int, ...]
    unknown: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.dtype not in ALL_DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}")
        shape = tuple(map(int, self.shape))  # a type is made per value per test: map and min, not generators
        object.__setattr__(self, "shape", shape)
        if shape and min(shape) < 0:
            raise ValueError(f"negative dimension in {self.shape}")
        if self.unknown:
            object.__setattr__(self, "unknown", tuple(sorted({int(a) for a in self.unknown})))
            if not 0 <= self.unknown[0] <= self.unknown[-1] < len(self.shape):
                raise ValueError(f"unknown axes {self.unknown} out of range for {self.shape}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # ints (__post_init__); np.prod costs ~20 us per call

    @property
    def np_dtype(self) -> np.dtype:
        return _NP_DTYPES[self.dtype]

    def __repr__(self) -> str:  # a static type's as before
        extra = f", unknown={self.unknown!r}" if self.unknown else ""
        return f"TensorType(dtype={self.dtype!r}, shape={self.shape!r}{extra})"

    @property
    def bound(self) -> TensorType:
        """This type with its unknown axes at their upper bound: the static type a rule reasons about."""
        return TensorType(self.dtype, self.shape) if self.unknown else self

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        """A static type of `shape` (unknown axes are the caller's to carry over: a new shape has its own axes)."""
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype: str) -> TensorType:
        return TensorType(dtype, self.shape, self.unknown)

    def admits(self, shape: tuple[int, ...]) -> bool:
        """Whether an array of `shape` has this type's extents: equal on the static axes, within the bound on the
        unknown ones."""
        return len(shape) == len(self.shape) and all(
            d <= b if a in self.unknown else d == b for a, (d, b) in enumerate(zip(shape, self.shape)))

    def __str__(self) -> str:
        dims = [f"<={d}" if a in self.unknown else str(d) for a, d in enumerate(self.shape)]
        return f"{self.dtype}[{', '.join(dims)}]"

    def to_json(self) -> dict:
        d: dict = {"dtype": self.dtype, "shape": list(self.shape)}
        if self.unknown:  # left out when static, so stored static types read as before
            d["unknown"] = list(self.unknown)
        return d

    @staticmethod
    def from_json(d: dict) -> TensorType:
        return TensorType(d["dtype"], tuple(d["shape"]), tuple(d.get("unknown", ())))

    @staticmethod
    def of(array: np.ndarray) -> TensorType:
        return _type_of(array.dtype, array.shape)


@functools.lru_cache(maxsize=1 << 14)
def _type_of(dtype: np.dtype, shape: tuple[int, ...]) -> TensorType:
    """The type of arrays of `dtype` and `shape`, made once per pair: `Graph.types()` asks it of every constant on
    every call (a metamorphic chain's mutant holds thousands), and a type is immutable, so one object serves all."""
    return TensorType(_DTYPE_NAMES.get(dtype) or str(dtype), tuple(shape))
