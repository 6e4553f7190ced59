"""The ordering operators (ops/ordering.py) that every Python target writes alike up to spelling.

Exclusive scans shift the inclusive scan by one, the identity first."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Rule, Types
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
