"""ONNX lowering and import rules of the nn operators (ops/nn.py), registered per operator."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.nn import (
    BatchNormOp,
    ConvOp,
    ConvTranspose2dOp,
    DropoutOp,
    GemmOp,
    GlobalPoolOp,
    InstanceNormOp,
    LayerNormOp,
    LrnOp,
    MatMulOp,
    Pool2dOp,
    SoftmaxOp,
)

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


def _check_kernel_shape(node: Any, w: TensorType) -> None:
    """ONNX kernel_shape is redundant with the weight; a disagreeing one is a model we do not model."""
    k = onnx_attr(node, "kernel_shape")
    if k is not None and list(k) != list(w.shape[2:]):
        raise Unsupported(f"{node.op_type}: kernel_shape {list(k)} differs from weight {w.shape}")


@ONNX.register("conv1d", "conv2d")
def conv(spec: ConvOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Conv", ins, outs, strides=attrs["strides"], dilations=attrs["dilations"], pads=attrs["pads"],
           group=attrs["group"], kernel_shape=list(in_types[1].shape[2:]))


@ONNX_IMPORT.register("conv1d", "conv2d")
def import_conv(spec: ConvOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"strides", "dilations", "pads", "group", "kernel_shape", "auto_pad"})
    from dlcfuzz.ops.base import decode

    if decode(onnx_attr(node, "auto_pad", "NOTSET")) != "NOTSET":
        raise Unsupported("Conv auto_pad")
    w = ctx.type_of(node.input[1])
    if w.rank != spec.spatial + 2:
        raise Unsupported(f"Conv with {w.rank - 2} spatial dims is not {spec.name}")
    _check_kernel_shape(node, w)
    nd = spec.spatial
    ins = [i for i in node.input if i]
    return ins, {"strides": list(onnx_attr(node, "strides", [1] * nd)),
                 "dilations": list(onnx_attr(node, "dilations", [1] * nd)),
                 "pads": list(onnx_attr(node, "pads", [0] * 2 * nd)), "group": int(onnx_attr(node, "group", 1))}


@ONNX.register("conv_transpose2d")
def conv_transpose2d(spec: ConvTranspose2dOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    op = attrs.get("output_padding", [0, 0])
    b.node("ConvTranspose", ins, outs, strides=attrs["strides"], dilations=attrs["dilations"], pads=attrs["pads"],
           group=attrs["group"], kernel_shape=list(in_types[1].shape[2:]), output_padding=op if any(op) else None)


@ONNX_IMPORT.register("conv_transpose2d")
def import_conv_transpose2d(spec: ConvTranspose2dOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"strides", "dilations", "pads", "group", "kernel_shape", "output_padding", "auto_pad"})
    from dlcfuzz.ops.base import decode

    if decode(onnx_attr(node, "auto_pad", "NOTSET")) != "NOTSET":
        raise Unsupported("ConvTranspose auto_pad")
    w = ctx.type_of(node.input[1])
    if w.rank != 4:
        raise Unsupported("ConvTranspose that is not 2-D")
    _check_kernel_shape(node, w)
    return [i for i in node.input if i], {
        "strides": list(onnx_attr(node, "strides", [1, 1])), "dilations": list(onnx_attr(node, "dilations", [1, 1])),
        "pads": list(onnx_attr(node, "pads", [0, 0, 0, 0])),
        "output_padding": list(onnx_attr(node, "output_padding", [0, 0])), "group": int(onnx_attr(node, "group", 1))}


@ONNX.register("max_pool2d", "avg_pool2d")
def pool2d(spec: Pool2dOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    extra = {"dilations": attrs["dilations"]} if spec.kind == "max" else {"count_include_pad": attrs["count_include_pad"]}
    b.node(spec.onnx_op, ins, outs, kernel_shape=attrs["kernel"], strides=attrs["strides"], pads=attrs["pads"], **extra)


@ONNX_IMPORT.register("max_pool2d", "avg_pool2d")
def import_pool2d(spec: Pool2dOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    from dlcfuzz.ops.base import decode

    allowed = {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode"}
    allowed |= {"dilations", "storage_order"} if spec.kind == "max" else {"count_include_pad"}
    expect_attrs(node, allowed)
    if decode(onnx_attr(node, "auto_pad", "NOTSET")) != "NOTSET" or onnx_attr(node, "ceil_mode", 0):
        raise Unsupported(f"{node.op_type} auto_pad / ceil_mode")
    if onnx_attr(node, "storage_order", 0) or len(node.output) > 1:
        raise Unsupported("MaxPool indices output")
    k = list(onnx_attr(node, "kernel_shape"))
    if len(k) != 2:
        raise Unsupported(f"{node.op_type} with {len(k)} spatial dims")
    attrs: Attrs = {"kernel": k, "strides": list(onnx_attr(node, "strides", [1, 1])),
                    "pads": list(onnx_attr(node, "pads", [0, 0, 0, 0]))}
    if spec.kind == "max":
        attrs["dilations"] = list(onnx_attr(node, "dilations", [1, 1]))
    else:
        attrs["dilations"] = [1, 1]
        attrs["count_include_pad"] = int(onnx_attr(node, "count_include_pad", 0))
    return [node.input[0]], attrs


@ONNX.register("global_avg_pool", "global_max_pool")
def global_pool(spec: GlobalPoolOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node(spec.onnx_op, ins, outs)


@ONNX_IMPORT.register("global_avg_pool", "global_max_pool")
def import_global_pool(spec: GlobalPoolOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0]], {}


@ONNX.register("matmul")
def mat_mul(spec: MatMulOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("MatMul", ins, outs)


@ONNX_IMPORT.register("matmul")
def import_mat_mul(spec: MatMulOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0], node.input[1]], {}


@ONNX.register("gemm")
def gemm(spec: GemmOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Gemm", ins, outs, alpha=attrs["alpha"], beta=attrs["beta"], transA=attrs["transA"], transB=attrs["transB"])


@ONNX_IMPORT.register("gemm")
def import_gemm(spec: GemmOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"alpha", "beta", "transA", "transB"})
    return [i for i in node.input if i], {
        "alpha": float(onnx_attr(node, "alpha", 1.0)), "beta": float(onnx_attr(node, "beta", 1.0)),
        "transA": int(onnx_attr(node, "transA", 0)), "transB": int(onnx_attr(node, "transB", 0))}


@ONNX.register("batch_norm")
def batch_norm(spec: BatchNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("BatchNormalization", ins, outs, epsilon=attrs["epsilon"])


@ONNX_IMPORT.register("batch_norm")
def import_batch_norm(spec: BatchNormOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"epsilon", "momentum", "training_mode"})
    if onnx_attr(node, "training_mode", 0) or len(node.output) != 1:
        raise Unsupported("BatchNormalization in training mode")
    return list(node.input[:5]), {"epsilon": float(onnx_attr(node, "epsilon", 1e-5))}


@ONNX.register("layer_norm")
def layer_norm(spec: LayerNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("LayerNormalization", ins, outs, axis=attrs["axis"], epsilon=attrs["epsilon"])


@ONNX_IMPORT.register("layer_norm")
def import_layer_norm(spec: LayerNormOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "epsilon", "stash_type"})
    if len([o for o in node.output if o]) != 1:
        raise Unsupported("LayerNormalization with Mean/InvStdDev outputs")
    return [i for i in node.input if i], {"axis": int(onnx_attr(node, "axis", -1)),
                                          "epsilon": float(onnx_attr(node, "epsilon", 1e-5))}


@ONNX.register("instance_norm")
def instance_norm(spec: InstanceNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("InstanceNormalization", ins, outs, epsilon=attrs["epsilon"])


@ONNX_IMPORT.register("instance_norm")
def import_instance_norm(spec: InstanceNormOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"epsilon"})
    return list(node.input[:3]), {"epsilon": float(onnx_attr(node, "epsilon", 1e-5))}


@ONNX.register("lrn")
def lrn(spec: LrnOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("LRN", ins, outs, size=attrs["size"], alpha=attrs["alpha"], beta=attrs["beta"], bias=attrs["bias"])


@ONNX_IMPORT.register("lrn")
def import_lrn(spec: LrnOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"size", "alpha", "beta", "bias"})
    if onnx_attr(node, "size") is None:
        raise Unsupported("LRN without size")
    return [node.input[0]], {"size": int(onnx_attr(node, "size")), "alpha": float(onnx_attr(node, "alpha", 1e-4)),
                             "beta": float(onnx_attr(node, "beta", 0.75)), "bias": float(onnx_attr(node, "bias", 1.0))}


@ONNX.register("softmax", "log_softmax")
def softmax(spec: SoftmaxOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node(spec.onnx_op, ins, outs, axis=attrs["axis"])


@ONNX_IMPORT.register("softmax", "log_softmax")
def import_softmax(spec: SoftmaxOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    if ctx.opset < 13:
        raise Unsupported(f"{node.op_type} before opset 13 flattens to 2-D")
    return [node.input[0]], {"axis": int(onnx_attr(node, "axis", -1))}


@ONNX.register("dropout")
def dropout(spec: DropoutOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    ratio = b.const(np.asarray(attrs["ratio"], in_types[0].dtype))
    b.node("Dropout", [ins[0], ratio], outs)


@ONNX_IMPORT.register("dropout")
def import_dropout(spec: DropoutOp, node: Any, ctx: Any) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"seed"})
    if len([o for o in node.output if o]) != 1:
        raise Unsupported("Dropout mask output")
    if ctx.has_input(node, 2):
        mode = ctx.const_input(node, 2)
        if mode is not None and bool(mode):
            raise Unsupported("Dropout in training mode")
    ratio = ctx.const_input(node, 1) if ctx.has_input(node, 1) else np.array(0.5)
    return [node.input[0]], {"ratio": float(ratio)}
