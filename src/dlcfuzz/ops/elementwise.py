"""Elementwise operators: unary, binary (numpy broadcasting), pow, prelu, where, cast, clip.

Table-driven: each registration is one row naming dtypes (the ONNX opset-18 type constraint
restricted to our DTYPES), the NumPy reference (ONNX semantics), the ONNX op type it imports,
the attributes (ONNX default, sampling range) and the value domain. Lowerings live in
lower/onnx/elementwise.py and lower/relax/elementwise.py.
float16 references are computed in float32 and rounded once, as compilers do.
Attribute problems in infer() raise ShapeError (the convention for attribute rules), dtype
problems DTypeError.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import (
    ALL_DTYPES,
    DTYPES,
    FLOATS,
    INTS,
    NUMERIC,
    SIGNED,
    SIGNED_INTS,
    UNSIGNED,
    WIDE_UNSIGNED,
    TensorType,
)
from dlcfuzz.ops.base import (
    ANY,
    FOLLOWS,
    IEEE,
    INFINITIES,
    NONZERO,
    POSITIVE,
    SMALL,
    UNIT_OPEN,
    Attrs,
    Domain,
    OpSpec,
    ValueAttr,
    broadcast_shapes,
    decode,
    float_attr,
    magnitude_of_terms,
    register,
    require_arity,
    require_dtype,
    require_same_dtype,
    sample_broadcast_partner,
)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _widen(*xs: np.ndarray) -> list[np.ndarray]:
    """float16 is computed in float32 (one rounding at the end, like the compilers' kernels)."""
    return [x.astype(np.float32) if x.dtype == np.float16 else x for x in xs]


# ---- attributes ---------------------------------------------------------------------


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) \
        and math.isfinite(float(v))


@dataclass(frozen=True)
class FloatAttr:
    """A float attribute. Sampled values lie on a 1/256 grid: exact in float16, so a threshold
    compares the same in every precision and no value changes through the ONNX float32 attribute.
    `legal`: the values the operator defines, which edge tests draw from (OpSpec.value_attrs); lo/hi
    bound the small samples only."""

    default: float | None
    lo: float
    hi: float
    step: float = 1 / 256
    legal: Domain = ANY

    def sample(self, rng: np.random.Generator) -> float:
        return float(round(rng.uniform(self.lo, self.hi) / self.step) * self.step)

    def valid(self, v: Any) -> bool:
        return _is_real(v)

    def load(self, v: Any) -> Any:
        return float(v) if _is_real(v) else v


@dataclass(frozen=True)
class ChoiceAttr:
    """An enumerated attribute (flags 0/1, modes)."""

    default: Any
    choices: tuple[Any, ...]

    def sample(self, rng: np.random.Generator) -> Any:
        v = self.choices[int(rng.integers(len(self.choices)))]
        return int(v) if isinstance(v, (int, np.integer)) else v

    def valid(self, v: Any) -> bool:
        return not isinstance(v, (bool, float)) and v in self.choices

    def load(self, v: Any) -> Any:
        return decode(v)


AttrKind = FloatAttr | ChoiceAttr
FLAG = ChoiceAttr(1, (0, 1))


def _check_attrs(spec: OpSpec, kinds: Mapping[str, AttrKind], attrs: Attrs) -> None:
    for k, kind in kinds.items():
        if k not in attrs or not kind.valid(attrs[k]):
            raise ShapeError(f"{spec.name}: attribute {k}={attrs.get(k)!r} is invalid")


# ---- unary --------------------------------------------------------------------------


ABSOLUTE_NEAR_ZERO = frozenset({"swish", "sigmoid", "tanh", "erf", "gelu", "softplus", "mish", "elu", "selu", "celu"})
# the attributes that multiply a result computed near zero with an absolute error (alpha * (exp(x) - 1)), and the
# largest product the small samples give (selu's 2 * 1.5): the near-zero scale covers those as it always did
MULTIPLIERS = {"elu": ("alpha",), "celu": ("alpha",), "selu": ("alpha", "gamma")}
SMALL_MULTIPLIER = 3.0


