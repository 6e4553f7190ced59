"""PyTorch lowering rules of the indexing operators (ops/indexing.py).

Gathers map negative indices into range first (torch.gather does not wrap). Scatter indices are
static (attributes): normalized here and written as constant index tensors; reductions are
scatter_reduce with include_self (ONNX reduces into the existing data). ScatterND and GatherND run on
the data flattened over the indexed dims, at static or computed linear positions."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_indexing import wrapped
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
    tuples = _spec("scatter_nd").tuples(t, attrs)  # type: ignore[attr-defined]
    k = tuples.shape[1]
    slots, width = int(np.prod(t.shape[:k], dtype=np.int64)), int(np.prod(t.shape[k:], dtype=np.int64))
    linear = np.ravel_multi_index(tuple(tuples.T), t.shape[:k]) if len(tuples) else np.zeros(0, np.int64)
    index = np.repeat(linear.reshape(-1, 1), width, axis=1)  # each slice lands on its row
    data = e.bind(f"{ins[0]}.reshape({slots}, {width})")
    upd = e.bind(f"{ins[1]}.reshape({len(tuples)}, {width})")
    return [f"{_scatter(e, data, 0, index, upd, attrs['reduction'])}.reshape({literal(list(t.shape))})"]


@R("compress")
def _compress(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    axis, kept = _spec("compress").kept(in_types[0], attrs)  # type: ignore[attr-defined]
    k = e.const(np.asarray(kept, dtype=np.int64), "kept")
    if axis is None:
        return [f"torch.index_select({ins[0]}.reshape(-1), 0, {k})"]
    return [f"torch.index_select({ins[0]}, {axis}, {k})"]


@R("reverse_sequence")
def _reverse_sequence(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    tm, src = _spec("reverse_sequence").source(in_types[0], attrs)  # type: ignore[attr-defined]
    return [f"torch.gather({ins[0]}, {tm}, {e.const(src, 'src')})"]


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


@R("tensor_scatter")
def _tensor_scatter(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                    out_types: Types) -> list[str]:
    past, upd = in_types
    ax, src = _spec("tensor_scatter").source(past, upd, attrs)  # type: ignore[attr-defined]
    if upd.shape[ax] == 0:
        return [f"{ins[0]}.clone()"]
    # gather's index may be longer than its input along the gathered dim: read update at each position
    picked = e.bind(f"torch.gather({ins[1]}, {ax}, {e.const(np.clip(src, 0, None), 'src')})")
    return [f"torch.where({e.const(src >= 0, 'written')}, {picked}, {ins[0]})"]
