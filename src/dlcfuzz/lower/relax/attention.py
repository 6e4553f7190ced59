"""Relax lowering rules of the attention operators (ops/attention.py).

Attention is relax.op.nn.attention where that is ONNX's computation (as many kv heads as q heads, no
softcap, no qk_matmul_output, softmax in the input type), with every mask an additive bias: its
causal_mask is aligned to the end of the keys, ONNX's to the cache length. Otherwise it is composed
from matmul, tanh, softmax and where. The causal / window frontier is a constant bias when its offset
is static (no cache or past_key), else it is computed from nonpad_kv_seqlen.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_dtype_const
from dlcfuzz.ops.attention import (
    SOFTMAX_PRECISIONS,
    AttentionOp,
    CausalConvWithStateOp,
    LinearAttentionOp,
    RotaryEmbeddingOp,
    attention_layout,
    attention_scale_root,
)
from dlcfuzz.ops.base import Attrs

RELAX = target("relax")


def _heads(bb: Any, x: Any, width: int, b: int, s: int, h: int, rank: int) -> Any:
    """(B, S, H*D) -> (B, H, S, D); 4-D operands pass through."""
    from tvm import relax

    if rank == 4:
        return x
    # `width` (H*D) spelled out, not -1: with an empty batch the reshape cannot infer it
    return bb.emit(relax.op.permute_dims(relax.op.reshape(x, (b, s, h, width // h)), [0, 2, 1, 3]))


@RELAX.register("attention")
def attention(spec: AttentionOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    from tvm import relax
    from tvm.tirx import FloatImm  # (tvm.ir.prim only from apache-tvm 0.27)

    lay = attention_layout(in_types, attrs)
    dt = lay.dtype
    rest = list(ins[3:])
    mask = rest.pop(0) if attrs.get("has_mask") else None
    past = (rest.pop(0), rest.pop(0)) if attrs.get("has_past") else None
    nonpad = rest.pop(0) if attrs.get("has_nonpad") else None
    q = _heads(bb, ins[0], in_types[0].shape[-1], lay.b, lay.sq, lay.hq, lay.rank)
    k = _heads(bb, ins[1], in_types[1].shape[-1], lay.b, lay.skv, lay.hkv, lay.rank)
    v = _heads(bb, ins[2], in_types[2].shape[-1], lay.b, lay.skv, lay.hkv, lay.rank)
    if past is not None:
        k = bb.emit(relax.op.concat([past[0], k], axis=2))
        v = bb.emit(relax.op.concat([past[1], v], axis=2))
    neg_inf = relax_dtype_const(-np.inf, dt)
    zero = relax_dtype_const(0.0, dt)

    bias = None
    if mask is not None:
        bias = bb.emit(relax.op.where(mask, zero, neg_inf)) if lay.mask.dtype == "bool" else mask
        width = lay.t - lay.mask.shape[-1]
        if width:  # a shorter mask is padded with -inf (opset 24)
            pad = relax.const(np.full(lay.mask.shape[:-1] + (width,), -np.inf, dtype=dt), dt)
            bias = bb.emit(relax.op.concat([bias, pad], axis=-1))
    causal = bool(attrs.get("is_causal"))
    left, right = int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1))
    if causal or left >= 0 or right >= 0 or nonpad is not None:
        j = np.arange(lay.t).reshape(1, 1, 1, lay.t)
        if nonpad is None:  # a static frontier: a constant bias
            pos = np.arange(lay.sq).reshape(1, 1, lay.sq, 1) + lay.p
            allowed = np.ones((1, 1, lay.sq, lay.t), dtype=bool)
            if causal:
                allowed &= j <= pos
            if left >= 0:
                allowed &= pos - j <= left
            if right >= 0:
                allowed &= j - pos <= right
            frontier = relax.const(np.where(allowed, 0.0, -np.inf).astype(dt), dt)
        else:
            seq = relax.op.reshape(nonpad, (lay.b, 1, 1, 1))
            pos = bb.emit(relax.op.add(relax.const(np.arange(lay.sq).reshape(1, 1, lay.sq, 1) - lay.sq, "int64"),
                                       seq))
            jc = relax.const(j.astype(np.int64), "int64")
            conds = [relax.op.less(jc, seq)]
            if causal:
                conds.append(relax.op.less_equal(jc, pos))
            if left >= 0:
                conds.append(relax.op.less_equal(relax.op.subtract(pos, jc), relax.const(np.int64(left), "int64")))
            if right >= 0:
                conds.append(relax.op.less_equal(relax.op.subtract(jc, pos), relax.const(np.int64(right), "int64")))
            ok = conds[0]
            for c in conds[1:]:
                ok = relax.op.logical_and(ok, c)
            frontier = bb.emit(relax.op.where(bb.emit(ok), zero, neg_inf))
        bias = frontier if bias is None else bb.emit(relax.op.add(bias, frontier))

    rep = lay.hq // lay.hkv
    softcap = float(attrs.get("softcap", 0.0))
    precision = int(attrs.get("softmax_precision", 0))
    soft_dt = SOFTMAX_PRECISIONS[precision] if precision else dt
    present = [k, v] if attrs.get("present") else []
    empty = None
    if bias is not None:  # rows without an allowed key: ONNX makes them zero (softmax gives NaN)
        # counted, not max(bias) == -inf: TVM's max of an all -inf row is the lowest finite value
        allowed = relax.op.astype(relax.op.not_equal(bias, neg_inf), "int32")
        empty = bb.emit(relax.op.equal(bb.emit(relax.op.sum(allowed, axis=-1, keepdims=True)),
                                       relax.const(np.int32(0), "int32")))
    if not softcap and not attrs.get("qk_output") and rep == 1 and soft_dt == dt:
        # Relax's fused attention (BSNH layout) where it is ONNX's computation: one scale on QK^T
        # (ONNX's sqrt(scale) on q and k, squared), the bias added before the softmax
        root = attention_scale_root(lay, attrs)
        full = (lay.b, lay.hq, lay.sq, lay.t)
        fused = relax.op.nn.attention(
            bb.emit(relax.op.permute_dims(q, [0, 2, 1, 3])), bb.emit(relax.op.permute_dims(k, [0, 2, 1, 3])),
            bb.emit(relax.op.permute_dims(v, [0, 2, 1, 3])),
            bb.emit(relax.op.broadcast_to(bias, full)) if bias is not None else None,
            # typed as the inputs: a plain float is a float32 immediate, and LegalizeOps then computes a
            # float16 attention in float32 and returns float32 where its type says float16
            scale=FloatImm(dt, root * root))
        y = bb.emit(relax.op.permute_dims(bb.emit(fused), [0, 2, 1, 3]))  # (B, H, S, Dv)
        if empty is not None:
            y = bb.emit(relax.op.where(empty, zero, y))
        return [_merge(bb, y, lay, out_types[0].shape[-1]), *present]

    root_const = relax_dtype_const(attention_scale_root(lay, attrs), dt)
    kr = bb.emit(relax.op.repeat(k, rep, axis=1)) if rep > 1 else k
    vr = bb.emit(relax.op.repeat(v, rep, axis=1)) if rep > 1 else v
    logits = bb.emit(relax.op.matmul(relax.op.multiply(q, root_const),
                                     relax.op.permute_dims(relax.op.multiply(kr, root_const), [0, 1, 3, 2])))
    capped = logits
    if softcap:
        cap = relax_dtype_const(softcap, dt)
        capped = bb.emit(relax.op.multiply(cap, relax.op.tanh(relax.op.divide(logits, cap))))
    x = bb.emit(relax.op.add(capped, bias)) if bias is not None else capped
    probs = relax.op.nn.softmax(relax.op.astype(x, soft_dt) if soft_dt != dt else x, axis=-1)
    probs = bb.emit(relax.op.astype(probs, dt) if soft_dt != dt else probs)
    if empty is not None:
        probs = bb.emit(relax.op.where(empty, zero, probs))
    y = bb.emit(relax.op.matmul(probs, vr))
    outs = [_merge(bb, y, lay, out_types[0].shape[-1]), *present]
    if attrs.get("qk_output"):
        outs.append({0: logits, 1: capped, 2: x, 3: probs}[int(attrs.get("qk_matmul_output_mode", 0))])
    return outs


def _merge(bb: Any, y: Any, lay: Any, width: int) -> Any:
    """(B, H, S, Dv) -> (B, S, H*Dv) for 3-D inputs."""
    from tvm import relax

    if lay.rank == 4:
        return y
    return relax.op.reshape(bb.emit(relax.op.permute_dims(y, [0, 2, 1, 3])), (lay.b, lay.sq, width))


@RELAX.register("rotary_embedding")
def rotary_embedding(spec: RotaryEmbeddingOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> list[Any]:
    from tvm import relax

    x, cos, sin = ins[:3]
    if len(ins) == 4:  # caches indexed by position: (B, S, rot/2)
        cos = bb.emit(relax.op.take(cos, ins[3], axis=0))
        sin = bb.emit(relax.op.take(sin, ins[3], axis=0))
    t = in_types[0]
    if t.rank == 4:
        b, _, s, d = t.shape
        x4 = bb.emit(relax.op.permute_dims(x, [0, 2, 1, 3]))  # (B, S, H, D)
    else:
        b, s = t.shape[:2]
        d = t.shape[2] // int(attrs["num_heads"])
        x4 = bb.emit(relax.op.reshape(x, (b, s, int(attrs["num_heads"]), d)))
    rot = int(attrs.get("rotary_embedding_dim", 0)) or d
    cos = bb.emit(relax.op.expand_dims(cos, 2))
    sin = bb.emit(relax.op.expand_dims(sin, 2))

    def last(v: Any, begin: int, end: int, step: int = 1) -> Any:
        return bb.emit(relax.op.strided_slice(v, axes=[3], begin=[begin], end=[end], strides=[step]))

    xr = last(x4, 0, rot) if rot < d else x4
    half = rot // 2
    x1, x2 = (last(xr, 0, rot, 2), last(xr, 1, rot, 2)) if attrs.get("interleaved") else \
        (last(xr, 0, half), last(xr, half, rot))
    real = bb.emit(relax.op.subtract(relax.op.multiply(cos, x1), relax.op.multiply(sin, x2)))
    imag = bb.emit(relax.op.add(relax.op.multiply(sin, x1), relax.op.multiply(cos, x2)))
    if attrs.get("interleaved"):
        pairs = bb.emit(relax.op.stack([real, imag], axis=4))
        heads = t.shape[1] if t.rank == 4 else int(attrs["num_heads"])
        rotated = bb.emit(relax.op.reshape(pairs, (b, s, heads, rot)))
    else:
        rotated = bb.emit(relax.op.concat([real, imag], axis=3))
    out = bb.emit(relax.op.concat([rotated, last(x4, rot, d)], axis=3)) if rot < d else rotated
    return [relax.op.permute_dims(out, [0, 2, 1, 3]) if t.rank == 4 else relax.op.reshape(out, t.shape)]


@RELAX.register("causal_conv_with_state")
def causal_conv_with_state(spec: CausalConvWithStateOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs,
                           in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    x, w = ins[:2]
    rest = list(ins[2:])
    bias = rest.pop(0) if attrs.get("has_bias") else None
    b, c, length = in_types[0].shape
    k = in_types[1].shape[2]
    dt = in_types[0].dtype
    past = rest.pop(0) if attrs.get("has_past") else relax.const(np.zeros((b, c, k - 1), dtype=dt), dt)
    padded = bb.emit(relax.op.concat([past, x], axis=2))
    conv = bb.emit(relax.op.nn.conv1d(padded, w, groups=c))
    if bias is not None:
        conv = bb.emit(relax.op.add(conv, relax.op.reshape(bias, (1, c, 1))))
    out = relax.op.nn.silu(conv) if attrs.get("activation", "none") != "none" else conv
    present = relax.op.strided_slice(padded, axes=[2], begin=[length], end=[length + k - 1])
    return [out, present]


@RELAX.register("linear_attention")
def linear_attention(spec: LinearAttentionOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> list[Any]:
    from tvm import relax

    rule = attrs.get("update_rule", "gated_delta")
    hq, hkv = int(attrs["q_num_heads"]), int(attrs["kv_num_heads"])
    b, t, _ = in_types[0].shape
    dk, dv = in_types[0].shape[2] // hq, in_types[2].shape[2] // hkv
    dt = in_types[0].dtype

    def heads(x: Any, h: int, d: int) -> Any:  # (B, T, H*D) -> (B, H, T, D)
        return bb.emit(relax.op.permute_dims(relax.op.reshape(x, (b, t, h, d)), [0, 2, 1, 3]))

    def step(x: Any, i: int) -> Any:  # x[:, :, i, :] of a (B, H, T, D) tensor
        return bb.emit(relax.op.squeeze(relax.op.strided_slice(x, axes=[2], begin=[i], end=[i + 1]), axis=[2]))

    q, k, v = heads(ins[0], hq, dk), heads(ins[1], hkv, dk), heads(ins[2], hkv, dv)
    rest = list(ins[3:])
    state = rest.pop(0) if attrs.get("has_past") else relax.const(np.zeros((b, hkv, dk, dv), dtype=dt), dt)
    decay = beta = None
    if rule in ("gated", "gated_delta"):
        g = in_types[3 + int(bool(attrs.get("has_past")))]
        decay = heads(rest.pop(0), hkv, g.shape[2] // hkv)  # (B, H, T, 1 or d_k)
    if rule in ("delta", "gated_delta"):
        beta = heads(rest.pop(0), in_types[-1].shape[2], 1)  # (B, H or 1, T, 1)
    scale = relax_dtype_const(float(attrs.get("scale", 0.0)) or 1.0 / float(np.sqrt(dk)), dt)
    steps = []
    for i in range(t):  # the recurrence, unrolled over the (static) sequence
        if decay is not None:
            state = bb.emit(relax.op.multiply(state, relax.op.expand_dims(relax.op.exp(step(decay, i)), 3)))
        k_t, v_t = step(k, i), step(v, i)
        if beta is not None:  # retrieved[b, h, m] = sum_d state[b, h, d, m] k[b, h, d]
            retrieved = bb.emit(relax.op.squeeze(relax.op.matmul(relax.op.expand_dims(k_t, 2), state), axis=[2]))
            v_t = bb.emit(relax.op.multiply(step(beta, i), relax.op.subtract(v_t, retrieved)))
        outer = relax.op.multiply(relax.op.expand_dims(k_t, 3), relax.op.expand_dims(v_t, 2))
        state = bb.emit(relax.op.add(state, outer))
        read = bb.emit(relax.op.repeat(state, hq // hkv, axis=1)) if hq != hkv else state
        o = relax.op.squeeze(relax.op.matmul(relax.op.expand_dims(step(q, i), 2), read), axis=[2])
        steps.append(bb.emit(relax.op.multiply(scale, o)))  # (B, H_q, d_v)
    out = bb.emit(relax.op.stack(steps, axis=1))  # (B, T, H_q, d_v)
    return [relax.op.reshape(out, (b, t, hq * dv)), state]
