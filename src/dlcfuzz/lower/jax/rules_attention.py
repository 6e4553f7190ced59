"""JAX lowering rules of the attention operators (ops/attention.py).

Attention is written out as ONNX's decomposition (q and k each scaled by sqrt(scale), matmul, tanh
softcap, additive bias of mask and the bottom-right causal / window / padding frontier, softmax with
rows that allow no key set to zero, matmul): jax.nn.dot_product_attention has no softcap, no
qk_matmul_output and a top-left causal mask.
"""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_attention import (
    additive_bias,
    attention_operands,
    causal_conv_operands,
)
from dlcfuzz.ops.attention import SOFTMAX_PRECISIONS, attention_scale_root

R = TARGET.register


@R("attention")
def _attention(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    lay, q, k, v, mask, _, nonpad = attention_operands(e, ins, attrs, in_types)
    dt = jnp_dtype(lay.dtype)
    bias = additive_bias(e, lay, attrs, mask, nonpad)

    rep = lay.hq // lay.hkv
    root = f"jnp.asarray({literal(attention_scale_root(lay, attrs))}, {dt})"
    kr = e.bind(f"jnp.repeat({k}, {rep}, axis=1)") if rep > 1 else k
    vr = e.bind(f"jnp.repeat({v}, {rep}, axis=1)") if rep > 1 else v
    logits = e.bind(f"jnp.matmul({q} * {root}, jnp.swapaxes({kr} * {root}, -1, -2))")
    softcap = float(attrs.get("softcap", 0.0))
    cap = f"jnp.asarray({literal(softcap)}, {dt})"
    capped = e.bind(f"{cap} * jnp.tanh({logits} / {cap})") if softcap else logits
    x = e.bind(f"{capped} + {bias}") if bias is not None else capped
    precision = int(attrs.get("softmax_precision", 0))
    soft_dt = jnp_dtype(SOFTMAX_PRECISIONS[precision]) if precision else dt
    probs = e.bind(f"jax.nn.softmax({x}.astype({soft_dt}), axis=-1).astype({dt})")
    if bias is not None:  # rows without an allowed key: ONNX makes them zero (softmax gives NaN)
        probs = e.bind(f"jnp.where(jnp.all(jnp.isneginf({bias}), axis=-1, keepdims=True), "
                       f"jnp.asarray(0, {dt}), {probs})")
    y = e.bind(f"jnp.matmul({probs}, {vr})")
    ys = [y if lay.rank == 4 else f"jnp.swapaxes({y}, 1, 2).reshape({lay.b}, {lay.sq}, -1)"]
    if attrs.get("present"):
        ys += [k, v]
    if attrs.get("qk_output"):
        ys.append({0: logits, 1: capped, 2: x, 3: probs}[int(attrs.get("qk_matmul_output_mode", 0))])
    return ys


@R("causal_conv_with_state")
def _causal_conv_with_state(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                            out_types: Types) -> list[str]:
    padded, w, bias, c, length = causal_conv_operands(e, ins, attrs, in_types)
    conv = e.bind(f"lax.conv_general_dilated({padded}, {w}, (1,), 'VALID', "
                  f"dimension_numbers=('NCH', 'OIH', 'NCH'), feature_group_count={c})")
    if bias is not None:
        conv = e.bind(f"{conv} + {bias}[None, :, None]")
    out = f"jax.nn.silu({conv})" if attrs.get("activation", "none") != "none" else conv
    return [out, f"{padded}[:, :, {length}:]"]
