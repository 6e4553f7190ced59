"""ONNXRuntime's `com.microsoft` contrib operators: the fused operators its own graph optimizer
produces (Gelu, QuickGelu, BiasGelu, FastGelu, FusedMatMul, FusedGemm, FusedConv, SkipLayerNormalization).

Given to ORT directly, a fused operator is its own front door: its kernel runs on shapes and values
that the fusion producing it would not have emitted. Only ONNX consumers can read the domain:
`lower/registry.py` gives every other target a documented gap for operators of another domain.
Semantics follow ORT's contrib-operator documentation (docs/ContribOperators.md).

This is the one place that names the compiler: the domain is ONNXRuntime's own, so its documentation and
CPU kernels are these operators' spec. Their limits here (float32 only, the activations FusedGemm and
FusedConv take) are the domain's definition, not a compiler gap, and stay in this file; "the domain"
below means ONNXRuntime's com.microsoft definition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dlcfuzz.errors import ShapeError
from dlcfuzz.ir.types import TensorType
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
    register,
    require_dtype,
    require_same_dtype,
)
from dlcfuzz.ops.elementwise import _erf
from dlcfuzz.ops.nn import PARAM, ConvOp, _acc, _f32, _matmul_ref, _normalized, epsilon_attr

MS = "com.microsoft"
F32 = ("float32",)  # the dtype the domain defines every one of these for
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * x))  # no overflow warning for large |x|


class _Contrib(OpSpec):
    family = "contrib"
    onnx_domain = MS
    dtypes = F32

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # vectorized erf/tanh/exp are accurate in absolute terms near zero (as for gelu, sigmoid)
        return np.abs(y) + np.maximum(1.0, np.abs(_acc(xs[0])))


class _BiasActivation(_Contrib):
    """x + bias (bias over the last axis), then an activation: BiasGelu, FastGelu."""

    n_inputs = 2
    ranks = (1, 2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError(f"{self.name}: expects x and bias")
        x, bias = ins
        require_dtype(self, x)
        require_same_dtype(self, ins)
        if x.rank < 1 or bias.shape != x.shape[-1:]:
            raise ShapeError(f"{self.name}: bias {bias.shape} must be 1-D of x's last dimension {x.shape[-1:]}")
        return [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 1:
            raise ShapeError(f"{self.name}: rank 0")
        return [first, TensorType(first.dtype, first.shape[-1:])], {}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index == 1 else ANY


class BiasGeluOp(_BiasActivation):
    name = "ms_bias_gelu"
    onnx_ops = ("BiasGelu",)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [_gelu(_acc(xs[0]) + _acc(xs[1])).astype(xs[0].dtype)]


class FastGeluOp(_BiasActivation):
    name = "ms_fast_gelu"
    onnx_ops = ("FastGelu",)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [_gelu_tanh(_acc(xs[0]) + _acc(xs[1])).astype(xs[0].dtype)]


class GeluOp(_Contrib):
    name = "ms_gelu"
    onnx_ops = ("Gelu",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects one input")
        require_dtype(self, ins[0])
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [_gelu(_acc(xs[0])).astype(xs[0].dtype)]


class QuickGeluOp(GeluOp):
    """x * sigmoid(alpha * x); the fusion writes alpha = 1.702, the kernel takes any."""

    name = "ms_quick_gelu"
    onnx_ops = ("QuickGelu",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if not isinstance(attrs.get("alpha"), float):
            raise ShapeError(f"{self.name}: attribute alpha must be a float")
        return super().infer(ins, attrs)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        ins, _ = super().sample(rng, first)
        alpha = float(rng.choice([1.702, 1.0, -1.702, 0.0, _f32(float(rng.uniform(-4, 4)))]))
        return ins, {"alpha": _f32(alpha)}

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return {"alpha": float_attr(ins[0])}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = _acc(xs[0])
        return [(x * _sigmoid(attrs["alpha"] * x)).astype(xs[0].dtype)]


def _transposed(t: TensorType, flag: int) -> tuple[int, ...]:
    return t.shape[:-2] + (t.shape[-1], t.shape[-2]) if flag else t.shape


class FusedMatMulOp(_Contrib):
    """alpha * (A' @ B'), A' and B' A and B with their last two axes swapped when transA / transB."""
    contracts = True

    name = "ms_fused_matmul"
    n_inputs = 2
    onnx_ops = ("FusedMatMul",)
    ranks = (2, 3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError(f"{self.name}: expects 2 inputs")
        a, b = ins
        require_dtype(self, a)
        require_same_dtype(self, ins)
        if a.rank < 2 or b.rank < 2:
            raise ShapeError(f"{self.name}: inputs must have rank >= 2")
        if attrs.get("transA") not in (0, 1) or attrs.get("transB") not in (0, 1) or \
                not isinstance(attrs.get("alpha"), float):
            raise ShapeError(f"{self.name}: transA/transB must be 0 or 1 and alpha a float")
        sa, sb = _transposed(a, attrs["transA"]), _transposed(b, attrs["transB"])
        if sa[-1] != sb[-2]:
            raise ShapeError(f"{self.name}: contraction sizes differ ({sa[-1]} vs {sb[-2]})")
        return [TensorType(a.dtype, broadcast_shapes(self, sa[:-2], sb[:-2]) + (sa[-2], sb[-1]))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2:
            raise ShapeError(f"{self.name}: rank < 2")
        ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        k = _transposed(first, ta)[-1]
        n = int(rng.integers(1, 7))
        batch = first.shape[:-2]
        bb = tuple(1 if rng.random() < 0.2 else d for d in batch) if rng.random() < 0.8 else ()
        b = TensorType(first.dtype, bb + ((n, k) if tb else (k, n)))
        attrs = {"alpha": _f32(float(rng.choice([1.0, 0.125, -2.0, float(rng.uniform(-3, 3))]))),
                 "transA": ta, "transB": tb}
        check_size(self, self.infer([first, b], attrs)[0].shape)
        return [first, b], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        a, b = (np.abs(_acc(x)) for x in self._operands(xs, attrs))
        return abs(attrs["alpha"]) * _matmul_ref(a, b) + np.abs(y)

    @staticmethod
    def _operands(xs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
        a, b = xs
        return (np.swapaxes(a, -1, -2) if attrs["transA"] else a), (np.swapaxes(b, -1, -2) if attrs["transB"] else b)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, b = self._operands(xs, attrs)
        return [(attrs["alpha"] * _matmul_ref(_acc(a), _acc(b))).astype(xs[0].dtype)]


ACTIVATIONS = ("Relu", "Tanh", "Sigmoid", "LeakyRelu")  # FusedGemm's activations in the domain
# FusedConv's (the domain's fused_activation.cc): name -> its activation_params
CONV_ACTIVATIONS = {"Relu": 0, "Tanh": 0, "Sigmoid": 0, "LeakyRelu": 1, "Clip": 2, "HardSigmoid": 2}


def _activation(name: str, alpha: float, y: np.ndarray, beta: float = 0.0) -> np.ndarray:
    if name == "Relu":
        return np.maximum(y, 0)
    if name == "Tanh":
        return np.tanh(y)
    if name == "Sigmoid":
        return _sigmoid(y)
    if name == "Clip":
        return np.clip(y, alpha, beta)
    if name == "HardSigmoid":
        return np.clip(alpha * y + beta, 0, 1)
    return np.where(y >= 0, y, alpha * y)


class FusedGemmOp(_Contrib):
    """activation(alpha * A' @ B' + beta * C): Gemm (2-D, C broadcast to (M, N)) with the activation
    the domain's GemmActivationFusion folds into it."""
    contracts = True

    name = "ms_fused_gemm"
    n_inputs = 3
    onnx_ops = ("FusedGemm",)
    ranks = (2,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 3:
            raise ShapeError(f"{self.name}: expects A, B and C")
        a, b, c = ins
        require_dtype(self, a)
        require_same_dtype(self, ins)
        if a.rank != 2 or b.rank != 2:
            raise ShapeError(f"{self.name}: A and B must be 2-D")
        if attrs.get("activation") not in ACTIVATIONS:
            raise ShapeError(f"{self.name}: activation must be one of {ACTIVATIONS}")
        sa, sb = _transposed(a, attrs["transA"]), _transposed(b, attrs["transB"])
        if sa[1] != sb[0]:
            raise ShapeError(f"{self.name}: contraction sizes differ ({sa[1]} vs {sb[0]})")
        out = (sa[0], sb[1])
        if broadcast_shapes(self, c.shape, out) != out:
            raise ShapeError(f"{self.name}: C {c.shape} does not broadcast to {out}")
        return [TensorType(a.dtype, out)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 2:
            raise ShapeError(f"{self.name}: A must be 2-D")
        ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        m, k = _transposed(first, ta)
        n = int(rng.integers(1, 7))
        b = TensorType(first.dtype, (n, k) if tb else (k, n))
        c = TensorType(first.dtype, [(n,), (m, n), (1, n), (m, 1), ()][int(rng.integers(0, 5))])
        activation = str(rng.choice(ACTIVATIONS))
        attrs = {"alpha": _f32(float(rng.choice([1.0, 0.5, -1.5]))), "beta": _f32(float(rng.choice([1.0, 0.0, 2.0]))),
                 "transA": ta, "transB": tb, "activation": activation}
        if activation == "LeakyRelu":
            attrs["activation_alpha"] = _f32(float(rng.choice([0.01, 0.2, 1.5])))
        return [first, b, c], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        a, b = FusedMatMulOp._operands(xs[:2], attrs)
        return (abs(attrs["alpha"]) * (np.abs(_acc(a)) @ np.abs(_acc(b))) + abs(attrs["beta"]) * np.abs(_acc(xs[2]))
                + np.abs(y) + 1.0)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, b = FusedMatMulOp._operands(xs[:2], attrs)
        y = attrs["alpha"] * (_acc(a) @ _acc(b)) + attrs["beta"] * _acc(xs[2])
        return [_activation(attrs["activation"], attrs.get("activation_alpha", 0.01), y).astype(xs[0].dtype)]


_CONV2D = ConvOp("conv2d", 2)


class FusedConvOp(ConvOp):
    """activation(Conv(X, W, B)) with the activation the domain's ConvActivationFusion folds into it."""

    family = "contrib"
    onnx_domain = MS
    dtypes = F32
    onnx_ops = ("FusedConv",)

    def __init__(self) -> None:
        super().__init__("ms_fused_conv", 2)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        act, params = attrs.get("activation"), attrs.get("activation_params", [])
        if act not in CONV_ACTIVATIONS or len(params) != CONV_ACTIVATIONS[act]:
            raise ShapeError(f"{self.name}: activation {act!r} with params {params!r} is not one of {CONV_ACTIVATIONS}")
        if act == "Clip" and not params[0] <= params[1]:
            raise ShapeError(f"{self.name}: Clip's min {params[0]} exceeds its max {params[1]}")
        return super().infer(ins, attrs)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        ins, attrs = _CONV2D.sample(rng, first)  # the convolution's part (its infer knows no activation)
        act = str(rng.choice(list(CONV_ACTIVATIONS)))
        params = {"LeakyRelu": [0.01], "Clip": sorted([float(rng.uniform(-1, 0)), float(rng.uniform(0, 6))]),
                  "HardSigmoid": [0.2, 0.5]}.get(act, [])
        attrs = {**attrs, "activation": act}
        if params:
            attrs["activation_params"] = [_f32(p) for p in params]
        return ins, attrs

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # the convolution's terms before the activation (magnitude_of_terms through this op's reference would pass
        # their magnitude sum through a Clip, capping it at the bound: a float32 sum of +-2^53 terms that cancel was
        # judged exact), times the activation's steepest slope; + 1: tanh/sigmoid are accurate in absolute terms
        act, params = attrs.get("activation"), attrs.get("activation_params", [])
        slope = max(1.0, abs(params[0])) if act in ("LeakyRelu", "HardSigmoid") and params else 1.0
        return slope * magnitude_of_terms(_CONV2D, xs, attrs) + 1.0

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        y = _acc(_CONV2D.reference(xs, attrs)[0])  # not super(): its infer would refuse the widened float64
        p = [*attrs.get("activation_params", []), 0.0, 0.0]
        return [_activation(attrs["activation"], p[0], y, p[1]).astype(xs[0].dtype)]


class SkipLayerNormOp(_Contrib):
    """LayerNorm over the last axis of input + skip (+ bias), times gamma (+ beta); input is (B, S, H)."""

    name = "ms_skip_layer_norm"
    n_inputs = -1
    onnx_ops = ("SkipLayerNormalization",)
    ranks = (3,)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) not in (3, 4, 5):
            raise ShapeError(f"{self.name}: expects input, skip, gamma and optional beta, bias")
        x, skip, *params = ins
        require_dtype(self, x)
        require_same_dtype(self, ins)
        if x.rank != 3 or skip.shape != x.shape:
            raise ShapeError(f"{self.name}: input must be 3-D and skip of its shape, got {x.shape}, {skip.shape}")
        if any(p.shape != x.shape[-1:] for p in params):
            raise ShapeError(f"{self.name}: gamma, beta and bias must be 1-D of the hidden size {x.shape[-1]}")
        if not isinstance(attrs.get("epsilon"), float) or attrs["epsilon"] <= 0:
            raise ShapeError(f"{self.name}: epsilon must be a positive float")
        return [x]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 3:
            raise ShapeError(f"{self.name}: input must be 3-D")
        p = TensorType(first.dtype, first.shape[-1:])
        return [first, first, p] + [p] * int(rng.integers(0, 3)), {"epsilon": _f32(float(rng.choice([1e-5, 1e-12, 1e-3])))}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index >= 2 else ANY

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # as layer_norm's: subtracting the mean rounds at the operands' magnitude, the division amplifies it
        s = self._sum(xs)
        sd = np.sqrt(s.var(axis=-1, keepdims=True) + attrs["epsilon"])
        return (np.abs(s) + np.abs(s).mean(axis=-1, keepdims=True)) / sd * np.abs(_acc(xs[2])) + np.abs(y)

    @staticmethod
    def _sum(xs: Sequence[np.ndarray]) -> np.ndarray:
        s = _acc(xs[0]) + _acc(xs[1])
        return s + _acc(xs[4]) if len(xs) == 5 else s

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return epsilon_attr(ins)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        y = _normalized(self._sum(xs), (-1,), attrs["epsilon"], xs[0].dtype) * _acc(xs[2])
        if len(xs) >= 4:
            y = y + _acc(xs[3])
        return [y.astype(xs[0].dtype)]


for _spec in (GeluOp(), QuickGeluOp(), BiasGeluOp(), FastGeluOp(), FusedMatMulOp(), FusedGemmOp(), FusedConvOp(),
              SkipLayerNormOp()):
    register(_spec)
