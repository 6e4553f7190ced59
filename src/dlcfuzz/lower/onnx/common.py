"""Helpers the ONNX lowering and import rules share: reading a node's attributes, and the import
guard against attributes dlcfuzz does not model."""

from __future__ import annotations

from typing import Any

from dlcfuzz.errors import Unsupported


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
