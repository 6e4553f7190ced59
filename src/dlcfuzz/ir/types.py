"""Tensor types: a dtype name and a static shape."""

from __future__ import annotations

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


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.dtype not in ALL_DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}")
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if any(d < 0 for d in self.shape):
            raise ValueError(f"negative dimension in {self.shape}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(int(d) for d in self.shape)  # np.prod costs ~20 us per call

    @property
    def np_dtype(self) -> np.dtype:
        return _NP_DTYPES[self.dtype]

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype: str) -> TensorType:
        return TensorType(dtype, self.shape)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "shape": list(self.shape)}

    @staticmethod
    def from_json(d: dict) -> TensorType:
        return TensorType(d["dtype"], tuple(d["shape"]))

    @staticmethod
    def of(array: np.ndarray) -> TensorType:
        return TensorType(_DTYPE_NAMES.get(array.dtype) or str(array.dtype), tuple(array.shape))