class UnaryOp(OpSpec):
    family = "elementwise"
    n_inputs = 1
    unknown_dims = FOLLOWS

    def __init__(self, name: str, dtypes: Sequence[str], ref: Callable[[np.ndarray, Attrs], Any],
                 onnx_op: str, domain: Domain = ANY, out_dtype: str | None = None,
                 attrs: Mapping[str, AttrKind] | None = None) -> None:
        self.name = name
        self.dtypes = tuple(dtypes)
        self.ref = ref
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.in_domain = domain
        self.out_dtype = out_dtype
        self.attr_kinds = dict(attrs or {})

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        _check_attrs(self, self.attr_kinds, attrs)
        return [TensorType(self.out_dtype or ins[0].dtype, ins[0].shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {k: kind.sample(rng) for k, kind in self.attr_kinds.items()}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return self.in_domain

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        # float attributes of float inputs (an integer Shrink's attributes keep its integral grid)
        if ins[0].dtype not in FLOATS:
            return {}
        return {k: float_attr(ins[0], kind.legal) for k, kind in self.attr_kinds.items() if isinstance(kind, FloatAttr)}

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # Vectorized approximations of these are accurate in absolute, not relative, terms where
        # the result nears zero (ORT's sigmoid(-48.5) is 0, not 9e-22; exp(x) - 1 cancels in elu),
        # and a multiplier of that result (an edge test's large elu alpha) scales the error with it
        x = np.abs(np.asarray(xs[0], np.float64))
        if self.name in ABSOLUTE_NEAR_ZERO:
            factor = math.prod(abs(float(attrs[k])) for k in MULTIPLIERS.get(self.name, ()))
            return np.abs(y) + np.maximum(1.0, x) * (factor if factor > SMALL_MULTIPLIER else 1.0)
        if self.name == "hard_swish":  # x * (alpha*x + 0.5): the inner sum cancels near x = -3
            return np.abs(y) + x * (HARD_SWISH_ALPHA * x + 0.5)
        return np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        (w,) = _widen(x)
        return [np.asarray(self.ref(w, attrs)).astype(self.out_dtype or x.dtype, copy=False)]

    def other_reading(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray] | None:
        """HardSwish's operator text says alpha = 1/6, its function body (and onnxruntime, and the reference) the
        float32 attribute 1/6; TVM's ONNX importer computes x * clip(x + 3, 0, 6) / 6, the exact 1/6. The float64
        results differ by up to 3e-8 relative, which an ill-conditioned consumer (tan near its pole) carries past
        the tolerance; either reading is correct."""
        if self.name != "hard_swish":
            return None
        x = xs[0]
        (w,) = _widen(x)
        return [np.asarray(w * np.clip(w / 6 + 0.5, 0, 1)).astype(x.dtype, copy=False)]


# ONNX defines HardSwish as HardSigmoid with the float32 attribute alpha = 1/6: ONNXRuntime computes
# float64 inputs with float32(1/6), which differs from 1/6 where alpha*x + 0.5 cancels (x near -3); the exact
# 1/6 is its other reading (UnaryOp.other_reading)
HARD_SWISH_ALPHA = float(np.float32(1 / 6))


def _ref_gelu(x: np.ndarray, a: Attrs) -> np.ndarray:
    x64 = x.astype(np.float64)
    if a["approximate"] == "tanh":
        return 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))
    return 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2.0)))


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.zeros((), x.dtype), x)


def _isinf(x: np.ndarray, a: Attrs) -> np.ndarray:
    return (np.isposinf(x) & bool(a["detect_positive"])) | (np.isneginf(x) & bool(a["detect_negative"]))


def _shrink(x: np.ndarray, a: Attrs) -> np.ndarray:
    # ONNX reference: computed in float, converted back to x's dtype (integers truncate)
    lam, bias = a["lambd"], a["bias"]
    xf = x.astype(np.float64) if x.dtype.kind in "iu" else x
    return np.where(xf < -lam, xf + bias, np.where(xf > lam, xf - bias, 0))


def _int_grid_shrink(rng: np.random.Generator) -> Attrs:
    """Integer inputs: integral lambd >= 0 and 0 <= bias <= lambd + 1 keep x -/+ bias in range (uint8 too)."""
    lam = int(rng.integers(0, 3))
    return {"bias": float(rng.integers(0, lam + 2)), "lambd": float(lam)}


