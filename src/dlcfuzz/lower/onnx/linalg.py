"""ONNX lowering and import rules of the linalg operators (ops/linalg.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, OpSpec

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


@ONNX.register("einsum")
def einsum(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Einsum", ins, outs, equation=attrs["equation"])


@ONNX_IMPORT.register("einsum")
def import_einsum(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"equation"})
    eq = onnx_attr(node, "equation")
    return list(node.input), {"equation": eq.decode() if isinstance(eq, bytes) else str(eq)}


@ONNX.register("det")
def det(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Det", ins, outs)


@ONNX_IMPORT.register("det")
def import_det(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0]], {}
