"""ONNX lowering and import rules of the operators whose output extent depends on their input values
(ops/data_shape.py): NonZero, Unique, Compress with a condition computed by the graph. Their attributes are ONNX's
(ints); their data-dependent axes are symbolic dimensions (dim_param) where a graph's outputs are typed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, OpSpec

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")

# each operator's attributes, with ONNX's default of those it always holds (None: optional)
ATTRS: dict[str, dict[str, int | None]] = {"non_zero": {}, "unique": {"sorted": 1, "axis": None},
                                           "compress_computed": {"axis": None}}


@ONNX.register(*ATTRS)
def data_shape(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> None:
    b.node(spec.onnx_ops[0], ins, outs, **attrs)


@ONNX_IMPORT.register(*ATTRS)
def import_data_shape(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, set(ATTRS[spec.name]))
    if spec.name == "compress_computed" and (node.input[1] in ctx.constants or node.input[1] in ctx.bindable):
        raise Unsupported("Compress: a condition known at import is compress's attribute (a static shape)")
    attrs = {k: int(onnx_attr(node, k, default)) for k, default in ATTRS[spec.name].items()
             if onnx_attr(node, k, default) is not None}
    return list(node.input), attrs
