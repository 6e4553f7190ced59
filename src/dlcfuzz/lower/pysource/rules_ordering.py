"""The ordering operators (ops/ordering.py) that every Python target writes alike up to spelling.

Exclusive scans shift the inclusive scan by one, the identity first. TopK is a stable sort's first k
positions and a gather at them: the targets' own top-k functions do not promise ONNX's tie order
(the lower index first), a stable sort does."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Rule, Types, literal
from dlcfuzz.lower.pysource.rules import shared


def _scan(np_name: str, identity: int) -> Rule:
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        sp, t, x = e.sp, in_types[0], ins[0]
        d = int(attrs.get("axis", 0)) % t.rank
        n = t.shape[d]
        if n == 0:
            return [sp.copy(x)]
        if attrs.get("reverse", 0):
            x = e.bind(sp.flip.format(x=x, axis=d))
        y = e.bind(f"{sp.mod}.{np_name}({x}, {sp.axis_kw}={d}, dtype={sp.dtype(t.dtype)})")
        if attrs.get("exclusive", 0):
            y = e.bind(sp.shift_in(y, d, n, t.rank, str(identity)))
        return [sp.flip.format(x=y, axis=d) if attrs.get("reverse", 0) else y]

    return rule


shared("cumsum")(_scan("cumsum", 0))
shared("cumprod")(_scan("cumprod", 1))


@shared("trilu")
def _trilu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    fn = "triu" if attrs.get("upper", 1) else "tril"
    return [f"{e.sp.mod}.{fn}({ins[0]}, {e.sp.diagonal_kw}={int(attrs.get('k', 0))})"]


@shared("hardmax")
def _hardmax(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    sp, t = e.sp, in_types[0]
    d = int(attrs.get("axis", -1)) % t.rank
    n = t.shape[d]
    if n == 0 or t.size == 0:
        return [sp.copy(ins[0])]
    best = e.bind(f"{sp.mod}.argmax({ins[0]}, {sp.axis_kw}={d})")
    return [sp.one_hot(best, n, d, t.dtype)]


@shared("topk")
def _topk(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    sp, t = e.sp, in_types[0]
    d = int(attrs.get("axis", -1)) % t.rank
    # keys whose ascending order is the wanted order, exactly: a float's negation is exact, an integer's is not
    # (-INT64_MIN wraps to itself and ranked the smallest int64 first: issue 37's Inductor run), its bitwise
    # complement (-x - 1) is; the integer dtypes TopK takes all fit int64
    floating = t.dtype.startswith("float")
    keys = ins[0] if floating else sp.cast(ins[0], "int64")
    if attrs.get("largest", 1):
        keys = f"-{keys}" if floating else f"~{keys}"
    order = e.bind(sp.stable_order(keys, d, int(attrs["k"])))
    return [sp.take_along.format(x=ins[0], idx=order, axis=d), order]


@shared("range")
def _range(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    dt = out_types[0].dtype
    start, limit, delta = (literal(np.asarray(attrs[k]).astype(dt).item()) for k in ("start", "limit", "delta"))
    return [e.sp.arange(start, limit, delta, dt, out_types[0].shape[0])]
