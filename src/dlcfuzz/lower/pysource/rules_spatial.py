"""The spatial operators (ops/spatial.py) that every Python target writes alike up to spelling.

DeformConv is explicit bilinear sampling at the offset positions (zero outside the image) and a
grouped product; the RoI operators are explicit math over the static plans of ops/spatial.py (torch
has no RoI operator without torchvision, which is not a dependency; JAX has none)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Types, literal
from dlcfuzz.lower.pysource.rules import shared


def reflected(e: Emitter, p: str, lo: float, hi: float) -> str:
    """ONNX GridSample's reflection of the positions p into [lo, hi]."""
    sp, span = e.sp, hi - lo
    if span <= 0:
        return e.bind(f"{sp.mod}.full_like({p}, {lo!r})")
    below, above = e.bind(f"{p} < {lo!r}"), e.bind(f"{p} > {hi!r}")
    past_hi = f"{sp.mod}.where({above}, {p} - {hi!r}, {sp.mod}.zeros_like({p}))"
    dx = e.bind(f"{sp.mod}.where({below}, {lo!r} - {p}, {past_hi})")
    n = e.bind(f"{sp.mod}.trunc({dx} / {span!r})")
    r = e.bind(f"{dx} - {n} * {span!r}")
    even = e.bind(f"{sp.mod}.fmod({n}, 2) == 0")
    return e.bind(f"{sp.mod}.where({below}, {sp.mod}.where({even}, {lo!r} + {r}, {hi!r} - {r}), "
                  f"{sp.mod}.where({above}, {sp.mod}.where({even}, {hi!r} - {r}, {lo!r} + {r}), {p}))")


@shared("deform_conv")
def _deform_conv(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
    k, s, d, p, g, og = spec.geometry(in_types, attrs)  # type: ignore[attr-defined]
    n, c, h, w = in_types[0].shape
    m = in_types[1].shape[0]
    oh, ow = out_types[0].shape[2:]
    taps = k[0] * k[1] * oh * ow
    sp, dt = e.sp, in_types[0].dtype
    off = e.bind(f"{ins[2]}.reshape({n}, {og}, {k[0]}, {k[1]}, 2, {oh}, {ow})")
    base_y = ((np.arange(oh) * s[0] - p[0])[None, :] + (np.arange(k[0]) * d[0])[:, None]).reshape(1, 1, k[0], 1, oh, 1)
    base_x = ((np.arange(ow) * s[1] - p[1])[None, :] + (np.arange(k[1]) * d[1])[:, None]).reshape(1, 1, 1, k[1], 1, ow)
    py = e.bind(f"{e.const(base_y.astype(dt), 'by')} + {off}[:, :, :, :, 0]")
    px = e.bind(f"{e.const(base_x.astype(dt), 'bx')} + {off}[:, :, :, :, 1]")
    y0, x0 = e.bind(f"{sp.mod}.floor({py})"), e.bind(f"{sp.mod}.floor({px})")
    ly, lx = e.bind(f"{py} - {y0}"), e.bind(f"{px} - {x0}")
    # flat positions in X: channel c of offset group q reads ((n * C + c) * H + y) * W + x
    chan = e.const((np.arange(n)[:, None, None, None] * c + np.arange(c).reshape(1, og, c // og, 1)) * (h * w), "chan")
    flat_x = e.bind(f"{ins[0]}.reshape(-1)")
    cols = None
    for cy, wy in ((y0, f"(1 - {ly})"), (f"({y0} + 1)", ly)):
        for cx, wx in ((x0, f"(1 - {lx})"), (f"({x0} + 1)", lx)):
            ok = e.bind(f"({cy} >= 0) & ({cy} <= {h - 1}) & ({cx} >= 0) & ({cx} <= {w - 1})")
            pos = e.bind(f"{sp.cast(f'{sp.mod}.where({ok}, {cy} * {w} + {cx}, 0)', 'int64')}.reshape({n}, {og}, 1, {taps})")
            vals = e.bind(f"{flat_x}[{chan} + {pos}]")
            weight = e.bind(f"{sp.mod}.where({ok}, {wy} * {wx}, 0.0).reshape({n}, {og}, 1, {taps})")
            term = e.bind(f"{weight} * {sp.mod}.where({ok}.reshape({n}, {og}, 1, {taps}), {vals}, 0.0)")
            cols = term if cols is None else e.bind(f"{cols} + {term}")
    if attrs.get("mask", 0):
        cols = e.bind(f"{cols} * {ins[-1]}.reshape({n}, {og}, 1, {taps})")
    grouped = e.bind(f"{cols}.reshape({n}, {g}, {c // g}, {k[0] * k[1]}, {oh * ow})")
    wg = e.bind(f"{ins[1]}.reshape({g}, {m // g}, {c // g}, {k[0] * k[1]})")
    y = e.bind(f"{sp.mod}.einsum('ngckp,gmck->ngmp', {grouped}, {wg}).reshape({n}, {m}, {oh}, {ow})")
    if attrs.get("bias", 0):
        y = e.bind(f"{y} + {ins[3]}.reshape(1, {m}, 1, 1)")
    return [y]


@shared("max_roi_pool")
def _max_roi_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t, sp = in_types[0], e.sp
    batch, mask, empty = get_op("max_roi_pool").plan(t, attrs)  # type: ignore[attr-defined]
    n, c, h, w = t.shape
    picked = e.bind(f"{ins[0]}.reshape({n}, {c}, {h * w})[{e.const(batch, 'batch')}]")
    bins = e.const(mask[:, None], "bins")
    best = e.bind(f"{sp.fn('max')}({sp.mod}.where({bins}, {picked}[:, :, None, :], {literal(-np.inf)}), "
                  f"{sp.axis_kw}=-1)")
    return [f"{sp.mod}.where({e.const(empty[:, None], 'empty')}, 0.0, {best}).reshape({sp.shape(out_types[0].shape)})"]


@shared("roi_align")
def _roi_align(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t, sp = in_types[0], e.sp
    rows, weights, valid, count = get_op("roi_align").plan(t, attrs)  # type: ignore[attr-defined]
    if out_types[0].size == 0 or t.size == 0:
        return [f"{sp.mod}.zeros({sp.shape(out_types[0].shape)}, dtype={ins[0]}.dtype)"]
    table = e.bind(f"{sp.fn('transpose')}({ins[0]}, {sp.shape([0, 2, 3, 1])}).reshape(-1, {t.shape[1]})")
    terms = e.bind(f"{table}[{e.const(rows, 'rows')}] * {e.const(weights.astype(t.dtype)[..., None], 'w')}")
    ok = e.const(valid[..., None], "valid")
    if attrs.get("mode", "avg") == "avg":
        y = e.bind(f"{sp.mod}.where({ok}, {terms}.sum(4), 0.0).sum(3) / {e.const(count[..., None].astype(t.dtype), 'count')}")
    else:
        high = f"{sp.fn('max')}({terms}, {sp.axis_kw}=4)"
        best = e.bind(f"{sp.fn('max')}({sp.mod}.where({ok}, {high}, {literal(-np.inf)}), {sp.axis_kw}=3)")
        y = e.bind(f"{sp.mod}.where({e.const(valid.any(axis=3)[..., None], 'any')}, {best}, 0.0)")
    return [f"{sp.fn('transpose')}({y}, {sp.shape([0, 3, 1, 2])})"]
