"""PyTorch lowering rules of the normalization operators (ops/normalization.py).

RMS and group normalization are torch functions; Lp normalization keeps ONNX's zero vector (torch's
F.normalize clamps the norm instead); LpPool pads |x|^p with zeros (its end pads widened so that
ceil_mode's last windows lie inside) and sums the strided windows itself: torch's avg_pool has no
dilation and F.lp_pool drops the absolute value."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, literal
from dlcfuzz.ops.normalization import MVN_EPSILON

R = TARGET.register


def _powered(x: str, p: int) -> str:
    return f"torch.abs({x})" if p == 1 else f"({x} * {x})" if p == 2 else f"torch.abs({x}) ** {p}"


def _root(s: str, p: int) -> str:
    return s if p == 1 else f"torch.sqrt({s})" if p == 2 else f"{s} ** {literal(1.0 / p)}"


@R("rms_norm")
def _rms_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    t = in_types[0]
    norm = list(t.shape[attrs["axis"] % t.rank:])
    eps = literal(attrs["epsilon"])
    if tuple(in_types[1].shape) == tuple(norm):
        return [f"F.rms_norm({ins[0]}, {literal(norm)}, {ins[1]}, eps={eps})"]
    return [f"F.rms_norm({ins[0]}, {literal(norm)}, eps={eps}) * {ins[1]}"]  # scale broadcasts to the suffix


@R("group_norm")
def _group_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    t, g, eps = in_types[0], int(attrs["num_groups"]), literal(attrs["epsilon"])
    scale, bias = ins[1], ins[2]
    if attrs.get("scale_per_group", 0):  # GroupNormalization-18's per-group parameters, per channel
        scale, bias = (f"torch.repeat_interleave({p}, {t.shape[1] // g})" for p in (scale, bias))
    if t.shape[1] // g * int(np.prod(t.shape[2:])) > 1:
        return [f"F.group_norm({ins[0]}, {g}, {scale}, {bias}, eps={eps})"]
    # F.group_norm refuses groups of one element ("Expected more than 1 value per channel"): the
    # formula, whose normalized value is 0 there
    grouped = e.bind(f"{ins[0]}.reshape({literal([t.shape[0], g, -1])})")
    centred = e.bind(f"{grouped} - torch.mean({grouped}, dim=2, keepdim=True)")
    var = e.bind(f"torch.mean({centred} * {centred}, dim=2, keepdim=True)")
    channel = literal([1, -1] + [1] * (t.rank - 2))
    normalized = e.bind(f"({centred} / torch.sqrt({var} + {eps})).reshape({literal(list(t.shape))})")
    return [f"{normalized} * ({scale}).reshape({channel}) + ({bias}).reshape({channel})"]


@R("lp_norm")
def _lp_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    x = ins[0]
    norm = e.bind(f"torch.linalg.vector_norm({x}, ord={int(attrs['p'])}, dim={int(attrs['axis'])}, keepdim=True)")
    return [f"torch.where({norm} == 0, torch.zeros_like({x}), {x} / {norm})"]  # a zero vector stays zero


@R("mean_variance_norm")
def _mean_variance_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                        out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    dims = literal(list(get_op("mean_variance_norm").axes(in_types[0], attrs)))  # type: ignore[attr-defined]
    centred = e.bind(f"{ins[0]} - torch.mean({ins[0]}, dim={dims}, keepdim=True)")
    var = e.bind(f"torch.mean({centred} * {centred}, dim={dims}, keepdim=True)")
    return [f"{centred} / (torch.sqrt({var}) + {literal(MVN_EPSILON)})"]


@R("lp_pool")
def _lp_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    spec = get_op("lp_pool")
    t, p = in_types[0], int(attrs["p"])
    k, s, d, pads, out = spec.geometry(t, attrs)  # type: ignore[attr-defined]
    nd = len(k)
    ends = spec.padded_ends(t, attrs)  # type: ignore[attr-defined]
    flat: list[int] = []
    for i in reversed(range(nd)):  # F.pad lists the last dim first
        flat += [pads[i], ends[i]]
    xp = e.bind(f"F.pad({_powered(ins[0], p)}, {literal(flat)})")
    total = ""
    for off in itertools.product(*[range(kk) for kk in k]):
        view = ", ".join(f"{o * dd}:{o * dd + ss * (n - 1) + 1}:{ss}" for o, dd, ss, n in zip(off, d, s, out))
        total = f"{xp}[:, :, {view}]" if not total else e.bind(f"{total} + {xp}[:, :, {view}]")
    if int(np.prod(k)) == 1:
        total = f"{total}.contiguous()"
    return [_root(total, p)]


@R("global_lp_pool")
def _global_lp_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    p = int(attrs["p"])
    dims = literal(list(range(2, in_types[0].rank)))
    return [_root(e.bind(f"torch.sum({_powered(ins[0], p)}, dim={dims}, keepdim=True)"), p)]
