"""ONNX lowering and import rules of the operators whose output extent depends on their input values
(ops/data_shape.py): NonZero, Unique, Compress with a condition computed by the graph. Their data-dependent axes are
symbolic dimensions (dim_param) where a graph's outputs are typed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.data_shape import CompressComputed, NonZero, Unique

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


@ONNX.register("non_zero")
def non_zero(spec: NonZero, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> None:
    b.node("NonZero", ins, outs)


@ONNX_IMPORT.register("non_zero")
def import_non_zero(spec: NonZero, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0]], {}


@ONNX.register("unique")
def unique(spec: Unique, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> None:
    b.node("Unique", ins, outs, sorted=attrs["sorted"], axis=attrs.get("axis"))


@ONNX_IMPORT.register("unique")
def import_unique(spec: Unique, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"sorted", "axis"})
    attrs: Attrs = {"sorted": int(onnx_attr(node, "sorted", 1))}
    if onnx_attr(node, "axis") is not None:
        attrs["axis"] = int(onnx_attr(node, "axis"))
    return [node.input[0]], attrs


@ONNX.register("compress_computed")
def compress_computed(spec: CompressComputed, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                      out_types: Any) -> None:
    b.node("Compress", ins, outs, axis=attrs.get("axis"))


@ONNX_IMPORT.register("compress_computed")
def import_compress_computed(spec: CompressComputed, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    if node.input[1] in ctx.constants or node.input[1] in ctx.bindable:
        raise Unsupported("Compress: a condition known at import is compress's attribute (a static shape)")
    attrs: Attrs = {}
    if onnx_attr(node, "axis") is not None:
        attrs["axis"] = int(onnx_attr(node, "axis"))
    return [node.input[0], node.input[1]], attrs
