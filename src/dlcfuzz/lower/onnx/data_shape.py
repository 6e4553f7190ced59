"""ONNX lowering and import rules of the operators whose output extent depends on their input values
(ops/data_shape.py): NonZero, Unique, Compress with a condition computed by the graph, whose attributes are ONNX's
(ints), and NonMaxSuppression, whose thresholds are constant inputs; their data-dependent axes are symbolic dimensions (dim_param) where a graph's outputs are typed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

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


# NonMaxSuppression's ONNX inputs 2-4, attributes here: name, dtype
NMS_INPUTS = (("max_output_boxes_per_class", "int64"), ("iou_threshold", "float32"), ("score_threshold", "float32"))


@ONNX.register("non_max_suppression")
def non_max_suppression(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                        out_types: Any) -> None:
    given = [b.const(np.array([attrs[k]], dtype=dtype), hint=k) if k in attrs else "" for k, dtype in NMS_INPUTS]
    b.node("NonMaxSuppression", [*ins, *given], outs, center_point_box=attrs["center_point_box"])


@ONNX_IMPORT.register("non_max_suppression")
def import_non_max_suppression(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"center_point_box"})
    attrs: Attrs = {"center_point_box": int(onnx_attr(node, "center_point_box", 0)), "max_output_boxes_per_class": 0,
                    "iou_threshold": 0.0}  # ONNX's defaults of absent inputs
    for i, (key, dtype) in enumerate(NMS_INPUTS, start=2):
        v = ctx.const_input(node, i)
        if v is not None:
            if np.asarray(v).size != 1:
                raise Unsupported(f"NonMaxSuppression: {key} must hold one value")
            attrs[key] = int(np.asarray(v).reshape(-1)[0]) if dtype == "int64" else float(np.asarray(v).reshape(-1)[0])
    return [node.input[0], node.input[1]], attrs
