"""ONNX lowering and import rules of the quant_integer operators (ops/quant_integer.py). Scales and
zero points, attributes here, are written as initializers and read back as constants."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, decode
from dlcfuzz.ops.quant_integer import (
    ConvIntegerOp,
    DynamicQuantizeLinearOp,
    MatMulIntegerOp,
    QLinearConvOp,
    QLinearMatMulOp,
)

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")
CONV_ATTRS = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}


def _zp_input(b: Any, v: Any, dtype: str) -> str:
    return b.const(np.asarray(v, dtype=dtype), hint="zp")


def _scale_input(b: Any, v: Any) -> str:
    return b.const(np.asarray(v, dtype=np.float32), hint="scale")


def _read_zp(node: Any, ctx: ImportContext, i: int, data_dtype: str, per: int | None) -> int | list[int]:
    """A zero point input: absent (0), a scalar or size-1 tensor, or (when per is given) `per` values."""
    a = ctx.const_input(node, i)
    if a is None:
        return 0
    if str(a.dtype) != data_dtype:
        raise Unsupported(f"{node.op_type}: zero point type {a.dtype} differs from its input's {data_dtype}")
    if a.size == 1 and a.ndim <= 1:
        return int(a.reshape(()))
    if per is not None and a.shape == (per,):
        if len(set(a.tolist())) == 1:
            return int(a[0])
        return [int(v) for v in a]
    raise Unsupported(f"{node.op_type}: zero point of shape {a.shape} is not modelled")


def _read_scale(node: Any, ctx: ImportContext, i: int, per: int | None = None) -> float | list[float]:
    a = ctx.const_input(node, i)
    if a is None:
        raise Unsupported(f"{node.op_type}: input {i} (a scale) is required")
    if str(a.dtype) not in ("float32", "float16"):  # float16 values are float32-exact
        raise Unsupported(f"{node.op_type}: scale type {a.dtype} is not modelled")
    if a.size == 1 and a.ndim <= 1:
        return float(np.float32(a.reshape(())))
    if per is not None and a.shape == (per,):
        return [float(np.float32(v)) for v in a]
    raise Unsupported(f"{node.op_type}: scale of shape {a.shape} is not modelled")


def _conv_attrs(node: Any, ctx: ImportContext, w_name: str) -> Attrs:
    expect_attrs(node, CONV_ATTRS)
    if decode(onnx_attr(node, "auto_pad", b"NOTSET")) not in ("NOTSET",):
        raise Unsupported(f"{node.op_type}: auto_pad is not modelled (explicit pads are)")
    nd = ctx.type_of(w_name).rank - 2
    kernel = onnx_attr(node, "kernel_shape")
    if kernel is not None and list(kernel) != list(ctx.type_of(w_name).shape[2:]):
        raise Unsupported(f"{node.op_type}: kernel_shape differs from the weight's")
    return {"strides": list(onnx_attr(node, "strides", [1] * nd)), "dilations": list(onnx_attr(node, "dilations", [1] * nd)),
            "pads": list(onnx_attr(node, "pads", [0] * (2 * nd))), "group": int(onnx_attr(node, "group", 1))}


def _write_conv_attrs(attrs: Attrs) -> dict[str, Any]:
    return {"strides": list(attrs["strides"]), "dilations": list(attrs["dilations"]), "pads": list(attrs["pads"]),
            "group": int(attrs.get("group", 1))}


@ONNX.register("matmul_integer")
def matmul_integer(spec: MatMulIntegerOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("MatMulInteger", [ins[0], ins[1], _zp_input(b, attrs["a_zero_point"], in_types[0].dtype),
                             _zp_input(b, attrs["b_zero_point"], in_types[1].dtype)], outs)


@ONNX_IMPORT.register("matmul_integer")
def import_matmul_integer(spec: MatMulIntegerOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    a, bt = ctx.type_of(node.input[0]), ctx.type_of(node.input[1])
    return list(node.input[:2]), {"a_zero_point": _read_zp(node, ctx, 2, a.dtype, None),
                                  "b_zero_point": _read_zp(node, ctx, 3, bt.dtype, bt.shape[-1] if bt.rank == 2 else None)}


@ONNX.register("conv_integer")
def conv_integer(spec: ConvIntegerOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("ConvInteger", [ins[0], ins[1], _zp_input(b, attrs["x_zero_point"], in_types[0].dtype),
                           _zp_input(b, attrs["w_zero_point"], in_types[1].dtype)], outs,
           kernel_shape=list(in_types[1].shape[2:]), **_write_conv_attrs(attrs))


@ONNX_IMPORT.register("conv_integer")
def import_conv_integer(spec: ConvIntegerOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    attrs = _conv_attrs(node, ctx, node.input[1])
    x, w = ctx.type_of(node.input[0]), ctx.type_of(node.input[1])
    attrs["x_zero_point"] = _read_zp(node, ctx, 2, x.dtype, None)
    attrs["w_zero_point"] = _read_zp(node, ctx, 3, w.dtype, w.shape[0])
    return list(node.input[:2]), attrs


@ONNX.register("qlinear_matmul")
def qlinear_matmul(spec: QLinearMatMulOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    a_t, b_t = in_types[0].dtype, in_types[1].dtype
    b.node("QLinearMatMul", [ins[0], _scale_input(b, attrs["a_scale"]), _zp_input(b, attrs["a_zero_point"], a_t),
                             ins[1], _scale_input(b, attrs["b_scale"]), _zp_input(b, attrs["b_zero_point"], b_t),
                             _scale_input(b, attrs["y_scale"]), _zp_input(b, attrs["y_zero_point"], attrs["to"])], outs)


@ONNX_IMPORT.register("qlinear_matmul")
def import_qlinear_matmul(spec: QLinearMatMulOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    a, bt = ctx.type_of(node.input[0]), ctx.type_of(node.input[3])
    y_zp = ctx.const_input(node, 7)
    to = str(y_zp.dtype) if y_zp is not None else a.dtype
    return [node.input[0], node.input[3]], {
        "a_scale": _read_scale(node, ctx, 1), "a_zero_point": _read_zp(node, ctx, 2, a.dtype, None),
        "b_scale": _read_scale(node, ctx, 4), "b_zero_point": _read_zp(node, ctx, 5, bt.dtype, None),
        "y_scale": _read_scale(node, ctx, 6), "y_zero_point": _read_zp(node, ctx, 7, to, None), "to": to}


@ONNX.register("qlinear_conv")
def qlinear_conv(spec: QLinearConvOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    x_t, w_t = in_types[0].dtype, in_types[1].dtype
    inputs = [ins[0], _scale_input(b, attrs["x_scale"]), _zp_input(b, attrs["x_zero_point"], x_t),
              ins[1], _scale_input(b, attrs["w_scale"]), _zp_input(b, attrs["w_zero_point"], w_t),
              _scale_input(b, attrs["y_scale"]), _zp_input(b, attrs["y_zero_point"], attrs["to"])]
    b.node("QLinearConv", inputs + ins[2:3], outs, kernel_shape=list(in_types[1].shape[2:]), **_write_conv_attrs(attrs))


@ONNX_IMPORT.register("qlinear_conv")
def import_qlinear_conv(spec: QLinearConvOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    attrs = _conv_attrs(node, ctx, node.input[3])
    x, w = ctx.type_of(node.input[0]), ctx.type_of(node.input[3])
    m = w.shape[0]
    y_zp = ctx.const_input(node, 7)
    to = str(y_zp.dtype) if y_zp is not None else x.dtype
    w_zp = _read_zp(node, ctx, 5, w.dtype, m)
    if isinstance(w_zp, list):
        raise Unsupported("QLinearConv: per-channel weight zero points are not modelled (onnxruntime wants one)")
    attrs.update({"x_scale": _read_scale(node, ctx, 1), "x_zero_point": _read_zp(node, ctx, 2, x.dtype, None),
                  "w_scale": _read_scale(node, ctx, 4, m), "w_zero_point": w_zp,
                  "y_scale": _read_scale(node, ctx, 6), "y_zero_point": _read_zp(node, ctx, 7, to, None), "to": to})
    ins = [node.input[0], node.input[3]]
    if ctx.has_input(node, 8):
        ins.append(node.input[8])
    return ins, attrs


@ONNX.register("dynamic_quantize_linear")
def dynamic_quantize_linear(spec: DynamicQuantizeLinearOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("DynamicQuantizeLinear", ins, outs)


@ONNX_IMPORT.register("dynamic_quantize_linear")
def import_dynamic_quantize_linear(spec: DynamicQuantizeLinearOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0]], {}
