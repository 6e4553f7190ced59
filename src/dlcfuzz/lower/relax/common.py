"""Helpers the Relax lowering rules share."""

from __future__ import annotations

from typing import Any

import numpy as np


def relax_type(t: Any) -> Any:
    """The Relax tensor type of our TensorType `t`."""
    from tvm import relax

    # apache-tvm <= 0.25 spells it TensorStructInfo (its TensorType was the old DynTensorType)
    cls = getattr(relax, "TensorStructInfo", None) or relax.TensorType
    return cls(t.shape, t.dtype)


def type_of(e: Any) -> Any:
    """The Relax type of an expression or variable (apache-tvm 0.27's `ty`; `struct_info` up to 0.25)."""
    return e.ty if hasattr(e, "ty") else e.struct_info


def relax_dtype_const(value: float | int | bool, dtype: str) -> Any:
    """A scalar Relax constant of exactly `dtype` (relax.const alone would pick float32/int64)."""
    from tvm import relax

    return relax.const(np.array(value, dtype=dtype), dtype)


def reshape_to(x: Any, shape: tuple[int, ...], dtype: str) -> Any:
    """`x` reshaped to the static `shape`. relax.op.reshape reads a 0 in the new shape as "copy the input's
    dimension" (ONNX's allowzero=0 reading; its docstring names only -1), so an empty result is written as
    zeros of its shape: there is no value to move."""
    from tvm import relax

    if 0 in shape:
        return relax.op.zeros(shape, dtype)
    return relax.op.reshape(x, shape)
