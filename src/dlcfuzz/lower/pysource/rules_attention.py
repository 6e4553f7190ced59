"""The pieces of the attention operators (ops/attention.py) that every Python target writes alike up
to spelling: the operands in (B, H, S, D) with the cache in front, the additive bias of the mask and
the bottom-right causal / window / padding frontier, and RotaryEmbedding's rotated halves; and LinearAttention's recurrence, unrolled over
the static sequence (a sequence longer than SCAN_FROM steps under the target's scan, as the recurrent operators do:
issue 37's edge sizes made a 255-step recurrence whose ~2,000 unrolled operations XLA:CPU compiled past the 120 s
deadline, a "hang"; Inductor took 73 CPU s over 128 unrolled steps); RotaryEmbedding whole, and CausalConvWithState's padded input. The Attention
rules themselves stay per target (torch calls
F.scaled_dot_product_attention where that is ONNX's computation; JAX writes it out)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter, Types, literal
from dlcfuzz.lower.pysource.rules import shared
from dlcfuzz.lower.pysource.rules_recurrent import SCAN_FROM
from dlcfuzz.ops.attention import attention_layout


def heads(e: Emitter, x: str, b: int, s: int, h: int, rank: int) -> str:
    """(B, S, H*D) -> (B, H, S, D); 4-D operands pass through."""
    return x if rank == 4 else e.bind(e.sp.swap.format(x=f"{x}.reshape({b}, {s}, {h}, -1)", a=1, b=2))


def attention_operands(e: Emitter, ins: list[str], attrs: dict,
                       in_types: Types) -> tuple[Any, str, str, str, str | None, bool, str | None]:
    """Attention's layout (`attention_layout`), its q, k, v in (B, H, S, D) (k and v after the past cache),
    its mask, whether it has a past cache, and its non-padded lengths (None where absent)."""
    sp, lay = e.sp, attention_layout(in_types, attrs)
    rest = list(ins[3:])
    mask = rest.pop(0) if attrs.get("has_mask") else None
    past = (rest.pop(0), rest.pop(0)) if attrs.get("has_past") else None
    nonpad = rest.pop(0) if attrs.get("has_nonpad") else None
    q = heads(e, ins[0], lay.b, lay.sq, lay.hq, lay.rank)
    k = heads(e, ins[1], lay.b, lay.skv, lay.hkv, lay.rank)
    v = heads(e, ins[2], lay.b, lay.skv, lay.hkv, lay.rank)
    if past is not None:
        k = e.bind(f"{sp.fn('concatenate')}([{past[0]}, {k}], {sp.axis_kw}=2)")
        v = e.bind(f"{sp.fn('concatenate')}([{past[1]}, {v}], {sp.axis_kw}=2)")
    return lay, q, k, v, mask, past is not None, nonpad


def window(attrs: dict) -> tuple[int, int]:
    """Attention's left and right window sizes (-1: unbounded)."""
    return int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1))


def additive_bias(e: Emitter, lay: Any, attrs: dict, mask: str | None, nonpad: str | None,
                  frontier: bool = True) -> str | None:
    """Attention's additive bias of the logits (None: no bias): attn_mask (a boolean one as 0 / -inf),
    extended with masked-out keys to the key length, plus the bottom-right causal / window / padding
    frontier (unless not `frontier`: where the target's own function applies it)."""
    sp, bias = e.sp, None
    if mask is not None:
        width = lay.t - lay.mask.shape[-1]
        boolean = lay.mask.dtype == "bool"
        m = sp.extend_mask(mask, width, lay.mask.rank, boolean) if width else mask
        if boolean:
            bias = e.bind(sp.additive_mask(m, lay.dtype))
        else:
            bias = e.bind(m) if width else mask
    left, right = window(attrs)
    if frontier and (attrs.get("is_causal") or left >= 0 or right >= 0 or nonpad is not None):
        allowed = e.bind(sp.additive_mask(allowed_keys(e, lay, attrs, nonpad), lay.dtype))
        bias = allowed if bias is None else e.bind(f"{bias} + {allowed}")
    return bias


def allowed_keys(e: Emitter, lay: Any, attrs: dict, nonpad: str | None) -> str:
    """Whether query i may see key j under the causal / window / padding frontier (bottom-right: offset
    by the cache length, or by each batch's padding), as a boolean expression of shape (B, 1, Sq, T)."""
    m = e.sp.mod
    left, right = window(attrs)
    offset = f"({nonpad} - {lay.sq}).reshape({lay.b}, 1, 1, 1)" if nonpad is not None else literal(lay.p)
    pos = e.bind(f"{m}.arange({lay.sq}).reshape(1, 1, {lay.sq}, 1) + {offset}")
    j = e.bind(f"{m}.arange({lay.t}).reshape(1, 1, 1, {lay.t})")
    conds = []
    if attrs.get("is_causal"):
        conds.append(f"({j} <= {pos})")
    if left >= 0:
        conds.append(f"({pos} - {j} <= {left})")
    if right >= 0:
        conds.append(f"({j} - {pos} <= {right})")
    if nonpad is not None:
        conds.append(f"({j} < {nonpad}.reshape({lay.b}, 1, 1, 1))")
    return " & ".join(conds)


