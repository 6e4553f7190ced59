"""ONNX lowering and import rules of the attention operators (ops/attention.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.attention import AttentionOp, CausalConvWithStateOp, LinearAttentionOp, RotaryEmbeddingOp
from dlcfuzz.ops.base import Attrs, decode

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")

_ATTENTION_ATTRS = {"q_num_heads", "kv_num_heads", "scale", "is_causal", "softcap", "softmax_precision",
                    "qk_matmul_output_mode", "left_window_size", "right_window_size"}


def _trim(names: list[str]) -> list[str]:
    """ONNX optional operands: absent ones in the middle are "", trailing ones are left out."""
    while names and names[-1] == "":
        names.pop()
    return names


@ONNX.register("attention")
def attention(spec: AttentionOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> None:
    rest = list(ins[3:])
    rest_types = list(in_types[3:])
    mask = rest.pop(0) if attrs.get("has_mask") else ""
    mask_type = rest_types.pop(0) if attrs.get("has_mask") else None
    past = [rest.pop(0), rest.pop(0)] if attrs.get("has_past") else ["", ""]
    nonpad = rest.pop(0) if attrs.get("has_nonpad") else ""
    onnx_ins = _trim([*ins[:3], mask, *past, nonpad])
    tail = list(outs[1:])
    present = [tail.pop(0), tail.pop(0)] if attrs.get("present") else ["", ""]
    qk = tail.pop(0) if attrs.get("qk_output") else ""
    onnx_outs = _trim([outs[0], *present, qk])
    b.need_opset(23)
    if nonpad:
        b.need_opset(24)
    if mask_type is not None:
        k_len = in_types[1].shape[1] if in_types[0].rank == 3 else in_types[1].shape[2]
        p = in_types[4].shape[2] if attrs.get("has_past") else 0
        if mask_type.shape[-1] < p + k_len:  # padded with -inf: spelled out from opset 24 on
            b.need_opset(24)
    window = {k: int(attrs.get(k, -1)) for k in ("left_window_size", "right_window_size")}
    if any(w >= 0 for w in window.values()):
        b.need_opset(25)
    three_d = in_types[0].rank == 3
    b.node("Attention", onnx_ins, onnx_outs,
           q_num_heads=int(attrs["q_num_heads"]) if three_d else None,
           kv_num_heads=int(attrs["kv_num_heads"]) if three_d else None,
           scale=float(attrs["scale"]) if attrs.get("scale") is not None else None,
           is_causal=1 if attrs.get("is_causal") else None,
           softcap=float(attrs["softcap"]) if attrs.get("softcap") else None,
           softmax_precision=int(attrs["softmax_precision"]) if attrs.get("softmax_precision") else None,
           qk_matmul_output_mode=int(attrs["qk_matmul_output_mode"]) if attrs.get("qk_matmul_output_mode") else None,
           **{k: w for k, w in window.items() if w >= 0})


@ONNX_IMPORT.register("attention")
def import_attention(spec: AttentionOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, _ATTENTION_ATTRS)
    has = [ctx.has_input(node, i) for i in range(7)]
    if has[4] != has[5]:
        raise Unsupported("Attention: past_key and past_value must come together")
    outs = list(node.output) + [""] * (4 - len(node.output))
    if bool(outs[1]) != bool(outs[2]):
        raise Unsupported("Attention: present_key and present_value must come together")
    q = ctx.type_of(node.input[0])
    heads = {k: onnx_attr(node, k) for k in ("q_num_heads", "kv_num_heads")}
    if q.rank == 4:  # the head counts are read from the shapes; a stated one must agree
        k = ctx.type_of(node.input[1])
        for key, actual in (("q_num_heads", q.shape[1]), ("kv_num_heads", k.shape[1])):
            if heads[key] is not None and int(heads[key]) != actual:
                raise Unsupported(f"Attention: {key}={heads[key]} disagrees with 4-D shapes")
            heads[key] = 0
    if has[3] and ctx.opset < 24:
        mask = ctx.type_of(node.input[3])
        k_len = ctx.type_of(node.input[1]).shape[-2 if q.rank == 4 else 1]
        p = ctx.type_of(node.input[4]).shape[2] if has[4] else 0
        if mask.shape[-1] < p + k_len:  # opset 23 says "broadcastable" (a 1 repeats), the reference pads
            raise Unsupported("Attention-23: attn_mask shorter than the total sequence is ambiguous")
    scale = onnx_attr(node, "scale")
    attrs: Attrs = {
        "has_mask": int(has[3]), "has_past": int(has[4]), "has_nonpad": int(has[6]),
        "present": int(bool(outs[1])), "qk_output": int(bool(outs[3])),
        "q_num_heads": int(heads["q_num_heads"] or 0), "kv_num_heads": int(heads["kv_num_heads"] or 0),
        "scale": None if scale is None else float(scale),
        "is_causal": int(onnx_attr(node, "is_causal", 0)),
        "softcap": float(onnx_attr(node, "softcap", 0.0)),
        "softmax_precision": int(onnx_attr(node, "softmax_precision", 0)),
        "qk_matmul_output_mode": int(onnx_attr(node, "qk_matmul_output_mode", 0)),
        "left_window_size": int(onnx_attr(node, "left_window_size", -1)),
        "right_window_size": int(onnx_attr(node, "right_window_size", -1)),
    }
    return [node.input[i] for i in range(7) if has[i]], attrs


@ONNX.register("rotary_embedding")
def rotary_embedding(spec: RotaryEmbeddingOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> None:
    b.need_opset(23)
    b.node("RotaryEmbedding", ins, outs, interleaved=1 if attrs.get("interleaved") else None,
           rotary_embedding_dim=int(attrs["rotary_embedding_dim"]) if attrs.get("rotary_embedding_dim") else None,
           num_heads=int(attrs["num_heads"]) if attrs.get("num_heads") else None)


@ONNX_IMPORT.register("rotary_embedding")
def import_rotary_embedding(spec: RotaryEmbeddingOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"interleaved", "rotary_embedding_dim", "num_heads"})
    x = ctx.type_of(node.input[0])
    heads = int(onnx_attr(node, "num_heads", 0))
    if x.rank == 4 and heads:  # redundant with the shape; a disagreeing one is rejected by infer
        heads = heads if heads != x.shape[1] else 0
    return [i for i in node.input if i], {
        "interleaved": int(onnx_attr(node, "interleaved", 0)),
        "rotary_embedding_dim": int(onnx_attr(node, "rotary_embedding_dim", 0)), "num_heads": heads}


@ONNX.register("causal_conv_with_state")
def causal_conv_with_state(spec: CausalConvWithStateOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs,
                           in_types: Any, out_types: Any) -> None:
    b.need_opset(27)
    rest = list(ins[2:])
    bias = rest.pop(0) if attrs.get("has_bias") else ""
    past = rest.pop(0) if attrs.get("has_past") else ""
    activation = attrs.get("activation", "none")
    b.node("CausalConvWithState", _trim([*ins[:2], bias, past]), outs,
           activation=activation if activation != "none" else None)


@ONNX_IMPORT.register("causal_conv_with_state")
def import_causal_conv_with_state(spec: CausalConvWithStateOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"activation"})
    has = [ctx.has_input(node, i) for i in range(4)]
    return [node.input[i] for i in range(4) if has[i]], {
        "has_bias": int(has[2]), "has_past": int(has[3]),
        "activation": str(decode(onnx_attr(node, "activation", "none")))}


@ONNX.register("linear_attention")
def linear_attention(spec: LinearAttentionOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs,
                     in_types: Any, out_types: Any) -> None:
    b.need_opset(27)
    rule = attrs.get("update_rule", "gated_delta")
    rest = list(ins[3:])
    past = rest.pop(0) if attrs.get("has_past") else ""
    decay = rest.pop(0) if rule in ("gated", "gated_delta") else ""
    beta = rest.pop(0) if rule in ("delta", "gated_delta") else ""
    b.node("LinearAttention", _trim([*ins[:3], past, decay, beta]), outs, q_num_heads=int(attrs["q_num_heads"]),
           kv_num_heads=int(attrs["kv_num_heads"]), update_rule=rule,
           scale=float(attrs["scale"]) if attrs.get("scale") else None,
           chunk_size=int(attrs["chunk_size"]) if attrs.get("chunk_size") else None)


@ONNX_IMPORT.register("linear_attention")
def import_linear_attention(spec: LinearAttentionOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"q_num_heads", "kv_num_heads", "update_rule", "scale", "chunk_size"})
    rule = str(decode(onnx_attr(node, "update_rule", "gated_delta")))
    has = [ctx.has_input(node, i) for i in range(6)]
    if has[4] != (rule in ("gated", "gated_delta")) or has[5] != (rule in ("delta", "gated_delta")):
        raise Unsupported(f"LinearAttention: decay/beta inputs do not fit update_rule {rule!r}")
    return [node.input[i] for i in range(6) if has[i]], {
        "q_num_heads": int(onnx_attr(node, "q_num_heads", 0)), "kv_num_heads": int(onnx_attr(node, "kv_num_heads", 0)),
        "update_rule": rule, "scale": float(onnx_attr(node, "scale", 0.0)), "has_past": int(has[3]),
        "chunk_size": int(onnx_attr(node, "chunk_size", 0))}
