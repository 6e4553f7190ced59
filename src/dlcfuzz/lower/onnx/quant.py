"""ONNX lowering and import rules of the quant operators (ops/quant.py), registered per operator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.quant import QTYPES, DequantizeLinearOp, QuantizeLinearOp, _scalar_input

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


def _import_params(node: Any, ctx: ImportContext, qtype_default: str) -> tuple[float, int, str]:
    expect_attrs(node, {"axis", "saturate", "block_size", "output_dtype"})
    if onnx_attr(node, "block_size", 0):
        raise Unsupported(f"{node.op_type}: blocked quantization is not modelled")
    scale = _scalar_input(node, ctx, 1, "scale")
    zp = _scalar_input(node, ctx, 2, "zero point")
    if scale is None or str(scale.dtype) != "float32":
        raise Unsupported(f"{node.op_type}: scale must be a float32 constant")
    qtype = str(zp.dtype) if zp is not None else qtype_default
    if qtype not in QTYPES:
        raise Unsupported(f"{node.op_type}: quantized type {qtype} is not modelled")
    return float(scale.reshape(())), int(zp.reshape(())) if zp is not None else 0, qtype


@ONNX.register("quantize_linear")
def quantize_linear(spec: QuantizeLinearOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    if attrs["to"] in ("int16", "uint16"):  # 16-bit quantization: opset 21
        b.need_opset(21)
    b.node("QuantizeLinear", [ins[0], b.const(attrs["scale"], "float32", "scale"),
                              b.const(attrs["zero_point"], attrs["to"], "zp")], outs)


@ONNX_IMPORT.register("quantize_linear")
def import_quantize_linear(spec: QuantizeLinearOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    scale, zp, qtype = _import_params(node, ctx, "uint8")
    return [node.input[0]], {"scale": scale, "zero_point": zp, "to": qtype}


@ONNX.register("dequantize_linear")
def dequantize_linear(spec: DequantizeLinearOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    if in_types[0].dtype in ("int16", "uint16"):  # 16-bit quantization: opset 21
        b.need_opset(21)
    b.node("DequantizeLinear", [ins[0], b.const(attrs["scale"], "float32", "scale"),
                                b.const(attrs["zero_point"], in_types[0].dtype, "zp")], outs)


@ONNX_IMPORT.register("dequantize_linear")
def import_dequantize_linear(spec: DequantizeLinearOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    scale, zp, qtype = _import_params(node, ctx, ctx.type_of(node.input[0]).dtype)
    if qtype != ctx.type_of(node.input[0]).dtype:
        raise Unsupported(f"{node.op_type}: zero point type {qtype} differs from the input's")
    return [node.input[0]], {"scale": scale, "zero_point": zp}
