"""Spatial sampling operators: grid sample, affine grid, col2im, RoI align/pool, max-unpool, deformable conv.

GridSample and DeformConv sample at positions computed from tensor inputs (the grid, the offsets);
the others read fixed positions. Shape-like and index-like ONNX inputs are attributes: AffineGrid's
size, Col2Im's image_shape and block_shape, RoiAlign's rois and batch_indices, MaxRoiPool's rois,
MaxUnpool's indices and output_shape. RoIs and unpool indices are attributes rather than strict
constant inputs because their validity is a relation between values (x1 <= x2, a valid batch index
in a float column, indices unique and inside their pooling windows), which only a sampled attribute
can promise; the ONNX rules write them as initializers. The lowerings of the fixed-position
operators share the plans here (which input element each output reads, with which weight).

References compute in float64 and round once.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops.base import (
    ANY,
    MAX_ELEMENTS,
    Attrs,
    Domain,
    OpSpec,
    check_size,
    magnitude_of_terms,
    register,
    require_dtype,
    require_rank,
    require_same_dtype,
)
from dlcfuzz.ops.nn import PARAM, _list, _window_out

GRID_MODES = ("linear", "nearest", "cubic")
GRID_PADDINGS = ("zeros", "border", "reflection")
GRID = Domain(-1.25, 1.25)  # normalized positions, a little past the image so padding modes matter
INSIDE_GRID = Domain(-0.99, 0.99)  # inside the image (GridSample.disputed_mode)
OFFSETS = Domain(-1.5, 1.5)  # deformable-conv offsets, in pixels
CUBIC_A = -0.75  # ONNX's (and PyTorch's) cubic convolution coefficient


class SpatialOp(OpSpec):
    family = "spatial"
    dtypes = FLOATS


def _flag(spec: OpSpec, attrs: Attrs, name: str, default: int = 0) -> int:
    v = attrs.get(name, default)
    if v not in (0, 1):
        raise ShapeError(f"{spec.name}: {name} must be 0 or 1, got {v!r}")
    return int(v)


def _one_of(spec: OpSpec, attrs: Attrs, name: str, allowed: Sequence[str], default: str) -> str:
    v = attrs.get(name, default)
    if v not in allowed:
        raise ShapeError(f"{spec.name}: {name} {v!r} not in {list(allowed)}")
    return str(v)


def _acc(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """ONNX GridSample's reflection of positions outside [lo, hi] back into it, bouncing off both ends."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    dx = np.where(below, lo - x, np.where(above, x - hi, 0.0))
    n = np.trunc(dx / span)
    r = dx - n * span
    even = np.fmod(n, 2) == 0
    return np.where(below, np.where(even, lo + r, hi - r), np.where(above, np.where(even, hi - r, lo + r), x))