class ShrinkOp(UnaryOp):
    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        types, attrs = super().sample(rng, first)
        return types, (_int_grid_shrink(rng) if first.dtype in INTS else attrs)

    def other_reading(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray] | None:
        """ONNX leaves the precision of an integer Shrink's arithmetic with its float attributes open: its
        reference (and onnxruntime, and this reference) computes x -/+ bias in float and converts back, which rounds
        an int64 past 2^53; TVM's ONNX importer computes in the integer type, exactly (issue 37's TVM finding 212:
        5120687294167091615 stays odd there, and a Mod by -2 of it gives 1 where the float reading gives 0). With
        integral attributes (as sampled for integers, _int_grid_shrink) the exact integer result is correct too."""
        x = xs[0]
        lam, bias = float(attrs["lambd"]), float(attrs["bias"])
        if x.dtype.kind not in "iu" or not (lam.is_integer() and bias.is_integer()):
            return None
        lam_i, b = int(lam), int(bias)
        return [np.where(x < -lam_i, x + b, np.where(x > lam_i, x - b, 0)).astype(x.dtype, copy=False)]


def _alpha(default: float, lo: float, hi: float) -> dict[str, AttrKind]:
    return {"alpha": FloatAttr(default, lo, hi)}


U = UnaryOp
_UNARY = [
    U("abs", NUMERIC, lambda x, a: np.abs(x), "Abs"),
    U("neg", SIGNED, lambda x, a: np.negative(x), "Neg"),
    U("exp", FLOATS, lambda x, a: np.exp(x), "Exp", SMALL),
    U("log", FLOATS, lambda x, a: np.log(x), "Log", POSITIVE),
    U("sqrt", FLOATS, lambda x, a: np.sqrt(x), "Sqrt", POSITIVE),
    U("reciprocal", FLOATS, lambda x, a: np.reciprocal(x), "Reciprocal", NONZERO),
    U("sin", FLOATS, lambda x, a: np.sin(x), "Sin"),
    U("cos", FLOATS, lambda x, a: np.cos(x), "Cos"),
    U("tan", FLOATS, lambda x, a: np.tan(x), "Tan", Domain(-1.2, 1.2)),
    U("asin", FLOATS, lambda x, a: np.arcsin(x), "Asin", UNIT_OPEN),
    U("acos", FLOATS, lambda x, a: np.arccos(x), "Acos", UNIT_OPEN),
    U("atan", FLOATS, lambda x, a: np.arctan(x), "Atan"),
    U("sinh", FLOATS, lambda x, a: np.sinh(x), "Sinh", SMALL),
    U("cosh", FLOATS, lambda x, a: np.cosh(x), "Cosh", SMALL),
    U("tanh", FLOATS, lambda x, a: np.tanh(x), "Tanh"),
    U("asinh", FLOATS, lambda x, a: np.arcsinh(x), "Asinh"),
    U("acosh", FLOATS, lambda x, a: np.arccosh(x), "Acosh", Domain(1.1, 4.0)),
    U("atanh", FLOATS, lambda x, a: np.arctanh(x), "Atanh", UNIT_OPEN),
    U("sigmoid", FLOATS, lambda x, a: 1 / (1 + np.exp(-x)), "Sigmoid"),
    U("relu", SIGNED, lambda x, a: np.maximum(x, 0), "Relu"),
    U("leaky_relu", FLOATS, lambda x, a: np.where(x < 0, x * a["alpha"], x), "LeakyRelu",
      attrs=_alpha(0.01, 0.01, 0.5)),
    # legal multipliers bounded where a kernel's alpha * exp(x) (x <= 3) would overflow before the result
    U("elu", FLOATS, lambda x, a: np.where(x < 0, a["alpha"] * (np.exp(x) - 1), x), "Elu", SMALL,
      attrs={"alpha": FloatAttr(1.0, 0.1, 2.0, legal=Domain(terms=32))}),
    # a larger celu alpha leaves a kernel's exp(x / alpha) - 1 to cancellation past the tolerance
    U("celu", FLOATS, lambda x, a: np.maximum(x, 0) + np.minimum(0, a["alpha"] * np.expm1(x / a["alpha"])),
      "Celu", SMALL, attrs={"alpha": FloatAttr(1.0, 0.5, 2.0, legal=Domain(lo=0.0, hi=64.0, nonzero=True))}),
    U("selu", FLOATS, lambda x, a: a["gamma"] * np.where(x > 0, x, a["alpha"] * np.exp(x) - a["alpha"]), "Selu", SMALL, attrs={"alpha": FloatAttr(1.67326319217681884765625, 1.0, 2.0, legal=Domain(terms=64)),
                              "gamma": FloatAttr(1.05070102214813232421875, 0.5, 1.5, legal=Domain(-4.0, 4.0))}),
    U("gelu", FLOATS, _ref_gelu, "Gelu",
      attrs={"approximate": ChoiceAttr("none", ("none", "tanh"))}),
    U("softplus", FLOATS, lambda x, a: _softplus(x), "Softplus", SMALL),
    U("softsign", FLOATS, lambda x, a: x / (1 + np.abs(x)), "Softsign"),
    U("erf", FLOATS, lambda x, a: _erf(x.astype(np.float64)), "Erf"),
    U("floor", FLOATS, lambda x, a: np.floor(x), "Floor"),
    U("ceil", FLOATS, lambda x, a: np.ceil(x), "Ceil"),
    U("round", FLOATS, lambda x, a: np.round(x), "Round"),  # half to even, as ONNX specifies
    U("sign", NUMERIC, lambda x, a: np.sign(x), "Sign"),
    U("not", ("bool",), lambda x, a: np.logical_not(x), "Not"),
    U("bitwise_not", INTS + WIDE_UNSIGNED, lambda x, a: np.invert(x), "BitwiseNot"),
    U("isnan", FLOATS, lambda x, a: np.isnan(x), "IsNaN", out_dtype="bool"),
    U("isinf", FLOATS, _isinf, "IsInf", out_dtype="bool",  # float16 from opset 20 (the ONNX rule asks for it)
      attrs={"detect_negative": FLAG, "detect_positive": FLAG}),
    U("hard_sigmoid", FLOATS, lambda x, a: np.clip(a["alpha"] * x + a["beta"], 0, 1), "HardSigmoid",
      # alpha * x + beta cancels where it crosses 0 or 1: a large beta's rounding there would pass the tolerance
      attrs={"alpha": FloatAttr(0.2, 0.1, 0.5), "beta": FloatAttr(0.5, 0.2, 0.8, legal=Domain(-4.0, 4.0))}),
    U("hard_swish", FLOATS, lambda x, a: x * np.clip(x * HARD_SWISH_ALPHA + 0.5, 0, 1), "HardSwish"),
    U("mish", FLOATS, lambda x, a: x * np.tanh(_softplus(x)), "Mish", SMALL),
    U("thresholded_relu", FLOATS, lambda x, a: np.where(x > a["alpha"], x, 0), "ThresholdedRelu",
      attrs=_alpha(1.0, -0.5, 1.5)),
    ShrinkOp("shrink", NUMERIC, _shrink, "Shrink",
             attrs={"bias": FloatAttr(0.0, 0.0, 1.5, 1 / 8), "lambd": FloatAttr(0.5, 0.0, 1.5, 1 / 8, Domain(lo=0.0))}),
    U("swish", FLOATS, lambda x, a: x / (1 + np.exp(-a["alpha"] * x)), "Swish", attrs=_alpha(1.0, 0.25, 2.0)),
]


