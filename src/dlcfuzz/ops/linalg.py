"""Linear-algebra operators: Einsum (an equation attribute over any number of operands) and Det.

References compute in float64 (int64 for integers) and round once. Both accumulate terms of either
sign, so their error scales are sums of the terms' magnitudes.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops.base import (
    Attrs,
    Domain,
    OpSpec,
    check_size,
    magnitude_of_terms,
    register,
    require_dtype,
    require_same_dtype,
)

INT_FACTORS = Domain(lo=-10, hi=10)  # integer sums of products over <= 4096 terms stay inside int32


class Einsum(OpSpec):
    """attrs: equation (ONNX/NumPy einsum notation: explicit '->' or implicit output, '...' broadcast)."""
    contracts = True

    name = "einsum"
    family = "linalg"
    n_inputs = -1
    dtypes = FLOATS + ("int32", "int64")
    onnx_ops = ("Einsum",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if not ins:
            raise ShapeError(f"{self.name}: expects at least one input")
        for t in ins:
            require_dtype(self, t)
        require_same_dtype(self, ins)
        eq = attrs.get("equation")
        if not isinstance(eq, str) or eq.replace(" ", "").split("->")[0].count(",") != len(ins) - 1:
            raise ShapeError(f"{self.name}: equation {eq!r} does not name {len(ins)} operands")
        try:  # NumPy's einsum checks labels, ranks and sizes exactly as ONNX specifies them
            y = np.einsum(eq.replace(" ", ""), *[np.zeros(t.shape, np.float32) for t in ins])
        except ValueError as e:
            raise ShapeError(f"{self.name}: {e}") from None
        return [TensorType(ins[0].dtype, y.shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        r, s = first.rank, first.shape
        letters = string.ascii_lowercase[:r]
        options: list[tuple[str, list[tuple[int, ...]]]] = []
        if r >= 1:
            options.append((f"{letters}->{letters[::-1]}", []))  # transpose
            options.append((f"{letters}->{letters[0]}", []))  # reduction
            options.append((f"{letters}", []))  # implicit: the labels sorted, here a copy
            k = int(rng.integers(1, 4))
            options.append((f"{letters},z->{letters}z", [(k,)]))  # outer product
        if r >= 2:
            m, n = s[-2], s[-1]
            k = int(rng.integers(1, 5))
            options.append(("...ij,...jk->...ik", [s[:-2] + (n, k)]))  # broadcasting matmul
            partner = tuple(1 if rng.random() < 0.4 else d for d in s[:-2]) + (n, k)
            options.append(("...ij,...jk", [partner]))  # implicit output, broadcast batch
            if m == n:
                options.append(("...ii->...i", []))  # diagonal
                options.append(("...ii", []))  # trace (implicit: 'i' repeats, so it is summed)
        if r == 2:
            options.append(("ij,jk->ik", [(s[1], int(rng.integers(1, 5)))]))
            options.append(("ij,ij->", [s]))  # a dot product of two matrices
        if r == 3:
            options.append(("bij,bjk->bik", [(s[0], s[2], int(rng.integers(1, 5)))]))
            options.append(("bij,bjk,bkl->bil", [(s[0], s[2], 2), (s[0], 2, 3)]))
        for _ in range(10):
            eq, others = options[int(rng.integers(len(options)))]
            ins = [first] + [TensorType(first.dtype, o) for o in others]
            try:
                out = self.infer(ins, {"equation": eq})[0]
                check_size(self, out.shape)
            except ShapeError:
                continue
            return ins, {"equation": eq}
        raise ShapeError(f"{self.name}: no equation fits {first}")

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return INT_FACTORS if ins[0].dtype.startswith("int") else Domain()

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        dt = xs[0].dtype
        wide = [x.astype(np.float64) if dt.kind == "f" else x.astype(np.int64) for x in xs]
        y = np.einsum(attrs["equation"].replace(" ", ""), *wide)
        return [np.asarray(y).astype(dt)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs)


class Det(OpSpec):
    """Determinants of the square matrices in the last two axes; output the leading axes."""
    contracts = True

    name = "det"
    family = "linalg"
    dtypes = ("float32", "float64")
    onnx_ops = ("Det",)
    ranks = (2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects 1 input")
        t = ins[0]
        require_dtype(self, t)
        if t.rank < 2 or t.shape[-1] != t.shape[-2]:
            raise ShapeError(f"{self.name}: input must end in square matrices, got {t.shape}")
        return [t.with_shape(t.shape[:-2])]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        self.infer([first], {})
        if first.shape[-1] > 6:  # float32 LU of larger random matrices loses too much to compare
            raise ShapeError(f"{self.name}: {first.shape[-1]}x{first.shape[-1]} matrices are too large")
        return [first], {}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        if x.shape[-1] == 0:  # the determinant of an empty matrix is 1
            return [np.ones(x.shape[:-2], x.dtype)]
        return [np.asarray(np.linalg.det(x.astype(np.float64))).astype(x.dtype)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # LU with partial pivoting is backward stable (error ~ n * eps * |A|); the determinant moves by
        # at most the cofactors times that, and Hadamard's bound (the product of the row norms)
        # bounds every cofactor times an entry: near-singular matrices keep an absolute error scale
        x = xs[0].astype(np.float64)
        n = x.shape[-1]
        if n == 0:
            return np.abs(y)
        rows = np.prod(np.linalg.norm(x, axis=-1), axis=-1)
        return np.abs(y) + n * n * rows


register(Einsum())
register(Det())
