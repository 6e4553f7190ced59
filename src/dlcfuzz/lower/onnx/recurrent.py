"""ONNX lowering and import rules of the recurrent operators (ops/recurrent.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs, decode
from dlcfuzz.ops.recurrent import (
    ACTIVATIONS,
    DEFAULT_ACTIVATIONS,
    RecurrentOp,
    onnx_activation_lists,
    resolve_activation_params,
)

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")

# ONNX input positions of the optional inputs (sequence_lens, 4, is an attribute here)
_POSITION = {"bias": 3, "initial_h": 5, "initial_c": 6, "peepholes": 7}


@ONNX.register("rnn", "gru", "lstm")
def recurrent(spec: RecurrentOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    inputs = ins[:3] + [""] * 5
    for name, value in zip(spec.optional_inputs(attrs), ins[3:]):
        inputs[_POSITION[name]] = value
    if attrs.get("sequence_lens") is not None:
        inputs[4] = b.const(np.asarray(attrs["sequence_lens"], np.int32), hint="sequence_lens")
    while inputs[-1] == "":
        inputs.pop()
    alphas, betas = onnx_activation_lists(attrs["activations"], attrs["activation_params"])
    extra: dict[str, Any] = {}
    if spec.kind == "gru":
        extra["linear_before_reset"] = int(attrs.get("linear_before_reset", 0))
    if spec.kind == "lstm":
        extra["input_forget"] = int(attrs.get("input_forget", 0))
    b.node(spec.onnx_ops[0], inputs, outs, hidden_size=int(attrs["hidden_size"]), direction=attrs["direction"],
           layout=int(attrs.get("layout", 0)), activations=list(attrs["activations"]),
           activation_alpha=alphas or None, activation_beta=betas or None,
           clip=float(attrs["clip"]) if attrs.get("clip") is not None else None, **extra)


@ONNX_IMPORT.register("rnn", "gru", "lstm")
def import_recurrent(spec: RecurrentOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    known = {"hidden_size", "direction", "layout", "activations", "activation_alpha", "activation_beta", "clip"}
    known |= {"linear_before_reset"} if spec.kind == "gru" else {"input_forget"} if spec.kind == "lstm" else set()
    expect_attrs(node, known)
    direction = decode(onnx_attr(node, "direction", b"forward"))
    nd = 2 if direction == "bidirectional" else 1
    hidden = onnx_attr(node, "hidden_size")
    if hidden is None:  # optional in ONNX (inferred from R), required here
        hidden = ctx.type_of(node.input[2]).shape[-1]
    acts = [decode(a) for a in onnx_attr(node, "activations", [])] or DEFAULT_ACTIVATIONS[spec.kind] * nd
    # ONNX's names are case-sensitive in the spec; runtimes match them case-insensitively
    by_lower = {k.lower(): k for k in ACTIVATIONS}
    if any(a.lower() not in by_lower for a in acts):
        raise Unsupported(f"{node.op_type}: activations {acts} not all modelled")
    acts = [by_lower[a.lower()] for a in acts]
    attrs: Attrs = {
        "hidden_size": int(hidden), "direction": direction, "layout": int(onnx_attr(node, "layout", 0)),
        "activations": acts,
        "activation_params": resolve_activation_params(acts, onnx_attr(node, "activation_alpha"),
                                                        onnx_attr(node, "activation_beta")),
        "clip": float(onnx_attr(node, "clip")) if onnx_attr(node, "clip") is not None else None,
        "sequence_lens": None,
    }
    if spec.kind == "gru":
        attrs["linear_before_reset"] = int(onnx_attr(node, "linear_before_reset", 0))
    if spec.kind == "lstm":
        attrs["input_forget"] = int(onnx_attr(node, "input_forget", 0))
    lens = ctx.const_input(node, 4)
    if lens is not None:
        attrs["sequence_lens"] = [int(v) for v in lens.reshape(-1)]
    ins = list(node.input[:3])
    for name, pos in _POSITION.items():
        if name in ("initial_c", "peepholes") and spec.kind != "lstm":
            continue
        present = ctx.has_input(node, pos)
        attrs[f"has_{name}"] = present
        if present:
            ins.append(node.input[pos])
    return ins, attrs