# ---- binary ------------------------------------------------------------------------


def _int_div(a: np.ndarray, b: np.ndarray, attrs: Attrs) -> np.ndarray:
    """ONNX integer Div truncates toward zero (C semantics), unlike numpy's floor division."""
    if a.dtype.kind == "u":  # truncation is floor division here (and int64 cannot hold every uint64)
        return a // b
    if a.dtype.kind in "iu":
        # floor division, moved toward zero where it rounded down a negative inexact quotient (no abs():
        # |INT64_MIN| overflows, and INT64_MIN / -3 came out -3074457345618258603 instead of ...602)
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        with np.errstate(divide="ignore", over="ignore"):
            q = a64 // b64
            return q + ((a64 % b64 != 0) & ((a64 < 0) != (b64 < 0)))
    return a / b


def _divisor(dt: str, attrs: Attrs) -> Domain:
    # Integer division by zero is undefined (SIGFPE): integer divisors are sampled constants.
    return Domain(nonzero=True, strict=dt in INTS)


def _any(dt: str, attrs: Attrs) -> Domain:
    return ANY


COMPARISONS = frozenset({"equal", "less", "less_equal", "greater", "greater_equal"})


class BinaryOp(OpSpec):
    """Two inputs of one dtype, multidirectional (numpy) broadcasting."""

    family = "elementwise"
    n_inputs = 2
    unknown_dims = FOLLOWS  # broadcasting holds against a 1 (or an absent axis), which the probe of its rule checks

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """A comparison of computed floats that differ by less than the tolerance can flip."""
        a, b = xs[0], xs[1]
        if self.name not in COMPARISONS or not np.issubdtype(a.dtype, np.floating):
            return False
        a, b = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
        return bool(np.any(np.abs(a - b) <= tol * np.maximum(1.0, np.abs(b))))

    def __init__(self, name: str, dtypes: Sequence[str], ref: Callable[[np.ndarray, np.ndarray, Attrs], Any],
                 onnx_op: str,
                 rhs_domain: Callable[[str, Attrs], Domain] = _any, lhs_domain: Callable[[str, Attrs], Domain] = _any,
                 out_dtype: str | None = None, attrs: Mapping[str, AttrKind] | None = None) -> None:
        self.name = name
        self.dtypes = tuple(dtypes)
        self.ref = ref
        self.onnx_op = onnx_op
        self.onnx_ops = (onnx_op,)
        self.rhs_domain = rhs_domain
        self.lhs_domain = lhs_domain
        self.out_dtype = out_dtype
        self.attr_kinds = dict(attrs or {})

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        require_same_dtype(self, ins)
        _check_attrs(self, self.attr_kinds, attrs)
        self.check_attrs(ins[0].dtype, attrs)
        return [TensorType(self.out_dtype or ins[0].dtype, broadcast_shapes(self, ins[0].shape, ins[1].shape))]

    def check_attrs(self, dtype: str, attrs: Attrs) -> None:
        """Dtype-dependent attribute rules."""

    def sample_attrs(self, rng: np.random.Generator, dtype: str) -> Attrs:
        return {k: kind.sample(rng) for k, kind in self.attr_kinds.items()}

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first, first.with_shape(sample_broadcast_partner(rng, first.shape))], self.sample_attrs(rng, first.dtype)

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return (self.rhs_domain if index == 1 else self.lhs_domain)(ins[0].dtype, attrs)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, b = _widen(xs[0], xs[1])
        return [np.asarray(self.ref(a, b, attrs)).astype(self.out_dtype or xs[0].dtype, copy=False)]


