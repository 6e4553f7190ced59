"""ONNX lowering and import rules of the normalization operators (ops/normalization.py).

RMSNormalization exists from opset 23 and GroupNormalization's per-channel scale and bias from
opset 21: their rules raise the model's opset (b.need_opset). GroupNormalization-18 (scale and bias
per group) imports as group_norm with scale_per_group=1, written back in the opset-21 form."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, decode
from dlcfuzz.ops.normalization import (
    FLOAT_STASH,
    STASH_TYPES,
    GlobalLpPoolOp,
    GroupNormOp,
    LpNormOp,
    LpPoolOp,
    MeanVarianceNormOp,
    RmsNormOp,
)

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")

RMS_NORMALIZATION_SINCE = 23
GROUP_NORMALIZATION_PER_CHANNEL_SINCE = 21


def _stash(node: Any) -> int:
    stash = int(onnx_attr(node, "stash_type", FLOAT_STASH))
    if stash not in STASH_TYPES:
        raise Unsupported(f"{node.op_type}: stash_type {stash} is not modelled (only {STASH_TYPES})")
    return stash


@ONNX.register("rms_norm")
def rms_norm(spec: RmsNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.need_opset(RMS_NORMALIZATION_SINCE)
    b.node("RMSNormalization", ins, outs, axis=int(attrs["axis"]), epsilon=float(attrs["epsilon"]),
           stash_type=int(attrs["stash_type"]))


@ONNX_IMPORT.register("rms_norm")
def import_rms_norm(spec: RmsNormOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "epsilon", "stash_type"})
    return [node.input[0], node.input[1]], {"axis": int(onnx_attr(node, "axis", -1)),
                                            "epsilon": float(onnx_attr(node, "epsilon", 1e-5)),
                                            "stash_type": _stash(node)}


@ONNX.register("lp_norm")
def lp_norm(spec: LpNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("LpNormalization", ins, outs, axis=int(attrs["axis"]), p=int(attrs["p"]))


@ONNX_IMPORT.register("lp_norm")
def import_lp_norm(spec: LpNormOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axis", "p"})
    return [node.input[0]], {"axis": int(onnx_attr(node, "axis", -1)), "p": int(onnx_attr(node, "p", 2))}


@ONNX.register("mean_variance_norm")
def mean_variance_norm(spec: MeanVarianceNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs,
                       in_types: Any, out_types: Any) -> None:
    b.node("MeanVarianceNormalization", ins, outs, axes=[int(a) for a in attrs["axes"]])


@ONNX_IMPORT.register("mean_variance_norm")
def import_mean_variance_norm(spec: MeanVarianceNormOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"axes"})
    return [node.input[0]], {"axes": [int(a) for a in onnx_attr(node, "axes", [0, 2, 3])]}


@ONNX.register("group_norm")
def group_norm(spec: GroupNormOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> None:
    b.need_opset(GROUP_NORMALIZATION_PER_CHANNEL_SINCE)
    g = int(attrs["num_groups"])
    if attrs.get("scale_per_group", 0):
        # GroupNormalization-18's per-group scale and bias, as the per-channel ones of opset 21 (the
        # model's opset is 21 at least, where the per-group operator no longer exists)
        c = in_types[0].shape[1]
        shape, channels = b.const([g, c // g], "int64", "group_shape"), b.const([c], "int64", "channels")
        per_channel = []
        for name in ins[1:]:
            column, grid, flat = b.tmp("per_group"), b.tmp("per_group"), b.tmp("per_channel")
            b.node("Unsqueeze", [name, b.const([1], "int64", "axes")], [column])
            b.node("Expand", [column, shape], [grid])
            b.node("Reshape", [grid, channels], [flat])
            per_channel.append(flat)
        ins = [ins[0], *per_channel]
    b.node("GroupNormalization", ins, outs, num_groups=g, epsilon=float(attrs["epsilon"]),
           stash_type=int(attrs["stash_type"]))


@ONNX_IMPORT.register("group_norm")
def import_group_norm(spec: GroupNormOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"num_groups", "epsilon", "stash_type"})
    attrs: Attrs = {"num_groups": int(onnx_attr(node, "num_groups")), "epsilon": float(onnx_attr(node, "epsilon", 1e-5)),
                    "stash_type": _stash(node)}
    if ctx.opset < GROUP_NORMALIZATION_PER_CHANNEL_SINCE:  # GroupNormalization-18: scale and bias per group
        attrs["scale_per_group"] = 1
    return list(node.input[:3]), attrs


@ONNX.register("lp_pool")
def lp_pool(spec: LpPoolOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    explicit = attrs["auto_pad"] == "NOTSET"
    b.node("LpPool", ins, outs, kernel_shape=list(attrs["kernel"]), strides=list(attrs["strides"]),
           dilations=list(attrs["dilations"]), pads=list(attrs["pads"]) if explicit else None,
           auto_pad=None if explicit else attrs["auto_pad"], ceil_mode=int(attrs["ceil_mode"]), p=int(attrs["p"]))


@ONNX_IMPORT.register("lp_pool")
def import_lp_pool(spec: LpPoolOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"kernel_shape", "strides", "dilations", "pads", "auto_pad", "ceil_mode", "p"})
    k = [int(v) for v in onnx_attr(node, "kernel_shape")]
    nd = len(k)
    return [node.input[0]], {
        "kernel": k, "strides": [int(v) for v in onnx_attr(node, "strides", [1] * nd)],
        "dilations": [int(v) for v in onnx_attr(node, "dilations", [1] * nd)],
        "pads": [int(v) for v in onnx_attr(node, "pads", [0] * 2 * nd)],
        "auto_pad": decode(onnx_attr(node, "auto_pad", "NOTSET")), "ceil_mode": int(onnx_attr(node, "ceil_mode", 0)),
        "p": int(onnx_attr(node, "p", 2))}


@ONNX.register("global_lp_pool")
def global_lp_pool(spec: GlobalLpPoolOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> None:
    b.node("GlobalLpPool", ins, outs, p=int(attrs["p"]))


@ONNX_IMPORT.register("global_lp_pool")
def import_global_lp_pool(spec: GlobalLpPoolOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"p"})
    return [node.input[0]], {"p": int(onnx_attr(node, "p", 2))}
