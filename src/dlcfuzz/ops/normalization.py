"""Normalizations and Lp pooling: Lp/RMS/mean-variance/group normalization, LpPool, GlobalLpPool.

References compute in float64 and round once. Normalizations by a standard deviation amplify the
rounding of x - mean on near-constant rows; their error scales say so (the comparison then leaves
those rows to the sensitivity analysis instead of flagging legal rounding). Generated epsilons are
at least 1e-5; MeanVarianceNormalization has a fixed 1e-9 added to the deviation, so only its error
scale keeps near-constant rows from being judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
    norm_axis,
    register,
    require_dtype,
    require_same_dtype,
)
from dlcfuzz.ops.nn import PARAM, _f32, _nonempty_norm_axis, _pad_spatial, _windows, epsilon_attr

FLOAT_STASH = 1  # stash_type: ONNX's TensorProto.FLOAT, the default (and all ONNX's reference implements)
DOUBLE_STASH = 11  # TensorProto.DOUBLE: float64 inputs normalized in float64
STASH_TYPES = (FLOAT_STASH, DOUBLE_STASH)
EPSILONS = (1e-5, 1e-3, 0.1)  # generated: >= 1e-5, so near-constant rows do not normalize rounding noise
MVN_EPSILON = 1e-9  # MeanVarianceNormalization's function body adds this to the standard deviation
AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def _f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def _stash_factor(dtype: np.dtype, attrs: Attrs) -> float:
    """How many of the output dtype's epsilons one float32 rounding is: a float64 input normalized with
    stash_type float32 is computed in float32 by a correct compiler."""
    if np.dtype(dtype) == np.float64 and attrs.get("stash_type", FLOAT_STASH) == FLOAT_STASH:
        return float(np.finfo(np.float32).eps / np.finfo(np.float64).eps)
    return 1.0


def _check_stash(spec: OpSpec, attrs: Attrs) -> None:
    if attrs.get("stash_type", FLOAT_STASH) not in STASH_TYPES:
        raise ShapeError(f"{spec.name}: stash_type {attrs.get('stash_type')!r} not in {STASH_TYPES}")


def _sample_stash(rng: np.random.Generator, t: TensorType) -> int:
    """float64 inputs normalize in float64: in float32 (stash_type 1) a correct compiler's result is
    off by more than float64's tolerance (ONNXRuntime's GroupNormalization by 4e-6)."""
    return DOUBLE_STASH if t.dtype == "float64" else int(rng.choice(STASH_TYPES, p=[0.8, 0.2]))


def _epsilon(spec: OpSpec, attrs: Attrs) -> float:
    eps = attrs.get("epsilon")
    if not isinstance(eps, (int, float)) or not eps > 0:
        raise ShapeError(f"{spec.name}: epsilon must be positive, got {eps!r}")
    return float(eps)


# ---- RMSNormalization (opset 23) ------------------------------------------------------------


class RmsNormOp(OpSpec):
    """Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale. attrs: axis, epsilon, stash_type."""

    name = "rms_norm"
    family = "normalization"
    n_inputs = 2
    dtypes = FLOATS
    onnx_ops = ("RMSNormalization",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError("rms_norm: expects x and scale")
        x = ins[0]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        if x.rank == 0:
            raise ShapeError("rms_norm: rank 0")
        axis = norm_axis(self, int(attrs.get("axis", -1)), x.rank)
        _epsilon(self, attrs)
        _check_stash(self, attrs)
        norm = x.shape[axis:]
        if broadcast_shapes(self, ins[1].shape, norm) != norm:
            raise ShapeError(f"rms_norm: scale {ins[1].shape} does not broadcast to {norm}")
        return [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError("rms_norm: rank 0")
        axis = _nonempty_norm_axis(self, rng, first)
        norm = first.shape[axis:]
        u = rng.random()
        scale = norm if u < 0.6 else norm[int(rng.integers(0, len(norm) + 1)):] if u < 0.8 else \
            tuple(1 if rng.random() < 0.5 else d for d in norm)
        attrs = {"axis": axis - first.rank if rng.random() < 0.5 else axis,
                 "epsilon": _f32(float(rng.choice(EPSILONS))), "stash_type": _sample_stash(rng, first)}
        return [first, TensorType(first.dtype, scale)], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index else ANY

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return (np.abs(y) + 1e-3) * _stash_factor(xs[0].dtype, attrs)  # no cancellation: a few roundings

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return epsilon_attr(ins)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _f64(xs[0])
        axes = tuple(range(attrs["axis"] % x.ndim, x.ndim))
        rms = np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + attrs["epsilon"])
        return [(x / rms * _f64(xs[1])).astype(xs[0].dtype)]


# ---- LpNormalization -------------------------------------------------------------------------


class LpNormOp(OpSpec):
    """Y = X / ||X||_p along `axis` (p 1 or 2); a zero vector stays zero (ONNX's reference). attrs: axis, p."""

    name = "lp_norm"
    family = "normalization"
    n_inputs = 1
    dtypes = FLOATS
    onnx_ops = ("LpNormalization",)
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError("lp_norm: expects 1 input")
        require_dtype(self, ins[0])
        if ins[0].rank == 0:
            raise ShapeError("lp_norm: rank 0")
        norm_axis(self, int(attrs.get("axis", -1)), ins[0].rank)
        if attrs.get("p") not in (1, 2):
            raise ShapeError(f"lp_norm: p must be 1 or 2, got {attrs.get('p')!r}")
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank == 0:
            raise ShapeError("lp_norm: rank 0")
        return [first], {"axis": int(rng.integers(-first.rank, first.rank)), "p": int(rng.integers(1, 3))}

    def _norm(self, x: np.ndarray, attrs: Attrs) -> np.ndarray:
        ax = attrs["axis"]
        if attrs["p"] == 1:
            return np.sum(np.abs(x), axis=ax, keepdims=True)
        return np.sqrt(np.sum(x * x, axis=ax, keepdims=True))

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        # a vector that is zero (then zero) or merely tiny (then a unit vector) decides the result
        norm = self._norm(_f64(xs[0]), attrs)
        return bool(np.any((norm > 0) & (norm <= tol)))

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return 2.0 * np.abs(y) + 1e-3 * np.abs(y).max(initial=0.0)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _f64(xs[0])
        norm = self._norm(x, attrs)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.where(norm == 0, 0.0, x / norm)
        return [y.astype(xs[0].dtype)]


# ---- MeanVarianceNormalization ---------------------------------------------------------------


class MeanVarianceNormOp(OpSpec):
    """Y = (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over `axes`. attrs: axes (non-empty list)."""

    name = "mean_variance_norm"
    family = "normalization"
    n_inputs = 1
    # ONNX allows float16/double too, but its function body adds a float constant: ONNX's checker
    # rejects the model for any other input type ("B has inconsistent type tensor(float)")
    dtypes = ("float32",)
    onnx_ops = ("MeanVarianceNormalization",)
    ranks = (1, 2, 3, 4)

    def axes(self, t: TensorType, attrs: Attrs) -> tuple[int, ...]:
        axes = attrs.get("axes")
        if not isinstance(axes, (list, tuple)) or not axes:
            raise ShapeError(f"mean_variance_norm: axes must be a non-empty list, got {axes!r}")
        norm = [norm_axis(self, int(a), t.rank) if -t.rank <= int(a) < t.rank else -1 for a in axes]
        if -1 in norm or t.rank == 0:
            raise ShapeError(f"mean_variance_norm: axes {axes} out of range for rank {t.rank}")
        if len(set(norm)) != len(norm):
            raise ShapeError(f"mean_variance_norm: repeated axes {axes}")
        return tuple(sorted(norm))

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError("mean_variance_norm: expects 1 input")
        require_dtype(self, ins[0])
        self.axes(ins[0], attrs)
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        r = first.rank
        if r == 0:
            raise ShapeError("mean_variance_norm: rank 0")
        if r == 4 and rng.random() < 0.3 and first.shape[0] * first.shape[2] * first.shape[3] >= 2:
            return [first], {"axes": [0, 2, 3]}  # ONNX's default
        for _ in range(10):
            k = int(rng.integers(1, r + 1))
            axes = [int(a) - (r if rng.random() < 0.3 else 0) for a in rng.choice(r, size=k, replace=False)]
            # over one element the variance is exactly 0, where the result is not defined (reference)
            if int(np.prod([first.shape[a] for a in axes])) >= 2:
                return [first], {"axes": axes}
        raise ShapeError(f"mean_variance_norm: no axes of {first.shape} hold two elements")

    def _moments(self, x: np.ndarray, attrs: Attrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        axes = self.axes(TensorType.of(x), attrs)
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        return mean, var, (x * x).mean(axis=axes, keepdims=True)

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # x - mean rounds at its operands' magnitude and the deviation divides it; the spec's variance
        # E[X^2] - E[X]^2 cancels, off by eps * E[X^2], which moves y by that over the variance
        x = _f64(xs[0])
        mean, var, square = self._moments(x, attrs)
        sd = np.sqrt(var) + MVN_EPSILON
        magnitude = np.abs(x).mean(axis=self.axes(TensorType.of(x), attrs), keepdims=True)  # the mean's terms'
        return (np.abs(x) + magnitude) / sd + np.abs(y) * (1.0 + square / np.maximum(var, 1e-300))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        # Where the variance is exactly 0 ONNX contradicts itself: the operator's text divides by the
        # deviation (0/0, NaN; onnxruntime 1.32 does), its function body by deviation + 1e-9 (0). The
        # reference is NaN there, so such outputs are not compared.
        x = _f64(xs[0])
        mean, var, _ = self._moments(x, attrs)
        y = np.where(var == 0, np.nan, (x - mean) / (np.sqrt(var) + MVN_EPSILON))
        return [y.astype(xs[0].dtype)]


# ---- GroupNormalization (opset 21: per-channel scale and bias) --------------------------------


class GroupNormOp(OpSpec):
    """Statistics over each group of C / num_groups channels and the spatial dims, then the scale and
    bias: per channel (shape (C,), opset 21) or, with scale_per_group=1, per group (shape
    (num_groups,), GroupNormalization-18, which opset 21 replaced). attrs: num_groups, epsilon,
    stash_type, optional scale_per_group (0 when absent)."""

    name = "group_norm"
    family = "normalization"
    n_inputs = 3
    dtypes = FLOATS
    onnx_ops = ("GroupNormalization",)
    ranks = (3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 3:
            raise ShapeError("group_norm: expects x, scale, bias")
        x = ins[0]
        require_dtype(self, x)
        require_same_dtype(self, ins)
        if x.rank < 2:
            raise ShapeError("group_norm: input must be (N, C, ...)")
        g = attrs.get("num_groups")
        if not isinstance(g, int) or g < 1 or x.shape[1] % g:
            raise ShapeError(f"group_norm: num_groups {g!r} must divide the {x.shape[1]} channels")
        _epsilon(self, attrs)
        _check_stash(self, attrs)
        if attrs.get("scale_per_group", 0) not in (0, 1):
            raise ShapeError(f"group_norm: scale_per_group must be 0 or 1, got {attrs.get('scale_per_group')!r}")
        n = g if attrs.get("scale_per_group", 0) else x.shape[1]
        for t in ins[1:]:
            if t.shape != (n,):
                raise ShapeError(f"group_norm: scale/bias {t.shape} must be ({n},)")
        return [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2:
            raise ShapeError("group_norm: input must be (N, C, ...)")
        c = first.shape[1]
        if c == 0 or 0 in first.shape[2:]:  # a group's mean over no element is 0/0 (undefined; TVM divides by zero)
            raise ShapeError("group_norm: no channels or no spatial elements to normalize")
        g = int(rng.choice([d for d in range(1, c + 1) if c % d == 0]))
        attrs = {"num_groups": g, "epsilon": _f32(float(rng.choice(EPSILONS))), "stash_type": _sample_stash(rng, first)}
        if rng.random() < 0.25:
            attrs["scale_per_group"] = 1
        p = TensorType(first.dtype, (g if attrs.get("scale_per_group") else c,))
        return [first, p, p], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index else ANY

    @staticmethod
    def _grouped(x: np.ndarray, g: int) -> np.ndarray:
        return x.reshape(x.shape[0], g, int(np.prod(x.shape[1:], dtype=np.int64)) // g)  # -1 is ambiguous when empty

    @staticmethod
    def per_channel(param: np.ndarray, attrs: Attrs, channels: int, rank: int) -> np.ndarray:
        """A scale or bias as float64 shaped (1, C, 1, ...): a per-group one repeated over its channels."""
        p = _f64(param)
        if attrs.get("scale_per_group", 0):
            p = np.repeat(p, channels // attrs["num_groups"])
        return p.reshape((1, -1) + (1,) * (rank - 2))

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        x = _f64(xs[0])
        xg = self._grouped(x, attrs["num_groups"])
        sd = np.sqrt(xg.var(axis=2, keepdims=True) + attrs["epsilon"])
        # the mean rounds at its terms' magnitude (mean |x|), beyond |mean| where the values cancel
        amplified = ((np.abs(xg) + np.abs(xg).mean(axis=2, keepdims=True)) / sd).reshape(x.shape) * np.abs(
            self.per_channel(xs[1], attrs, x.shape[1], x.ndim))
        return (amplified + np.abs(y)) * _stash_factor(xs[0].dtype, attrs)

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return epsilon_attr(ins)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _f64(xs[0])
        xg = self._grouped(x, attrs["num_groups"])
        mean = xg.mean(axis=2, keepdims=True)
        var = ((xg - mean) ** 2).mean(axis=2, keepdims=True)
        normalized = ((xg - mean) / np.sqrt(var + attrs["epsilon"])).reshape(x.shape)
        c = x.shape[1]
        y = normalized * self.per_channel(xs[1], attrs, c, x.ndim) + self.per_channel(xs[2], attrs, c, x.ndim)
        return [y.astype(xs[0].dtype)]


# ---- LpPool, GlobalLpPool --------------------------------------------------------------------


class LpPoolOp(OpSpec):
    """(sum over each window of |x|^p)^(1/p); padding contributes 0. attrs: kernel, strides, pads,
    dilations, ceil_mode, auto_pad (NOTSET uses pads; the others derive them), p."""
    contracts = True

    name = "lp_pool"
    family = "normalization"
    n_inputs = 1
    dtypes = FLOATS
    onnx_ops = ("LpPool",)
    ranks = (3, 4, 5)

    def geometry(self, t: TensorType, attrs: Attrs) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        """(kernel, strides, dilations, pads (begins then ends, auto_pad resolved), output spatial shape)."""
        nd = t.rank - 2
        if nd < 1:
            raise ShapeError(f"lp_pool: input must be (N, C, D1, ...), got rank {t.rank}")

        def ints(key: str, n: int) -> list[int]:
            v = attrs.get(key)
            if not isinstance(v, (list, tuple)) or len(v) != n or not all(isinstance(i, int) for i in v):
                raise ShapeError(f"lp_pool: {key} must be {n} ints, got {v!r}")
            return [int(i) for i in v]

        k, s, d, pads = ints("kernel", nd), ints("strides", nd), ints("dilations", nd), ints("pads", 2 * nd)
        if min(k + s + d) < 1 or min(pads) < 0:
            raise ShapeError("lp_pool: kernel/strides/dilations must be positive and pads non-negative")
        ceil = attrs.get("ceil_mode")
        if ceil not in (0, 1):
            raise ShapeError(f"lp_pool: ceil_mode must be 0 or 1, got {ceil!r}")
        auto = attrs.get("auto_pad")
        if auto not in AUTO_PADS:
            raise ShapeError(f"lp_pool: auto_pad {auto!r} not in {AUTO_PADS}")
        if ceil and auto != "NOTSET":  # ONNX's reference refuses it ("ceil_mode is not supported with auto_pad")
            raise ShapeError("lp_pool: ceil_mode with auto_pad")
        p = attrs.get("p")
        if not isinstance(p, int) or p < 1:
            raise ShapeError(f"lp_pool: p must be a positive int, got {p!r}")
        spatial = t.shape[2:]
        eff = [di * (ki - 1) + 1 for ki, di in zip(k, d)]
        if auto != "NOTSET":
            if any(pads):
                raise ShapeError("lp_pool: explicit pads with auto_pad")
            if auto == "VALID":
                pads = [0] * (2 * nd)
            else:  # output ceil(size / stride); the odd pad goes to the end (UPPER) or the beginning (LOWER)
                total = [max(0, (math.ceil(n / si) - 1) * si + e - n) for n, si, e in zip(spatial, s, eff)]
                small = [tp // 2 for tp in total]
                big = [tp - tp // 2 for tp in total]
                pads = small + big if auto == "SAME_UPPER" else big + small
        out = []
        for i in range(nd):
            span = spatial[i] + pads[i] + pads[nd + i] - eff[i]
            if span < 0:
                raise ShapeError(f"lp_pool: window {eff[i]} larger than padded input in spatial dim {i}")
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                o = math.ceil(spatial[i] / s[i])
            elif ceil and auto == "NOTSET":
                o = -(-span // s[i]) + 1
                if (o - 1) * s[i] >= spatial[i] + pads[i]:  # a last window starting in the end padding is dropped
                    o -= 1
            else:
                o = span // s[i] + 1
            out.append(o)
        return k, s, d, pads, out

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError("lp_pool: expects 1 input")
        require_dtype(self, ins[0])
        *_, out = self.geometry(ins[0], attrs)
        return [ins[0].with_shape((*ins[0].shape[:2], *out))]

    def drops_a_window(self, t: TensorType, attrs: Attrs) -> bool:
        """Whether ceil_mode's last window would start in the end padding, where ONNX disagrees with
        itself: its shape inference (and the operator's text) keep that window, its reference and
        onnxruntime drop it (as infer does). Not generated."""
        k, s, d, pads, out = self.geometry(t, attrs)
        nd = len(k)
        kept = [-(-(t.shape[2 + i] + pads[i] + pads[nd + i] - d[i] * (k[i] - 1) - 1) // s[i]) + 1 for i in range(nd)]
        return kept != out

    def padded_ends(self, t: TensorType, attrs: Attrs) -> list[int]:
        """End pads that make every output window lie inside the padded input (ceil_mode's last
        windows read past it; those elements count as 0, like padding)."""
        k, s, d, pads, out = self.geometry(t, attrs)
        nd = len(k)
        return [max(pads[nd + i], (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - t.shape[2 + i] - pads[i])
                for i in range(nd)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        nd = first.rank - 2
        if nd < 1:
            raise ShapeError(f"lp_pool: input must be (N, C, D1, ...), got rank {first.rank}")
        for _ in range(10):
            k = [int(rng.integers(1, 4)) for _ in range(nd)]
            d = [int(rng.choice([1, 1, 2])) for _ in range(nd)]
            s = [int(rng.choice([1, 1, 2, 3])) for _ in range(nd)]
            auto = str(rng.choice(AUTO_PADS, p=[0.6, 0.1, 0.15, 0.15]))
            pads = [int(rng.integers(0, k[i % nd])) if rng.random() < 0.4 else 0 for i in range(2 * nd)] \
                if auto == "NOTSET" else [0] * (2 * nd)
            attrs: Attrs = {"kernel": k, "strides": s, "dilations": d, "pads": pads,
                            "ceil_mode": int(rng.random() < 0.3) if auto == "NOTSET" else 0,
                            "auto_pad": auto, "p": int(rng.choice([1, 2, 2, 3]))}
            if auto.startswith("SAME"):
                # a (dilated) window smaller than the stride makes the spec's SAME pad negative, which the
                # spec leaves implementation-defined (compilers crop the input, refuse, or clamp it to 0)
                eff = [di * (ki - 1) + 1 for ki, di in zip(k, d)]
                if any((math.ceil(n / si) - 1) * si + e < n for n, si, e in zip(first.shape[2:], s, eff)):
                    continue
            try:
                (out,) = self.infer([first], attrs)
            except ShapeError:
                continue
            if attrs["ceil_mode"] and self.drops_a_window(first, attrs):
                continue
            if first.dtype == "float16" and attrs["p"] > 2:
                attrs["p"] = 2  # |x|^3 sums in float16 lose too much to compare
            check_size(self, out.shape)
            return [first], attrs
        raise ShapeError(f"lp_pool: no window fits {first.shape}")

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return 2.0 * np.abs(y) + 1e-3 * np.abs(y).max(initial=0.0)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        t = TensorType.of(x)
        k, s, d, pads, out = self.geometry(t, attrs)
        nd = len(k)
        powered = np.abs(_f64(x)) ** attrs["p"]
        xp = _pad_spatial(powered, pads[:nd] + self.padded_ends(t, attrs))
        total = sum((v for _, v in _windows(xp, k, s, d, out)), np.zeros((*x.shape[:2], *out)))
        return [(total ** (1.0 / attrs["p"])).astype(x.dtype)]


class GlobalLpPoolOp(OpSpec):
    """(sum over all spatial dims of |x|^p)^(1/p), spatial dims kept as 1. attrs: p."""

    name = "global_lp_pool"
    family = "normalization"
    n_inputs = 1
    dtypes = FLOATS
    onnx_ops = ("GlobalLpPool",)
    ranks = (3, 4, 5)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError("global_lp_pool: expects 1 input")
        require_dtype(self, ins[0])
        if ins[0].rank < 3:
            raise ShapeError(f"global_lp_pool: needs rank >= 3, got {ins[0].rank}")
        p = attrs.get("p")
        if not isinstance(p, int) or p < 1:
            raise ShapeError(f"global_lp_pool: p must be a positive int, got {p!r}")
        return [ins[0].with_shape(ins[0].shape[:2] + (1,) * (ins[0].rank - 2))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        attrs = {"p": int(rng.choice([1, 2, 2, 3]))}
        if first.dtype == "float16":
            attrs["p"] = min(attrs["p"], 2)
        self.infer([first], attrs)
        return [first], attrs

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        return 2.0 * np.abs(y) + 1e-3 * np.abs(y).max(initial=0.0)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _f64(xs[0])
        total = np.sum(np.abs(x) ** attrs["p"], axis=tuple(range(2, x.ndim)), keepdims=True)
        return [(total ** (1.0 / attrs["p"])).astype(xs[0].dtype)]


def spatial_pads(pads: Sequence[int]) -> list[tuple[int, int]]:
    """ONNX pads (begins then ends) as (begin, end) per spatial dim."""
    nd = len(pads) // 2
    return [(int(pads[i]), int(pads[nd + i])) for i in range(nd)]


for _spec in [RmsNormOp(), LpNormOp(), MeanVarianceNormOp(), GroupNormOp(), LpPoolOp(), GlobalLpPoolOp()]:
    register(_spec)

__all__ = ["GlobalLpPoolOp", "GroupNormOp", "LpNormOp", "LpPoolOp", "MeanVarianceNormOp", "RmsNormOp",
                      "spatial_pads"]