class ModOp(BinaryOp):
    """fmod=0 on floating inputs (floor modulo, the divisor's sign) is ONNX Mod from opset 28; the ONNX
    rule raises the model's opset for it."""

    def sample_attrs(self, rng: np.random.Generator, dtype: str) -> Attrs:
        return {"fmod": int(rng.integers(2))}

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """fmod jumps by |b| where a/b crosses an integer: legal rounding of a or b (a few ulps, scaled
        by |a/b|) moves the quotient by tol * |a/b|, so a quotient that close to an integer, or so large
        that the tolerance spans integers (a tiny divisor), can land on either side."""
        a, b = xs[0], xs[1]
        if not np.issubdtype(a.dtype, np.floating):
            return False
        a, b = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
        with np.errstate(all="ignore"):
            q = a / b
        q = q[np.isfinite(q)]
        return bool(np.any(np.abs(q - np.round(q)) <= 2 * tol * np.maximum(1.0, np.abs(q))))


def shift_bits(dtype: str) -> int:
    return np.dtype(dtype).itemsize * 8


def _bit_shift(a: np.ndarray, b: np.ndarray, attrs: Attrs) -> np.ndarray:
    """ONNX BitShift (opset 28 for signed types): a right shift of a signed value is arithmetic; a
    shift amount that is negative or not below the bit width gives what the sign fill alone gives."""
    bits = shift_bits(str(a.dtype))
    inside = (b >= 0) & (b < bits)
    s = np.where(inside, b, 0).astype(a.dtype)
    if attrs["direction"] == "LEFT":
        return np.where(inside, np.left_shift(a, s), 0).astype(a.dtype)
    fill = np.where(a < 0, -1, 0) if a.dtype.kind == "i" else 0
    return np.where(inside, np.right_shift(a, s), fill).astype(a.dtype)


def _shift_amount(dt: str, attrs: Attrs) -> Domain:
    # an unsigned amount >= the bit width is undefined before opset 28: in range only; signed types
    # exist from opset 28 on, where negative and too large amounts are defined (sampled at the edges)
    bits = shift_bits(dt)
    return Domain(-1, bits, strict=True) if dt in SIGNED_INTS else Domain(0, bits - 1, strict=True)


NUMERIC_WIDE = NUMERIC + WIDE_UNSIGNED


