"""Relax lowering rules of the loss operators (ops/loss.py): relax.op.nn.nll_loss, which has ONNX's
semantics (weights gathered by target, "mean" divided by the summed weights of the targets not
ignored), after log_softmax for SoftmaxCrossEntropyLoss. Its ignore_index is always an int, so "no
ignore_index" is its default -100, which no generated target takes (they lie in [0, C) there)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.loss import LossOp

RELAX = target("relax")
NO_IGNORE_INDEX = -100


def _nll(scores: Any, ins: list[Any], attrs: Attrs) -> Any:
    from tvm import relax

    ii = NO_IGNORE_INDEX if attrs["ignore_index"] is None else int(attrs["ignore_index"])
    return relax.op.nn.nll_loss(scores, ins[1], ins[2] if len(ins) == 3 else None,
                                reduction=attrs["reduction"], ignore_index=ii)


@RELAX.register("negative_log_likelihood_loss")
def negative_log_likelihood_loss(spec: LossOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                                 out_types: Any) -> list[Any]:
    return [_nll(ins[0], ins, attrs)]


@RELAX.register("softmax_cross_entropy_loss")
def softmax_cross_entropy_loss(spec: LossOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                               out_types: Any) -> list[Any]:
    from tvm import relax

    logp = bb.emit(relax.op.nn.log_softmax(ins[0], axis=1))
    return [_nll(logp, ins, attrs)] + ([logp] if attrs["log_prob"] else [])
