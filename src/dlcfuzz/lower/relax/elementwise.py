"""Relax lowering rules of the elementwise operators (ops/elementwise.py), registered per operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlcfuzz.ir.types import FLOATS, INTS, SIGNED_INTS
from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_dtype_const
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.elementwise import (
    HARD_SWISH_ALPHA,
    BinaryOp,
    CastOp,
    ClipOp,
    PowOp,
    PReluOp,
    UnaryOp,
    VariadicOp,
    WhereOp,
    shift_bits,
)

RELAX = target("relax")


RelaxFn = Callable[[Any, Attrs, str], Any]


def _c(v: float, dtype: str) -> Any:
    return relax_dtype_const(v, dtype)


def _rx(name: str) -> RelaxFn:
    """A Relax operator by dotted name, applied to x alone."""

    def build(x: Any, attrs: Attrs, dtype: str) -> Any:
        from tvm import relax

        fn: Any = relax.op
        for part in name.split("."):
            fn = getattr(fn, part)
        return fn(x)

    return build


def _rx_reciprocal(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.divide(_c(1, dt), x)


def _rx_leaky(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.nn.leakyrelu(x, a["alpha"])


def _rx_elu(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    neg = relax.op.multiply(_c(a["alpha"], dt), relax.op.subtract(relax.op.exp(x), _c(1, dt)))
    return relax.op.where(relax.op.less(x, _c(0, dt)), neg, x)


def _rx_celu(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    al = _c(a["alpha"], dt)
    neg = relax.op.multiply(al, relax.op.subtract(relax.op.exp(relax.op.divide(x, al)), _c(1, dt)))
    return relax.op.add(relax.op.maximum(x, _c(0, dt)), relax.op.minimum(neg, _c(0, dt)))


def _rx_selu(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    neg = relax.op.subtract(relax.op.multiply(_c(a["alpha"], dt), relax.op.exp(x)), _c(a["alpha"], dt))
    return relax.op.multiply(_c(a["gamma"], dt), relax.op.where(relax.op.greater(x, _c(0, dt)), x, neg))


def _rx_softplus(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    # TVM's softplus returns x past the threshold: log(1 + exp(x)) would overflow to inf
    return relax.op.nn.softplus(x, 1.0, 20.0)


def _rx_softsign(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.divide(x, relax.op.add(relax.op.abs(x), _c(1, dt)))


def _rx_gelu(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.nn.gelu_tanh(x) if a["approximate"] == "tanh" else relax.op.nn.gelu(x)


def _rx_hard_sigmoid(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    lin = relax.op.add(relax.op.multiply(_c(a["alpha"], dt), x), _c(a["beta"], dt))
    return relax.op.clip(lin, 0.0, 1.0)


def _rx_hard_swish(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.multiply(x, _rx_hard_sigmoid(x, {"alpha": HARD_SWISH_ALPHA, "beta": 0.5}, dt))


def _rx_mish(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.multiply(x, relax.op.tanh(_rx_softplus(x, a, dt)))


def _rx_thresholded(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.where(relax.op.greater(x, _c(a["alpha"], dt)), x, _c(0, dt))


def _rx_shrink(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    # ONNX computes x -/+ bias in float and converts back (truncation for integers): do the same
    wide = "float64" if dt in INTS else dt
    v = relax.op.astype(x, wide) if wide != dt else x
    lam, bias, zero = _c(a["lambd"], wide), _c(a["bias"], wide), _c(0, wide)
    y = relax.op.where(relax.op.less(v, relax.op.negative(lam)), relax.op.add(v, bias),
                       relax.op.where(relax.op.greater(v, lam), relax.op.subtract(v, bias), zero))
    return relax.op.astype(y, dt) if wide != dt else y


def _rx_isinf(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    inf = relax.op.isinf(x)
    if a["detect_negative"] and a["detect_positive"]:
        return inf
    if not (a["detect_negative"] or a["detect_positive"]):
        return relax.op.logical_and(inf, relax.op.logical_not(inf))
    side = relax.op.greater(x, _c(0, dt)) if a["detect_positive"] else relax.op.less(x, _c(0, dt))
    return relax.op.logical_and(inf, side)


def _rx_mod(a: Any, b: Any, attrs: Attrs, dt: str) -> Any:
    from tvm import relax

    # TVM: mod truncates (C fmod); floor_mod follows the divisor's sign (ONNX fmod=0)
    return (relax.op.mod if attrs["fmod"] else relax.op.floor_mod)(a, b)


def _rx_shift(a: Any, b: Any, attrs: Attrs, dt: str) -> Any:
    from tvm import relax

    fn = relax.op.left_shift if attrs["direction"] == "LEFT" else relax.op.right_shift
    if dt not in SIGNED_INTS:
        return fn(a, b)
    # signed (opset 28): an amount outside [0, bits) gives the sign fill alone; LLVM's shifts by
    # such amounts are poison, so the amount is clamped and the fill selected
    bits = shift_bits(dt)
    inside = relax.op.logical_and(relax.op.greater_equal(b, _c(0, dt)), relax.op.less(b, _c(bits, dt)))
    shifted = fn(a, relax.op.where(inside, b, _c(0, dt)))
    if attrs["direction"] == "LEFT":
        fill = _c(0, dt)
    else:
        fill = relax.op.where(relax.op.less(a, _c(0, dt)), _c(-1, dt), _c(0, dt))
    return relax.op.where(inside, shifted, fill)


def _rx_swish(x: Any, a: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.multiply(x, relax.op.sigmoid(relax.op.multiply(_c(a["alpha"], dt), x)))


def _rx_swiglu(a: Any, b: Any, attrs: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.multiply(_rx_swish(a, attrs, dt), b)


# operator -> its Relax composition on (x, attrs, dtype)
UNARY: dict[str, RelaxFn] = {
    "abs": _rx("abs"),
    "neg": _rx("negative"),
    "exp": _rx("exp"),
    "log": _rx("log"),
    "sqrt": _rx("sqrt"),
    "reciprocal": _rx_reciprocal,
    "sin": _rx("sin"),
    "cos": _rx("cos"),
    "tan": _rx("tan"),
    "asin": _rx("asin"),
    "acos": _rx("acos"),
    "atan": _rx("atan"),
    "sinh": _rx("sinh"),
    "cosh": _rx("cosh"),
    "tanh": _rx("tanh"),
    "asinh": _rx("asinh"),
    "acosh": _rx("acosh"),
    "atanh": _rx("atanh"),
    "sigmoid": _rx("sigmoid"),
    "relu": _rx("nn.relu"),
    "leaky_relu": _rx_leaky,
    "elu": _rx_elu,
    "celu": _rx_celu,
    "selu": _rx_selu,
    "gelu": _rx_gelu,
    "softplus": _rx_softplus,
    "softsign": _rx_softsign,
    "erf": _rx("erf"),
    "floor": _rx("floor"),
    "ceil": _rx("ceil"),
    "round": _rx("round"),
    "sign": _rx("sign"),
    "not": _rx("logical_not"),
    "bitwise_not": _rx("bitwise_not"),
    "isnan": _rx("isnan"),
    "isinf": _rx_isinf,
    "hard_sigmoid": _rx_hard_sigmoid,
    "hard_swish": _rx_hard_swish,
    "mish": _rx_mish,
    "thresholded_relu": _rx_thresholded,
    "shrink": _rx_shrink,
    "swish": _rx_swish,
}


# operator -> the relax.op function's name, or a composition on (a, b, attrs, dtype)
BINARY: dict[str, str | Callable[[Any, Any, Attrs, str], Any]] = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "mod": _rx_mod,
    "and": "logical_and",
    "or": "logical_or",
    "xor": "logical_xor",
    "equal": "equal",
    "less": "less",
    "less_equal": "less_equal",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "bit_shift": _rx_shift,
    "swiglu": _rx_swiglu,
}


def _prelu(x: Any, s: Any, attrs: Attrs, dt: str) -> Any:
    from tvm import relax

    return relax.op.where(relax.op.less(x, _c(0, dt)), relax.op.multiply(x, s), x)


@RELAX.register(
    "abs", "neg", "exp", "log", "sqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "sigmoid", "relu", "leaky_relu", "elu", "celu", "selu", "gelu", "softplus",
    "softsign", "erf", "floor", "ceil", "round", "sign", "not", "bitwise_not", "isnan", "isinf", "hard_sigmoid",
    "hard_swish", "mish", "thresholded_relu", "shrink", "swish",
)
def unary(spec: UnaryOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
          out_types: Any) -> list[Any]:
    return [UNARY[spec.name](ins[0], attrs, in_types[0].dtype)]


@RELAX.register(
    "add", "sub", "mul", "div", "mod", "and", "or", "xor", "equal", "less", "less_equal", "greater",
    "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "bit_shift", "swiglu",
)
def binary(spec: BinaryOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
           out_types: Any) -> list[Any]:
    from tvm import relax

    fn = BINARY[spec.name]
    if callable(fn):
        return [fn(ins[0], ins[1], attrs, in_types[0].dtype)]
    return [getattr(relax.op, fn)(ins[0], ins[1])]


@RELAX.register("max", "min", "sum", "mean")
def variadic(spec: VariadicOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> list[Any]:
    from tvm import relax

    fn = {"max": relax.op.maximum, "min": relax.op.minimum}.get(spec.name, relax.op.add)
    y = ins[0]
    for x in ins[1:]:
        y = fn(y, x)
    if spec.name == "mean":
        y = relax.op.divide(y, _c(len(ins), in_types[0].dtype))
    return [y]


@RELAX.register("pow")
def pow_(spec: PowOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
         out_types: Any) -> list[Any]:
    from tvm import relax

    x, y = ins
    dx, dy = in_types[0].dtype, in_types[1].dtype
    if dx in INTS and dy in FLOATS:  # computed in floating point, truncated back (ONNX reference, ORT)
        r = relax.op.power(relax.op.astype(x, "float64"), relax.op.astype(y, "float64"))
        return [relax.op.astype(r, dx)]
    if dx != dy:
        y = relax.op.astype(y, dx)
    return [relax.op.power(x, y)]


@RELAX.register("where")
def where(spec: WhereOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
          out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.where(ins[2], ins[0], ins[1])]


@RELAX.register("cast")
def cast(spec: CastOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
         out_types: Any) -> list[Any]:
    from tvm import relax

    return [relax.op.astype(ins[0], attrs["to"])]


@RELAX.register("clip")
def clip(spec: ClipOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
         out_types: Any) -> list[Any]:
    from tvm import relax

    x = ins[0]
    dt = in_types[0].dtype
    # relax.op.clip takes PrimValue bounds; maximum/minimum with typed constants keep exact int semantics
    if attrs["min"] is not None:
        x = relax.op.maximum(x, _c(attrs["min"], dt))
    if attrs["max"] is not None:
        x = relax.op.minimum(x, _c(attrs["max"], dt))
    return [x]


@RELAX.register("prelu")
def prelu(spec: PReluOp, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
          out_types: Any) -> list[Any]:
    return [_prelu(ins[0], ins[1], attrs, in_types[0].dtype)]
