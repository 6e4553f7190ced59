"""PyTorch lowering rules of the attention operators (ops/attention.py).

Attention is F.scaled_dot_product_attention where that is ONNX's computation (no softcap, no
qk_matmul_output, softmax in the input type): SDPA's math scales q and k each by sqrt(scale) as ONNX
does, and enable_gqa repeats each kv head for consecutive q heads as ONNX does. The rest is written
out (matmul, tanh softcap, additive bias, softmax, matmul). Causal and window masks are bottom-right
(offset by the cache length), which SDPA's is_causal (top-left) is not, so they are an explicit bias,
except in the plain square-free case (offset 0, no other mask) where is_causal=True means the same.
"""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_attention import (
    additive_bias,
    attention_operands,
    causal_conv_operands,
    window,
)
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype
from dlcfuzz.ops.attention import SOFTMAX_PRECISIONS, attention_scale_root

R = TARGET.register

_PRECISION_OF = {"float16": 10, "float32": 1, "float64": 11}


@R("attention")
def _attention(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    lay, q, k, v, mask, has_past, nonpad = attention_operands(e, ins, attrs, in_types)
    dt = torch_dtype(lay.dtype)
    present = [k, v] if attrs.get("present") else []
    # SDPA's is_causal is the frontier where nothing offsets it
    plain_causal = bool(attrs.get("is_causal")) and mask is None and not has_past and nonpad is None \
        and window(attrs) == (-1, -1)
    bias = additive_bias(e, lay, attrs, mask, nonpad, frontier=not plain_causal)

    rep = lay.hq // lay.hkv
    softcap = float(attrs.get("softcap", 0.0))
    precision = int(attrs.get("softmax_precision", 0))
    if not softcap and not attrs.get("qk_output") and precision in (0, _PRECISION_OF[lay.dtype]):
        root = attention_scale_root(lay, attrs)
        y = e.bind(f"F.scaled_dot_product_attention({q}, {k}, {v}, attn_mask={bias}, "
                   f"is_causal={plain_causal}, scale={literal(root * root)}, enable_gqa={rep > 1})")
        if bias is not None:  # SDPA's rows without an allowed key are NaN; ONNX makes them zero
            y = e.bind(f"torch.where(torch.isneginf({bias}).all(dim=-1, keepdim=True), 0.0, {y}).to({dt})")
        return [_merge(e, y, lay), *present]

    root = literal(attention_scale_root(lay, attrs))
    kr = e.bind(f"{k}.repeat_interleave({rep}, dim=1)") if rep > 1 else k
    vr = e.bind(f"{v}.repeat_interleave({rep}, dim=1)") if rep > 1 else v
    logits = e.bind(f"torch.matmul({q} * {root}, ({kr} * {root}).transpose(-1, -2))")
    capped = e.bind(f"{literal(softcap)} * torch.tanh({logits} / {literal(softcap)})") if softcap else logits
    if plain_causal:
        tri = e.bind(f"torch.ones({lay.sq}, {lay.t}, dtype=torch.bool).tril()")
        bias = e.bind(e.sp.additive_mask(tri, lay.dtype))
    x = e.bind(f"{capped} + {bias}") if bias is not None else capped
    soft_dt = torch_dtype(SOFTMAX_PRECISIONS[precision]) if precision else dt
    probs = e.bind(f"torch.softmax({x}.to({soft_dt}), dim=-1).to({dt})")
    if bias is not None:  # rows without an allowed key: ONNX makes them zero (softmax gives NaN)
        probs = e.bind(f"torch.where(torch.isneginf({bias}).all(dim=-1, keepdim=True), 0.0, {probs}).to({dt})")
    y = e.bind(f"torch.matmul({probs}, {vr})")
    ys = [_merge(e, y, lay), *present]
    if attrs.get("qk_output"):
        ys.append({0: logits, 1: capped, 2: x, 3: probs}[int(attrs.get("qk_matmul_output_mode", 0))])
    return ys


def _merge(e: Emitter, y: str, lay: Any) -> str:
    """(B, H, S, Dv) -> (B, S, H*Dv) for 3-D inputs."""
    return y if lay.rank == 4 else f"{y}.transpose(1, 2).reshape({lay.b}, {lay.sq}, -1)"


@R("causal_conv_with_state")
def _causal_conv_with_state(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                            out_types: Types) -> list[str]:
    padded, w, bias, c, length = causal_conv_operands(e, ins, attrs, in_types)
    conv = e.bind(f"F.conv1d({padded}, {w}, {bias}, groups={c})")
    out = f"F.silu({conv})" if attrs.get("activation", "none") != "none" else conv
    return [out, f"{padded}[:, :, {length}:]"]
