"""ONNX lowering and import rules of the loss operators (ops/loss.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.loss import LossOp

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


@ONNX.register("negative_log_likelihood_loss", "softmax_cross_entropy_loss")
def loss(spec: LossOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node(spec.onnx_ops[0], ins, outs, reduction=attrs["reduction"], ignore_index=attrs["ignore_index"])


@ONNX_IMPORT.register("negative_log_likelihood_loss", "softmax_cross_entropy_loss")
def import_loss(spec: LossOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"reduction", "ignore_index"})
    reduction = onnx_attr(node, "reduction", b"mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    ii = onnx_attr(node, "ignore_index")
    attrs: Attrs = {"reduction": reduction, "ignore_index": None if ii is None else int(ii)}
    outputs = [o for o in node.output]
    if spec.log_softmax:
        if len(outputs) == 2 and outputs[1] == "":
            raise Unsupported("SoftmaxCrossEntropyLoss with an empty log_prob output name")
        attrs["log_prob"] = int(len(outputs) == 2)
    return [i for i in node.input if i], attrs
