"""ONNX lowering and import rules of the ordering operators (ops/ordering.py).

Trilu's k, CumSum/CumProd's axis, TopK's K and Range's start/limit/delta are ONNX inputs: written as
initializers, read back as constants. CumProd exists from opset 26 (need_opset)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import dtype_of, expect_attrs, onnx_attr, onnx_elem_type
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, OpSpec

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")
CUMPROD_SINCE = 26


def _scalar(node: Any, ctx: ImportContext, i: int, what: str) -> Any:
    v = ctx.const_input(node, i)
    if v is None:
        raise Unsupported(f"{node.op_type}: input {i} ({what}) must be a constant")
    v = np.asarray(v)
    if v.size != 1:
        raise Unsupported(f"{node.op_type}: input {i} ({what}) must hold one value, got shape {v.shape}")
    return v.reshape(())


@ONNX.register("trilu")
def trilu(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    k = b.const(np.asarray(int(attrs.get("k", 0)), dtype=np.int64), "int64", "k")
    b.node("Trilu", [ins[0], k], outs, upper=int(attrs.get("upper", 1)))


@ONNX_IMPORT.register("trilu")
def import_trilu(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"upper"})
    k = int(_scalar(node, ctx, 1, "k")) if ctx.has_input(node, 1) else 0
    return [node.input[0]], {"upper": int(onnx_attr(node, "upper", 1)), "k": k}


@ONNX.register("cumsum", "cumprod")
def cumulative(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> None:
    if spec.name == "cumprod":
        b.need_opset(CUMPROD_SINCE)
    axis = b.const(np.asarray(int(attrs.get("axis", 0)), dtype=np.int64), "int64", "axis")
    b.node(spec.onnx_ops[0], [ins[0], axis], outs, exclusive=int(attrs.get("exclusive", 0)),
           reverse=int(attrs.get("reverse", 0)))


@ONNX_IMPORT.register("cumsum", "cumprod")
def import_cumulative(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"exclusive", "reverse"})
    return [node.input[0]], {"axis": int(_scalar(node, ctx, 1, "axis")),
                             "exclusive": int(onnx_attr(node, "exclusive", 0)),
                             "reverse": int(onnx_attr(node, "reverse", 0))}


@ONNX.register("hardmax")
def hardmax(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Hardmax", ins, outs, axis=int(attrs.get("axis", -1)))


@ONNX_IMPORT.register("hardmax")
def import_hardmax(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    if ctx.opset < 13:  # before 13 Hardmax flattened to 2-D around the axis
        raise Unsupported("Hardmax before opset 13 (coerced to 2-D) is not modelled")
    return [node.input[0]], {"axis": int(onnx_attr(node, "axis", -1))}


@ONNX.register("topk")
def topk(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    k = b.const(np.asarray([int(attrs["k"])], dtype=np.int64), "int64", "k")
    b.node("TopK", [ins[0], k], outs, axis=int(attrs.get("axis", -1)), largest=int(attrs.get("largest", 1)),
           sorted=1)


@ONNX_IMPORT.register("topk")
def import_topk(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "largest", "sorted"})
    if ctx.opset < 10:
        raise Unsupported("TopK before opset 10 (k an attribute) is not modelled")
    if int(onnx_attr(node, "sorted", 1)) != 1:
        raise Unsupported("TopK sorted=0: the output order is unspecified")
    return [node.input[0]], {"k": int(_scalar(node, ctx, 1, "K")), "axis": int(onnx_attr(node, "axis", -1)),
                             "largest": int(onnx_attr(node, "largest", 1)), "sorted": 1}


@ONNX.register("eye_like")
def eye_like(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> None:
    dtype = attrs.get("dtype")
    b.node("EyeLike", ins, outs, k=int(attrs.get("k", 0)), dtype=onnx_elem_type(dtype) if dtype else None)


@ONNX_IMPORT.register("eye_like")
def import_eye_like(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"k", "dtype"})
    dtype = onnx_attr(node, "dtype")
    return [node.input[0]], {"k": int(onnx_attr(node, "k", 0)), "dtype": None if dtype is None else dtype_of(dtype)}


@ONNX.register("range")
def range_(spec: OpSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    dt = attrs["dtype"]
    if dt == "float16":  # a Range type from opset 27
        b.need_opset(27)
    names = [b.const(np.asarray(attrs[k]).astype(dt), dt, k) for k in ("start", "limit", "delta")]
    b.node("Range", names, outs)


@ONNX_IMPORT.register("range")
def import_range(spec: OpSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    values = [_scalar(node, ctx, i, k) for i, k in enumerate(("start", "limit", "delta"))]
    dtype = str(values[0].dtype)
    attrs: Attrs = {k: v.item() for k, v in zip(("start", "limit", "delta"), values)}
    attrs["dtype"] = dtype
    return [], attrs
