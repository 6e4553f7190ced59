"""Numeric comparison policy: NaN/Inf aware, per-dtype tolerance, Chebyshev distance.

distance(a, ref) = max over elements of |a - ref| / max(1, |ref|): the Chebyshev
(L-infinity) distance, relative for large magnitudes so that float rounding of big
values is not a "bug". A pair is inconsistent when the distance exceeds the dtype's
threshold, or when NaN/+Inf/-Inf appear at different positions.

Thresholds (documented policy; float16 rounds at ~1e-3 relative, so it needs more):
  float16 1e-2, float32 1e-3, float64 1e-6 (compilers reassociate; 1e-9 would flag
  legal rewrites), integers and bool: exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlcfuzz.reference import finite

TOLERANCE: dict[str, float] = {"float16": 1e-2, "float32": 1e-3, "float64": 1e-6}


@dataclass(frozen=True)
class Mismatch:
    index: int  # output index
    reason: str  # "shape", "dtype", "nan", "inf", "value"
    distance: float
    detail: str


def tolerance(dtype: str, scale: float = 1.0) -> float:
    return TOLERANCE.get(dtype, 0.0) * scale


def chebyshev(a: np.ndarray, ref: np.ndarray) -> float:
    """Relative Chebyshev distance over finite positions (0.0 for empty tensors)."""
    if a.size == 0:
        return 0.0
    if a.dtype == np.bool_ or ref.dtype == np.bool_:
        return float(np.count_nonzero(a.astype(bool) != ref.astype(bool)) > 0)
    a64 = a.astype(np.float64)
    r64 = ref.astype(np.float64)
    finite = np.isfinite(a64) & np.isfinite(r64)
    if not finite.any():
        return 0.0
    diff = np.abs(a64[finite] - r64[finite]) / np.maximum(1.0, np.abs(r64[finite]))
    return float(diff.max())


def compare_one(index: int, got: np.ndarray, ref: np.ndarray, scale: float = 1.0) -> Mismatch | None:
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return Mismatch(index, "shape", float("inf"), f"shape {got.shape} != {ref.shape}")
    if got.dtype != ref.dtype:
        return Mismatch(index, "dtype", float("inf"), f"dtype {got.dtype} != {ref.dtype}")
    if np.array_equal(got, ref):  # the common case, decided in one pass (a NaN is never equal: not here)
        return None
    if np.issubdtype(ref.dtype, np.floating):
        gn, rn = np.isnan(got), np.isnan(ref)
        if (gn != rn).any():
            k = int(np.flatnonzero((gn != rn).reshape(-1))[0])
            return Mismatch(index, "nan", float("inf"),
                            f"NaN at different positions (first flat index {k}: {got.reshape(-1)[k]} vs {ref.reshape(-1)[k]})")
        gi, ri = np.isinf(got), np.isinf(ref)
        if (gi != ri).any() or (got[gi] != ref[ri]).any():
            return Mismatch(index, "inf", float("inf"), "Inf at different positions or signs")
    d = chebyshev(got, ref)
    tol = tolerance(str(ref.dtype), scale)
    if d > tol:
        flat = np.abs(got.astype(np.float64) - ref.astype(np.float64)).reshape(-1)
        flat = np.where(np.isfinite(flat), flat, -1)
        k = int(np.argmax(flat))
        return Mismatch(index, "value", d,
                        f"distance {d:.3g} > {tol:.3g} (flat index {k}: {got.reshape(-1)[k]!r} vs {ref.reshape(-1)[k]!r})")
    return None


def compare(got: list[np.ndarray], ref: list[np.ndarray], scale: float = 1.0) -> list[Mismatch]:
    if len(got) != len(ref):
        return [Mismatch(-1, "count", float("inf"), f"{len(got)} outputs != {len(ref)}")]
    return [m for i, (g, r) in enumerate(zip(got, ref)) if (m := compare_one(i, g, r, scale)) is not None]


def all_finite(arrays: list[np.ndarray]) -> bool:
    return all(map(finite, arrays))


def has_subnormal(a: np.ndarray) -> bool:
    """Whether float array `a` holds a subnormal number (nonzero, below its dtype's smallest normal): a value that a
    compiler running with denormals-are-zero or flush-to-zero (XLA:CPU) computes as zero."""
    if a.dtype.kind != "f":
        return False
    with np.errstate(invalid="ignore"):
        return bool(((a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)).any())
