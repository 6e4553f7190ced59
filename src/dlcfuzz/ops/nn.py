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
    broadcast_shapes,
    check_size,
    magnitude_of_terms,
    norm_axis,
    register,
    require_dtype,
    require_rank,
    require_same_dtype,
)

PARAM = Domain(-1.0, 1.0)  # weights and affine parameters: inputs or constants, small for float16 sums
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
        for kh in range(w.shape[2]):
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


class Pool2dOp(OpSpec):
    family = "nn"
    n_inputs = 1
    ranks = (4,)

    def __init__(self, name: str, onnx_op: str, kind: str, dtypes: Sequence[str]) -> None:
        self.name = name
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.kind = kind
        self.dtypes = tuple(dtypes)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects 1 input")
        x = ins[0]
        require_dtype(self, x)
        require_rank(self, x, [4])
        k = _list(attrs.get("kernel"), 2, "kernel", self)
        s = _list(attrs.get("strides"), 2, "strides", self)
        p = _list(attrs.get("pads"), 4, "pads", self)
        d = _list(attrs.get("dilations", [1, 1]), 2, "dilations", self)
        if self.kind == "avg":
            if d != [1, 1]:
                raise ShapeError(f"{self.name}: AveragePool has no dilations before opset 19, got {d}")
            if attrs.get("count_include_pad") not in (0, 1):
                raise ShapeError(f"{self.name}: count_include_pad must be 0 or 1")
        for i in range(2):
            if p[i] >= k[i] or p[2 + i] >= k[i]:
                raise ShapeError(f"{self.name}: pad {max(p[i], p[2 + i])} must be smaller than kernel {k[i]}")
        out = [_window_out(self, x.shape[2 + i], k[i], s[i], d[i], p[i], p[2 + i]) for i in range(2)]
        return [TensorType(x.dtype, (*x.shape[:2], *out))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [4])
        win = _sample_window(rng, first.shape[2:])
        pads = [min(p, win["kernel"][i % 2] - 1) for i, p in enumerate(win["pads"])]
        attrs: Attrs = {"kernel": win["kernel"], "strides": win["strides"], "pads": pads}
        attrs["dilations"] = win["dilations"] if self.kind == "max" else [1, 1]
        if self.kind == "avg":
            attrs["count_include_pad"] = int(rng.integers(2))
        self.infer([first], attrs)
        return [first], attrs

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs) if self.kind == "avg" else np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        out_shape = self.infer([TensorType.of(x)], attrs)[0].shape[2:]
        d = attrs.get("dilations", [1, 1])
        if self.kind == "max":
            low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            xp = _pad_spatial(x, attrs["pads"], low)
            views = [v for _, v in _windows(xp, attrs["kernel"], attrs["strides"], d, out_shape)]
            return [np.max(np.stack(views), axis=0).astype(x.dtype)]
        xp = _pad_spatial(_acc(x), attrs["pads"])
        total = sum(v for _, v in _windows(xp, attrs["kernel"], attrs["strides"], d, out_shape))
        if attrs["count_include_pad"]:
            count = float(np.prod(attrs["kernel"]))
        else:
            ones = _pad_spatial(np.ones((1, 1, *x.shape[2:])), attrs["pads"])
            count = sum(v for _, v in _windows(ones, attrs["kernel"], attrs["strides"], d, out_shape))
        return [(total / count).astype(x.dtype)]


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
        return [first], {}

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return magnitude_of_terms(self, xs, attrs) if self.kind == "avg" else np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        axes = tuple(range(2, x.ndim))
        y = np.max(x, axis=axes, keepdims=True) if self.kind == "max" else np.mean(_acc(x), axis=axes, keepdims=True)
        return [y.astype(x.dtype)]


# ---- matmul, gemm ----------------------------------------------------------------------


def _matmul_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(_acc(a), _acc(b)).astype(a.dtype)