def rotated_halves(e: Emitter, xr: str, cos: str, sin: str, rot: int, interleaved: bool) -> tuple[str, str]:
    """RotaryEmbedding's rotated pair (x1 cos - x2 sin, x1 sin + x2 cos) of the rotated part `xr`: its
    even and odd elements when interleaved, else its halves."""
    if interleaved:
        x1, x2 = e.bind(f"{xr}[..., 0::2]"), e.bind(f"{xr}[..., 1::2]")
    else:
        x1, x2 = e.bind(f"{xr}[..., :{rot // 2}]"), e.bind(f"{xr}[..., {rot // 2}:]")
    return e.bind(f"{cos} * {x1} - {sin} * {x2}"), e.bind(f"{sin} * {x1} + {cos} * {x2}")


def rotary_operands(e: Emitter, ins: list[str], attrs: dict, t: TensorType) -> tuple[str, str, str, int, int, int]:
    """RotaryEmbedding's input as (B, S, H, D), its cos and sin caches (B, S, rot/2) (indexed by the
    position ids where given), and B, S, D."""
    x, cos, sin = ins[:3]
    if len(ins) == 4:  # caches indexed by position: (B, S, rot/2)
        cos, sin = e.bind(f"{cos}[{ins[3]}]"), e.bind(f"{sin}[{ins[3]}]")
    if t.rank == 4:
        b, _, s, d = t.shape
        x4 = e.bind(e.sp.swap.format(x=x, a=1, b=2))  # (B, S, H, D)
    else:
        b, s = t.shape[:2]
        d = t.shape[2] // int(attrs["num_heads"])
        x4 = e.bind(f"{x}.reshape({b}, {s}, {int(attrs['num_heads'])}, {d})")
    return x4, cos, sin, b, s, d


def rotary_result(e: Emitter, rotated: str, x4: str, rot: int, d: int, t: TensorType) -> str:
    """The rotated part and the rest of (B, S, H, D) `x4`, in the input's layout."""
    sp = e.sp
    out = e.bind(f"{sp.fn('concatenate')}([{rotated}, {x4}[..., {rot}:]], {sp.axis_kw}=-1)") if rot < d else rotated
    return sp.swap.format(x=out, a=1, b=2) if t.rank == 4 else f"{out}.reshape({literal(t.shape)})"


