"""ONNX lowering and import rules of the meta operators (ops/meta.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.ir.types import ALL_DTYPES
from dlcfuzz.lower.onnx.common import dtype_of, expect_attrs, onnx_attr, onnx_elem_type
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


@ONNX.register("shape")
def shape(spec: Any, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Shape", ins, outs, start=attrs.get("start", 0) or None, end=attrs.get("end"))


@ONNX_IMPORT.register("shape")
def import_shape(spec: Any, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"start", "end"})
    end = onnx_attr(node, "end")
    return [node.input[0]], {"start": int(onnx_attr(node, "start", 0)), "end": None if end is None else int(end)}


@ONNX.register("size")
def size(spec: Any, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Size", ins, outs)


@ONNX_IMPORT.register("size")
def import_size(spec: Any, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0]], {}


@ONNX.register("constant_of_shape")
def constant_of_shape(spec: Any, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                      out_types: Any) -> None:
    import onnx

    value = onnx.numpy_helper.from_array(np.asarray([attrs["value"]], dtype=attrs["dtype"]), "value")
    b.node("ConstantOfShape", [b.const(np.asarray(attrs["shape"], dtype=np.int64), "int64", "shape")], outs,
           value=value)


@ONNX_IMPORT.register("constant_of_shape")
def import_constant_of_shape(spec: Any, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    import onnx

    expect_attrs(node, {"value"})
    shape = ctx.const_input(node, 0)
    t = onnx_attr(node, "value")
    value = np.zeros(1, dtype=np.float32) if t is None else onnx.numpy_helper.to_array(t)
    if value.size != 1:
        raise Unsupported(f"ConstantOfShape: value has {value.size} elements")
    dtype = str(value.dtype)
    if dtype not in ALL_DTYPES:
        raise Unsupported(f"ConstantOfShape of dtype {dtype}")
    return [], {"shape": [int(d) for d in shape.reshape(-1)], "value": value.reshape(()).item(), "dtype": dtype}


@ONNX.register("cast_like")
def cast_like(spec: Any, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("CastLike", ins, outs)


@ONNX_IMPORT.register("cast_like")
def import_cast_like(spec: Any, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"saturate"})  # saturate only concerns float8 targets, which we do not model
    return [node.input[0], node.input[1]], {}


@ONNX.register("bitcast")
def bitcast(spec: Any, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.need_opset(26)
    b.node("BitCast", ins, outs, to=onnx_elem_type(attrs["to"]))


@ONNX_IMPORT.register("bitcast")
def import_bitcast(spec: Any, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"to"})
    return [node.input[0]], {"to": dtype_of(int(onnx_attr(node, "to")))}
