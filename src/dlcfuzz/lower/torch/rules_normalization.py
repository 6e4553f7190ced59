"""PyTorch lowering rules of the normalization operators (ops/normalization.py).

RMS normalization is F.rms_norm, group normalization F.group_norm where it takes the groups (the shared
formula otherwise); Lp normalization keeps ONNX's zero vector (torch's
F.normalize clamps the norm instead); LpPool pads |x|^p with zeros (its end pads widened so that
ceil_mode's last windows lie inside) and sums the strided windows itself: torch's avg_pool has no
dilation and F.lp_pool drops the absolute value."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from dlcfuzz.lower.pysource import rules_normalization as pynorm
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules import native
from dlcfuzz.lower.torch.codegen import TARGET, literal

R = TARGET.register


@R("rms_norm")
def _rms_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    t = in_types[0]
    norm = list(t.shape[attrs["axis"] % t.rank:])
    eps = literal(attrs["epsilon"])
    if tuple(in_types[1].shape) == tuple(norm):
        return [f"F.rms_norm({ins[0]}, {literal(norm)}, {ins[1]}, eps={eps})"]
    return [f"F.rms_norm({ins[0]}, {literal(norm)}, eps={eps}) * {ins[1]}"]  # scale broadcasts to the suffix


@native(TARGET.name, "group_norm")
def _group_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str] | None:
    t, g = in_types[0], int(attrs["num_groups"])
    if t.shape[1] // g * int(np.prod(t.shape[2:])) <= 1:
        # F.group_norm refuses groups of one element ("Expected more than 1 value per channel"): the
        # formula, whose normalized value is 0 there
        return None
    scale, bias = pynorm.group_params(e.sp, ins, t, attrs)
    return [f"F.group_norm({ins[0]}, {g}, {scale}, {bias}, eps={literal(attrs['epsilon'])})"]


@R("lp_norm")
def _lp_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    norm = e.bind(f"torch.linalg.vector_norm({ins[0]}, ord={int(attrs['p'])}, dim={int(attrs['axis'])}, keepdim=True)")
    return [pynorm.unit_or_zero(e.sp, ins[0], norm)]


@R("lp_pool")
def _lp_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    p = int(attrs["p"])
    k, s, d, begins, ends, out = pynorm.lp_pool_window(in_types[0], attrs)
    xp = e.bind(e.sp.pad(pynorm.powered(e.sp, ins[0], p), begins, ends))
    total = ""
    for off in itertools.product(*[range(kk) for kk in k]):
        view = ", ".join(f"{o * dd}:{o * dd + ss * (n - 1) + 1}:{ss}" for o, dd, ss, n in zip(off, d, s, out))
        total = f"{xp}[:, :, {view}]" if not total else e.bind(f"{total} + {xp}[:, :, {view}]")
    if int(np.prod(k)) == 1:
        total = f"{total}.contiguous()"
    return [pynorm.root(e.sp, total, p)]