class VariadicOp(BinaryOp):
    """Max, Min, Sum, Mean: one or more inputs of one dtype, multidirectional broadcasting. Generated
    mostly with two inputs (what graphs have), sometimes one or three."""

    n_inputs = -1

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        require_same_dtype(self, ins)
        return [TensorType(ins[0].dtype, broadcast_shapes(self, *(t.shape for t in ins)))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        ins = [first, first.with_shape(sample_broadcast_partner(rng, first.shape))]
        u = rng.random()
        if u < 0.1:
            ins = ins[:1]
        elif u < 0.25:
            ins.append(first.with_shape(sample_broadcast_partner(rng, first.shape)))
        return ins, {}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return ANY

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        return False  # max, min and sums are continuous in their inputs

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # a sum of terms of either sign: its error scales with the terms' magnitudes
        return magnitude_of_terms(self, xs, attrs) if self.name in ("sum", "mean") else np.abs(y)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        ws = _widen(*xs)
        y = ws[0]
        for w in ws[1:]:
            y = self.ref(y, w, attrs)
        if self.name == "mean":
            y = y / len(xs)
        return [np.broadcast_to(np.asarray(y), broadcast_shapes(self, *(x.shape for x in xs))).astype(xs[0].dtype)]


INTS_WIDE = INTS + WIDE_UNSIGNED
B = BinaryOp
_BINARY = [
    B("add", NUMERIC_WIDE, lambda a, b, t: a + b, "Add"),
    B("sub", NUMERIC_WIDE, lambda a, b, t: a - b, "Sub"),
    B("mul", NUMERIC_WIDE, lambda a, b, t: a * b, "Mul"),
    B("div", NUMERIC_WIDE, _int_div, "Div", rhs_domain=_divisor),
    VariadicOp("max", NUMERIC_WIDE, lambda a, b, t: np.maximum(a, b), "Max"),
    VariadicOp("min", NUMERIC_WIDE, lambda a, b, t: np.minimum(a, b), "Min"),
    ModOp("mod", NUMERIC_WIDE, lambda a, b, t: np.fmod(a, b) if t["fmod"] else np.mod(a, b), "Mod",
          rhs_domain=_divisor, attrs={"fmod": ChoiceAttr(0, (0, 1))}),
    B("and", ("bool",), lambda a, b, t: np.logical_and(a, b), "And"),
    B("or", ("bool",), lambda a, b, t: np.logical_or(a, b), "Or"),
    B("xor", ("bool",), lambda a, b, t: np.logical_xor(a, b), "Xor"),
    B("equal", NUMERIC_WIDE + ("bool",), lambda a, b, t: np.equal(a, b), "Equal", out_dtype="bool"),
    B("less", NUMERIC_WIDE, lambda a, b, t: np.less(a, b), "Less", out_dtype="bool"),
    B("less_equal", NUMERIC_WIDE, lambda a, b, t: np.less_equal(a, b), "LessOrEqual", out_dtype="bool"),
    B("greater", NUMERIC_WIDE, lambda a, b, t: np.greater(a, b), "Greater", out_dtype="bool"),
    B("greater_equal", NUMERIC_WIDE, lambda a, b, t: np.greater_equal(a, b), "GreaterOrEqual",
      out_dtype="bool"),
    B("bitwise_and", INTS_WIDE, lambda a, b, t: np.bitwise_and(a, b), "BitwiseAnd"),
    B("bitwise_or", INTS_WIDE, lambda a, b, t: np.bitwise_or(a, b), "BitwiseOr"),
    B("bitwise_xor", INTS_WIDE, lambda a, b, t: np.bitwise_xor(a, b), "BitwiseXor"),
    # ONNX BitShift takes unsigned types, and from opset 28 signed ones (the ONNX rule asks for it)
    B("bit_shift", ("uint8",) + WIDE_UNSIGNED + SIGNED_INTS, _bit_shift, "BitShift", rhs_domain=_shift_amount,
      attrs={"direction": ChoiceAttr(None, ("LEFT", "RIGHT"))}),
]


_VARIADIC = [
    VariadicOp("sum", FLOATS, lambda a, b, t: a + b, "Sum"),
    VariadicOp("mean", FLOATS, lambda a, b, t: a + b, "Mean"),
]


class SwiGluOp(BinaryOp):
    """SwiGLU (opset 28): Swish_alpha(A) * B, with A and B of one shape (no broadcasting)."""

    def __init__(self) -> None:
        super().__init__("swiglu", FLOATS, lambda a, b, t: a * b / (1 + np.exp(-t["alpha"] * a)), "SwiGLU",
                         attrs={"alpha": FloatAttr(1.0, 0.25, 2.0)})

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        out = super().infer(ins, attrs)
        if ins[0].shape != ins[1].shape:
            raise ShapeError(f"swiglu: A {ins[0].shape} and B {ins[1].shape} must have one shape")
        return out

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first, first], self.sample_attrs(rng, first.dtype)

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # the sigmoid is accurate in absolute terms where it nears zero (as for the unary activations)
        a, b = (np.abs(np.asarray(x, np.float64)) for x in xs)
        return np.abs(y) + np.maximum(1.0, a) * b