def cubic_coeffs(t: np.ndarray) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for a fraction t in [0, 1)."""
    a = CUBIC_A
    u, v, w = t + 1, 1 - t, 2 - t
    return [((a * u - 5 * a) * u + 8 * a) * u - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * v - (a + 3)) * v * v + 1, ((a * w - 5 * a) * w + 8 * a) * w - 4 * a]


# ---- grid_sample -------------------------------------------------------------------


class GridSample(SpatialOp):
    """GridSample (opset 16 and 20+). Inputs: X (N, C, D1..Dr), grid (N, O1..Or, r) of the same
    dtype, grid[..., 0] indexing the last dim. attrs: mode (opset 20's names: linear, nearest,
    cubic; opset 16's bilinear/bicubic import onto them), padding_mode, align_corners. Two or three
    spatial dims; cubic over two only (ORT, PyTorch and TVM have no tricubic kernel)."""

    name = "grid_sample"
    n_inputs = 2
    onnx_ops = ("GridSample",)
    ranks = (4, 5)

    def parse(self, attrs: Attrs) -> tuple[str, str, int]:
        return (_one_of(self, attrs, "mode", GRID_MODES, "linear"),
                _one_of(self, attrs, "padding_mode", GRID_PADDINGS, "zeros"), _flag(self, attrs, "align_corners"))

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError(f"{self.name}: expects X and grid")
        x, grid = ins
        require_dtype(self, x)
        require_same_dtype(self, ins)
        require_rank(self, x, [4, 5])
        r = x.rank - 2
        mode, _, _ = self.parse(attrs)
        if mode == "cubic" and r != 2:
            raise ShapeError(f"{self.name}: cubic mode over {r} spatial dims is not modelled")
        if grid.rank != x.rank or grid.shape[0] != x.shape[0] or grid.shape[-1] != r:
            raise ShapeError(f"{self.name}: grid {grid.shape} does not fit X {x.shape}")
        out = x.with_shape(x.shape[:2] + grid.shape[1:-1])
        if out.size and 0 in x.shape[2:]:
            raise ShapeError(f"{self.name}: an empty image {x.shape} has nothing to sample")
        return [out]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [4, 5])
        r = first.rank - 2
        mode = str(rng.choice(GRID_MODES if r == 2 else GRID_MODES[:2]))
        padding = str(rng.choice(GRID_PADDINGS))
        align = int(rng.integers(2))
        if padding == "reflection" and align and 1 in first.shape[2:]:
            align = 0  # reflecting into [0, 0] divides by its zero width (ORT and the ONNX reference alike)
        out = tuple(int(d) for d in rng.integers(1, 5, size=r))
        grid = TensorType(first.dtype, (first.shape[0], *out, r))
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
        check_size(self, self.infer([first, grid], attrs)[0].shape)
        return [first, grid], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        if index != 1:
            return ANY
        return INSIDE_GRID if self.disputed_mode(attrs) else GRID

    @staticmethod
    def disputed_mode(attrs: Attrs) -> bool:
        """Cubic with border padding: ONNX's reference (and the spec's "border values for out-of-bound
        grid locations") clamps a position outside the image before its cubic taps; ORT 1.32 (since
        microsoft/onnxruntime#28090, see #10607), PyTorch and TVM clamp each tap instead. They agree
        on positions inside the image, to which generated grids keep."""
        return attrs.get("mode") == "cubic" and attrs.get("padding_mode") == "border"

    def positions(self, dims: Sequence[int], grid: np.ndarray, align: int) -> list[np.ndarray]:
        """The sampled positions in pixels, one array (N, O1..Or) per dim of X (grid is reversed)."""
        r = len(dims)
        out = []
        for i, d in enumerate(dims):
            g = _acc(grid[..., r - 1 - i])
            out.append((g + 1) / 2 * (d - 1) if align else ((g + 1) * d - 1) / 2)
        return out

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """Nearest mode rounds positions: a position near a half pixel picks either neighbour. Cubic
        interpolation with border padding is disputed outside the image (disputed_mode) and with
        align_corners 0 jumps where a position leaves [-0.5, d - 0.5] (ONNX clamps it to [0, d - 1]
        there, not before): a position outside or near that edge is a tie."""
        mode, padding, align = self.parse(attrs)
        if mode == "linear" or (mode == "cubic" and padding != "border"):
            return False
        for d, p in zip(xs[0].shape[2:], self.positions(xs[0].shape[2:], xs[1], align)):
            fin = np.isfinite(p)
            p = p[fin]
            if mode == "cubic":  # disputed outside the image (disputed_mode), and a jump at its edge
                lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
                if np.any(p < lo + tol * np.maximum(1.0, np.abs(p))) or np.any(p > hi - tol * np.maximum(1.0, np.abs(p))):
                    return True
                continue
            frac = p - np.floor(p)
            if np.any(np.abs(frac - 0.5) <= tol * np.maximum(1.0, np.abs(p))):
                return True
        return False

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # positions round at the image size's magnitude, and a position error moves the result by
        # up to the differences of the values around it
        x, grid = _acc(xs[0]), _acc(xs[1])
        spatial = tuple(range(2, x.ndim))
        biggest = np.max(np.abs(x), axis=spatial, keepdims=True) if x.size else np.zeros(x.shape[:2] + (1,) * len(spatial))
        reach = 1.0 + (float(np.max(np.abs(grid[np.isfinite(grid)]), initial=0.0)))
        return np.broadcast_to(biggest * (2.0 + 2.0 * sum(x.shape[2:]) * reach), y.shape) + np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, grid = _acc(xs[0]), xs[1]
        mode, padding, align = self.parse(attrs)
        n, c, *dims = x.shape
        out_sp = grid.shape[1:-1]
        y = np.zeros((n, c, *out_sp))
        if y.size == 0:
            return [y.astype(xs[0].dtype)]
        taps_per_dim = []
        for d, p in zip(dims, self.positions(dims, grid, align)):
            lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
            if mode == "nearest":
                p = np.rint(p)  # half to even, as PyTorch's nearbyint
            outside = (p < lo) | (p > hi)
            if padding == "border":
                p = np.where(outside, np.clip(p, 0, d - 1), p)
            elif padding == "reflection":
                p = np.where(outside, reflect(p, lo, hi), p)
            if mode == "nearest":
                taps = [(p, np.ones_like(p))]
            else:
                base = np.floor(p)
                t = p - base
                taps = [(base, 1 - t), (base + 1, t)] if mode == "linear" else \
                    [(base + k - 1, w) for k, w in enumerate(cubic_coeffs(t))]
            padded = []
            for idx, w in taps:  # each tap read through the padding mode again
                if padding == "zeros":
                    valid = (idx >= 0) & (idx < d)
                elif padding == "border":
                    idx, valid = np.clip(idx, 0, d - 1), np.ones(idx.shape, bool)
                else:
                    idx, valid = np.trunc(reflect(idx, lo, hi)), np.ones(idx.shape, bool)
                valid &= np.isfinite(idx)
                padded.append((np.where(valid, np.clip(idx, 0, d - 1), 0).astype(np.int64), w, valid))
            taps_per_dim.append(padded)
        flat_x = x.reshape(n, c, int(np.prod(x.shape[2:])))  # explicit sizes: -1 is ambiguous for empty tensors
        for combo in itertools.product(*taps_per_dim):
            flat = np.zeros((n, *out_sp), np.int64)
            weight = np.ones((n, *out_sp))
            valid = np.ones((n, *out_sp), bool)
            for d, (idx, w, ok) in zip(dims, combo):
                flat = flat * d + idx
                weight = weight * w
                valid &= ok
            if flat_x.shape[2] == 0:  # an empty image: every tap lies outside it (padding zeros)
                continue
            vals = np.take_along_axis(flat_x, flat.reshape(n, 1, int(np.prod(out_sp))), axis=2).reshape(n, c, *out_sp)
            y += weight[:, None] * np.where(valid[:, None], vals, 0.0)
        return [y.astype(xs[0].dtype)]


# ---- affine_grid -------------------------------------------------------------------


def affine_base(size: Sequence[int], align: int) -> np.ndarray:
    """The homogeneous base positions (*size, r + 1): x (the last dim) first, then y, z, then 1. A dim
    of one position sits at -1 with align_corners (the ONNX reference), at 0 without."""
    axes = []
    for d in size:
        i = np.arange(d, dtype=np.float64)
        axes.append(np.full(d, -1.0) if align and d == 1 else (2 * i / (d - 1) - 1 if align else (2 * i + 1) / d - 1))
    mesh = np.meshgrid(*axes, indexing="ij")  # one array per dim, in dim order (z, y, x)
    return np.stack(list(mesh)[::-1] + [np.ones(tuple(size))], axis=-1)


class AffineGrid(SpatialOp):
    """AffineGrid (opset 20). Input theta (N, 2, 3) or (N, 3, 4); attrs: size (the ONNX input: N, C,
    H, W or N, C, D, H, W), align_corners. Output (N, H, W, 2) or (N, D, H, W, 3)."""

    name = "affine_grid"
    n_inputs = 1
    onnx_ops = ("AffineGrid",)
    ranks = (3,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects theta")
        theta = ins[0]
        require_dtype(self, theta)
        require_rank(self, theta, [3])
        size = attrs.get("size")
        if not isinstance(size, (list, tuple)) or len(size) not in (4, 5) or min(size) < 0:
            raise ShapeError(f"{self.name}: size must be 4 or 5 non-negative ints, got {size!r}")
        r = len(size) - 2
        _flag(self, attrs, "align_corners")
        if theta.shape != (size[0], r, r + 1):
            raise ShapeError(f"{self.name}: theta {theta.shape} does not fit size {list(size)}")
        return [theta.with_shape((size[0], *size[2:], r))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [3])
        n, r, cols = first.shape
        if r not in (2, 3) or cols != r + 1:
            raise ShapeError(f"{self.name}: theta must be (N, 2, 3) or (N, 3, 4), got {first.shape}")
        align = int(rng.integers(2))
        # one position with align_corners: the ONNX reference puts it at -1, ORT at 1, PyTorch at 0
        lo = 2 if align else 1
        size = [n, int(rng.integers(1, 4))] + [int(rng.integers(lo, 6)) for _ in range(r)]
        attrs = {"size": size, "align_corners": align}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        base = np.abs(affine_base(attrs["size"][2:], attrs["align_corners"]))
        return np.einsum("...j,nkj->n...k", base, np.abs(_acc(xs[0])))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        base = affine_base(attrs["size"][2:], attrs["align_corners"])
        return [np.einsum("...j,nkj->n...k", base, _acc(xs[0])).astype(xs[0].dtype)]


# ---- col2im --------------------------------------------------------------------------


class Col2Im(SpatialOp):
    """Col2Im (opset 18). Input (N, C * prod(block_shape), L); attrs: image_shape, block_shape (the
    ONNX inputs), dilations, pads (begins then ends), strides. L must be the number of block
    positions; output (N, C, *image_shape), each block summed into place."""
    contracts = True

    name = "col2im"
    n_inputs = 1
    onnx_ops = ("Col2Im",)
    ranks = (3,)

    def geometry(self, t: TensorType, attrs: Attrs) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
        """(image_shape, block_shape, strides, dilations, pads, blocks per dim)."""
        img = attrs.get("image_shape")
        if not isinstance(img, (list, tuple)) or not img:
            raise ShapeError(f"{self.name}: image_shape must be a non-empty list, got {img!r}")
        nd = len(img)
        img = _list(img, nd, "image_shape", self)
        block = _list(attrs.get("block_shape"), nd, "block_shape", self)
        s = _list(attrs.get("strides"), nd, "strides", self)
        d = _list(attrs.get("dilations"), nd, "dilations", self)
        p = _list(attrs.get("pads"), 2 * nd, "pads", self)
        if min(img) < 1:
            raise ShapeError(f"{self.name}: image_shape {img} must be positive")
        blocks = [_window_out(self, img[i], block[i], s[i], d[i], p[i], p[nd + i]) for i in range(nd)]
        return img, block, s, d, p, blocks

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects one input")
        x = ins[0]
        require_dtype(self, x)
        require_rank(self, x, [3])
        img, block, _, _, _, blocks = self.geometry(x, attrs)
        k = int(np.prod(block))
        if x.shape[1] % k or int(np.prod(blocks)) != x.shape[2]:
            raise ShapeError(f"{self.name}: input {x.shape} does not hold blocks {block} at {blocks} positions")
        return [x.with_shape((x.shape[0], x.shape[1] // k, *img))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [3])
        _, ck, length = first.shape
        if ck == 0 or length == 0:  # no block to fold (every factorization below needs a positive size)
            raise ShapeError(f"{self.name}: no blocks in {first.shape}")
        nd = int(rng.choice([1, 2, 2, 3]))
        # the block positions per dim: a random factorization of L
        blocks = [1] * nd
        rest = length
        for i in range(nd - 1):
            divisors = [f for f in range(1, rest + 1) if rest % f == 0]
            blocks[i] = int(rng.choice(divisors))
            rest //= blocks[i]
        blocks[-1] = rest
        rng.shuffle(blocks)
        # the block shape: a factorization of a divisor of C * prod(block)
        k_total = int(rng.choice([f for f in range(1, ck + 1) if ck % f == 0]))
        block = [1] * nd
        rest = k_total
        for i in range(nd - 1):
            divisors = [f for f in range(1, rest + 1) if rest % f == 0]
            block[i] = int(rng.choice(divisors))
            rest //= block[i]
        block[-1] = rest
        strides, dilations, pads_b, pads_e, img = [], [], [], [], []
        for nb, k in zip(blocks, block):
            s = int(rng.choice([1, 1, 2, 3]))
            d = int(rng.choice([1, 1, 2])) if k > 1 else 1
            eff = d * (k - 1) + 1
            pb, pe = (int(rng.integers(0, eff)), int(rng.integers(0, eff))) if rng.random() < 0.4 else (0, 0)
            size = (nb - 1) * s + eff - pb - pe + int(rng.integers(0, s))  # the last stride may overhang
            if size < 1:
                pb, pe = 0, 0
                size = (nb - 1) * s + eff
            strides.append(s)
            dilations.append(d)
            pads_b.append(pb)
            pads_e.append(pe)
            img.append(size)
        attrs = {"image_shape": img, "block_shape": block, "strides": strides, "dilations": dilations,
                 "pads": pads_b + pads_e}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def sources(self, t: TensorType, attrs: Attrs) -> np.ndarray:
        """For each element of one image (C * prod(image_shape), flat), the positions in one batch's
        flattened (C * prod(block), L) input summed into it, padded with C * prod(block) * L (a zero
        appended to the input)."""
        img, block, s, d, p, blocks = self.geometry(t, attrs)
        nd = len(img)
        k = int(np.prod(block))
        c = t.shape[1] // k
        per_pixel: list[list[int]] = [[] for _ in range(int(np.prod(img)))]
        for ki, off in enumerate(itertools.product(*[range(b) for b in block])):
            for li, pos in enumerate(itertools.product(*[range(b) for b in blocks])):
                where = [pos[i] * s[i] - p[i] + off[i] * d[i] for i in range(nd)]
                if all(0 <= w < img[i] for i, w in enumerate(where)):
                    per_pixel[int(np.ravel_multi_index(where, img))].append(ki * t.shape[2] + li)
        width = max([len(v) for v in per_pixel] + [1])
        sentinel = t.shape[1] * t.shape[2]
        one = np.full((len(per_pixel), width), sentinel, np.int64)
        for i, v in enumerate(per_pixel):
            one[i, :len(v)] = v
        # channel ci reads rows ci * k .. ci * k + k - 1 of the input
        stride = k * t.shape[2]
        return np.concatenate([np.where(one == sentinel, sentinel, one + ci * stride) for ci in range(c)])

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        t = TensorType.of(xs[0])
        out_t = self.infer([t], attrs)[0]
        src = self.sources(t, attrs)
        n = x.shape[0]
        flat = np.concatenate([x.reshape(n, int(np.prod(x.shape[1:]))), np.zeros((n, 1))], axis=1)
        y = flat[:, src].sum(axis=-1) if src.size else np.zeros((n, 0))
        return [y.reshape(out_t.shape).astype(xs[0].dtype)]


# ---- roi_align -----------------------------------------------------------------------

ROI_MODES = ("avg", "max")
ROI_TRANSFORMS = ("half_pixel", "output_half_pixel")


def _rois(spec: OpSpec, attrs: Attrs, cols: int) -> np.ndarray:
    rois = attrs.get("rois")
    if not isinstance(rois, (list, tuple)) or len(rois) % cols:
        raise ShapeError(f"{spec.name}: rois must be a flat list of {cols} numbers per RoI")
    return np.asarray(rois, dtype=np.float64).reshape(-1, cols)


def _roi_box(rng: np.random.Generator, size: int, scale: float) -> tuple[float, float]:
    """A start <= end inside [0, size - 1] pixels, as RoI coordinates (pixels / scale) on a 1/4 grid."""
    if size < 1:
        raise ShapeError("a RoI needs at least one pixel per spatial dim")
    a, b = sorted(float(v) for v in rng.integers(0, 4 * (size - 1) + 1, size=2) / 4)
    return a / scale, b / scale


class RoiAlign(SpatialOp):
    """RoiAlign (opset 16+). Input X (N, C, H, W); attrs: rois (flat x1, y1, x2, y2 per RoI) and
    batch_indices (the ONNX inputs), mode, output_height, output_width, sampling_ratio,
    spatial_scale, coordinate_transformation_mode. Max mode is ONNX's (and ORT's): the largest
    weighted corner of any sample; the largest interpolated sample is its other reading (other_reading)."""
    contracts = True

    name = "roi_align"
    n_inputs = 1
    onnx_ops = ("RoiAlign",)
    ranks = (4,)

    def parse(self, t: TensorType, attrs: Attrs) -> tuple[np.ndarray, list[int]]:
        rois = _rois(self, attrs, 4)
        batch = attrs.get("batch_indices")
        if not isinstance(batch, (list, tuple)) or len(batch) != len(rois):
            raise ShapeError(f"{self.name}: one batch index per RoI")
        if any(not 0 <= b < t.shape[0] for b in batch):
            raise ShapeError(f"{self.name}: batch indices {list(batch)} outside [0, {t.shape[0]})")
        _one_of(self, attrs, "mode", ROI_MODES, "avg")
        _one_of(self, attrs, "coordinate_transformation_mode", ROI_TRANSFORMS, "half_pixel")
        if min(attrs.get("output_height", 1), attrs.get("output_width", 1)) < 1 or attrs.get("sampling_ratio", 0) < 0:
            raise ShapeError(f"{self.name}: output sizes must be positive and sampling_ratio non-negative")
        if not np.isfinite(rois).all():
            raise ShapeError(f"{self.name}: rois must be finite")
        return rois, [int(b) for b in batch]

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects X")
        x = ins[0]
        require_dtype(self, x)
        require_rank(self, x, [4])
        rois, _ = self.parse(x, attrs)
        return [x.with_shape((len(rois), x.shape[1], attrs.get("output_height", 1), attrs.get("output_width", 1)))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [4])
        n, _, h, w = first.shape
        if n == 0:
            raise ShapeError(f"{self.name}: no batch to take RoIs from")
        scale = float(rng.choice([1.0, 0.5, 0.25, 2.0]))
        rois: list[float] = []
        for _ in range(int(rng.integers(1, 4))):
            x1, x2 = _roi_box(rng, w, scale)
            y1, y2 = _roi_box(rng, h, scale)
            rois += [x1, y1, x2, y2]
        attrs = {"rois": rois, "batch_indices": [int(b) for b in rng.integers(0, n, size=len(rois) // 4)],
                 "mode": str(rng.choice(ROI_MODES)), "output_height": int(rng.integers(1, 4)),
                 "output_width": int(rng.integers(1, 4)), "sampling_ratio": int(rng.choice([0, 0, 1, 2])),
                 "spatial_scale": scale, "coordinate_transformation_mode": str(rng.choice(ROI_TRANSFORMS))}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def plan(self, t: TensorType, attrs: Attrs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows, weights, valid, count): rows (R, PH, PW, S, 4) index X as (N * H * W, C) rows, each
        sample's four corners with their weights (R, PH, PW, S, 4); valid (R, PH, PW, S) marks real
        samples (RoIs have S or fewer); count (R, 1, 1) is the average's divisor. A sample outside
        the image reads row 0 with weight 0, as ONNX's reference and ORT do."""
        rois, batch = self.parse(t, attrs)
        _, _, h, w = t.shape
        ph_n, pw_n = attrs.get("output_height", 1), attrs.get("output_width", 1)
        ratio = attrs.get("sampling_ratio", 0)
        scale = float(attrs.get("spatial_scale", 1.0))
        half = attrs.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"
        per_roi = []
        for (x1, y1, x2, y2), b in zip(rois, batch):
            off = 0.5 if half else 0.0
            sw, sh, ew, eh = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
            rw, rh = ew - sw, eh - sh
            if not half:  # malformed RoIs become 1x1
                rw, rh = max(rw, 1.0), max(rh, 1.0)
            bh, bw = rh / ph_n, rw / pw_n
            gh = ratio if ratio > 0 else int(np.ceil(rh / ph_n))
            gw = ratio if ratio > 0 else int(np.ceil(rw / pw_n))
            gh, gw = max(gh, 0), max(gw, 0)
            ys = sh + np.arange(ph_n)[:, None] * bh + (np.arange(gh)[None, :] + 0.5) * bh / max(gh, 1)  # (PH, gh)
            xs = sw + np.arange(pw_n)[:, None] * bw + (np.arange(gw)[None, :] + 0.5) * bw / max(gw, 1)  # (PW, gw)
            yy = np.broadcast_to(ys[:, None, :, None], (ph_n, pw_n, gh, gw)).reshape(ph_n, pw_n, -1)
            xx = np.broadcast_to(xs[None, :, None, :], (ph_n, pw_n, gh, gw)).reshape(ph_n, pw_n, -1)
            per_roi.append((b, yy, xx, max(gh * gw, 1)))
        s_max = max([yy.shape[-1] for _, yy, _, _ in per_roi] + [1])
        r_n = len(per_roi)
        rows = np.zeros((r_n, ph_n, pw_n, s_max, 4), np.int64)
        weights = np.zeros((r_n, ph_n, pw_n, s_max, 4))
        valid = np.zeros((r_n, ph_n, pw_n, s_max), bool)
        count = np.ones((r_n, 1, 1))
        for r, (b, yy, xx, cnt) in enumerate(per_roi):
            k = yy.shape[-1]
            count[r] = cnt
            valid[r, :, :, :k] = True
            if k == 0:
                continue
            inside = ~((yy < -1.0) | (yy > h) | (xx < -1.0) | (xx > w))
            y, x = np.maximum(yy, 0.0), np.maximum(xx, 0.0)
            y_lo, x_lo = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
            y_top, x_top = y_lo >= h - 1, x_lo >= w - 1
            y_lo, x_lo = np.where(y_top, h - 1, y_lo), np.where(x_top, w - 1, x_lo)
            y, x = np.where(y_top, y_lo, y), np.where(x_top, x_lo, x)
            y_hi, x_hi = np.where(y_top, y_lo, y_lo + 1), np.where(x_top, x_lo, x_lo + 1)
            ly, lx = y - y_lo, x - x_lo
            hy, hx = 1 - ly, 1 - lx
            corner_rows = [(y_lo, x_lo), (y_lo, x_hi), (y_hi, x_lo), (y_hi, x_hi)]
            corner_w = [hy * hx, hy * lx, ly * hx, ly * lx]
            for j, ((cy, cx), cw) in enumerate(zip(corner_rows, corner_w)):
                rows[r, :, :, :k, j] = np.where(inside, (b * h + cy) * w + cx, 0)
                weights[r, :, :, :k, j] = np.where(inside, cw, 0.0)
        return rows, weights, valid, count

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # sample positions round at the image size's magnitude; a position error moves a sample by
        # up to the differences of the values around it
        x = _acc(xs[0])
        biggest = float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0))
        return np.abs(y) + biggest * (2.0 + 2.0 * (x.shape[2] + x.shape[3]) * max(1.0, attrs.get("spatial_scale", 1.0)))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return self._pooled(xs, attrs, interpolate_first=False)

    def other_reading(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray] | None:
        """Max mode: ONNX gives no formula, and its reference and onnxruntime take the largest weighted corner
        (onnxruntime warns that this is wrong), while OpenVINO (openvinotoolkit/openvino#7710) and onnxruntime's
        ORT_ROIALIGN_MAX_USE_BILINEAR_INTERPOLATION take the largest bilinear sample: either is correct."""
        return self._pooled(xs, attrs, interpolate_first=True) if attrs.get("mode", "avg") == "max" else None

    def _pooled(self, xs: Sequence[np.ndarray], attrs: Attrs, interpolate_first: bool) -> list[np.ndarray]:
        x = _acc(xs[0])
        t = TensorType.of(xs[0])
        out_t = self.infer([t], attrs)[0]
        rows, weights, valid, count = self.plan(t, attrs)
        table = x.transpose(0, 2, 3, 1).reshape(x.shape[0] * x.shape[2] * x.shape[3], x.shape[1])  # (N * H * W, C)
        if out_t.size == 0 or table.shape[0] == 0:
            return [np.zeros(out_t.shape, xs[0].dtype)]
        terms = table[rows] * weights[..., None]  # (R, PH, PW, S, 4, C)
        if attrs.get("mode", "avg") == "avg":
            y = np.where(valid[..., None], terms.sum(axis=4), 0.0).sum(axis=3) / count[..., None]
        else:
            samples = terms.sum(axis=4) if interpolate_first else terms.max(axis=4)  # (R, PH, PW, S, C)
            best = np.where(valid[..., None], samples, -np.inf).max(axis=3)
            y = np.where(valid.any(axis=3)[..., None], best, 0.0)
        return [y.transpose(0, 3, 1, 2).astype(xs[0].dtype)]


