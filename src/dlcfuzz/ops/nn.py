"""Neural-network operators: convolutions, pools, matmul/gemm, normalizations, softmax, dropout.

References accumulate in float64 (float16 and float32 inputs alike) and round once at the end;
compilers accumulate in float32, which stays inside the per-dtype tolerance for the small
tensors dlcfuzz generates.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops.base import (
    ANY,
    Attrs,
    Domain,
    OpSpec,
    ValueAttr,
    broadcast_shapes,
    check_size,
    float_attr,
    magnitude_of_terms,
    norm_axis,
    register,
    require_dtype,
    require_rank,
    require_same_dtype,
    summed_roundings,
)

PARAM = Domain(-1.0, 1.0)  # weights and affine parameters: inputs or constants, small for float16 sums
# a normalization's epsilon in edge tests: at least the smallest generated (1e-5: below it near-constant rows
# normalize rounding noise), at most half the largest float (var + epsilon stays finite in the input's dtype)
EPSILON_RANGE = Domain(lo=1e-5, terms=2)


def epsilon_attr(ins: Sequence[TensorType]) -> dict[str, ValueAttr]:
    """A normalization's value attribute (OpSpec.value_attrs): its epsilon."""
    return {"epsilon": float_attr(ins[0], EPSILON_RANGE)}
VARIANCE = Domain(0.5, 2.0, strict=True)  # var + epsilon must be positive: only sampled constants


def _f32(v: float) -> float:
    """A float32-exact attribute value with 4 significant digits (not 4 decimals: 1e-5 must not become
    an epsilon of 0, which made normalizations of near-constant rows 0/0)."""
    return float(np.float32(float(f"{v:.4g}")))


def _window_out(spec: OpSpec, size: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    eff = d * (k - 1) + 1
    span = size + pb + pe - eff
    if k < 1 or s < 1 or d < 1 or pb < 0 or pe < 0:
        raise ShapeError(f"{spec.name}: kernel/stride/dilation must be positive and pads non-negative")
    if span < 0:
        raise ShapeError(f"{spec.name}: window {eff} larger than padded input {size + pb + pe}")
    return span // s + 1


def _list(v: Any, n: int, name: str, spec: OpSpec) -> list[int]:
    if not isinstance(v, (list, tuple)) or len(v) != n:
        raise ShapeError(f"{spec.name}: {name} must have {n} entries, got {v!r}")
    return [int(x) for x in v]


def _sample_window(rng: np.random.Generator, spatial: Sequence[int], max_k: int = 3) -> Attrs:
    """Kernel, stride, dilation and pads that fit `spatial` (raises ShapeError when nothing fits)."""
    ks, ss, ds, pads_b, pads_e = [], [], [], [], []
    for size in spatial:
        d = int(rng.choice([1, 1, 2]))
        k = int(rng.integers(1, max_k + 1))
        pb, pe = (int(rng.integers(0, k)), int(rng.integers(0, k))) if rng.random() < 0.5 else (0, 0)
        while d * (k - 1) + 1 > size + pb + pe and (k > 1 or d > 1):
            if d > 1:
                d = 1
            else:
                k -= 1
        ks.append(k)
        ss.append(int(rng.choice([1, 1, 2])))
        ds.append(d)
        pads_b.append(pb)
        pads_e.append(pe)
    return {"kernel": ks, "strides": ss, "dilations": ds, "pads": pads_b + pads_e}


def _windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
             out: Sequence[int]) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """(kernel offset, strided view of x) for each kernel offset; x is already padded, spatial dims last."""
    nd = len(kernel)
    views = []
    for off in itertools.product(*[range(k) for k in kernel]):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(off, dilations, strides, out))
        views.append((off, x[(Ellipsis,) + sl] if nd else x))
    return views


