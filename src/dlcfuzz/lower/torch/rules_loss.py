"""PyTorch lowering rules of the loss operators (ops/loss.py).

F.nll_loss has ONNX's semantics (weights gathered by target, "mean" divides by the summed weights of the
targets not ignored); its ignore_index is always an int, so "no ignore_index" is PyTorch's default -100,
which no generated target takes (targets lie in [0, C) there)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, literal

NO_IGNORE_INDEX = -100


def _nll(scores: str, ins: list[str], attrs: dict) -> str:
    weight = ins[2] if len(ins) == 3 else "None"
    ii = NO_IGNORE_INDEX if attrs["ignore_index"] is None else attrs["ignore_index"]
    return (f"F.nll_loss({scores}, {ins[1]}.long(), weight={weight}, ignore_index={literal(ii)}, "
            f"reduction={literal(attrs['reduction'])})")


@TARGET.register("negative_log_likelihood_loss")
def negative_log_likelihood_loss(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                                 out_types: Types) -> list[str]:
    return [_nll(ins[0], ins, attrs)]


@TARGET.register("softmax_cross_entropy_loss")
def softmax_cross_entropy_loss(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                               out_types: Types) -> list[str]:
    logp = e.bind(f"torch.log_softmax({ins[0]}, dim=1)", "logp")
    return [_nll(logp, ins, attrs)] + ([logp] if attrs["log_prob"] else [])