# ---- max_roi_pool --------------------------------------------------------------------


def _round_half_away(v: float) -> int:
    return int(np.floor(v + 0.5)) if v >= 0 else int(np.ceil(v - 0.5))


class MaxRoiPool(SpatialOp):
    """MaxRoiPool. Input X (N, C, H, W); attrs: rois (flat batch_index, x1, y1, x2, y2 per RoI: the
    ONNX input), pooled_shape, spatial_scale. ONNX documents no arithmetic: this is ORT's (Caffe's
    RoIPool): RoI corners rounded half away from zero, bins of (rounded extent + 1) / pooled cells
    computed in float32, floor/ceil bin edges, an empty bin is 0."""
    contracts = True

    name = "max_roi_pool"
    n_inputs = 1
    onnx_ops = ("MaxRoiPool",)
    ranks = (4,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects X")
        x = ins[0]
        require_dtype(self, x)
        require_rank(self, x, [4])
        rois = _rois(self, attrs, 5)
        pooled = _list(attrs.get("pooled_shape"), 2, "pooled_shape", self)
        if min(pooled) < 1:
            raise ShapeError(f"{self.name}: pooled_shape {pooled} must be positive")
        if not np.isfinite(rois).all() or any(b != int(b) or not 0 <= b < x.shape[0] for b in rois[:, 0]):
            raise ShapeError(f"{self.name}: each RoI needs a batch index in [0, {x.shape[0]})")
        return [x.with_shape((len(rois), x.shape[1], *pooled))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [4])
        n, _, h, w = first.shape
        if n == 0 or h == 0 or w == 0:
            raise ShapeError(f"{self.name}: no batch or no pixels to take RoIs from")
        scale = float(rng.choice([1.0, 0.5, 0.25]))
        # the RoIs reach the operator as a tensor of X's dtype (ONNX's input `rois`): batch indices and
        # coordinates stay integers that dtype holds exactly (float16: up to 2048), else a long batch or image
        # would have them rounded (a float16 batch index 2749 is 2748)
        exact = 2 ** (np.finfo(first.np_dtype).nmant + 1)
        rois: list[float] = []
        extents = []
        for _ in range(int(rng.integers(1, 4))):
            # whole pixels after scaling (no rounding ties), and both orders: a reversed RoI is 1x1
            x1, x2 = (int(v) for v in rng.integers(0, min(w, int(exact * scale)), size=2))
            y1, y2 = (int(v) for v in rng.integers(0, min(h, int(exact * scale)), size=2))
            if rng.random() < 0.8:
                x1, x2, y1, y2 = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
            rois += [float(rng.integers(0, min(n, exact))), x1 / scale, y1 / scale, x2 / scale, y2 / scale]
            extents.append((max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)))
        # cell counts whose bin edges are exact in float32: powers of two, or divisors of the extents
        pooled = []
        for dim in range(2):
            fits = [p for p in (1, 2, 3, 4) if p in (1, 2, 4) or all(e[dim] % p == 0 for e in extents)]
            pooled.append(int(rng.choice(fits)))
        attrs = {"rois": rois, "pooled_shape": pooled, "spatial_scale": scale}
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def plan(self, t: TensorType, attrs: Attrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(batch (R,), mask (R, PH * PW, H * W): the pixels of each bin, empty (R, PH * PW))."""
        self.infer([t], attrs)
        rois = _rois(self, attrs, 5)
        ph_n, pw_n = attrs["pooled_shape"]
        scale = np.float32(attrs.get("spatial_scale", 1.0))
        _, _, h, w = t.shape
        mask = np.zeros((len(rois), ph_n * pw_n, h * w), bool)
        for r, (_, x1, y1, x2, y2) in enumerate(rois):
            sw, sh, ew, eh = (_round_half_away(float(np.float32(v) * scale)) for v in (x1, y1, x2, y2))
            rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
            bh, bw = np.float32(rh) / np.float32(ph_n), np.float32(rw) / np.float32(pw_n)
            for ph in range(ph_n):
                hs = min(max(int(np.floor(np.float32(ph) * bh)) + sh, 0), h)
                he = min(max(int(np.ceil(np.float32(ph + 1) * bh)) + sh, 0), h)
                for pw in range(pw_n):
                    ws = min(max(int(np.floor(np.float32(pw) * bw)) + sw, 0), w)
                    we = min(max(int(np.ceil(np.float32(pw + 1) * bw)) + sw, 0), w)
                    cell = np.zeros((h, w), bool)
                    cell[hs:he, ws:we] = True
                    mask[r, ph * pw_n + pw] = cell.reshape(-1)
        return rois[:, 0].astype(np.int64), mask, ~mask.any(axis=2)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        t = TensorType.of(xs[0])
        out_t = self.infer([t], attrs)[0]
        batch, mask, empty = self.plan(t, attrs)
        picked = x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3])[batch]  # (R, C, H * W)
        best = np.where(mask[:, None], picked[:, :, None, :], -np.inf).max(axis=3, initial=-np.inf)
        y = np.where(empty[:, None], 0.0, best)
        return [y.reshape(out_t.shape).astype(xs[0].dtype)]


# ---- max_unpool ----------------------------------------------------------------------


class MaxUnpool(SpatialOp):
    """MaxUnpool. Input X (N, C, D1..Dr); attrs: kernel, strides, pads, indices (the ONNX input I, flat
    positions in the unpooled tensor of the inferred shape, one per element of X), optional
    output_shape (the ONNX input, the whole shape): the inferred result is placed at its start, as
    in ONNX's reference. Indices must be distinct (duplicates leave the result undefined)."""

    name = "max_unpool"
    n_inputs = 1
    onnx_ops = ("MaxUnpool",)
    ranks = (3, 4, 5)

    def geometry(self, t: TensorType, attrs: Attrs) -> tuple[list[int], list[int], list[int], tuple[int, ...], tuple[int, ...]]:
        """(kernel, strides, pads, inferred shape, output shape)."""
        if t.rank < 3:
            raise ShapeError(f"{self.name}: X must be (N, C, D1, ...)")
        nd = t.rank - 2
        k = _list(attrs.get("kernel"), nd, "kernel", self)
        s = _list(attrs.get("strides"), nd, "strides", self)
        p = _list(attrs.get("pads"), 2 * nd, "pads", self)
        if min(k + s) < 1 or min(p) < 0:
            raise ShapeError(f"{self.name}: kernel and strides must be positive, pads non-negative")
        inferred = t.shape[:2] + tuple((t.shape[2 + i] - 1) * s[i] - p[i] - p[nd + i] + k[i] for i in range(nd))
        if min(inferred[2:]) < 1:
            raise ShapeError(f"{self.name}: pads leave no output")
        out = attrs.get("output_shape")
        if out is None:
            return k, s, p, inferred, inferred
        out = tuple(_list(out, t.rank, "output_shape", self))
        if out[:2] != t.shape[:2] or any(o < i for o, i in zip(out[2:], inferred[2:])):
            raise ShapeError(f"{self.name}: output_shape {out} smaller than {inferred} or of other N, C")
        return k, s, p, inferred, out

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects X")
        x = ins[0]
        require_dtype(self, x)
        _, _, _, inferred, out = self.geometry(x, attrs)
        idx = attrs.get("indices")
        if not isinstance(idx, (list, tuple)) or len(idx) != x.size:
            raise ShapeError(f"{self.name}: one index per element of X")
        total = int(np.prod(inferred))
        if idx and (min(idx) < 0 or max(idx) >= total):
            raise ShapeError(f"{self.name}: indices outside [0, {total})")
        if len(set(idx)) != len(idx):
            raise ShapeError(f"{self.name}: duplicate indices (which value lands there is undefined)")
        return [x.with_shape(out)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank not in self.ranks:
            raise ShapeError(f"{self.name}: rank {first.rank}")
        if first.size > MAX_ELEMENTS:  # its indices are an attribute, one per element, placed in Python
            raise ShapeError(f"{self.name}: {first.size} elements, each an index attribute, exceed {MAX_ELEMENTS}")
        nd = first.rank - 2
        k = [int(rng.integers(1, 4)) for _ in range(nd)]
        s = [int(rng.choice([k[i], k[i], 1, 2])) for i in range(nd)]
        p = [int(rng.integers(0, k[i % nd])) if rng.random() < 0.3 else 0 for i in range(2 * nd)]
        attrs: Attrs = {"kernel": k, "strides": s, "pads": p, "indices": [0] * first.size}
        _, _, _, inferred, _ = self.geometry(first, attrs)
        check_size(self, inferred)
        # each element's index: a distinct position of its pooling window (the one MaxPool chose);
        # random picks, else (overlapping windows may run out) the first free one of each window
        plane = int(np.prod(inferred[2:]))
        windows = []
        for pos in itertools.product(*[range(d) for d in first.shape]):
            ranges = [range(max(pos[2 + i] * s[i] - p[i], 0), min(pos[2 + i] * s[i] - p[i] + k[i], inferred[2 + i]))
                      for i in range(nd)]
            base = (pos[0] * first.shape[1] + pos[1]) * plane
            windows.append([base + int(np.ravel_multi_index(w, inferred[2:])) for w in itertools.product(*ranges)])
        for pick_first in (False, True):
            used: set[int] = set()
            indices: list[int] = []
            for window in windows:
                free = [f for f in window if f not in used]
                if not free:
                    break
                indices.append(free[0] if pick_first else int(rng.choice(free)))
                used.add(indices[-1])
            if len(indices) == len(windows):
                break
        else:
            raise ShapeError(f"{self.name}: overlapping windows leave no distinct position")
        attrs["indices"] = indices
        if rng.random() < 0.3:
            # a larger output where ONNX's reference and ORT place indices alike: one plane, growing
            # in its first dim (elsewhere the reference indexes the inferred shape, ORT the given one)
            grow = int(rng.integers(0, 3)) if first.shape[0] * first.shape[1] == 1 else 0
            attrs["output_shape"] = [*inferred[:2], inferred[2] + grow, *inferred[3:]]
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def sources(self, t: TensorType, attrs: Attrs) -> np.ndarray:
        """For each output element (flat), the flat position of X it takes, or X's size (a zero)."""
        _, _, _, inferred, out = self.geometry(t, attrs)
        placed = np.full(int(np.prod(inferred)), t.size, np.int64)
        placed[np.asarray(attrs["indices"], dtype=np.int64)] = np.arange(t.size)
        src = np.full(out, t.size, np.int64)
        src[tuple(slice(0, i) for i in inferred)] = placed.reshape(inferred)
        return src.reshape(-1)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        out = self.infer([TensorType.of(x)], attrs)[0]
        flat = np.concatenate([x.reshape(-1), np.zeros(1, x.dtype)])
        return [flat[self.sources(TensorType.of(x), attrs)].reshape(out.shape)]


# ---- deform_conv ---------------------------------------------------------------------


class DeformConv(SpatialOp):
    """DeformConv (opset 19), 2-D. Inputs: X (N, C, H, W), W (M, C / group, kH, kW), offset (N,
    offset_group * kH * kW * 2, oH, oW; (dy, dx) per kernel element), then B (M) when attrs["bias"]
    and mask (N, offset_group * kH * kW, oH, oW) when attrs["mask"]; attrs: strides, pads,
    dilations, group, offset_group. Each kernel element reads X bilinearly at its offset position,
    a corner outside the image reading 0."""
    contracts = True

    name = "deform_conv"
    n_inputs = -1
    onnx_ops = ("DeformConv",)
    ranks = (4,)

    def geometry(self, ins: Sequence[TensorType], attrs: Attrs) -> tuple[list[int], list[int], list[int], list[int], int, int]:
        """(kernel, strides, dilations, pads, group, offset_group); checks every input's shape."""
        bias, mask = _flag(self, attrs, "bias"), _flag(self, attrs, "mask")
        if len(ins) != 3 + bias + mask:
            raise ShapeError(f"{self.name}: expects X, W, offset{', B' * bias}{', mask' * mask}")
        x, w, off = ins[:3]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        require_rank(self, x, [4])
        require_rank(self, w, [4])
        s = _list(attrs.get("strides"), 2, "strides", self)
        d = _list(attrs.get("dilations"), 2, "dilations", self)
        p = _list(attrs.get("pads"), 4, "pads", self)
        g, og = int(attrs.get("group", 1)), int(attrs.get("offset_group", 1))
        n, c = x.shape[:2]
        m = w.shape[0]
        if g < 1 or og < 1 or c % g or m % g or c % og or w.shape[1] * g != c:
            raise ShapeError(f"{self.name}: groups {g}/{og} do not fit channels {c} -> {m} (W {w.shape})")
        k = list(w.shape[2:])
        out = [_window_out(self, x.shape[2 + i], k[i], s[i], d[i], p[i], p[2 + i]) for i in range(2)]
        taps = og * k[0] * k[1]
        if off.shape != (n, 2 * taps, *out):
            raise ShapeError(f"{self.name}: offset {off.shape} != {(n, 2 * taps, *out)}")
        if bias and ins[3].shape != (m,):
            raise ShapeError(f"{self.name}: bias {ins[3].shape} != ({m},)")
        if mask and ins[-1].shape != (n, taps, *out):
            raise ShapeError(f"{self.name}: mask {ins[-1].shape} != {(n, taps, *out)}")
        return k, s, d, p, g, og

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        self.geometry(ins, attrs)
        x, w, off = ins[:3]
        return [x.with_shape((x.shape[0], w.shape[0], *off.shape[2:]))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [4])
        n, c, h, w = first.shape
        if c == 0:  # groups divide the channels
            raise ShapeError(f"{self.name}: no channels in {first.shape}")
        g = int(rng.choice([v for v in (1, 2, c) if c % v == 0]))
        og = int(rng.choice([v for v in (1, 2, c) if c % v == 0]))
        m = g * int(rng.integers(1, 3))
        k = [int(rng.integers(1, 4)) for _ in range(2)]
        s = [int(rng.choice([1, 1, 2])) for _ in range(2)]
        d = [int(rng.choice([1, 1, 2])) for _ in range(2)]
        p = [int(rng.integers(0, 2)) for _ in range(4)]
        for i, size in enumerate((h, w)):
            while d[i] * (k[i] - 1) + 1 > size + p[i] + p[2 + i] and (k[i] > 1 or d[i] > 1):
                d[i], k[i] = (1, k[i]) if d[i] > 1 else (1, k[i] - 1)
        out = [_window_out(self, (h, w)[i], k[i], s[i], d[i], p[i], p[2 + i]) for i in range(2)]
        taps = og * k[0] * k[1]
        attrs: Attrs = {"strides": s, "dilations": d, "pads": p, "group": g, "offset_group": og,
                        "bias": int(rng.random() < 0.5), "mask": int(rng.random() < 0.5)}
        ins = [first, TensorType(first.dtype, (m, c // g, *k)), TensorType(first.dtype, (n, 2 * taps, *out))]
        if attrs["bias"]:
            ins.append(TensorType(first.dtype, (m,)))
        if attrs["mask"]:
            ins.append(TensorType(first.dtype, (n, taps, *out)))
        check_size(self, self.infer(ins, attrs)[0].shape)
        for t in ins:
            check_size(self, t.shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return [ANY, PARAM, OFFSETS, PARAM, PARAM][index]

    def columns(self, xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        """The sampled (and masked) inputs, (N, C, kH, kW, oH, oW)."""
        x, off = _acc(xs[0]), _acc(xs[2])
        k, s, d, p, g, og = self.geometry([TensorType.of(a) for a in xs], attrs)
        n, c, h, w = x.shape
        oh, ow = off.shape[2:]
        off = off.reshape(n, og, k[0], k[1], 2, oh, ow)
        base_y = (np.arange(oh) * s[0] - p[0])[None, :] + (np.arange(k[0]) * d[0])[:, None]  # (kH, oH)
        base_x = (np.arange(ow) * s[1] - p[1])[None, :] + (np.arange(k[1]) * d[1])[:, None]  # (kW, oW)
        py = base_y[None, None, :, None, :, None] + off[:, :, :, :, 0]  # (N, og, kH, kW, oH, oW)
        px = base_x[None, None, None, :, None, :] + off[:, :, :, :, 1]
        y0, x0 = np.floor(py), np.floor(px)
        ly, lx = py - y0, px - x0
        planes = x.reshape(n, og, c // og, h * w)
        cols = np.zeros((n, og, c // og, k[0], k[1], oh, ow))
        for cy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
            for cx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
                ok = (cy >= 0) & (cy < h) & (cx >= 0) & (cx < w)
                flat = np.where(ok, np.clip(cy, 0, h - 1) * w + np.clip(cx, 0, w - 1), 0).astype(np.int64)
                if h * w == 0:  # an empty image: every sample lies outside it
                    continue
                vals = np.take_along_axis(planes, flat.reshape(n, og, 1, k[0] * k[1] * oh * ow), axis=3)
                vals = vals.reshape(cols.shape)
                cols += np.where(ok, wy * wx, 0.0)[:, :, None] * np.where(ok[:, :, None], vals, 0.0)
        if attrs.get("mask", 0):
            cols = cols * _acc(xs[-1]).reshape(n, og, 1, k[0], k[1], oh, ow)
        return cols.reshape(n, c, k[0], k[1], oh, ow)

    def _conv(self, cols: np.ndarray, w: np.ndarray, g: int) -> np.ndarray:
        n, c = cols.shape[:2]
        m = w.shape[0]
        cg, mg = c // g, m // g
        return np.concatenate([np.einsum("nckloq,mckl->nmoq", cols[:, gi * cg:(gi + 1) * cg], w[gi * mg:(gi + 1) * mg])
                               for gi in range(g)], axis=1)

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # a sum of products (a conv's scale) whose sample positions round at the image size plus the
        # offsets' magnitude: a position error moves a sample by up to twice the largest input
        x, w, off = _acc(xs[0]), _acc(xs[1]), _acc(xs[2])
        n, c, h, wd = x.shape
        k, s, d, p, g, og = self.geometry([TensorType.of(a) for a in xs], attrs)
        biggest = float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0))
        mask = np.abs(_acc(xs[-1])).reshape(n, og, 1, k[0], k[1], *off.shape[2:]) if attrs.get("mask", 0) else \
            np.ones((n, og, 1, k[0], k[1], *off.shape[2:]))
        cols = np.broadcast_to(mask * biggest, (n, og, c // og, k[0], k[1], *off.shape[2:])).reshape(n, c, k[0], k[1], *off.shape[2:])
        reach = float(np.max(np.abs(off[np.isfinite(off)]), initial=0.0)) + h + wd
        y_mag = self._conv(cols, np.abs(w), g) * (1.0 + 2.0 * reach)
        if attrs.get("bias", 0):
            y_mag = y_mag + np.abs(_acc(xs[3])).reshape(1, -1, 1, 1)
        return y_mag + np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        g = int(attrs.get("group", 1))
        y = self._conv(self.columns(xs, attrs), _acc(xs[1]), g)
        if attrs.get("bias", 0):
            y = y + _acc(xs[3]).reshape(1, -1, 1, 1)
        return [y.astype(xs[0].dtype)]


for _spec in [GridSample(), AffineGrid(), Col2Im(), RoiAlign(), MaxRoiPool(), MaxUnpool(), DeformConv()]:
    register(_spec)
