"""ONNX lowering and import rules of the nn operators (ops/nn.py), registered per operator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

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
def import_conv(spec: ConvOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"strides", "dilations", "pads", "group", "kernel_shape", "auto_pad"})
    from dlcfuzz.ops.base import decode

    w = ctx.type_of(node.input[1])
    if w.rank != spec.spatial + 2:
        raise Unsupported(f"Conv with {w.rank - 2} spatial dims is not {spec.name}")
    _check_kernel_shape(node, w)
    nd = spec.spatial
    ins = [i for i in node.input if i]
    strides, dilations = list(onnx_attr(node, "strides", [1] * nd)), list(onnx_attr(node, "dilations", [1] * nd))
    pads = list(onnx_attr(node, "pads", [0] * 2 * nd))
    auto = decode(onnx_attr(node, "auto_pad", "NOTSET"))
    if auto != "NOTSET":  # static shapes: auto_pad is explicit pads (ONNX's formula)
        x = ctx.type_of(node.input[0])
        pads = [0] * (2 * nd)
        for i in range(nd):
            if auto == "VALID":
                continue
            size, eff = x.shape[2 + i], dilations[i] * (w.shape[2 + i] - 1) + 1
            total = max((-(-size // strides[i]) - 1) * strides[i] + eff - size, 0)
            small, large = total // 2, total - total // 2
            pads[i], pads[nd + i] = (small, large) if auto == "SAME_UPPER" else (large, small)
    return ins, {"strides": strides, "dilations": dilations, "pads": pads, "group": int(onnx_attr(node, "group", 1))}


@ONNX.register("conv_transpose2d")
def conv_transpose2d(spec: ConvTranspose2dOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    op = attrs.get("output_padding", [0, 0])
    b.node("ConvTranspose", ins, outs, strides=attrs["strides"], dilations=attrs["dilations"], pads=attrs["pads"],
           group=attrs["group"], kernel_shape=list(in_types[1].shape[2:]), output_padding=op if any(op) else None)


@ONNX_IMPORT.register("conv_transpose2d")
def import_conv_transpose2d(spec: ConvTranspose2dOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"strides", "dilations", "pads", "group", "kernel_shape", "output_padding", "auto_pad",
                        "output_shape"})
    from dlcfuzz.ops.base import decode

    w = ctx.type_of(node.input[1])
    if w.rank != 4:
        raise Unsupported("ConvTranspose that is not 2-D")
    _check_kernel_shape(node, w)
    attrs: Attrs = {
        "strides": list(onnx_attr(node, "strides", [1, 1])), "dilations": list(onnx_attr(node, "dilations", [1, 1])),
        "pads": list(onnx_attr(node, "pads", [0, 0, 0, 0])),
        "output_padding": list(onnx_attr(node, "output_padding", [0, 0])), "group": int(onnx_attr(node, "group", 1))}
    auto = decode(onnx_attr(node, "auto_pad", "NOTSET"))
    out_shape = onnx_attr(node, "output_shape")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        # static shapes: the pads ONNX derives from the output shape (SAME: input * stride)
        x = ctx.type_of(node.input[0])
        s, d, op = attrs["strides"], attrs["dilations"], attrs["output_padding"]
        target_shape = list(out_shape)[-2:] if out_shape is not None else [x.shape[2 + i] * s[i] for i in range(2)]
        pads = [0, 0, 0, 0]
        for i in range(2):
            total = s[i] * (x.shape[2 + i] - 1) + op[i] + d[i] * (w.shape[2 + i] - 1) + 1 - target_shape[i]
            small = total // 2
            pads[i], pads[2 + i] = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
            if pads[2 + i] < 0 and pads[i] == 0:  # a negative end pad: more output_padding
                op[i] -= pads[2 + i]
                pads[2 + i] = 0
            if min(pads[i], pads[2 + i]) < 0:
                raise Unsupported("ConvTranspose output_shape that needs a negative start pad")
        attrs["pads"], attrs["output_padding"] = pads, op
    return [i for i in node.input if i], attrs


POOLS = ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d")


@ONNX.register(*POOLS)
def pool(spec: Pool2dOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    nd = spec.spatial
    auto = attrs.get("auto_pad", "NOTSET")
    extra: dict[str, Any] = {"ceil_mode": attrs.get("ceil_mode") or None,
                             "auto_pad": auto if auto != "NOTSET" else None,
                             "pads": attrs["pads"] if auto == "NOTSET" else None}
    if spec.kind == "max":
        extra["dilations"] = attrs["dilations"]
        extra["storage_order"] = attrs.get("storage_order") or None
    else:
        extra["count_include_pad"] = attrs["count_include_pad"]
        if list(attrs["dilations"]) != [1] * nd:  # AveragePool dilations: opset 19
            b.need_opset(19)
            extra["dilations"] = attrs["dilations"]
    b.node(spec.onnx_op, ins, outs, kernel_shape=attrs["kernel"], strides=attrs["strides"], **extra)


@ONNX_IMPORT.register(*POOLS)
def import_pool(spec: Pool2dOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    from dlcfuzz.ops.base import decode

    allowed = {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations"}
    allowed |= {"storage_order"} if spec.kind == "max" else {"count_include_pad"}
    expect_attrs(node, allowed)
    k = list(onnx_attr(node, "kernel_shape"))
    nd = spec.spatial
    if len(k) != nd:
        raise Unsupported(f"{node.op_type} with {len(k)} spatial dims is not {spec.name}")
    auto = decode(onnx_attr(node, "auto_pad", "NOTSET"))
    attrs: Attrs = {"kernel": k, "strides": list(onnx_attr(node, "strides", [1] * nd)),
                    "pads": [0] * (2 * nd) if auto != "NOTSET" else list(onnx_attr(node, "pads", [0] * (2 * nd))),
                    "dilations": list(onnx_attr(node, "dilations", [1] * nd))}
    if auto != "NOTSET":
        attrs["auto_pad"] = auto
        if auto != "VALID" and any(v != 1 for v in attrs["dilations"]):  # is the window dilated there?
            raise Unsupported(f"{node.op_type} auto_pad {auto} with dilations")
    if onnx_attr(node, "ceil_mode", 0):
        attrs["ceil_mode"] = 1
    if spec.kind == "max":
        if len(node.output) > 1:
            attrs["indices"] = 1
            attrs["storage_order"] = int(onnx_attr(node, "storage_order", 0))
        elif onnx_attr(node, "storage_order", 0):
            attrs["storage_order"] = 1  # without Indices it changes nothing
    else:
        attrs["count_include_pad"] = int(onnx_attr(node, "count_include_pad", 0))
    return [node.input[0]], attrs


@ONNX.register("global_avg_pool", "global_max_pool")
def global_pool(spec: GlobalPoolOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node(spec.onnx_op, ins, outs)


@ONNX_IMPORT.register("global_avg_pool", "global_max_pool")
def import_global_pool(spec: GlobalPoolOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0]], {}


@ONNX.register("matmul")
def mat_mul(spec: MatMulOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("MatMul", ins, outs)


@ONNX_IMPORT.register("matmul")
def import_mat_mul(spec: MatMulOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    return [node.input[0], node.input[1]], {}


@ONNX.register("gemm")
def gemm(spec: GemmOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Gemm", ins, outs, alpha=attrs["alpha"], beta=attrs["beta"], transA=attrs["transA"], transB=attrs["transB"])


@ONNX_IMPORT.register("gemm")
def import_gemm(spec: GemmOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"alpha", "beta", "transA", "transB"})
    return [i for i in node.input if i], {
        "alpha": float(onnx_attr(node, "alpha", 1.0)), "beta": float(onnx_attr(node, "beta", 1.0)),
        "transA": int(onnx_attr(node, "transA", 0)), "transB": int(onnx_attr(node, "transB", 0))}


@ONNX.register("batch_norm")
def batch_norm(spec: BatchNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    training = {"training_mode": 1, "momentum": attrs.get("momentum", 0.9)} if attrs.get("training_mode", 0) else {}
    b.node("BatchNormalization", ins, outs, epsilon=attrs["epsilon"], **training)


@ONNX_IMPORT.register("batch_norm")
def import_batch_norm(spec: BatchNormOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"epsilon", "momentum", "training_mode"})
    if ctx.opset < 14 and len(node.output) != 1:  # outputs of older opsets (saved mean/var) differ
        raise Unsupported("BatchNormalization with the training outputs of opset < 14")
    attrs: Attrs = {"epsilon": float(onnx_attr(node, "epsilon", 1e-5))}
    if onnx_attr(node, "training_mode", 0):
        attrs.update(training_mode=1, momentum=float(onnx_attr(node, "momentum", 0.9)))
    elif len(node.output) != 1:
        raise Unsupported("BatchNormalization running statistics outside training mode")
    return list(node.input[:5]), attrs


@ONNX.register("layer_norm")
def layer_norm(spec: LayerNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("LayerNormalization", ins, outs, axis=attrs["axis"], epsilon=attrs["epsilon"])


@ONNX_IMPORT.register("layer_norm")
def import_layer_norm(spec: LayerNormOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "epsilon", "stash_type"})
    outputs = len(node.output)
    if outputs > 1 and onnx_attr(node, "stash_type", 1) != 1:
        raise Unsupported("LayerNormalization Mean/InvStdDev in a stash type other than float32")
    attrs: Attrs = {"axis": int(onnx_attr(node, "axis", -1)), "epsilon": float(onnx_attr(node, "epsilon", 1e-5))}
    if outputs > 1:
        attrs["outputs"] = outputs
    return [i for i in node.input if i], attrs


@ONNX.register("instance_norm")
def instance_norm(spec: InstanceNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("InstanceNormalization", ins, outs, epsilon=attrs["epsilon"])


@ONNX_IMPORT.register("instance_norm")
def import_instance_norm(spec: InstanceNormOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"epsilon"})
    return list(node.input[:3]), {"epsilon": float(onnx_attr(node, "epsilon", 1e-5))}


@ONNX.register("lrn")
def lrn(spec: LrnOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("LRN", ins, outs, size=attrs["size"], alpha=attrs["alpha"], beta=attrs["beta"], bias=attrs["bias"])


@ONNX_IMPORT.register("lrn")
def import_lrn(spec: LrnOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"size", "alpha", "beta", "bias"})
    if onnx_attr(node, "size") is None:
        raise Unsupported("LRN without size")
    return [node.input[0]], {"size": int(onnx_attr(node, "size")), "alpha": float(onnx_attr(node, "alpha", 1e-4)),
                             "beta": float(onnx_attr(node, "beta", 0.75)), "bias": float(onnx_attr(node, "bias", 1.0))}


@ONNX.register("softmax", "log_softmax")
def softmax(spec: SoftmaxOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node(spec.onnx_op, ins, outs, axis=attrs["axis"])


@ONNX_IMPORT.register("softmax", "log_softmax")
def import_softmax(spec: SoftmaxOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis"})
    if ctx.opset < 13:
        raise Unsupported(f"{node.op_type} before opset 13 flattens to 2-D")
    return [node.input[0]], {"axis": int(onnx_attr(node, "axis", -1))}


@ONNX.register("dropout")
def dropout(spec: DropoutOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    ratio = b.const(np.asarray(attrs["ratio"], in_types[0].dtype))
    b.node("Dropout", [ins[0], ratio], outs)


@ONNX_IMPORT.register("dropout")
def import_dropout(spec: DropoutOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset < 12:  # ratio (and is_test before 7) were attributes; inference is the identity anyway
        expect_attrs(node, {"seed", "ratio", "is_test"})
        ratio = np.array(onnx_attr(node, "ratio", 0.5))
    else:
        expect_attrs(node, {"seed"})
        ratio = ctx.const_input(node, 1) if ctx.has_input(node, 1) else np.array(0.5)
    if ctx.has_input(node, 2):
        mode = ctx.const_input(node, 2)
        if mode is not None and bool(mode) and float(ratio) != 0.0:  # random: not a function of the inputs
            raise Unsupported("Dropout in training mode")
    attrs: Attrs = {"ratio": float(ratio)}
    if len(node.output) > 1:
        attrs["mask"] = 1
    return [node.input[0]], attrs
