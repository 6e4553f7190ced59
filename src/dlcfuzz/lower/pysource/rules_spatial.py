"""The spatial operators (ops/spatial.py) that every Python target writes alike up to spelling.

DeformConv is explicit bilinear sampling at the offset positions (zero outside the image) and a
grouped product."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules import shared


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
