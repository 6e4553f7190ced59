"""Helpers the ONNX lowering and import rules share: reading a node's attributes, the import
guard against attributes dlcfuzz does not model, and ONNX's element type of a dtype."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.ir.types import ALL_DTYPES

_ELEM_TYPES: dict[str, int] = {}


def onnx_elem_type(dtype: str) -> int:
    elem = _ELEM_TYPES.get(dtype)
    if elem is None:
        import onnx

        elem = _ELEM_TYPES[dtype] = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    return elem


def onnx_attr(node: Any, name: str, default: Any = None) -> Any:
    """The value of attribute `name` of an onnx.NodeProto, or `default`."""
    import onnx

    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def expect_attrs(node: Any, allowed: set[str] | frozenset[str] = frozenset()) -> None:
    """Import guard: an ONNX attribute we do not model makes the node Unsupported (never silently wrong)."""
    extra = [a.name for a in node.attribute if a.name not in allowed]
    if extra:
        raise Unsupported(f"{node.op_type}: attributes {extra} are not modelled")


def dtype_of(elem_type: int) -> str:
    """The dtype of an ONNX element type (Unsupported for one our IR does not model)."""
    import onnx

    try:
        dtype = str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)))
    except (KeyError, TypeError, ValueError):
        raise Unsupported(f"element type {elem_type}") from None
    if dtype not in ALL_DTYPES:
        raise Unsupported(f"dtype {dtype}")
    return dtype
