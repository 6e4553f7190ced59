"""Attention operators of the standard domain: Attention, RotaryEmbedding, LinearAttention, CausalConvWithState.

Attention (opsets 23-25) in our IR: the tensor inputs are q, k, v, then the optional ones that are
present, in ONNX order: attn_mask (has_mask), past_key and past_value (has_past), nonpad_kv_seqlen
(has_nonpad); the outputs are Y, then present_key and present_value (present), then qk_matmul_output
(qk_output). A row with no allowed key is zero (the errata of opsets 23/24), and a near tie: runtimes
differ there (NaN). LinearAttention and CausalConvWithState are the opset-27 recurrent forms (Gated
DeltaNet, Mamba). References compute in float64 and round once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops.base import (
    ANY,
    Attrs,
    Domain,
    OpSpec,
    broadcast_shapes,
    check_size,
    register,
    require_dtype,
    require_same_dtype,
)
from dlcfuzz.ops.nn import _f32

SMALL_LOGITS = Domain(-2.0, 2.0)  # q and k: softmax over small logits stays well conditioned
# softmax_precision values (ONNX TensorProto data types) and the epsilon of each
SOFTMAX_PRECISIONS = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16"}
_EPS = {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52, "bfloat16": 2.0**-7}


def _flag(attrs: Attrs, key: str) -> bool:
    return bool(attrs.get(key, 0))


class _AttentionShapes:
    """The operand layout of one Attention instance (everything infer and the reference need)."""

    def __init__(self, spec: OpSpec, ins: Sequence[TensorType], attrs: Attrs) -> None:
        n = 3 + _flag(attrs, "has_mask") + 2 * _flag(attrs, "has_past") + _flag(attrs, "has_nonpad")
        if len(ins) != n:
            raise ShapeError(f"{spec.name}: expects {n} inputs for these attributes, got {len(ins)}")
        q, k, v = ins[:3]
        require_dtype(spec, q)
        require_same_dtype(spec, [q, k, v])
        if not q.rank == k.rank == v.rank or q.rank not in (3, 4):
            raise ShapeError(f"{spec.name}: q, k, v must all be 3-D or all 4-D, got ranks {q.rank}, {k.rank}, {v.rank}")
        self.rank = q.rank
        hq, hkv = int(attrs.get("q_num_heads", 0)), int(attrs.get("kv_num_heads", 0))
        if q.rank == 3:
            if hq < 1 or hkv < 1:
                raise ShapeError(f"{spec.name}: 3-D inputs need q_num_heads and kv_num_heads")
            if q.shape[2] % hq or k.shape[2] % hkv or v.shape[2] % hkv:
                raise ShapeError(f"{spec.name}: hidden sizes {q.shape[2]}, {k.shape[2]}, {v.shape[2]} "
                                 f"do not split into {hq} / {hkv} heads")
            self.b, self.sq, self.hq, self.d = q.shape[0], q.shape[1], hq, q.shape[2] // hq
            kb, self.skv, self.hkv, kd = k.shape[0], k.shape[1], hkv, k.shape[2] // hkv
            vb, vs, self.dv = v.shape[0], v.shape[1], v.shape[2] // hkv
        else:
            if hq or hkv:
                raise ShapeError(f"{spec.name}: q_num_heads/kv_num_heads are for 3-D inputs only")
            self.b, self.hq, self.sq, self.d = q.shape
            kb, self.hkv, self.skv, kd = k.shape
            vb, vh, vs, self.dv = v.shape
            if vh != self.hkv:
                raise ShapeError(f"{spec.name}: k has {self.hkv} heads, v {vh}")
        if not self.b == kb == vb or vs != self.skv:
            raise ShapeError(f"{spec.name}: batch or kv sequence of q {q.shape}, k {k.shape}, v {v.shape} differ")
        if kd != self.d:
            raise ShapeError(f"{spec.name}: q head size {self.d} != k head size {kd}")
        if self.hkv < 1 or self.hq % self.hkv:
            raise ShapeError(f"{spec.name}: q heads {self.hq} not a multiple of kv heads {self.hkv}")
        if min(self.b, self.sq, self.d, self.skv, self.dv) < 1:
            raise ShapeError(f"{spec.name}: empty dimensions are not modelled")
        rest = list(ins[3:])
        self.mask = rest.pop(0) if _flag(attrs, "has_mask") else None
        self.past = (rest.pop(0), rest.pop(0)) if _flag(attrs, "has_past") else None
        self.nonpad = rest.pop(0) if _flag(attrs, "has_nonpad") else None
        self.p = 0
        if self.past is not None:
            pk, pv = self.past
            require_same_dtype(spec, [q, pk, pv])
            self.p = pk.shape[2] if pk.rank == 4 else -1
            if pk.shape != (self.b, self.hkv, self.p, self.d) or pv.shape != (self.b, self.hkv, self.p, self.dv):
                raise ShapeError(f"{spec.name}: past_key {pk.shape} / past_value {pv.shape} do not match "
                                 f"(batch {self.b}, kv heads {self.hkv}, head sizes {self.d}, {self.dv})")
        self.t = self.p + self.skv
        if self.nonpad is not None:
            if self.past is not None:
                raise ShapeError(f"{spec.name}: nonpad_kv_seqlen cannot be combined with past_key/past_value")
            if self.nonpad.dtype != "int64" or self.nonpad.shape != (self.b,):
                raise ShapeError(f"{spec.name}: nonpad_kv_seqlen must be int64[{self.b}], got {self.nonpad}")
        if self.mask is not None:
            m = self.mask
            if m.dtype not in ("bool", q.dtype):
                raise DTypeError(f"{spec.name}: attn_mask must be bool or {q.dtype}, got {m.dtype}")
            if not 1 <= m.rank <= 4 or not 1 <= m.shape[-1] <= self.t:
                raise ShapeError(f"{spec.name}: attn_mask {m.shape} must be 1-D to 4-D with a last dim in [1, {self.t}]")
            full = (self.b, self.hq, self.sq, self.t)
            if broadcast_shapes(spec, m.shape[:-1] + (self.t,), full) != full:
                raise ShapeError(f"{spec.name}: attn_mask {m.shape} does not broadcast to {full}")
        scale = attrs.get("scale")
        if scale is not None and not float(scale) >= 0:  # q and k are scaled by sqrt(scale)
            raise ShapeError(f"{spec.name}: scale {scale} must be non-negative")
        if not float(attrs.get("softcap", 0.0)) >= 0:
            raise ShapeError(f"{spec.name}: softcap must be non-negative")
        if int(attrs.get("qk_matmul_output_mode", 0)) not in (0, 1, 2, 3):
            raise ShapeError(f"{spec.name}: qk_matmul_output_mode must be 0..3")
        if int(attrs.get("softmax_precision", 0)) not in (0, *SOFTMAX_PRECISIONS):
            raise ShapeError(f"{spec.name}: softmax_precision {attrs.get('softmax_precision')} unsupported")
        if min(int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1))) < -1:
            raise ShapeError(f"{spec.name}: window sizes must be -1 or non-negative")
        self.dtype = q.dtype

    def outputs(self, attrs: Attrs) -> list[TensorType]:
        y = (self.b, self.sq, self.hq * self.dv) if self.rank == 3 else (self.b, self.hq, self.sq, self.dv)
        outs = [TensorType(self.dtype, y)]
        if _flag(attrs, "present"):
            outs += [TensorType(self.dtype, (self.b, self.hkv, self.t, self.d)),
                     TensorType(self.dtype, (self.b, self.hkv, self.t, self.dv))]
        if _flag(attrs, "qk_output"):
            outs.append(TensorType(self.dtype, (self.b, self.hq, self.sq, self.t)))
        return outs


def _heads_4d(x: np.ndarray, heads: int) -> np.ndarray:
    """(B, S, H*D) -> (B, H, S, D); 4-D operands pass through."""
    if x.ndim == 4:
        return x
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def attention_parts(xs: Sequence[np.ndarray], attrs: Attrs) -> dict[str, Any]:
    """Every intermediate of Attention in float64 (ONNX's decomposition, the reference of each output):
    logits (scaled QK), capped (after softcap), bias (mask + causal + window + padding, -inf where
    disallowed), probs (softmax, fully-masked rows zero), y, present_key/value, and `masked_rows`."""
    q_in, k_in, v_in = xs[:3]
    dtype = q_in.dtype
    rest = list(xs[3:])
    mask = rest.pop(0) if _flag(attrs, "has_mask") else None
    past = (rest.pop(0), rest.pop(0)) if _flag(attrs, "has_past") else None
    nonpad = rest.pop(0).astype(np.int64) if _flag(attrs, "has_nonpad") else None
    q = _heads_4d(q_in.astype(np.float64), int(attrs.get("q_num_heads", 0)))
    k = _heads_4d(k_in.astype(np.float64), int(attrs.get("kv_num_heads", 0)))
    v = _heads_4d(v_in.astype(np.float64), int(attrs.get("kv_num_heads", 0)))
    if past is not None:
        k = np.concatenate([past[0].astype(np.float64), k], axis=2)
        v = np.concatenate([past[1].astype(np.float64), v], axis=2)
    b, hq, sq, d = q.shape
    hkv, t = k.shape[1], k.shape[2]
    root = scale_root(attrs.get("scale"), d, dtype)
    rep = hq // hkv  # grouped-query attention: q head h reads kv head h // rep
    k_rep, v_rep = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    logits = (q * root) @ np.swapaxes(k_rep * root, -1, -2)
    softcap = float(attrs.get("softcap", 0.0))
    capped = softcap * np.tanh(logits / softcap) if softcap > 0 else logits

    bias = np.zeros((b, hq, sq, t))
    mask_values = np.zeros((b, hq, sq, t))  # finite float mask values, for error scales
    if mask is not None:
        width = t - mask.shape[-1]  # a shorter last dim is padded with -inf (False)
        m = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, width)], constant_values=False) if mask.dtype == np.bool_ \
            else np.pad(mask.astype(np.float64), [(0, 0)] * (mask.ndim - 1) + [(0, width)], constant_values=-np.inf)
        add = np.where(m, 0.0, -np.inf) if m.dtype == np.bool_ else m
        bias = bias + add
        mask_values = mask_values + np.where(np.isfinite(add), np.abs(add), 0.0)
    i = np.arange(sq).reshape(sq, 1)
    j = np.arange(t).reshape(1, t)
    if past is not None:
        offset = np.full((b, 1, 1, 1), past[0].shape[2])
    elif nonpad is not None:
        offset = (nonpad - sq).reshape(b, 1, 1, 1)
    else:
        offset = np.zeros((b, 1, 1, 1), dtype=np.int64)
    position = i + offset  # absolute position of each query, (b, 1, sq, 1)
    allowed = np.ones((b, 1, sq, t), dtype=bool)
    if _flag(attrs, "is_causal"):
        allowed &= j <= position
    left, right = int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1))
    if left >= 0:
        allowed &= position - j <= left
    if right >= 0:
        allowed &= j - position <= right
    if nonpad is not None:
        allowed &= j < nonpad.reshape(b, 1, 1, 1)
    bias = bias + np.where(allowed, 0.0, -np.inf)

    x = capped + bias
    masked_rows = np.isneginf(bias.max(axis=-1, keepdims=True))
    row_max = np.where(masked_rows, 0.0, x.max(axis=-1, keepdims=True))
    e = np.exp(x - row_max)
    total = e.sum(axis=-1, keepdims=True)
    probs = np.where(masked_rows, 0.0, e / np.where(total == 0, 1.0, total))
    y = probs @ v_rep
    if q_in.ndim == 3:
        y = y.transpose(0, 2, 1, 3).reshape(b, sq, hq * v.shape[3])
    return {"logits": logits, "capped": capped, "bias": bias, "x": x, "probs": probs, "y": y,
            "present_key": k, "present_value": v, "masked_rows": masked_rows, "mask_values": mask_values,
            "k_rep": k_rep, "v_rep": v_rep, "q": q, "softcap": softcap}


def _qk_output(parts: dict[str, Any], mode: int) -> np.ndarray:
    # mode 0 is the raw scaled QK product: the spec, and ORT; onnx.reference (1.23.2) returns the
    # softcapped one there
    return {0: parts["logits"], 1: parts["capped"], 2: parts["x"], 3: parts["probs"]}[mode]


class AttentionOp(OpSpec):
    """ONNX Attention (opsets 23-25). attrs: has_mask, has_past, has_nonpad, present, qk_output (which
    optional operands exist), q_num_heads, kv_num_heads (3-D only), scale (None: 1/sqrt(head size)),
    is_causal, softcap, softmax_precision (0: none), qk_matmul_output_mode, left/right_window_size."""
    contracts = True

    name = "attention"
    family = "attention"
    n_inputs = -1
    dtypes = FLOATS
    onnx_ops = ("Attention",)
    ranks = (3, 4)
    # absent optional outputs ("" in ONNX) are left out of our node, as its attributes say
    skips_absent_outputs = True

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        return _AttentionShapes(self, ins, attrs).outputs(attrs)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank not in (3, 4) or 0 in first.shape:
            raise ShapeError(f"{self.name}: q must be a non-empty 3-D or 4-D tensor")
        dt = first.dtype
        if first.rank == 4:
            b, hq, sq, d = first.shape
        else:
            b, sq, hidden = first.shape
            if hidden == 0:
                raise ShapeError(f"{self.name}: an empty hidden size has no head count")
            hq = int(rng.choice([h for h in range(1, hidden + 1) if hidden % h == 0]))
            d = hidden // hq
        hkv = int(rng.choice([h for h in range(1, hq + 1) if hq % h == 0]))
        skv = int(rng.integers(1, 5))
        dv = d if rng.random() < 0.5 else int(rng.integers(1, 5))
        attrs: Attrs = {"has_mask": 0, "has_past": 0, "has_nonpad": 0, "present": 0, "qk_output": 0,
                        "q_num_heads": 0, "kv_num_heads": 0, "scale": None, "is_causal": int(rng.random() < 0.4),
                        "softcap": 0.0, "softmax_precision": 0, "qk_matmul_output_mode": 0,
                        "left_window_size": -1, "right_window_size": -1}
        if attrs["is_causal"]:
            # new keys as many as queries: where they differ, where the causal diagonal sits is read
            # two ways (the spec's errata onnx/onnx#8068, microsoft/onnxruntime#29020: ORT's CPU kernel
            # aligns bottom-right), so no single reference is right there
            skv = sq
        if first.rank == 3:
            attrs["q_num_heads"], attrs["kv_num_heads"] = hq, hkv
            ins = [first, TensorType(dt, (b, skv, hkv * d)), TensorType(dt, (b, skv, hkv * dv))]
        else:
            ins = [first, TensorType(dt, (b, hkv, skv, d)), TensorType(dt, (b, hkv, skv, dv))]
        p = 0
        extra: list[TensorType] = []
        if rng.random() < 0.3:  # KV cache inside the operator: past in, present out
            p = int(rng.integers(1, 4))
            attrs["has_past"] = attrs["present"] = 1
            extra = [TensorType(dt, (b, hkv, p, d)), TensorType(dt, (b, hkv, p, dv))]
        elif rng.random() < 0.2:  # external cache: per-batch valid lengths (opset 24)
            attrs["has_nonpad"] = 1
            extra = [TensorType("int64", (b,))]
            if attrs["is_causal"] and skv < sq:
                attrs["is_causal"] = 0  # nonpad < q length would leave leading rows fully masked
        elif rng.random() < 0.1:
            attrs["present"] = 1
        t = p + skv
        if rng.random() < 0.5:
            attrs["has_mask"] = 1
            full = (b, hq, sq, t)
            # a right-aligned suffix of (b, hq, sq, t), batch and head dims maybe 1; ORT's kernel takes
            # masks of rank 2 to 4 whose query dim is q's (attention_helper.h), so these only
            keep = int(rng.integers(2, 5))
            shape = tuple(1 if (i < keep - 2 and rng.random() < 0.4) else full[4 - keep + i] for i in range(keep))
            # a bool mask disallows keys: its rows need a few keys so that some stay allowed
            kind = "bool" if t >= 3 and rng.random() < 0.5 else dt
            extra.insert(0, TensorType(kind, shape))
        if rng.random() < 0.4:
            attrs["scale"] = _f32(rng.uniform(0.05, 1.0))
        if rng.random() < 0.3:
            attrs["softcap"] = _f32(rng.uniform(0.5, 5.0))
        if rng.random() < 0.15:  # sliding window (opset 25)
            attrs["left_window_size"] = int(rng.integers(-1, 4))
            attrs["right_window_size"] = int(rng.integers(-1, 4)) if not attrs["is_causal"] else -1
        if rng.random() < 0.3:
            attrs["softmax_precision"] = int(rng.choice([c for c, n in SOFTMAX_PRECISIONS.items()
                                                         if n in FLOATS and _EPS[n] <= _EPS[dt]]))
        if rng.random() < 0.3:
            modes = [0, 1, 3]
            disallows = (attrs["is_causal"] or attrs["has_nonpad"] or attrs["left_window_size"] >= 0
                         or attrs["right_window_size"] >= 0 or any(x.dtype == "bool" for x in extra))
            if not disallows:  # mode 2 shows the -inf of disallowed keys: only finite biases
                modes.append(2)
            attrs["qk_output"] = 1
            attrs["qk_matmul_output_mode"] = int(rng.choice(modes))
        ins += extra
        for out in self.infer(ins, attrs):
            check_size(self, out.shape)
        for x in ins:
            check_size(self, x.shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if index in (0, 1):
            return SMALL_LOGITS
        if _flag(attrs, "has_nonpad") and index == len(ins) - 1:
            try:
                s = _AttentionShapes(self, ins, attrs)
            except ShapeError:
                return Domain(strict=True)
            # at least one valid key per row: a causal frontier nonpad - sq >= 0
            lo = s.sq if _flag(attrs, "is_causal") else 1
            return Domain(lo=min(lo, s.skv), hi=s.skv, strict=True)
        return ANY

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        # A row with no allowed key: ONNX now defines it as zeros (errata of opsets 23/24), but
        # runtimes and older readings give NaN, so such results are not judged.
        with np.errstate(all="ignore"):
            return bool(attention_parts(xs, attrs)["masked_rows"].any())

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            parts = attention_parts(xs, attrs)
        dtype = xs[0].dtype
        outs = [parts["y"]]
        if _flag(attrs, "present"):
            outs += [parts["present_key"], parts["present_value"]]
        if _flag(attrs, "qk_output"):
            outs.append(_qk_output(parts, int(attrs.get("qk_matmul_output_mode", 0))))
        return [o.astype(dtype) for o in outs]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            parts = attention_parts(xs, attrs)
            mag = attention_parts([np.abs(x) if x.dtype.kind == "f" else x for x in xs], {**attrs, "softcap": 0.0})
            # |q|.|k| scale: the magnitude of the logits' terms, where their rounding happens
            terms = np.abs(mag["logits"]) + parts["mask_values"] + parts["softcap"]
            allowed = np.isfinite(parts["bias"])
            row = np.where(allowed, terms, 0.0).max(axis=-1, keepdims=True)
            # an absolute error in a logit is a relative one in its probability (softmax), at the
            # row's operand magnitude (x - max(x)); a narrower softmax_precision rounds more
            precision = SOFTMAX_PRECISIONS.get(int(attrs.get("softmax_precision", 0)), str(xs[0].dtype))
            widen = max(1.0, _EPS[precision] / _EPS.get(str(xs[0].dtype), _EPS["float64"]))
            p_scale = parts["probs"] * (1.0 + 2.0 * row) * widen
            y_scale = p_scale @ np.abs(parts["v_rep"]) + parts["probs"] @ np.abs(parts["v_rep"])
            if xs[0].ndim == 3:
                b, hq, sq, dv = y_scale.shape
                y_scale = y_scale.transpose(0, 2, 1, 3).reshape(b, sq, hq * dv)
            mode = int(attrs.get("qk_matmul_output_mode", 0))
            qk_scale = p_scale if mode == 3 else terms
            candidates = [(parts["y"], y_scale)]
            if _flag(attrs, "present"):
                candidates += [(parts["present_key"], np.abs(parts["present_key"])),
                               (parts["present_value"], np.abs(parts["present_value"]))]
            if _flag(attrs, "qk_output"):
                candidates.append((_qk_output(parts, mode), qk_scale))
        # error_scale sees one output at a time: find which one this is (shape, then values)
        same_shape = [(o, s) for o, s in candidates if o.shape == y.shape]
        if not same_shape:
            return np.abs(y)
        exact = [(o, s) for o, s in same_shape
                 if np.array_equal(o.astype(xs[0].dtype).astype(np.float64), y, equal_nan=True)]
        chosen = exact if len(exact) == 1 else same_shape
        return np.abs(y) + np.maximum.reduce([s for _, s in chosen])


ATTENTION = register(AttentionOp())



# ---- RotaryEmbedding ------------------------------------------------------------------------------

UNIT = Domain(-1.0, 1.0)  # cos/sin caches


class RotaryEmbeddingOp(OpSpec):
    """ONNX RotaryEmbedding (opset 23). Inputs x, cos_cache, sin_cache and optional position_ids (4
    inputs: the caches are indexed by position, (max_position, rot/2); 3: they are (B, S, rot/2)).
    attrs: interleaved, rotary_embedding_dim (0: the head size), num_heads (3-D x only, else 0)."""

    name = "rotary_embedding"
    family = "attention"
    n_inputs = -1
    dtypes = ("float16", "float32")  # ONNX's T: float, float16, bfloat16
    onnx_ops = ("RotaryEmbedding",)
    ranks = (3, 4)

    def _layout(self, ins: Sequence[TensorType], attrs: Attrs) -> tuple[int, int, int, int, int]:
        """(batch, sequence, heads, head size, rotated dims) of x."""
        if len(ins) not in (3, 4):
            raise ShapeError(f"{self.name}: expects x, cos_cache, sin_cache and optional position_ids")
        x, cos, sin = ins[:3]
        require_dtype(self, x)
        require_same_dtype(self, [x, cos, sin])
        heads = int(attrs.get("num_heads", 0))
        if x.rank == 4:
            if heads and heads != x.shape[1]:
                raise ShapeError(f"{self.name}: num_heads {heads} != x's {x.shape[1]} heads")
            b, h, s, d = x.shape
        elif x.rank == 3:
            if heads < 1 or x.shape[2] % heads:
                raise ShapeError(f"{self.name}: 3-D x {x.shape} needs num_heads dividing its hidden size")
            b, s, h, d = x.shape[0], x.shape[1], heads, x.shape[2] // heads
        else:
            raise ShapeError(f"{self.name}: x must be 3-D or 4-D")
        rot = int(attrs.get("rotary_embedding_dim", 0)) or d
        if rot % 2 or not 0 < rot <= d:
            raise ShapeError(f"{self.name}: rotary_embedding_dim {rot} must be even and in (0, head size {d}]")
        if len(ins) == 4:
            pos = ins[3]
            if pos.dtype != "int64" or pos.shape != (b, s):
                raise ShapeError(f"{self.name}: position_ids must be int64[{b}, {s}], got {pos}")
            if cos.rank != 2 or cos.shape[1] != rot // 2 or cos.shape[0] < 1:
                raise ShapeError(f"{self.name}: cos_cache {cos.shape} must be (max_position, {rot // 2})")
        elif cos.shape != (b, s, rot // 2):
            raise ShapeError(f"{self.name}: cos_cache {cos.shape} must be ({b}, {s}, {rot // 2}) without position_ids")
        if sin.shape != cos.shape:
            raise ShapeError(f"{self.name}: sin_cache {sin.shape} != cos_cache {cos.shape}")
        return b, s, h, d, rot

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        self._layout(ins, attrs)
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank not in (3, 4):
            raise ShapeError(f"{self.name}: x must be 3-D or 4-D")
        attrs: Attrs = {"interleaved": int(rng.integers(2)), "rotary_embedding_dim": 0, "num_heads": 0}
        if first.rank == 3:
            hidden = first.shape[2]
            choices = [h for h in range(1, hidden + 1) if hidden % h == 0 and (hidden // h) % 2 == 0]
            if not choices:
                raise ShapeError(f"{self.name}: hidden size {hidden} has no even head size")
            attrs["num_heads"] = int(rng.choice(choices))
            b, s, d = first.shape[0], first.shape[1], hidden // attrs["num_heads"]
        else:
            b, _, s, d = first.shape
            if d % 2:
                raise ShapeError(f"{self.name}: head size {d} must be even")
        if d > 2 and rng.random() < 0.4:  # partial rotation
            attrs["rotary_embedding_dim"] = int(rng.choice(range(2, d, 2)))
        rot = attrs["rotary_embedding_dim"] or d
        if rng.random() < 0.6:
            # ONNX only needs the positions inside the cache, which may be shorter than the sequence
            cache = TensorType(first.dtype, (max(1, s + int(rng.integers(-3, 5))), rot // 2))
            ins = [first, cache, cache, TensorType("int64", (b, s))]
        else:
            cache = TensorType(first.dtype, (b, s, rot // 2))
            ins = [first, cache, cache]
        for t in ins:
            check_size(self, t.shape)
        self.infer(ins, attrs)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if index in (1, 2):
            return UNIT
        if index == 3:  # indices into the caches' first dim
            return Domain(lo=0, hi=ins[1].shape[0] - 1, strict=True)
        return ANY

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return np.abs(self.reference([np.abs(x) for x in xs], attrs)[0]).astype(np.float64)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x_in = xs[0]
        x = x_in.astype(np.float64)
        cos, sin = xs[1].astype(np.float64), xs[2].astype(np.float64)
        if len(xs) == 4:
            cos, sin = cos[xs[3]], sin[xs[3]]  # (B, S, rot/2)
        # (B, S, H, D) working layout
        if x.ndim == 4:
            x = x.transpose(0, 2, 1, 3)
        else:
            heads = int(attrs["num_heads"])
            x = x.reshape(x.shape[0], x.shape[1], heads, x.shape[2] // heads)  # explicit: -1 is ambiguous when empty
        rot = int(attrs.get("rotary_embedding_dim", 0)) or x.shape[3]
        x_rot, x_pass = x[..., :rot], x[..., rot:]
        cos, sin = cos[:, :, None, :], sin[:, :, None, :]
        if attrs.get("interleaved"):
            x1, x2 = x_rot[..., 0::2], x_rot[..., 1::2]
        else:
            x1, x2 = x_rot[..., : rot // 2], x_rot[..., rot // 2:]
        real = cos * x1 - sin * x2
        imag = sin * x1 + cos * x2
        if attrs.get("interleaved"):
            rotated = np.stack([real, imag], axis=-1).reshape(x_rot.shape)
        else:
            rotated = np.concatenate([real, imag], axis=-1)
        out = np.concatenate([rotated, x_pass], axis=-1)
        out = out.transpose(0, 2, 1, 3) if x_in.ndim == 4 else out.reshape(x_in.shape)
        return [out.astype(x_in.dtype)]


register(RotaryEmbeddingOp())



def _which_output(candidates: list[tuple[np.ndarray, np.ndarray]], y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """error_scale sees one output at a time: the scale of the candidate (output, scale) that is `y`
    (by shape, then by value; the largest scale of those that cannot be told apart)."""
    same_shape = [(o, s) for o, s in candidates if o.shape == y.shape]
    if not same_shape:
        return np.abs(y)
    exact = [(o, s) for o, s in same_shape if np.array_equal(o.astype(dtype).astype(np.float64), y, equal_nan=True)]
    chosen = exact if len(exact) == 1 else same_shape
    return np.abs(y) + np.maximum.reduce([np.broadcast_to(s, y.shape) for _, s in chosen])


# ---- CausalConvWithState --------------------------------------------------------------------------

ACTIVATIONS = ("none", "silu", "swish")
HALF_FLOATS = ("float16", "float32")  # ONNX's T of the opset-27 operators: float, float16, bfloat16


class CausalConvWithStateOp(OpSpec):
    """ONNX CausalConvWithState (opset 27): a causal depthwise 1-D convolution over (B, C, L) whose
    left context is past_state (zeros when absent); outputs the convolution (optionally SiLU) and the
    last k - 1 positions of the padded sequence. attrs: has_bias, has_past, activation."""
    contracts = True

    name = "causal_conv_with_state"
    family = "attention"
    n_inputs = -1
    n_outputs = 2
    dtypes = HALF_FLOATS
    onnx_ops = ("CausalConvWithState",)
    ranks = (3,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        n = 2 + _flag(attrs, "has_bias") + _flag(attrs, "has_past")
        if len(ins) != n:
            raise ShapeError(f"{self.name}: expects {n} inputs for these attributes, got {len(ins)}")
        x, w = ins[:2]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        if x.rank != 3 or w.rank != 3:
            raise ShapeError(f"{self.name}: input and weight must be 3-D")
        b, c, _ = x.shape
        k = w.shape[2]
        if w.shape[:2] != (c, 1) or k < 1:
            raise ShapeError(f"{self.name}: weight {w.shape} must be ({c}, 1, k >= 1)")
        rest = list(ins[2:])
        if _flag(attrs, "has_bias") and rest.pop(0).shape != (c,):
            raise ShapeError(f"{self.name}: bias must be ({c},)")
        if _flag(attrs, "has_past") and rest.pop(0).shape != (b, c, k - 1):
            raise ShapeError(f"{self.name}: past_state must be ({b}, {c}, {k - 1})")
        if attrs.get("activation", "none") not in ACTIVATIONS:
            raise ShapeError(f"{self.name}: activation {attrs.get('activation')!r} not in {ACTIVATIONS}")
        return [x, x.with_shape((b, c, k - 1))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 3:
            raise ShapeError(f"{self.name}: input must be 3-D")
        b, c, _ = first.shape
        k = int(rng.integers(2, 6))  # k = 1 leaves an empty present_state
        attrs: Attrs = {"has_bias": int(rng.random() < 0.5), "has_past": int(rng.random() < 0.5),
                        "activation": str(rng.choice(ACTIVATIONS))}
        ins = [first, TensorType(first.dtype, (c, 1, k))]
        if attrs["has_bias"]:
            ins.append(TensorType(first.dtype, (c,)))
        if attrs["has_past"]:
            ins.append(TensorType(first.dtype, (b, c, k - 1)))
        for t in ins:
            check_size(self, t.shape)
        self.infer(ins, attrs)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        is_parameter = index == 1 or (index == 2 and _flag(attrs, "has_bias"))  # weight, bias
        return Domain(-1.0, 1.0) if is_parameter else ANY

    def _parts(self, xs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(convolution before the activation, output, present_state) in float64."""
        x, w = xs[0].astype(np.float64), xs[1].astype(np.float64)
        rest = [a.astype(np.float64) for a in xs[2:]]
        bias = rest.pop(0) if _flag(attrs, "has_bias") else None
        b, c, length = x.shape
        k = w.shape[2]
        past = rest.pop(0) if _flag(attrs, "has_past") else np.zeros((b, c, k - 1))
        padded = np.concatenate([past, x], axis=2)
        conv = sum(padded[:, :, i:i + length] * w[None, :, 0, i, None] for i in range(k))
        if bias is not None:
            conv = conv + bias[None, :, None]
        out = conv * (0.5 * (1 + np.tanh(0.5 * conv))) if attrs.get("activation", "none") != "none" else conv
        return conv, out, padded[:, :, length:]

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        _, out, present = self._parts(xs, attrs)
        return [out.astype(xs[0].dtype), present.astype(xs[0].dtype)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        conv, out, present = self._parts(xs, attrs)
        terms = self._parts([np.abs(a) for a in xs], {**attrs, "activation": "none"})[0]
        # SiLU's slope is at most 1.1; its sigmoid is accurate in absolute terms near 0
        scale = terms * 1.1 + (1.0 if attrs.get("activation", "none") != "none" else 0.0)
        return _which_output([(out, scale), (present, np.abs(present))], y, xs[0].dtype)


register(CausalConvWithStateOp())


# ---- LinearAttention ------------------------------------------------------------------------------

UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


class LinearAttentionOp(OpSpec):
    """ONNX LinearAttention (opset 27): the recurrence S_t = decay * S_{t-1} + k_t (x) v_t (delta rules:
    v_t - S^T k_t, times beta) read as o_t = scale * q_t^T S_t, over 3-D packed (B, T, H*D) operands.
    Inputs q, k, v, then past_state (has_past), decay (gated rules), beta (delta rules). attrs:
    q_num_heads, kv_num_heads, scale (0: 1/sqrt(d_k)), update_rule, has_past, chunk_size (0: absent; a
    hint for chunk-parallel prefill that does not change the result)."""
    contracts = True

    name = "linear_attention"
    family = "attention"
    n_inputs = -1
    n_outputs = 2
    dtypes = HALF_FLOATS
    onnx_ops = ("LinearAttention",)
    ranks = (3,)

    def layout(self, ins: Sequence[TensorType], attrs: Attrs) -> tuple[int, int, int, int, int, int]:
        """(b, t, hq, hkv, d_k, d_v)."""
        rule = attrs.get("update_rule", "gated_delta")
        if rule not in UPDATE_RULES:
            raise ShapeError(f"{self.name}: update_rule {rule!r} not in {UPDATE_RULES}")
        gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
        n = 3 + _flag(attrs, "has_past") + gated + delta
        if len(ins) != n:
            raise ShapeError(f"{self.name}: expects {n} inputs for these attributes, got {len(ins)}")
        q, k, v = ins[:3]
        require_dtype(self, q)
        require_same_dtype(self, ins)
        hq, hkv = int(attrs.get("q_num_heads", 0)), int(attrs.get("kv_num_heads", 0))
        if any(x.rank != 3 for x in (q, k, v)):
            raise ShapeError(f"{self.name}: query, key, value must be 3-D (B, T, H*D)")
        if hq < 1 or hkv < 1 or hq % hkv:
            raise ShapeError(f"{self.name}: q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
        b, t = q.shape[:2]
        if k.shape[:2] != (b, t) or v.shape[:2] != (b, t) or q.shape[2] % hq or k.shape[2] % hkv or v.shape[2] % hkv:
            raise ShapeError(f"{self.name}: shapes {q.shape}, {k.shape}, {v.shape} do not split into heads")
        dk, dv = q.shape[2] // hq, v.shape[2] // hkv
        if k.shape[2] // hkv != dk or min(b, t, dk, dv) < 1:
            raise ShapeError(f"{self.name}: key head size {k.shape[2] // hkv} != query head size {dk}")
        rest = list(ins[3:])
        if _flag(attrs, "has_past") and rest.pop(0).shape != (b, hkv, dk, dv):
            raise ShapeError(f"{self.name}: past_state must be ({b}, {hkv}, {dk}, {dv})")
        if gated and rest.pop(0).shape not in ((b, t, hkv), (b, t, hkv * dk)):
            raise ShapeError(f"{self.name}: decay must be ({b}, {t}, {hkv}) or ({b}, {t}, {hkv * dk})")
        if delta and rest.pop(0).shape not in ((b, t, hkv), (b, t, 1)):
            raise ShapeError(f"{self.name}: beta must be ({b}, {t}, {hkv}) or ({b}, {t}, 1)")
        if not float(attrs.get("scale", 0.0)) >= 0 or int(attrs.get("chunk_size", 0)) < 0:
            raise ShapeError(f"{self.name}: scale and chunk_size must be non-negative")
        return b, t, hq, hkv, dk, dv

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        b, t, hq, hkv, dk, dv = self.layout(ins, attrs)
        return [TensorType(ins[0].dtype, (b, t, hq * dv)), TensorType(ins[0].dtype, (b, hkv, dk, dv))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 3:
            raise ShapeError(f"{self.name}: query must be 3-D")
        b, t, hidden = first.shape
        if hidden == 0:
            raise ShapeError(f"{self.name}: an empty hidden size has no head count")
        hq = int(rng.choice([h for h in range(1, hidden + 1) if hidden % h == 0]))
        hkv = int(rng.choice([h for h in range(1, hq + 1) if hq % h == 0]))
        dk, dv = hidden // hq, int(rng.integers(1, 5))
        rule = str(rng.choice(UPDATE_RULES))
        attrs: Attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule,
                        "scale": _f32(rng.uniform(0.1, 1.0)) if rng.random() < 0.4 else 0.0,
                        "has_past": int(rng.random() < 0.5),
                        # a tuning hint that must not change the result: chunked prefill paths
                        "chunk_size": int(rng.integers(1, 5)) if rng.random() < 0.4 else 0}
        dt = first.dtype
        ins = [first, TensorType(dt, (b, t, hkv * dk)), TensorType(dt, (b, t, hkv * dv))]
        if attrs["has_past"]:
            ins.append(TensorType(dt, (b, hkv, dk, dv)))
        if rule in ("gated", "gated_delta"):
            ins.append(TensorType(dt, (b, t, hkv if rng.random() < 0.5 else hkv * dk)))
        if rule in ("delta", "gated_delta"):
            ins.append(TensorType(dt, (b, t, hkv if rng.random() < 0.5 else 1)))
        for x in ins + self.infer(ins, attrs):
            check_size(self, x.shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        rule = attrs.get("update_rule", "gated_delta")
        kinds = ["q", "k", "v"] + ["past"] * _flag(attrs, "has_past") + ["decay"] * (rule in ("gated", "gated_delta")) \
            + ["beta"] * (rule in ("delta", "gated_delta"))
        kind = kinds[index] if index < len(kinds) else "q"
        # decay is a log-space gate (<= 0 keeps the state bounded); beta a sigmoid output; small keys
        # keep the delta rule's correction contracting
        return {"decay": Domain(-1.0, 0.0), "beta": Domain(0.0, 1.0), "k": Domain(-0.5, 0.5),
                "past": Domain(-1.0, 1.0)}.get(kind, ANY)

    def _run(self, xs: Sequence[np.ndarray], attrs: Attrs, magnitude: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(output, state) in float64; magnitude=True bounds every term instead (|q|, |k|, |v|, |past|,
        and the delta rule's correction added, not subtracted)."""
        rule = attrs.get("update_rule", "gated_delta")
        gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
        hq, hkv = int(attrs["q_num_heads"]), int(attrs["kv_num_heads"])
        f = [a.astype(np.float64) for a in xs]
        if magnitude:
            f = [np.abs(a) if i < 3 + _flag(attrs, "has_past") else a for i, a in enumerate(f)]
        q, k, v = _heads_4d(f[0], hq), _heads_4d(f[1], hkv), _heads_4d(f[2], hkv)
        b, _, t, dk = q.shape
        dv = v.shape[3]
        rest = f[3:]
        state = rest.pop(0).copy() if _flag(attrs, "has_past") else np.zeros((b, hkv, dk, dv))
        decay = rest.pop(0) if gated else None
        beta = rest.pop(0) if delta else None
        if decay is not None:  # (B, H_kv, T, 1 or d_k)
            decay = decay.reshape(b, t, hkv, decay.shape[2] // hkv).transpose(0, 2, 1, 3)
        if beta is not None:  # (B, H_kv or 1, T, 1)
            beta = np.abs(beta) if magnitude else beta
            beta = beta.reshape(b, t, beta.shape[2], 1).transpose(0, 2, 1, 3)
        scale = float(attrs.get("scale", 0.0)) or 1.0 / np.sqrt(dk)
        out = np.zeros((b, hq, t, dv))
        for i in range(t):
            k_t, v_t = k[:, :, i, :], v[:, :, i, :]
            if decay is not None:
                state = state * np.exp(decay[:, :, i, :])[..., None]
            if beta is not None:
                retrieved = np.einsum("bhdm,bhd->bhm", state, k_t)
                v_t = beta[:, :, i, :] * (v_t + retrieved if magnitude else v_t - retrieved)
            state = state + k_t[..., :, None] * v_t[..., None, :]
            out[:, :, i, :] = scale * np.einsum("bhd,bhdm->bhm", q[:, :, i, :], np.repeat(state, hq // hkv, axis=1))
        return out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv), state

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        out, state = self._run(xs, attrs)
        return [out.astype(xs[0].dtype), state.astype(xs[0].dtype)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        out, state = self._run(xs, attrs)
        out_m, state_m = self._run(xs, attrs, magnitude=True)
        steps = 1 + xs[0].shape[1]  # each step's rounding carries into the state
        return _which_output([(out, out_m * steps), (state, state_m * steps)], y, xs[0].dtype)


register(LinearAttentionOp())


def attention_layout(in_types: Sequence[TensorType], attrs: Attrs) -> _AttentionShapes:
    """The static sizes of an Attention node (b, hq, hkv, sq, skv, p, t, d, dv, rank, mask, ...) for
    the lowering rules."""
    return _AttentionShapes(ATTENTION, in_types, attrs)


def scale_root(scale: float | None, d: int, dtype: Any) -> float:
    """sqrt(scale) as ONNX's function body computes it (q and k are each scaled by it), rounded to the input type
    `dtype` (its Cast). Without the attribute, scale is 1/sqrt(d), its root taken in the input type. The attribute
    is a float32 and its root is taken in float32 before the Cast: for float64 inputs that is float32 precision,
    2e-7 off an exact root, which onnxruntime and onnx.reference both show (a 30-minute auto campaign reported the
    exact root as ORT's error; issue 37's XLA run found the Python lowerings taking the exact one)."""
    if scale is None:
        return float(np.asarray(np.sqrt(1.0 / np.sqrt(d)), dtype=dtype))
    return float(np.asarray(np.sqrt(np.float32(scale)), dtype=dtype))


def attention_scale_root(layout: _AttentionShapes, attrs: Attrs) -> float:
    """`scale_root` of a lowering's Attention (the reference's root, the same for every target)."""
    return scale_root(attrs.get("scale"), layout.d, layout.dtype)
