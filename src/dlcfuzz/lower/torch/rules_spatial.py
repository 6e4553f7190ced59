"""PyTorch lowering rules of the spatial operators (ops/spatial.py).

GridSample, AffineGrid, Col2Im (2-D) and MaxUnpool are F.grid_sample, F.affine_grid, F.fold and
F.max_unpoolNd where those mean the same. Where they do not: ONNX's cubic GridSample with border or
reflection padding first moves a position outside the image inside (then reads each tap through
the padding mode), F.grid_sample only the taps: the grid is padded first here, in normalized
coordinates. F.affine_grid puts a single position at 0, ONNX's reference at -1 with align_corners,
and has no CPU float16 kernel: written as the product with the base positions there. The RoI
operators and DeformConv are written alike for every Python target (pysource/rules_spatial.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_spatial import reflected
from dlcfuzz.lower.torch.codegen import TARGET, literal
from dlcfuzz.ops.spatial import affine_base

R = TARGET.register

TORCH_GRID_MODES = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


def _spec(name: str):  # noqa: ANN202 - the spec class varies
    from dlcfuzz.ops import get_op

    return get_op(name)


def _prepad_grid(e: Emitter, grid: str, dims: Sequence[int], padding: str, align: int) -> str:
    """The grid with ONNX's position padding applied (positions outside the image moved in)."""
    r = len(dims)
    parts = []
    for j in range(r):
        g = e.bind(f"{grid}[..., {j}]")
        if padding == "reflection":
            parts.append(reflected(e, g, -1.0, 1.0))  # the image's extent in normalized coordinates
            continue
        d = dims[r - 1 - j]
        edge = 1.0 if align else 1.0 - 1.0 / d  # the first and last pixel centres
        parts.append(e.bind(f"torch.where(torch.abs({g}) > 1, torch.clamp({g}, {-edge!r}, {edge!r}), {g})"))
    return e.bind(f"torch.stack([{', '.join(parts)}], dim=-1)")


@R("grid_sample")
def _grid_sample(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
    mode, padding, align = attrs["mode"], attrs["padding_mode"], int(attrs["align_corners"])
    grid = ins[1]
    if mode == "cubic" and padding != "zeros":
        grid = _prepad_grid(e, grid, in_types[0].shape[2:], padding, align)
    return [f"F.grid_sample({ins[0]}, {grid}, mode={TORCH_GRID_MODES[mode]!r}, padding_mode={padding!r}, "
            f"align_corners={bool(align)})"]


@R("affine_grid")
def _affine_grid(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
    size, align = list(attrs["size"]), int(attrs["align_corners"])
    # F.affine_grid's base positions (torch.linspace) have no CPU float16 kernel: the product there too
    if align and 1 in size[2:] or 0 in size or in_types[0].dtype == "float16":
        base = e.const(affine_base(size[2:], align).astype(in_types[0].dtype), "base")
        return [f"torch.einsum('...j,nkj->n...k', {base}, {ins[0]})"]
    return [f"F.affine_grid({ins[0]}, {literal(size)}, align_corners={bool(align)})"]


def _gather_sum(e: Emitter, x: str, n: int, src: np.ndarray, out_shape: Sequence[int], dtype: str) -> str:
    """Each output element the sum of the input elements `src` lists (per batch; x.size is a zero)."""
    flat = e.bind(f"torch.cat([{x}.reshape({n}, -1), torch.zeros({n}, 1, dtype={x}.dtype)], dim=1)")
    return f"{flat}[:, {e.const(src, 'src')}].sum(-1).reshape({literal(list(out_shape))})"


@R("col2im")
def _col2im(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    t = in_types[0]
    img, block, s, d, p, _ = _spec("col2im").geometry(t, attrs)  # type: ignore[attr-defined]
    nd = len(img)
    if nd != 2:  # F.fold folds 2-D images only
        src = _spec("col2im").sources(t, attrs)  # type: ignore[attr-defined]
        return [_gather_sum(e, ins[0], t.shape[0], src, out_types[0].shape, t.dtype)]
    # fold into the padded image (pads may differ per side, F.fold's are symmetric), then crop
    padded = [img[i] + p[i] + p[nd + i] for i in range(nd)]
    y = e.bind(f"F.fold({ins[0]}, output_size={literal(padded)}, kernel_size={literal(block)}, "
               f"dilation={literal(d)}, padding=0, stride={literal(s)})")
    return [f"{y}[:, :, {p[0]}:{p[0] + img[0]}, {p[1]}:{p[1] + img[1]}]"]


def _unpool_native(t: TensorType, attrs: dict) -> bool:
    """Whether F.max_unpoolNd means ONNX's MaxUnpool here: every index inside its own plane, the
    output grown (if at all) in its first spatial dim only, and within PyTorch's size check
    (strictly within the default size +- stride, the default without padding)."""
    k, s, p, inferred, out = _spec("max_unpool").geometry(t, attrs)  # type: ignore[attr-defined]
    nd = t.rank - 2
    if nd not in (1, 2, 3) or out[3:] != inferred[3:]:
        return False
    plane = int(np.prod(inferred[2:]))
    idx = np.asarray(attrs["indices"], dtype=np.int64).reshape(t.shape[0] * t.shape[1], -1)
    if idx.size and np.any(idx // plane != np.arange(idx.shape[0])[:, None]):
        return False
    return all(abs(out[2 + i] - ((t.shape[2 + i] - 1) * s[i] + k[i])) < s[i] for i in range(nd))


@R("max_unpool")
def _max_unpool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    t = in_types[0]
    out = list(out_types[0].shape)
    if _unpool_native(t, attrs):
        k, s, _, inferred, _ = _spec("max_unpool").geometry(t, attrs)  # type: ignore[attr-defined]
        plane = int(np.prod(inferred[2:]))
        idx = np.asarray(attrs["indices"], dtype=np.int64).reshape(t.shape[0] * t.shape[1], -1)
        local = (idx - np.arange(idx.shape[0])[:, None] * plane).reshape(t.shape)
        # an index over the inferred plane is the same position in a plane grown in its first dim
        return [f"F.max_unpool{t.rank - 2}d({ins[0]}, {e.const(local, 'indices')}, {literal(k)}, {literal(s)}, "
                f"0, {literal(out[2:])})"]
    src = _spec("max_unpool").sources(t, attrs)  # type: ignore[attr-defined]
    flat = e.bind(f"torch.cat([{ins[0]}.reshape(-1), torch.zeros(1, dtype={ins[0]}.dtype)])")
    return [f"{flat}[{e.const(src, 'src')}].reshape({literal(out)})"]
