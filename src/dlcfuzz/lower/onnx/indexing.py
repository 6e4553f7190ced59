"""ONNX lowering and import rules of the indexing operators (ops/indexing.py).

Attributes that ONNX passes as inputs (scatter indices, OneHot's depth and values, Compress's
condition, ReverseSequence's sequence_lens, CenterCropPad's shape, TensorScatter's write_indices)
are written as initializers and imported from constants."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.ir.types import ALL_DTYPES
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, decode
from dlcfuzz.ops.indexing import (
    DEPTH_DTYPES,
    CenterCropPad,
    Compress,
    GatherElements,
    GatherND,
    OneHot,
    ReverseSequence,
    ScatterElements,
    ScatterND,
    TensorScatter,
)

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")

TENSOR_SCATTER_OPSET = 24


def _const_ints(node: Any, ctx: ImportContext, i: int) -> np.ndarray | None:
    """Input i as an integer constant (None when absent)."""
    v = ctx.const_input(node, i)
    if v is None:
        return None
    v = np.asarray(v)
    if v.dtype.kind not in "iub":
        raise Unsupported(f"{node.op_type}: input {i} must be integers, got {v.dtype}")
    return v


def _required_ints(node: Any, ctx: ImportContext, i: int) -> np.ndarray:
    v = _const_ints(node, ctx, i)
    if v is None:
        raise Unsupported(f"{node.op_type}: input {i} is missing")
    return v


@ONNX.register("gather_elements")
def gather_elements(spec: GatherElements, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                    out_types: Any) -> None:
    b.node("GatherElements", ins, outs, axis=attrs["axis"])


@ONNX_IMPORT.register("gather_elements")
def import_gather_elements(spec: GatherElements, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    return [node.input[0], node.input[1]], {"axis": int(onnx_attr(node, "axis", 0))}


@ONNX.register("gather_nd")
def gather_nd(spec: GatherND, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> None:
    b.node("GatherND", ins, outs, batch_dims=attrs["batch_dims"])


@ONNX_IMPORT.register("gather_nd")
def import_gather_nd(spec: GatherND, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"batch_dims"})
    return [node.input[0], node.input[1]], {"batch_dims": int(onnx_attr(node, "batch_dims", 0))}


def _reduction(node: Any) -> str:
    return decode(onnx_attr(node, "reduction", b"none"))


@ONNX.register("scatter_elements")
def scatter_elements(spec: ScatterElements, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> None:
    idx = np.asarray(attrs["indices"], dtype=attrs["index_dtype"]).reshape(in_types[1].shape)
    reduction = attrs["reduction"]
    b.node("ScatterElements", [ins[0], b.const(idx, hint="indices"), ins[1]], outs, axis=attrs["axis"],
           reduction=reduction if reduction != "none" else None)


@ONNX_IMPORT.register("scatter_elements")
def import_scatter_elements(spec: ScatterElements, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    # Scatter (opsets 9-10) is ScatterElements without reduction, deprecated at 11
    expect_attrs(node, {"axis", "reduction"} if node.op_type == "ScatterElements" else {"axis"})
    idx = _required_ints(node, ctx, 1)
    if str(idx.dtype) not in ("int32", "int64"):
        raise Unsupported(f"{node.op_type}: indices of {idx.dtype}")
    return [node.input[0], node.input[2]], {
        "axis": int(onnx_attr(node, "axis", 0)), "reduction": _reduction(node),
        "indices": [int(i) for i in idx.reshape(-1)], "index_dtype": str(idx.dtype)}


@ONNX.register("scatter_nd")
def scatter_nd(spec: ScatterND, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> None:
    idx = np.asarray(attrs["indices"], dtype=np.int64).reshape(attrs["index_shape"])
    reduction = attrs["reduction"]
    b.node("ScatterND", [ins[0], b.const(idx, hint="indices"), ins[1]], outs,
           reduction=reduction if reduction != "none" else None)


@ONNX_IMPORT.register("scatter_nd")
def import_scatter_nd(spec: ScatterND, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"reduction"})
    idx = _required_ints(node, ctx, 1)
    return [node.input[0], node.input[2]], {
        "reduction": _reduction(node), "indices": [int(i) for i in idx.reshape(-1)],
        "index_shape": [int(d) for d in idx.shape]}


@ONNX.register("one_hot")
def one_hot(spec: OneHot, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> None:
    depth = b.const(np.asarray(attrs["depth"], dtype=attrs["depth_dtype"]), hint="depth")
    values = b.const(np.asarray(attrs["values"]).astype(attrs["dtype"]), hint="values")
    b.node("OneHot", [ins[0], depth, values], outs, axis=attrs["axis"])


@ONNX_IMPORT.register("one_hot")
def import_one_hot(spec: OneHot, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    depth, values = ctx.const_input(node, 1), ctx.const_input(node, 2)
    if depth is None or values is None:
        raise Unsupported("OneHot: depth and values are required")
    depth, values = np.asarray(depth), np.asarray(values)
    if str(depth.dtype) not in DEPTH_DTYPES or depth.size != 1:
        raise Unsupported(f"OneHot: depth {depth!r} is not one number of {DEPTH_DTYPES}")
    if str(values.dtype) not in ALL_DTYPES or values.size != 2:
        raise Unsupported(f"OneHot: values {values!r} are not two numbers of a dtype we model")
    d = float(depth.reshape(-1)[0])
    if not d.is_integer():  # ONNX casts a float depth to an integer; fractional ones are not modelled
        raise Unsupported(f"OneHot: fractional depth {d}")
    kind = values.dtype.kind
    pair = [float(v) if kind == "f" else int(v) for v in values.reshape(-1)]
    return [node.input[0]], {"depth": int(d), "values": pair, "dtype": str(values.dtype),
                             "depth_dtype": str(depth.dtype), "axis": int(onnx_attr(node, "axis", -1))}


@ONNX.register("compress")
def compress(spec: Compress, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> None:
    cond = b.const(np.asarray(attrs["condition"], dtype=bool).reshape(-1), hint="condition")
    b.node("Compress", [ins[0], cond], outs, axis=attrs.get("axis"))


@ONNX_IMPORT.register("compress")
def import_compress(spec: Compress, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    cond = _required_ints(node, ctx, 1)
    attrs: Attrs = {"condition": [int(bool(c)) for c in cond.reshape(-1)]}
    if onnx_attr(node, "axis") is not None:
        attrs["axis"] = int(onnx_attr(node, "axis"))
    return [node.input[0]], attrs


@ONNX.register("reverse_sequence")
def reverse_sequence(spec: ReverseSequence, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> None:
    lens = b.const(np.asarray(attrs["sequence_lens"], dtype=np.int64).reshape(-1), hint="sequence_lens")
    b.node("ReverseSequence", [ins[0], lens], outs, batch_axis=attrs["batch_axis"], time_axis=attrs["time_axis"])


@ONNX_IMPORT.register("reverse_sequence")
def import_reverse_sequence(spec: ReverseSequence, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"batch_axis", "time_axis"})
    lens = _required_ints(node, ctx, 1)
    return [node.input[0]], {"sequence_lens": [int(n) for n in lens.reshape(-1)],
                             "batch_axis": int(onnx_attr(node, "batch_axis", 1)),
                             "time_axis": int(onnx_attr(node, "time_axis", 0))}


@ONNX.register("center_crop_pad")
def center_crop_pad(spec: CenterCropPad, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                    out_types: Any) -> None:
    shape = b.const(np.asarray(attrs["shape"], dtype=np.int64).reshape(-1), hint="shape")
    b.node("CenterCropPad", [ins[0], shape], outs, axes=attrs.get("axes"))


@ONNX_IMPORT.register("center_crop_pad")
def import_center_crop_pad(spec: CenterCropPad, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axes"})
    attrs: Attrs = {"shape": [int(n) for n in _required_ints(node, ctx, 1).reshape(-1)]}
    if onnx_attr(node, "axes") is not None:
        attrs["axes"] = [int(a) for a in onnx_attr(node, "axes")]
    return [node.input[0]], attrs


@ONNX.register("tensor_scatter")
def tensor_scatter(spec: TensorScatter, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> None:
    b.need_opset(TENSOR_SCATTER_OPSET)
    inputs = list(ins)
    if "write_indices" in attrs:
        inputs.append(b.const(np.asarray(attrs["write_indices"], dtype=np.int64).reshape(-1), hint="write_indices"))
    b.node("TensorScatter", inputs, outs, axis=attrs["axis"], mode=attrs["mode"])


@ONNX_IMPORT.register("tensor_scatter")
def import_tensor_scatter(spec: TensorScatter, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "mode"})
    attrs: Attrs = {"axis": int(onnx_attr(node, "axis", -2)), "mode": decode(onnx_attr(node, "mode", b"linear"))}
    writes = _const_ints(node, ctx, 2)
    if writes is not None:
        attrs["write_indices"] = [int(w) for w in writes.reshape(-1)]
    return [node.input[0], node.input[1]], attrs
