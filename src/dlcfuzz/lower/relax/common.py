"""Helpers the Relax lowering rules share."""

from __future__ import annotations

from typing import Any

import numpy as np


def relax_dtype_const(value: float | int | bool, dtype: str) -> Any:
    """A scalar Relax constant of exactly `dtype` (relax.const alone would pick float32/int64)."""
    from tvm import relax

    return relax.const(np.array(value, dtype=dtype), dtype)