@shared("rotary_embedding")
def _rotary_embedding(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    sp, t = e.sp, in_types[0]
    x4, cos, sin, b, s, d = rotary_operands(e, ins, attrs, t)
    rot = int(attrs.get("rotary_embedding_dim", 0)) or d
    cos, sin = e.bind(f"{cos}[:, :, None, :]"), e.bind(f"{sin}[:, :, None, :]")  # over the heads
    xr = e.bind(f"{x4}[..., :{rot}]") if rot < d else x4
    real, imag = rotated_halves(e, xr, cos, sin, rot, bool(attrs.get("interleaved")))
    if attrs.get("interleaved"):
        rotated = e.bind(f"{sp.fn('stack')}([{real}, {imag}], {sp.axis_kw}=-1).reshape({b}, {s}, -1, {rot})")
    else:
        rotated = e.bind(f"{sp.fn('concatenate')}([{real}, {imag}], {sp.axis_kw}=-1)")
    return [rotary_result(e, rotated, x4, rot, d, t)]


def causal_conv_operands(e: Emitter, ins: list[str], attrs: dict, in_types: Types) -> tuple[str, str, str | None, int, int]:
    """CausalConvWithState's input with its past state (or zeros) in front along the sequence, the
    weight, the bias (None without one), the channels and the input's length."""
    sp = e.sp
    x, w = ins[:2]
    rest = list(ins[2:])
    bias = rest.pop(0) if attrs.get("has_bias") else None
    b, c, length = in_types[0].shape
    k = in_types[1].shape[2]
    zeros = f"{sp.mod}.zeros({sp.shape([b, c, k - 1])}, dtype={sp.dtype(in_types[0].dtype)})"
    past = rest.pop(0) if attrs.get("has_past") else zeros
    padded = e.bind(f"{sp.fn('concatenate')}([{past}, {x}], {sp.axis_kw}=2)")
    return padded, w, bias, c, length


@shared("linear_attention")
def _linear_attention(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    sp = e.sp
    rule = attrs.get("update_rule", "gated_delta")
    hq, hkv = int(attrs["q_num_heads"]), int(attrs["kv_num_heads"])
    b, t, _ = in_types[0].shape
    dk, dv = in_types[0].shape[2] // hq, in_types[2].shape[2] // hkv

    def per_head(x: str, h: int | str, d: int | str) -> str:  # (B, T, H*d) -> (B, H, T, d)
        return e.bind(sp.swap.format(x=f"{x}.reshape({b}, {t}, {h}, {d})", a=1, b=2))

    q, k, v = per_head(ins[0], hq, dk), per_head(ins[1], hkv, dk), per_head(ins[2], hkv, dv)
    rest = list(ins[3:])
    zeros = f"{sp.mod}.zeros({sp.shape([b, hkv, dk, dv])}, dtype={sp.dtype(in_types[0].dtype)})"
    state = rest.pop(0) if attrs.get("has_past") else e.bind(zeros)
    decay = per_head(rest.pop(0), hkv, -1) if rule in ("gated", "gated_delta") else None  # (B, H, T, 1 or d_k)
    beta = per_head(rest.pop(0), -1, 1) if rule in ("delta", "gated_delta") else None  # (B, H or 1, T, 1)
    scale = literal(float(attrs.get("scale", 0.0)) or 1.0 / float(np.sqrt(dk)))  # weakly typed: the input's dtype
    if t > SCAN_FROM:
        return _linear_attention_scanned(e, q, k, v, state, decay, beta, scale, hq // hkv, (b, t, hq * dv))
    steps = []
    for i in range(t):  # the recurrence, unrolled over the (static) sequence
        if decay is not None:
            state = e.bind(f"{state} * {sp.mod}.exp({decay}[:, :, {i}, :])[..., None]")
        v_t = f"{v}[:, :, {i}, :]"
        k_t = f"{k}[:, :, {i}, :]"
        if beta is not None:
            retrieved = e.bind(f"{sp.mod}.einsum('bhdm,bhd->bhm', {state}, {k_t})")
            v_t = e.bind(f"{beta}[:, :, {i}, :] * ({v_t} - {retrieved})")
        state = e.bind(f"{state} + {k_t}[..., :, None] * {v_t}[..., None, :]")
        read = e.bind(f"{sp.fn('repeat')}({state}, {hq // hkv}, {sp.axis_kw}=1)") if hq != hkv else state
        steps.append(e.bind(f"{scale} * {sp.mod}.einsum('bhd,bhdm->bhm', {q}[:, :, {i}, :], {read})"))
    out = e.bind(f"{sp.mod}.stack([{', '.join(steps)}], {sp.axis_kw}=1)")  # (B, T, H_q, d_v)
    return [f"{out}.reshape({b}, {t}, {hq * dv})", state]


def _linear_attention_scanned(e: Emitter, q: str, k: str, v: str, state: str, decay: str | None, beta: str | None,
                              scale: str, groups: int, out_shape: tuple[int, int, int]) -> list[str]:
    """LinearAttention's recurrence as the target's scan over the sequence: the step of the unrolled loop above, once,
    over (q_t, k_t, v_t, decay_t, beta_t), each (B, H, T, ...) operand scanned along T."""
    sp = e.sp
    body = Emitter(e.sp, consts=e.consts, taken=e.taken, fnames=e.fnames, overrides=e.overrides)
    carry, step_in = body.fresh("state"), body.fresh("step_in")
    scanned = [x for x in (q, k, v, decay, beta) if x is not None]
    q_t, k_t, v_t = (body.bind(f"{step_in}[{i}]", n) for i, n in enumerate(("q_t", "k_t", "v_t")))
    s_t = carry
    if decay is not None:
        s_t = body.bind(f"{s_t} * {sp.mod}.exp({step_in}[3])[..., None]", "s")
    if beta is not None:
        retrieved = body.bind(f"{sp.mod}.einsum('bhdm,bhd->bhm', {s_t}, {k_t})")
        v_t = body.bind(f"{step_in}[{len(scanned) - 1}] * ({v_t} - {retrieved})", "v_t")
    s_t = body.bind(f"{s_t} + {k_t}[..., :, None] * {v_t}[..., None, :]", "s")
    read = body.bind(f"{sp.fn('repeat')}({s_t}, {groups}, {sp.axis_kw}=1)") if groups != 1 else s_t
    o_t = body.bind(f"{scale} * {sp.mod}.einsum('bhd,bhdm->bhm', {q_t}, {read})", "o_t")
    body.lines.append(f"return {s_t}, {o_t}")
    step = e.fresh("linear_attention_step_")
    e.lines.extend([f"def {step}({carry}, {step_in}):"] + ["    " + ln for ln in body.lines])
    along_t = ", ".join(f"{sp.fn('moveaxis')}({x}, 2, 0)" for x in scanned)
    res = e.bind(sp.scan.format(step=step, init=sp.scan_init.format(x=state), xs=f"({along_t},)", reverse=False), "s")
    out = e.bind(f"{sp.fn('moveaxis')}({res}[1], 0, 1)")  # (T, B, H_q, d_v) -> (B, T, H_q, d_v)
    b, t, width = out_shape
    return [f"{out}.reshape({b}, {t}, {width})", e.bind(f"{res}[0]")]
