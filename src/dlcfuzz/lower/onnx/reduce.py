"""ONNX lowering and import rules of the reduce operators (ops/reduce.py), registered per operator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.reduce import ArgOp, ReduceOp

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


@ONNX.register("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")
def reduce(spec: ReduceOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    inputs = [ins[0]]
    if in_types[0].dtype == "bool":  # ReduceMax/ReduceMin of bool: opset 20
        b.need_opset(20)
    if attrs["axes"]:
        inputs.append(b.const(np.asarray(attrs["axes"], dtype=np.int64), "int64", "axes"))
    b.node(spec.onnx_op, inputs, outs, keepdims=int(attrs["keepdims"]),
           noop_with_empty_axes=int(attrs["noop_with_empty_axes"]))


@ONNX_IMPORT.register("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")
def import_reduce(spec: ReduceOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset >= spec.axes_input_since:
        expect_attrs(node, {"keepdims", "noop_with_empty_axes"})
        v = ctx.const_input(node, 1)
        if v is not None and v.dtype.kind not in "iu":
            raise Unsupported(f"{node.op_type}: axes must be integers")
        axes = [] if v is None else [int(a) for a in v.reshape(-1)]
        noop = int(onnx_attr(node, "noop_with_empty_axes", 0))
    else:
        expect_attrs(node, {"keepdims", "axes"})
        axes = [int(a) for a in onnx_attr(node, "axes", [])]
        noop = 0
    return [node.input[0]], {"axes": axes, "keepdims": int(onnx_attr(node, "keepdims", 1)),
                             "noop_with_empty_axes": noop}


@ONNX.register("argmax", "argmin")
def arg(spec: ArgOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node(spec.onnx_op, ins, outs, axis=int(attrs["axis"]), keepdims=int(attrs["keepdims"]),
           select_last_index=1 if attrs.get("select_last_index", 0) else None)


@ONNX_IMPORT.register("argmax", "argmin")
def import_arg(spec: ArgOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "keepdims", "select_last_index"})
    attrs: Attrs = {"axis": int(onnx_attr(node, "axis", 0)), "keepdims": int(onnx_attr(node, "keepdims", 1))}
    if onnx_attr(node, "select_last_index", 0):
        attrs["select_last_index"] = 1
    return [node.input[0]], attrs