def _pad_spatial(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    nd = len(pads) // 2
    width = [(0, 0)] * (x.ndim - nd) + list(zip(pads[:nd], pads[nd:]))
    return np.pad(x, width, constant_values=value)


def _acc(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)


def _normalized(x: np.ndarray, axes: tuple[int, ...], epsilon: float, dtype: np.dtype) -> np.ndarray:
    """(x - mean) / sqrt(var + epsilon) over `axes`, NaN where the squared deviations overflow `dtype`
    (float32 at least: ONNX's normalizations compute them in their stash type, float32 by default).
    There a compiler's result is implementation-defined (inf/NaN, or exact with wider accumulation),
    so the reference is non-finite and the output is not compared."""
    mean = x.mean(axis=axes, keepdims=True)
    dd = (x - mean) ** 2
    limit = np.finfo(np.float32 if np.dtype(dtype).itemsize <= 4 else dtype).max
    overflow = np.any(dd > limit, axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(dd.mean(axis=axes, keepdims=True) + epsilon)
    return np.where(overflow, np.nan, y)


# ---- convolution ---------------------------------------------------------------------


class ConvOp(OpSpec):
    contracts = True
    family = "nn"
    n_inputs = -1  # x, w, optional bias
    dtypes = FLOATS
    onnx_ops = ("Conv",)

    def __init__(self, name: str, spatial: int) -> None:
        self.name = name
        self.spatial = spatial
        self.ranks = (spatial + 2,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) not in (2, 3):
            raise ShapeError(f"{self.name}: expects 2 or 3 inputs, got {len(ins)}")
        x, w = ins[0], ins[1]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        require_rank(self, x, [self.spatial + 2])
        require_rank(self, w, [self.spatial + 2])
        g = int(attrs.get("group", 1))
        n, c = x.shape[:2]
        m = w.shape[0]
        if g < 1 or c % g or m % g:
            raise ShapeError(f"{self.name}: group {g} must divide input channels {c} and output channels {m}")
        if w.shape[1] * g != c:
            raise ShapeError(f"{self.name}: weight expects {w.shape[1] * g} input channels, input has {c}")
        if len(ins) == 3 and ins[2].shape != (m,):
            raise ShapeError(f"{self.name}: bias shape {ins[2].shape} != ({m},)")
        nd = self.spatial
        s = _list(attrs.get("strides"), nd, "strides", self)
        d = _list(attrs.get("dilations"), nd, "dilations", self)
        p = _list(attrs.get("pads"), 2 * nd, "pads", self)
        out = [_window_out(self, x.shape[2 + i], w.shape[2 + i], s[i], d[i], p[i], p[nd + i]) for i in range(nd)]
        return [TensorType(x.dtype, (n, m, *out))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [self.spatial + 2])
        c = first.shape[1]
        if c == 0:
            raise ShapeError(f"{self.name}: no channels to group")
        g = int(rng.choice([d for d in (1, 2, 3, c) if c % d == 0]))
        m = g * int(rng.integers(1, 4))
        win = _sample_window(rng, first.shape[2:])
        attrs = {"strides": win["strides"], "dilations": win["dilations"], "pads": win["pads"], "group": g}
        ins = [first, TensorType(first.dtype, (m, c // g, *win["kernel"]))]
        if rng.random() < 0.6:
            ins.append(TensorType(first.dtype, (m,)))
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index >= 1 else ANY

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, w = _acc(xs[0]), _acc(xs[1])
        g = attrs["group"]
        xp = _pad_spatial(x, attrs["pads"])
        out_t = self.infer([TensorType.of(a) for a in xs], attrs)[0]
        out = np.zeros(out_t.shape, dtype=x.dtype)
        cg, mg = x.shape[1] // g, w.shape[0] // g
        for off, view in _windows(xp, w.shape[2:], attrs["strides"], attrs["dilations"], out_t.shape[2:]):
            for gi in range(g):
                wk = w[(slice(gi * mg, (gi + 1) * mg), slice(None)) + off]  # [mg, cg]
                out[:, gi * mg:(gi + 1) * mg] += np.einsum("nc...,mc->nm...", view[:, gi * cg:(gi + 1) * cg], wk)
        if len(xs) == 3:
            out += _acc(xs[2]).reshape((1, -1) + (1,) * self.spatial)
        return [out.astype(xs[0].dtype)]


class ConvTranspose2dOp(OpSpec):
    contracts = True
    name = "conv_transpose2d"
    family = "nn"
    n_inputs = -1
    dtypes = FLOATS
    onnx_ops = ("ConvTranspose",)
    ranks = (4,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) not in (2, 3):
            raise ShapeError(f"{self.name}: expects 2 or 3 inputs, got {len(ins)}")
        x, w = ins[0], ins[1]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        require_rank(self, x, [4])
        require_rank(self, w, [4])
        g = int(attrs.get("group", 1))
        if g < 1 or x.shape[1] % g or w.shape[0] != x.shape[1]:
            raise ShapeError(f"{self.name}: weight {w.shape} does not match input channels {x.shape[1]} (group {g})")
        m = w.shape[1] * g
        if len(ins) == 3 and ins[2].shape != (m,):
            raise ShapeError(f"{self.name}: bias shape {ins[2].shape} != ({m},)")
        s = _list(attrs.get("strides"), 2, "strides", self)
        d = _list(attrs.get("dilations"), 2, "dilations", self)
        p = _list(attrs.get("pads"), 4, "pads", self)
        op = _list(attrs.get("output_padding", [0, 0]), 2, "output_padding", self)
        out = []
        for i in range(2):
            if min(s[i], d[i]) < 1 or min(p[i], p[2 + i]) < 0:
                raise ShapeError(f"{self.name}: strides/dilations must be positive and pads non-negative")
            if not 0 <= op[i] < s[i]:  # ONNX reference, ORT and TVM all require output_padding < stride
                raise ShapeError(f"{self.name}: output_padding {op[i]} must be in [0, stride {s[i]})")
            o = s[i] * (x.shape[2 + i] - 1) + op[i] + d[i] * (w.shape[2 + i] - 1) + 1 - p[i] - p[2 + i]
            if o < 1:
                raise ShapeError(f"{self.name}: pads {p[i]}+{p[2 + i]} leave no output in spatial dim {i}")
            out.append(o)
        return [TensorType(x.dtype, (x.shape[0], m, *out))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [4])
        c = first.shape[1]
        if c == 0:
            raise ShapeError(f"{self.name}: no channels to group")
        if 0 in first.shape[2:]:  # ONNX's output size formula assumes at least one input position
            raise ShapeError(f"{self.name}: empty spatial extent {first.shape[2:]}")
        g = int(rng.choice([d for d in (1, 2, c) if c % d == 0]))
        k = [int(rng.integers(1, 4)) for _ in range(2)]
        d = [int(rng.choice([1, 1, 2])) for _ in range(2)]
        pads = [int(rng.integers(0, d[i % 2] * (k[i % 2] - 1) + 1)) if rng.random() < 0.4 else 0 for i in range(4)]
        st = [int(rng.choice([1, 2])) for _ in range(2)]
        outpad = [int(rng.integers(0, st[i])) if rng.random() < 0.4 else 0 for i in range(2)]
        attrs = {"strides": st, "dilations": d, "pads": pads, "output_padding": outpad, "group": g}
        ins = [first, TensorType(first.dtype, (c, int(rng.integers(1, 3)), *k))]
        if rng.random() < 0.5:
            ins.append(TensorType(first.dtype, (ins[1].shape[1] * g,)))
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index >= 1 else ANY

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, w = _acc(xs[0]), _acc(xs[1])
        g, s, d, p = attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"]
        n, c, h, wd = x.shape
        mg = w.shape[1]
        full = [s[i] * (x.shape[2 + i] - 1) + d[i] * (w.shape[2 + i] - 1) + 1 for i in range(2)]
        out = np.zeros((n, mg * g, *full), dtype=x.dtype)
        cg = c // g
        for kh in range(w.shape[2] if h and wd else 0):  # an empty input contributes nothing
            for kw in range(w.shape[3]):
                for gi in range(g):
                    contrib = np.einsum("nchw,cm->nmhw", x[:, gi * cg:(gi + 1) * cg], w[gi * cg:(gi + 1) * cg, :, kh, kw])
                    out[:, gi * mg:(gi + 1) * mg, kh * d[0]:kh * d[0] + s[0] * (h - 1) + 1:s[0],
                        kw * d[1]:kw * d[1] + s[1] * (wd - 1) + 1:s[1]] += contrib
        # output_padding appends zero rows/columns at the high end, before the crop by pads
        op = attrs.get("output_padding", [0, 0])
        out = np.pad(out, [(0, 0), (0, 0), (0, op[0]), (0, op[1])])
        out = out[:, :, p[0]:full[0] + op[0] - p[2], p[1]:full[1] + op[1] - p[3]]
        if len(xs) == 3:
            out = out + _acc(xs[2]).reshape(1, -1, 1, 1)
        return [out.astype(xs[0].dtype)]


# ---- pooling -------------------------------------------------------------------------


AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


class Pool2dOp(OpSpec):
    """MaxPool / AveragePool over `spatial` trailing dims (the class keeps its historical name).

    attrs: kernel, strides, pads, dilations (AveragePool from opset 19), count_include_pad (avg);
    optional: ceil_mode (0), auto_pad ("NOTSET"; SAME_UPPER/SAME_LOWER/VALID compute the pads, which
    are then all 0 in attrs), indices (max only: 1 adds ONNX's Indices output, int64 offsets into the
    flattened input, column-major over the spatial dims with storage_order 1)."""
    contracts = True

    family = "nn"
    n_inputs = 1

    def __init__(self, name: str, onnx_op: str, kind: str, dtypes: Sequence[str], spatial: int = 2) -> None:
        self.name = name
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.kind = kind
        self.dtypes = tuple(dtypes)
        self.spatial = spatial
        self.ranks = (spatial + 2,)

    def geometry(self, t: TensorType, attrs: Attrs) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
        """(kernel, strides, dilations, pads before, pads after, output spatial shape). The pads after
        include what ceil_mode adds past the declared pads: windows read nothing there (not even with
        count_include_pad)."""
        nd = self.spatial
        k = _list(attrs.get("kernel"), nd, "kernel", self)
        s = _list(attrs.get("strides"), nd, "strides", self)
        p = _list(attrs.get("pads"), 2 * nd, "pads", self)
        d = _list(attrs.get("dilations", [1] * nd), nd, "dilations", self)
        auto = attrs.get("auto_pad", "NOTSET")
        ceil = attrs.get("ceil_mode", 0)
        if auto not in AUTO_PADS or ceil not in (0, 1):
            raise ShapeError(f"{self.name}: auto_pad {auto!r} / ceil_mode {ceil!r} invalid")
        if auto != "NOTSET" and (any(p) or ceil):
            raise ShapeError(f"{self.name}: auto_pad {auto} takes no pads and no ceil_mode")
        if min(k + s + d) < 1 or min(p) < 0:
            raise ShapeError(f"{self.name}: kernel/stride/dilation must be positive and pads non-negative")
        before, after, out = list(p[:nd]), list(p[nd:]), []
        for i in range(nd):
            size, eff = t.shape[2 + i], d[i] * (k[i] - 1) + 1
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                o = -(-size // s[i])
                total = max((o - 1) * s[i] + eff - size, 0)
                small, large = total // 2, total - total // 2
                before[i], after[i] = (small, large) if auto == "SAME_UPPER" else (large, small)
                out.append(o)
                continue
            if max(before[i], after[i]) >= eff:  # the spec defines no value for a window wholly in padding
                raise ShapeError(f"{self.name}: pad {max(before[i], after[i])} must be smaller than the window {eff}")
            span = size + before[i] + after[i] - eff
            if span < 0:
                raise ShapeError(f"{self.name}: window {eff} larger than padded input {size + before[i] + after[i]}")
            o = -(-span // s[i]) + 1 if ceil else span // s[i] + 1
            if ceil and (o - 1) * s[i] >= size + before[i]:
                o -= 1  # the last window must start inside the input or its left padding
            after[i] += max((o - 1) * s[i] + eff - (size + before[i] + after[i]), 0)
            out.append(o)
        return k, s, d, before, after, out

    def declared_end(self, t: TensorType, attrs: Attrs) -> list[int]:
        """The padded extent each window may read (input plus real pads, not ceil_mode's extra)."""
        k, s, d, before, after, out = self.geometry(t, attrs)
        if attrs.get("auto_pad", "NOTSET") != "NOTSET":
            return [t.shape[2 + i] + before[i] + after[i] for i in range(self.spatial)]
        p = attrs["pads"]
        return [t.shape[2 + i] + p[i] + p[self.spatial + i] for i in range(self.spatial)]

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects 1 input")
        x = ins[0]
        require_dtype(self, x)
        require_rank(self, x, [self.spatial + 2])
        if self.kind == "avg" and attrs.get("count_include_pad") not in (0, 1):
            raise ShapeError(f"{self.name}: count_include_pad must be 0 or 1")
        indices = attrs.get("indices", 0)
        if indices not in (0, 1) or (indices and self.kind != "max") or attrs.get("storage_order", 0) not in (0, 1):
            raise ShapeError(f"{self.name}: indices / storage_order must be 0 or 1 (indices: MaxPool only)")
        out = self.geometry(x, attrs)[5]
        y = TensorType(x.dtype, (*x.shape[:2], *out))
        return [y, y.with_dtype("int64")] if indices else [y]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [self.spatial + 2])
        nd = self.spatial
        win = _sample_window(rng, first.shape[2:])
        k, d = win["kernel"], win["dilations"] if self.kind == "max" else [1] * nd
        eff = [d[i] * (k[i] - 1) + 1 for i in range(nd)]
        pads = [min(p, eff[i % nd] - 1) for i, p in enumerate(win["pads"])]
        if rng.random() < 0.2:  # pads up to the (dilated) window, past the kernel's size
            pads = [int(rng.integers(0, eff[i % nd])) for i in range(2 * nd)]
        attrs: Attrs = {"kernel": k, "strides": win["strides"], "pads": pads, "dilations": d}
        if self.kind == "avg":
            attrs["count_include_pad"] = int(rng.integers(2))
        self.infer([first], attrs)
        # the attributes of later opsets: an extra draw, so the instances above stay what they were
        u = rng.random()
        if u < 0.15:
            attrs["ceil_mode"] = 1
        elif u < 0.3:
            attrs["auto_pad"] = str(rng.choice(AUTO_PADS[1:]))
            attrs["pads"] = [0] * (2 * nd)
        if self.kind == "avg" and rng.random() < 0.2:
            attrs["dilations"] = win["dilations"]  # AveragePool dilations: opset 19
        if self.kind == "max" and first.dtype in FLOATS and rng.random() < 0.2:
            attrs["indices"] = 1
            attrs["storage_order"] = int(rng.integers(2))
        if attrs.get("auto_pad", "NOTSET").startswith("SAME") and any(v != 1 for v in attrs["dilations"]):
            # SAME with dilations: onnxruntime 1.32 pads for the undilated window (an output shorter than the
            # spec's ceil(L / stride)), and onnx.reference's AveragePool misplaces its windows: not generated
            attrs["dilations"] = [1] * nd
        try:
            self.infer([first], attrs)
            fragile = self._disputed(first, attrs)
        except ShapeError:
            fragile = True
        if fragile:  # the plain instance
            attrs = {k: v for k, v in attrs.items() if k not in ("ceil_mode", "auto_pad")}
            attrs["pads"] = pads
        self.infer([first], attrs)
        return [first], attrs

    def _disputed(self, t: TensorType, attrs: Attrs) -> bool:
        """Shapes where ONNX's own documents disagree: ceil_mode's rule that the last window starts
        inside the input or its left padding (ONNX's reference and ORT apply it, ONNX shape inference
        does not), and SAME padding that would be negative (a kernel smaller than the stride: ORT
        refuses it, "padding values must be non-negative")."""
        k, s, d, before, after, out = self.geometry(t, attrs)
        for i in range(self.spatial):
            size, eff = t.shape[2 + i], d[i] * (k[i] - 1) + 1
            if attrs.get("ceil_mode", 0):
                p = attrs["pads"]
                if out[i] != -(-(size + p[i] + p[self.spatial + i] - eff) // s[i]) + 1:
                    return True
            if attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER") and (out[i] - 1) * s[i] + eff < size:
                return True
        return False

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """Which element of a window is its maximum (the Indices output) flips between near-equal values."""
        if not attrs.get("indices", 0):
            return False
        x = xs[0].astype(np.float64)
        vals = self._window_values(x, attrs, -np.inf)
        top = np.sort(vals, axis=0)
        best, second = top[-1], top[-2] if len(top) > 1 else np.full_like(top[-1], -np.inf)
        return bool(np.any(np.isfinite(second) & (np.abs(best - second) <= tol * np.maximum(1.0, np.abs(best)))))

    def _window_values(self, x: np.ndarray, attrs: Attrs, fill: float) -> np.ndarray:
        """The windows' elements stacked on a leading axis (kernel offsets in row-major order);
        `fill` where a window reads padding."""
        t = TensorType(str(x.dtype), x.shape)
        k, s, d, before, after, out = self.geometry(t, attrs)
        xp = _pad_spatial(x, before + after, fill)
        return np.stack([v for _, v in _windows(xp, k, s, d, out)])

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        if y.dtype.kind in "iu":
            return np.abs(y)
        return magnitude_of_terms(self, xs, attrs) if self.kind == "avg" else np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        t = TensorType.of(x)
        k, s, d, before, after, out = self.geometry(t, attrs)
        if self.kind == "max":
            low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            vals = self._window_values(x, attrs, low)
            y = np.max(vals, axis=0).astype(x.dtype)
            if not attrs.get("indices", 0):
                return [y]
            first = np.argmax(vals, axis=0)  # the first maximum in row-major window order, as ORT
            return [y, np.take_along_axis(self._window_values(self.flat_index(t, attrs), attrs, -1), first[None], 0)[0]]
        total = np.sum(self._window_values(_acc(x), attrs, 0.0), axis=0)
        return [(total / self.window_count(t, attrs)).astype(x.dtype)]

    def window_count(self, t: TensorType, attrs: Attrs) -> np.ndarray:
        """AveragePool's divisor, shape (1, 1, *out): the input elements a window reads, plus the declared
        pads when count_include_pad (never ceil_mode's extra)."""
        k, s, d, before, after, out = self.geometry(t, attrs)
        if attrs["count_include_pad"]:
            ends = self.declared_end(t, attrs)
            region = np.pad(np.ones((1, 1, *ends)), [(0, 0), (0, 0)] + [
                (0, before[i] + t.shape[2 + i] + after[i] - ends[i]) for i in range(self.spatial)])
        else:
            region = _pad_spatial(np.ones((1, 1, *t.shape[2:])), before + after)
        return np.sum(np.stack([v for _, v in _windows(region, k, s, d, out)]), axis=0)

    def legacy(self, attrs: Attrs) -> bool:
        """Attributes of the original 2-D operator only (the lowerings keep their native forms for it)."""
        return self.spatial == 2 and not attrs.get("ceil_mode", 0) and attrs.get("auto_pad", "NOTSET") == "NOTSET" \
            and not attrs.get("indices", 0) and (self.kind == "max" or list(attrs["dilations"]) == [1, 1])

    def flat_index(self, t: TensorType, attrs: Attrs) -> np.ndarray:
        """Each input element's ONNX Indices value: its offset in the flattened input, the spatial part
        row-major (storage_order 0) or column-major (1)."""
        n, c, *sp = t.shape
        spatial = np.arange(int(np.prod(sp)), dtype=np.int64)
        if attrs.get("storage_order", 0):
            spatial = spatial.reshape(sp[::-1]).T.reshape(-1) if sp else spatial
        return (np.arange(n * c, dtype=np.int64)[:, None] * int(np.prod(sp)) + spatial).reshape(t.shape)


class GlobalPoolOp(OpSpec):
    family = "nn"
    n_inputs = 1
    dtypes = FLOATS
    ranks = (3, 4)

    def __init__(self, name: str, onnx_op: str, kind: str) -> None:
        self.name = name
        self.onnx_ops = (onnx_op,)
        self.onnx_op = onnx_op
        self.kind = kind

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects 1 input")
        require_dtype(self, ins[0])
        if ins[0].rank < 3:
            raise ShapeError(f"{self.name}: needs rank >= 3, got {ins[0].rank}")
        return [TensorType(ins[0].dtype, ins[0].shape[:2] + (1,) * (ins[0].rank - 2))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        self.infer([first], {})
        if 0 in first.shape[2:]:  # the max or mean of no element is undefined
            raise ShapeError(f"{self.name}: empty spatial extent {first.shape[2:]}")
        return [first], {}

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs) if self.kind == "avg" else np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axes = tuple(range(2, x.ndim))
        if x.size == 0:  # NumPy's max refuses any empty array; over an empty window the result is undefined
            return [np.full(x.shape[:2] + (1,) * len(axes), np.nan, x.dtype)]
        y = np.max(x, axis=axes, keepdims=True) if self.kind == "max" else np.mean(_acc(x), axis=axes, keepdims=True)
        return [y.astype(x.dtype)]


# ---- matmul, gemm ----------------------------------------------------------------------


def _matmul_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(_acc(a), _acc(b)).astype(a.dtype)


class MatMulOp(OpSpec):
    contracts = True
    name = "matmul"
    family = "nn"
    n_inputs = 2
    dtypes = FLOATS + ("int32", "int64")
    onnx_ops = ("MatMul",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError("matmul: expects 2 inputs")
        a, b = ins
        require_dtype(self, a)
        require_same_dtype(self, ins)
        if a.rank < 1 or b.rank < 1:
            raise ShapeError("matmul: inputs must have rank >= 1")
        ka = a.shape[-1]
        kb = b.shape[-2] if b.rank >= 2 else b.shape[0]
        if ka != kb:
            raise ShapeError(f"matmul: contraction sizes differ ({ka} vs {kb})")
        batch = broadcast_shapes(self, a.shape[:-2], b.shape[:-2])
        shape = batch + (a.shape[-2:-1] if a.rank >= 2 else ()) + (b.shape[-1:] if b.rank >= 2 else ())
        return [TensorType(a.dtype, shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 1:
            raise ShapeError("matmul: rank 0")
        k = first.shape[-1]
        n = int(rng.integers(1, 7))
        rank_b = int(rng.integers(1, 5)) if first.rank >= 2 else int(rng.integers(1, 4))
        if rank_b == 1:
            b = (k,)
        else:
            batch = first.shape[:-2]
            keep = len(batch) if rng.random() < 0.7 else int(rng.integers(0, len(batch) + 1))
            bb = tuple(1 if rng.random() < 0.2 else d for d in batch[len(batch) - keep:]) if keep else ()
            b = bb + (k, n)
        ins = [first, TensorType(first.dtype, b)]
        check_size(self, self.infer(ins, {})[0].shape)
        return ins, {}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return Domain(-3, 3) if ins[0].dtype in ("int32", "int64") else ANY

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [_matmul_ref(xs[0], xs[1])]


class GemmOp(OpSpec):
    contracts = True
    name = "gemm"
    family = "nn"
    n_inputs = -1
    dtypes = FLOATS
    onnx_ops = ("Gemm",)
    ranks = (2,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) not in (2, 3):
            raise ShapeError("gemm: expects 2 or 3 inputs")
        require_dtype(self, ins[0])
        require_same_dtype(self, ins)
        a, b = ins[0], ins[1]
        require_rank(self, a, [2])
        require_rank(self, b, [2])
        m, k = a.shape[::-1] if attrs.get("transA") else a.shape
        kb, n = b.shape[::-1] if attrs.get("transB") else b.shape
        if k != kb:
            raise ShapeError(f"gemm: contraction sizes differ ({k} vs {kb})")
        if len(ins) == 3 and broadcast_shapes(self, ins[2].shape, (m, n)) != (m, n):
            raise ShapeError(f"gemm: C {ins[2].shape} does not broadcast to ({m}, {n})")
        return [TensorType(a.dtype, (m, n))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [2])
        ta, tb = int(rng.integers(2)), int(rng.integers(2))
        m, k = first.shape[::-1] if ta else first.shape
        n = int(rng.integers(1, 7))
        ins = [first, TensorType(first.dtype, (n, k) if tb else (k, n))]
        if rng.random() < 0.7:
            ins.append(TensorType(first.dtype, [(m, n), (n,), (1, n), (m, 1), ()][int(rng.integers(5))]))
        attrs = {"alpha": _f32(rng.uniform(0.5, 1.5)), "beta": _f32(rng.uniform(0.5, 1.5)), "transA": ta, "transB": tb}
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, {**attrs, "alpha": abs(attrs.get("alpha", 1.0)),
                                             "beta": abs(attrs.get("beta", 1.0))})

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, b = _acc(xs[0]), _acc(xs[1])
        a = a.T if attrs["transA"] else a
        b = b.T if attrs["transB"] else b
        y = attrs["alpha"] * (a @ b)
        if len(xs) == 3:
            y = y + attrs["beta"] * _acc(xs[2])
        return [y.astype(xs[0].dtype)]


# ---- normalization ----------------------------------------------------------------------


class BatchNormOp(OpSpec):
    """BatchNormalization. attrs: epsilon; optional training_mode (0) and momentum (0.9): in training
    the batch's own mean and (population) variance normalize, and the node has the outputs
    running_mean = mean * momentum + batch_mean * (1 - momentum) and the same of the variance
    (ONNX requires all three outputs in training mode)."""

    name = "batch_norm"
    family = "nn"
    n_inputs = 5
    dtypes = FLOATS
    onnx_ops = ("BatchNormalization",)
    ranks = (2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 5:
            raise ShapeError("batch_norm: expects x, scale, bias, mean, var")
        x = ins[0]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        if x.rank < 2:
            raise ShapeError("batch_norm: input rank must be >= 2")
        for t in ins[1:]:
            if t.shape != (x.shape[1],):
                raise ShapeError(f"batch_norm: parameter shape {t.shape} != ({x.shape[1]},)")
        training = attrs.get("training_mode", 0)
        if training not in (0, 1):
            raise ShapeError("batch_norm: training_mode must be 0 or 1")
        return [x, ins[3], ins[4]] if training else [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2:
            raise ShapeError("batch_norm: input rank must be >= 2")
        p = TensorType(first.dtype, (first.shape[1],))
        attrs: Attrs = {"epsilon": _f32(float(rng.choice([1e-5, 1e-3, 0.1])))}
        if rng.random() < 0.2:  # statistics over fewer than two values are all rounding noise
            if first.size // max(first.shape[1], 1) >= 2:
                attrs.update(training_mode=1, momentum=_f32(float(rng.choice([0.9, 0.5, 0.99]))))
        return [first, p, p, p, p], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return VARIANCE if index == 4 else (PARAM if index else ANY)

    def _stats(self, x: np.ndarray, attrs: Attrs, mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mean and variance that normalize: the given ones, or in training the batch's."""
        if not attrs.get("training_mode", 0):
            return mean, var
        axes = (0,) + tuple(range(2, x.ndim))
        return x.mean(axis=axes), x.var(axis=axes)

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # x - mean rounds at the magnitude of its operands, and dividing by the standard deviation
        # amplifies that: rows of near-equal values normalize to rounding noise
        x, scale, bias, mean, var = (_acc(a) for a in xs)
        if y.shape != x.shape:  # a running statistic: a blend of the given one and the batch's
            m = attrs.get("momentum", 0.9)
            axes = (0,) + tuple(range(2, x.ndim))
            return np.abs(mean) + np.abs(var) + np.abs(x).mean(axis=axes) + (x * x).mean(axis=axes) * (1 - m) + np.abs(y)
        mean, var = self._stats(x, attrs, mean, var)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        sd = np.sqrt(var.reshape(shape) + attrs["epsilon"])
        return (np.abs(x) + np.abs(mean.reshape(shape))) / sd * np.abs(scale.reshape(shape)) + np.abs(y)

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return epsilon_attr(ins)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, scale, bias, mean_in, var_in = (_acc(a) for a in xs)
        mean, var = self._stats(x, attrs, mean_in, var_in)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + attrs["epsilon"]) * scale.reshape(shape) + bias.reshape(shape)
        outs = [y.astype(xs[0].dtype)]
        if attrs.get("training_mode", 0):
            m = attrs.get("momentum", 0.9)
            outs += [(mean_in * m + mean * (1 - m)).astype(xs[3].dtype), (var_in * m + var * (1 - m)).astype(xs[4].dtype)]
        return outs


def _nonempty_norm_axis(spec: OpSpec, rng: np.random.Generator, first: TensorType) -> int:
    """A normalization axis whose normalized extent (dims axis..) holds elements: the mean over none
    is 0/0, undefined (ORT refuses it: "Size of X.shape[axis:] must be at least 1"; TVM's build
    divides by zero)."""
    zeros = [i for i, d in enumerate(first.shape) if d == 0]
    low = zeros[-1] + 1 if zeros else 0
    if low >= first.rank:
        raise ShapeError(f"{spec.name}: the last dim of {first.shape} is empty: nothing to normalize over")
    return int(rng.integers(low, first.rank))


class LayerNormOp(OpSpec):
    """LayerNormalization. attrs["outputs"] (1 when absent): how many of Y, Mean and InvStdDev the node
    has; Mean and InvStdDev have the normalized axes kept as 1 and the stash type, float32 (ONNX's
    default stash_type; the only one modelled)."""

    name = "layer_norm"
    family = "nn"
    n_inputs = -1
    dtypes = FLOATS
    onnx_ops = ("LayerNormalization",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) not in (2, 3):
            raise ShapeError("layer_norm: expects x, scale and optional bias")
        x = ins[0]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        axis = norm_axis(self, int(attrs.get("axis", -1)), x.rank)
        if x.rank == 0:
            raise ShapeError("layer_norm: rank 0")
        norm = x.shape[axis:]
        for t in ins[1:]:
            if broadcast_shapes(self, t.shape, norm) != norm:
                raise ShapeError(f"layer_norm: parameter {t.shape} does not broadcast to {norm}")
        outputs = attrs.get("outputs", 1)
        if outputs not in (1, 2, 3):
            raise ShapeError(f"layer_norm: outputs must be 1, 2 or 3, got {outputs!r}")
        stat = TensorType("float32", x.shape[:axis] + (1,) * (x.rank - axis))
        return [x] + [stat] * (outputs - 1)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError("layer_norm: rank 0")
        axis = _nonempty_norm_axis(self, rng, first)
        p = TensorType(first.dtype, first.shape[axis:])
        ins = [first, p] + ([p] if rng.random() < 0.7 else [])
        attrs = {"axis": axis - first.rank if rng.random() < 0.5 else axis,
                 "epsilon": _f32(float(rng.choice([1e-5, 1e-3])))}
        outputs = int(rng.choice([1, 1, 2, 3]))
        if outputs > 1:
            attrs["outputs"] = outputs
        return ins, attrs

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # x - mean rounds at the magnitude of its operands, and dividing by the standard deviation
        # amplifies that: rows of near-equal values normalize to rounding noise
        x = _acc(xs[0])
        axes = tuple(range(attrs["axis"] % x.ndim, x.ndim))
        var = x.var(axis=axes, keepdims=True) + attrs["epsilon"]
        if y.shape != x.shape or attrs.get("outputs", 1) > 1 and y.size < x.size:
            # Mean (the mean of the magnitudes) or InvStdDev (whose variance is a sum of squares
            # around the mean, which cancels): one bound for both, they have one shape
            return np.abs(x).mean(axis=axes, keepdims=True) + (np.abs(x) ** 2).mean(axis=axes, keepdims=True) / var / np.sqrt(var)
        # the mean itself rounds at its terms' magnitude (mean |x|), beyond |mean| where a row's values cancel
        return (np.abs(x) + np.abs(x).mean(axis=axes, keepdims=True)) / np.sqrt(var) * np.abs(_acc(xs[1])) + np.abs(y)

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return epsilon_attr(ins)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        axis = attrs["axis"] % x.ndim
        axes = tuple(range(axis, x.ndim))
        y = _normalized(x, axes, attrs["epsilon"], xs[0].dtype) * _acc(xs[1])
        if len(xs) == 3:
            y = y + _acc(xs[2])
        outs = [y.astype(xs[0].dtype)]
        outputs = attrs.get("outputs", 1)
        if outputs > 1:
            outs.append(x.mean(axis=axes, keepdims=True).astype(np.float32))
        if outputs > 2:
            outs.append((1 / np.sqrt(x.var(axis=axes, keepdims=True) + attrs["epsilon"])).astype(np.float32))
        return outs


class InstanceNormOp(OpSpec):
    name = "instance_norm"
    family = "nn"
    n_inputs = 3
    dtypes = FLOATS
    onnx_ops = ("InstanceNormalization",)
    ranks = (3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 3:
            raise ShapeError("instance_norm: expects x, scale, bias")
        x = ins[0]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        if x.rank < 3:
            raise ShapeError("instance_norm: input rank must be >= 3")
        for t in ins[1:]:
            if t.shape != (x.shape[1],):
                raise ShapeError(f"instance_norm: parameter {t.shape} != ({x.shape[1]},)")
        return [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 3:
            raise ShapeError("instance_norm: input rank must be >= 3")
        p = TensorType(first.dtype, (first.shape[1],))
        return [first, p, p], {"epsilon": _f32(float(rng.choice([1e-5, 1e-3])))}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index else ANY

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # x - mean rounds at the magnitude of its operands, and dividing by the standard deviation
        # amplifies that: rows of near-equal values normalize to rounding noise
        x = _acc(xs[0])
        axes = tuple(range(2, x.ndim))
        sd = np.sqrt(x.var(axis=axes, keepdims=True) + attrs["epsilon"])
        shape = (1, -1) + (1,) * (x.ndim - 2)
        # the mean rounds at its terms' magnitude (mean |x|), beyond |mean| where the values cancel
        return (np.abs(x) + np.abs(x).mean(axis=axes, keepdims=True)) / sd * np.abs(_acc(xs[1]).reshape(shape)) + np.abs(y)

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return epsilon_attr(ins)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = (_normalized(x, tuple(range(2, x.ndim)), attrs["epsilon"], xs[0].dtype) * _acc(xs[1]).reshape(shape)
             + _acc(xs[2]).reshape(shape))
        return [y.astype(xs[0].dtype)]


class LrnOp(OpSpec):
    """Local response normalization across channels (ONNX LRN)."""

    name = "lrn"
    family = "nn"
    n_inputs = 1
    dtypes = FLOATS
    onnx_ops = ("LRN",)
    ranks = (3, 4, 5)  # ONNX: any rank >= 3, any size >= 1

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError("lrn: expects 1 input")
        require_dtype(self, ins[0])
        if ins[0].rank < 3:
            raise ShapeError(f"lrn: input must be (N, C, D1, ...), got rank {ins[0].rank}")
        if not isinstance(attrs.get("size"), int) or attrs["size"] < 1:
            raise ShapeError(f"lrn: size must be a positive integer, got {attrs.get('size')!r}")
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 3:
            raise ShapeError(f"lrn: input must be (N, C, D1, ...), got rank {first.rank}")
        return [first], {"size": int(rng.integers(1, 6)), "alpha": _f32(rng.uniform(1e-4, 0.5)),
                         "beta": _f32(rng.uniform(0.25, 1.0)), "bias": _f32(rng.uniform(0.5, 2.0))}

    @staticmethod
    def _band(c: int, size: int) -> np.ndarray:
        """band[i, c] = 1 when input channel i is in output channel c's window."""
        lo = (size - 1) // 2
        hi = size - 1 - lo
        i, o = np.meshgrid(np.arange(c), np.arange(c), indexing="ij")
        return ((i >= o - lo) & (i <= o + hi)).astype(np.float64)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        band = self._band(x.shape[1], attrs["size"])
        sq = np.moveaxis(np.moveaxis(x * x, 1, -1) @ band, -1, 1)
        y = x / (attrs["bias"] + attrs["alpha"] / attrs["size"] * sq) ** attrs["beta"]
        return [y.astype(xs[0].dtype)]


# ---- softmax, dropout -----------------------------------------------------------------


class SoftmaxOp(OpSpec):
    family = "nn"
    n_inputs = 1
    dtypes = FLOATS
    ranks = (1, 2, 3, 4)

    def __init__(self, name: str, onnx_op: str, log: bool) -> None:
        self.name = name
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.log = log

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects 1 input")
        require_dtype(self, ins[0])
        if ins[0].rank == 0:
            raise ShapeError(f"{self.name}: rank 0")
        norm_axis(self, int(attrs.get("axis", -1)), ins[0].rank)
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError(f"{self.name}: rank 0")
        return [first], {"axis": int(rng.integers(-first.rank, first.rank))}

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # x - max(x) rounds at the magnitude of its operands; exp turns that absolute error into a
        # relative one, log_softmax keeps it absolute (floor(log_softmax(x)) near 0 flips on it); the sum of
        # the axis's exponentials adds a relative error that grows with the axis's length (summed_roundings)
        x = _acc(xs[0])
        if x.size == 0:
            return np.abs(y)
        operands = (np.abs(x) + np.abs(x.max(axis=attrs["axis"], keepdims=True))
                    + summed_roundings(x.shape[attrs["axis"]]))
        return np.abs(y) + operands if self.log else np.abs(y) * (1.0 + operands)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        ax = attrs["axis"]
        if x.size == 0:  # nothing to normalize (an empty axis has no max)
            return [xs[0].copy()]
        z = x - x.max(axis=ax, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=ax, keepdims=True))
        y = z - lse if self.log else np.exp(z - lse)
        return [y.astype(xs[0].dtype)]


class DropoutOp(OpSpec):
    """Dropout in inference (training_mode false, or a ratio of 0): the identity. attrs: ratio, mask
    (optional, 1: the bool mask output too, all true)."""

    name = "dropout"
    family = "nn"
    n_inputs = 1
    dtypes = FLOATS

    onnx_ops = ("Dropout",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError("dropout: expects 1 input")
        require_dtype(self, ins[0])
        ratio = attrs.get("ratio", 0.5)
        if not 0.0 <= ratio < 1.0:
            raise ShapeError(f"dropout: ratio {ratio} outside [0, 1)")
        if attrs.get("mask", 0) not in (0, 1):
            raise ShapeError("dropout: mask must be 0 or 1")
        return [ins[0], ins[0].with_dtype("bool")] if attrs.get("mask", 0) else [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        attrs: Attrs = {"ratio": _f32(float(rng.uniform(0.1, 0.9)))}
        if rng.random() < 0.3:
            attrs["mask"] = 1
        return [first], attrs

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        if attrs.get("mask", 0):  # inference: identity, nothing dropped
            return [xs[0], np.ones(xs[0].shape, dtype=bool)]
        return [xs[0]]


for _spec in [
    ConvOp("conv1d", 1), ConvOp("conv2d", 2), ConvTranspose2dOp(),
    Pool2dOp("max_pool2d", "MaxPool", "max", FLOATS + ("int8", "uint8")),
    Pool2dOp("avg_pool2d", "AveragePool", "avg", FLOATS),
    Pool2dOp("max_pool1d", "MaxPool", "max", FLOATS + ("int8", "uint8"), 1),
    Pool2dOp("max_pool3d", "MaxPool", "max", FLOATS + ("int8", "uint8"), 3),
    Pool2dOp("avg_pool1d", "AveragePool", "avg", FLOATS, 1),
    Pool2dOp("avg_pool3d", "AveragePool", "avg", FLOATS, 3),
    GlobalPoolOp("global_avg_pool", "GlobalAveragePool", "avg"), GlobalPoolOp("global_max_pool", "GlobalMaxPool", "max"),
    MatMulOp(), GemmOp(), BatchNormOp(), LayerNormOp(), InstanceNormOp(), LrnOp(),
    SoftmaxOp("softmax", "Softmax", False), SoftmaxOp("log_softmax", "LogSoftmax", True), DropoutOp(),
]:
    register(_spec)
