"""The normalization operators (ops/normalization.py) that every Python target writes alike up to
spelling (GroupNormalization's formula, unless torch's F.group_norm applies), and the pieces the targets'
own rules share (|x|^p and its root, Lp normalization's division, LpPool's window)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter, Spelling, Types, literal
from dlcfuzz.lower.pysource.rules import shared, shared_unless_native
from dlcfuzz.ops.normalization import MVN_EPSILON


def powered(sp: Spelling, x: str, p: int) -> str:
    """|x|^p (x * x for p = 2, exact for every sign)."""
    return f"{sp.mod}.abs({x})" if p == 1 else f"({x} * {x})" if p == 2 else f"{sp.mod}.abs({x}) ** {p}"


def root(sp: Spelling, s: str, p: int) -> str:
    """The p-th root of s."""
    return s if p == 1 else f"{sp.mod}.sqrt({s})" if p == 2 else f"{s} ** {literal(1.0 / p)}"


def unit_or_zero(sp: Spelling, x: str, norm: str) -> str:
    """`x` divided by its `norm` (LpNormalization), a zero vector staying zero."""
    return f"{sp.mod}.where({norm} == 0, {sp.mod}.zeros_like({x}), {x} / {norm})"


def lp_pool_window(t: TensorType, attrs: dict) -> tuple[list[int], ...]:
    """LpPool's kernel, strides and dilations, its begin pads, its end pads widened so that ceil_mode's
    last windows lie inside (they count as 0 in ONNX), and the output's spatial shape."""
    from dlcfuzz.ops import get_op

    spec = get_op("lp_pool")
    k, s, d, pads, out = spec.geometry(t, attrs)  # type: ignore[attr-defined]
    return k, s, d, pads[:len(k)], spec.padded_ends(t, attrs), out  # type: ignore[attr-defined]


def group_norm_formula(e: Emitter, x: str, t: TensorType, groups: int, eps: str, scale: str, bias: str) -> str:
    """GroupNormalization as its formula: statistics per (batch, group), then the per-channel affine."""
    sp = e.sp
    grouped = e.bind(f"{x}.reshape({sp.shape([t.shape[0], groups, -1])})")
    centred = e.bind(f"{grouped} - {sp.mod}.mean({grouped}, {sp.axis_kw}=2, {sp.keepdims_kw}=True)")
    var = e.bind(f"{sp.mod}.mean({centred} * {centred}, {sp.axis_kw}=2, {sp.keepdims_kw}=True)")
    normalized = e.bind(f"({centred} / {sp.mod}.sqrt({var} + {eps})).reshape({sp.shape(t.shape)})")
    channel = sp.shape([1, -1] + [1] * (t.rank - 2))
    return f"{normalized} * ({scale}).reshape({channel}) + ({bias}).reshape({channel})"


def group_params(sp: Spelling, ins: list[str], t: TensorType, attrs: dict) -> tuple[str, str]:
    """GroupNormalization's scale and bias per channel (GroupNormalization-18's are per group)."""
    scale, bias = ins[1], ins[2]
    if attrs.get("scale_per_group", 0):
        per = t.shape[1] // int(attrs["num_groups"])
        scale, bias = (f"{sp.fn('repeat')}({p}, {per})" for p in (scale, bias))
    return scale, bias


@shared_unless_native("group_norm")
def _group_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    t = in_types[0]
    scale, bias = group_params(e.sp, ins, t, attrs)
    return [group_norm_formula(e, ins[0], t, int(attrs["num_groups"]), literal(attrs["epsilon"]), scale, bias)]


@shared("global_lp_pool")
def _global_lp_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    sp, p = e.sp, int(attrs["p"])
    total = e.bind(f"{sp.mod}.sum({powered(sp, ins[0], p)}, {sp.axes(range(2, in_types[0].rank), True)})")
    return [root(sp, total, p)]


@shared("mean_variance_norm")
def _mean_variance_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                        out_types: Types) -> list[str]:
    sp, axes = e.sp, spec.axes(in_types[0], attrs)
    centred = e.bind(f"{ins[0]} - {sp.mod}.mean({ins[0]}, {sp.axes(axes, True)})")
    var = e.bind(f"{sp.mod}.mean({centred} * {centred}, {sp.axes(axes, True)})")
    return [f"{centred} / ({sp.mod}.sqrt({var}) + {literal(MVN_EPSILON)})"]