class MatMulOp(OpSpec):
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
        return [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2:
            raise ShapeError("batch_norm: input rank must be >= 2")
        p = TensorType(first.dtype, (first.shape[1],))
        return [first, p, p, p, p], {"epsilon": _f32(float(rng.choice([1e-5, 1e-3, 0.1])))}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return VARIANCE if index == 4 else (PARAM if index else ANY)

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # x - mean rounds at the magnitude of its operands, and dividing by the standard deviation
        # amplifies that: rows of near-equal values normalize to rounding noise
        x, scale, bias, mean, var = (_acc(a) for a in xs)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        sd = np.sqrt(var.reshape(shape) + attrs["epsilon"])
        return (np.abs(x) + np.abs(mean.reshape(shape))) / sd * np.abs(scale.reshape(shape)) + np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x, scale, bias, mean, var = (_acc(a) for a in xs)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + attrs["epsilon"]) * scale.reshape(shape) + bias.reshape(shape)
        return [y.astype(xs[0].dtype)]


class LayerNormOp(OpSpec):
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
        return [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError("layer_norm: rank 0")
        axis = int(rng.integers(0, first.rank))
        p = TensorType(first.dtype, first.shape[axis:])
        ins = [first, p] + ([p] if rng.random() < 0.7 else [])
        return ins, {"axis": axis - first.rank if rng.random() < 0.5 else axis,
                     "epsilon": _f32(float(rng.choice([1e-5, 1e-3])))}

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # x - mean rounds at the magnitude of its operands, and dividing by the standard deviation
        # amplifies that: rows of near-equal values normalize to rounding noise
        x = _acc(xs[0])
        axes = tuple(range(attrs["axis"] % x.ndim, x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        sd = np.sqrt(x.var(axis=axes, keepdims=True) + attrs["epsilon"])
        return (np.abs(x) + np.abs(mean)) / sd * np.abs(_acc(xs[1])) + np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        axis = attrs["axis"] % x.ndim
        y = _normalized(x, tuple(range(axis, x.ndim)), attrs["epsilon"], xs[0].dtype) * _acc(xs[1])
        if len(xs) == 3:
            y = y + _acc(xs[2])
        return [y.astype(xs[0].dtype)]


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
        mean = x.mean(axis=axes, keepdims=True)
        sd = np.sqrt(x.var(axis=axes, keepdims=True) + attrs["epsilon"])
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return (np.abs(x) + np.abs(mean)) / sd * np.abs(_acc(xs[1]).reshape(shape)) + np.abs(y)

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
    # ONNX allows any rank >= 3 and any size >= 1 (infer accepts them); generation stays at rank 4
    # and odd sizes, where ORT's CPU kernel enforces `X_shape.NumDimensions() == 4` and `size_ % 2 == 1`.
    ranks = (4,)

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
        return [first], {"size": int(rng.choice([1, 3, 5])), "alpha": _f32(rng.uniform(1e-4, 0.5)),
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
        # relative one, log_softmax keeps it absolute (floor(log_softmax(x)) near 0 flips on it)
        x = _acc(xs[0])
        operands = np.abs(x) + np.abs(x.max(axis=attrs["axis"], keepdims=True))
        return np.abs(y) + operands if self.log else np.abs(y) * (1.0 + operands)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        ax = attrs["axis"]
        z = x - x.max(axis=ax, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=ax, keepdims=True))
        y = z - lse if self.log else np.exp(z - lse)
        return [y.astype(xs[0].dtype)]


class DropoutOp(OpSpec):
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
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {"ratio": _f32(float(rng.uniform(0.1, 0.9)))}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [xs[0]]  # inference: identity


for _spec in [
    ConvOp("conv1d", 1), ConvOp("conv2d", 2), ConvTranspose2dOp(),
    Pool2dOp("max_pool2d", "MaxPool", "max", FLOATS + ("int8", "uint8")),
    Pool2dOp("avg_pool2d", "AveragePool", "avg", FLOATS),
    GlobalPoolOp("global_avg_pool", "GlobalAveragePool", "avg"), GlobalPoolOp("global_max_pool", "GlobalMaxPool", "max"),
    MatMulOp(), GemmOp(), BatchNormOp(), LayerNormOp(), InstanceNormOp(), LrnOp(),
    SoftmaxOp("softmax", "Softmax", False), SoftmaxOp("log_softmax", "LogSoftmax", True), DropoutOp(),
]:
    register(_spec)
