"""PyTorch lowering rules of the indexing operators (ops/indexing.py).

Gathers map negative indices into range first (torch.gather does not wrap). Scatter indices are
static (attributes): normalized here and written as constant index tensors; reductions are
scatter_reduce with include_self (ONNX reduces into the existing data). ScatterND and GatherND run on
the data flattened over the indexed dims, at static or computed linear positions."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS
from dlcfuzz.lower.pysource.codegen import Emitter, Types, wrapped
from dlcfuzz.lower.pysource.rules_indexing import scatter_nd_rows
from dlcfuzz.lower.torch.codegen import TARGET, literal

R = TARGET.register

TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _spec(name: str):  # noqa: ANN202 - the spec class varies
    from dlcfuzz.ops import get_op

    return get_op(name)


def _scatter(e: Emitter, data: str, dim: int, index: np.ndarray, src: str, reduction: str) -> str:
    k = e.const(np.ascontiguousarray(index.astype(np.int64)), "idx")
    if reduction == "none":
        return f"torch.scatter({data}, {dim}, {k}, {src})"
    return f"torch.scatter_reduce({data}, {dim}, {k}, {src}, {TORCH_REDUCE[reduction]!r}, include_self=True)"


@R("gather_elements")
def _gather_elements(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                     out_types: Types) -> list[str]:
    t = in_types[0]
    ax = int(attrs["axis"]) % t.rank
    i64 = e.bind(f"{ins[1]}.to(torch.int64)")
    fixed = e.bind(wrapped(e.sp, i64, t.shape[ax]))
    return [f"torch.gather({ins[0]}, {ax}, {fixed})"]


@R("scatter_elements")
def _scatter_elements(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    t, u = in_types
    where = _spec("scatter_elements").targets(t, u, attrs)  # type: ignore[attr-defined]
    ax = int(attrs["axis"]) % t.rank
    return [_scatter(e, ins[0], ax, where[ax], ins[1], attrs["reduction"])]


@R("scatter_nd")
def _scatter_nd(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    t = in_types[0]
    slots, width, linear, n = scatter_nd_rows(t, attrs)
    index = np.repeat(linear.reshape(-1, 1), width, axis=1)  # each slice lands on its row
    data = e.bind(f"{ins[0]}.reshape({slots}, {width})")
    upd = e.bind(f"{ins[1]}.reshape({n}, {width})")
    return [f"{_scatter(e, data, 0, index, upd, attrs['reduction'])}.reshape({literal(list(t.shape))})"]


@R("center_crop_pad")
def _center_crop_pad(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                     out_types: Types) -> list[str]:
    t = in_types[0]
    win = _spec("center_crop_pad").windows(t, attrs)  # type: ignore[attr-defined]
    x = f"{ins[0]}[{', '.join(f'{s}:{s + n}' for s, n, _, _ in win)}]"
    flat: list[int] = []
    for _, _, pb, pe in reversed(win):  # F.pad lists the last dim first
        flat += [pb, pe]
    if not any(flat):
        return [f"{x}.clone()"]
    zero = "False" if t.dtype == "bool" else "0.0" if t.dtype in FLOATS else "0"
    return [f"F.pad({x}, {literal(flat)}, mode='constant', value={zero})"]