class PowOp(BinaryOp):
    """Pow(X: T, Y: T1): the exponent may have any numeric dtype (ONNX's T1), the output has X's."""

    def __init__(self) -> None:
        super().__init__("pow", ("int32", "int64") + FLOATS, lambda a, b, t: np.power(a, b), "Pow")

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        require_dtype(self, ins[1], NUMERIC_WIDE, "exponent")
        return [TensorType(ins[0].dtype, broadcast_shapes(self, ins[0].shape, ins[1].shape))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        (_, rhs), attrs = super().sample(rng, first)
        if rng.random() < 0.3:  # ONNX's T1: any numeric exponent type (the wide unsigned ones: imported only)
            rhs = rhs.with_dtype(NUMERIC[int(rng.integers(len(NUMERIC)))])
        return [first, rhs], attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        base_int, exp_int = ins[0].dtype in INTS, ins[1].dtype in INTS
        if index == 0:
            # a positive base keeps fractional powers real; integer powers of small integers stay exact
            return Domain(-3, 3) if base_int and exp_int else POSITIVE
        # integer ** negative integer is undefined (numpy refuses): only sampled exponents there
        return Domain(0, 3, strict=True) if base_int and exp_int else Domain(-2.0, 2.0)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a, b = _widen(*xs)  # float16 ** int8 would otherwise be computed in float16
        return [np.asarray(np.power(a, b)).astype(xs[0].dtype, copy=False)]


def _unidirectional(spec: OpSpec, x: tuple[int, ...], s: tuple[int, ...]) -> None:
    if broadcast_shapes(spec, x, s) != tuple(x):
        raise ShapeError(f"{spec.name}: slope {s} does not broadcast to the input {x}")


class PReluOp(BinaryOp):
    """PRelu: the slope broadcasts to X unidirectionally (the output has X's shape)."""

    def __init__(self) -> None:
        super().__init__("prelu", FLOATS + ("int32", "int64"), lambda x, s, t: np.where(x < 0, x * s, x),
                         "PRelu")

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        out = super().infer(ins, attrs)
        _unidirectional(self, ins[0].shape, ins[1].shape)
        return out

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        r = first.rank
        k = int(rng.integers(0, r + 1))  # a suffix of X's shape with some dims set to 1
        slope = tuple(1 if rng.random() < 0.4 else d for d in first.shape[k:])
        return [first, first.with_shape(slope)], {}


# ---- where, cast, clip ------------------------------------------------------------------


class WhereOp(OpSpec):
    """where(x, y, condition) = condition ? x : y.

    Our input order is (x, y, condition), ONNX's is (condition, x, y): input 0 carries the value
    dtype, on which capability probing, the generator's dtype filter and the skip lists key.
    """

    name = "where"
    family = "elementwise"
    unknown_dims = FOLLOWS
    n_inputs = 3
    dtypes = DTYPES
    onnx_ops = ("Where",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        require_same_dtype(self, ins[:2])
        require_dtype(self, ins[2], ("bool",), "condition")
        return [TensorType(ins[0].dtype, broadcast_shapes(self, *(t.shape for t in ins)))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first, first.with_shape(sample_broadcast_partner(rng, first.shape)),
                TensorType("bool", sample_broadcast_partner(rng, first.shape))], {}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [np.where(xs[2], xs[0], xs[1])]


class CastOp(OpSpec):
    """Cast between our dtypes. ONNX's `saturate` (opset 19) only concerns float8 targets, which we do
    not model: it is accepted on import and changes nothing here."""

    name = "cast"
    family = "elementwise"
    unknown_dims = FOLLOWS
    dtypes = ALL_DTYPES
    onnx_ops = ("Cast",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        if attrs.get("to") not in ALL_DTYPES:
            raise DTypeError(f"cast: target dtype {attrs.get('to')!r} not in {list(ALL_DTYPES)}")
        return [TensorType(attrs["to"], ins[0].shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        # uint16/32/64 targets only where the input is one already (admitted by a capability probe)
        targets = ALL_DTYPES if first.dtype in WIDE_UNSIGNED else DTYPES
        return [first], {"to": targets[int(rng.integers(len(targets)))]}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        src, to = ins[0].dtype, attrs["to"]
        # float -> integer of a NaN or out-of-range value is undefined behaviour (C++ conversion)
        if src in FLOATS and to in UNSIGNED:
            return Domain(0.0, 100.0, strict=True)
        if src in FLOATS and to == "int8":
            return Domain(-100.0, 100.0, strict=True)
        if src in FLOATS and to in INTS:
            return Domain(-100.0, 100.0)
        if src in INTS_WIDE and to == "float16":
            return Domain(-1000, 1000)
        return ANY

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0]
        if x.dtype.kind == "f" and attrs["to"] in INTS_WIDE:
            x = np.trunc(x)
        return [x.astype(attrs["to"])]


class ClipOp(OpSpec):
    """attrs min, max: numbers or None (absent). min > max is defined: everything becomes max."""

    name = "clip"
    family = "elementwise"
    unknown_dims = FOLLOWS
    dtypes = NUMERIC
    onnx_ops = ("Clip",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        require_arity(self, ins)
        require_dtype(self, ins[0])
        dt = ins[0].dtype
        for k in ("min", "max"):
            if k not in attrs:
                raise ShapeError(f"clip: attribute {k} missing (None when absent)")
            v = attrs[k]
            if v is None:
                continue
            # ONNX's bound is a scalar tensor of the input's dtype: its value must be representable
            if dt in INTS and not (isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                   and np.iinfo(dt).min <= v <= np.iinfo(dt).max):
                raise ShapeError(f"clip: {k}={v!r} is not a {dt} value")
            if dt in FLOATS and not (_is_real(v) or (isinstance(v, float) and math.isinf(v))):
                raise ShapeError(f"clip: {k}={v!r} is not a number")
        return [ins[0]]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.dtype in FLOATS:
            lo = float(round(rng.uniform(-2, 1) * 64) / 64)
            hi = float(round((lo + rng.uniform(0.1, 3)) * 64) / 64)
        else:
            info = np.iinfo(first.dtype)
            lo = int(max(info.min, rng.integers(-4, 3)))
            hi = int(min(info.max, lo + rng.integers(0, 6)))
        if rng.random() < 0.1:  # min > max: defined by ONNX (the result is max)
            lo, hi = hi, lo
        attrs: Attrs = {"min": lo, "max": hi}
        drop = rng.integers(4)
        if drop == 1:
            attrs["min"] = None
        elif drop == 2:
            attrs["max"] = None
        return [first], attrs

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        return {k: ValueAttr(ins[0].dtype) for k in ("min", "max") if attrs[k] is not None}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        # Min(max, Max(x, min)), as ONNX defines it
        x = xs[0]
        if attrs["min"] is not None:
            x = np.maximum(x, np.asarray(attrs["min"], x.dtype))
        if attrs["max"] is not None:
            x = np.minimum(x, np.asarray(attrs["max"], x.dtype))
        return [x]


# What these operators define for +-inf and NaN inputs (OpSpec.nonfinite), by group; every other operator leaves
# them undefined: Sum/Mean (their order decides inf + -inf after an overflow), Pow's corner cases, Clip, Mod, Sign,
# casts, the activations whose kernels clamp or approximate (hard sigmoid, softsign's inf / inf, erf, gelu, ...).
NONFINITE_FACTS: dict[str, int] = {
    # IEEE-754 arithmetic, which ONNX's float kernels follow: NaN propagates, inf - inf and 0 * inf are NaN
    **dict.fromkeys(("add", "sub", "mul", "div", "neg", "abs"), IEEE),
    # C99 Annex F's special values (numpy's): exp(-inf) = 0, log(-1) = NaN, sqrt(inf) = inf, tanh(+-inf) = +-1, ...
    **dict.fromkeys(("exp", "log", "sqrt", "reciprocal", "tanh", "sigmoid", "atan", "floor", "ceil", "round"), IEEE),
    # answers about the special values: IsNaN and IsInf name them; an IEEE comparison with NaN is false
    **dict.fromkeys(("isnan", "isinf", *sorted(COMPARISONS)), IEEE),
    # a selection: the chosen operand passes unchanged (the condition is bool)
    "where": IEEE,
    # infinities order as numbers; a NaN operand's result differs between implementations (maxss vs fmax)
    **dict.fromkeys(("relu", "max", "min"), INFINITIES),
}

for _spec in [*_UNARY, *_BINARY, *_VARIADIC, SwiGluOp(), PowOp(), PReluOp(), WhereOp(), CastOp(), ClipOp()]:
    _spec.nonfinite = NONFINITE_FACTS.get(_spec.name, _spec.nonfinite)
    register(_spec)
