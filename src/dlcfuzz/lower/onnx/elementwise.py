"""ONNX lowering and import rules of the elementwise operators (ops/elementwise.py), registered per operator."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.ir.types import ALL_DTYPES, FLOATS, SIGNED_INTS
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr, onnx_elem_type
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.elementwise import AttrKind, BinaryOp, CastOp, ClipOp, UnaryOp, VariadicOp, WhereOp

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")


def _onnx_gelu(b: Any, ins: list[str], outs: list[str], a: Attrs, dt: str) -> None:
    """Gelu is opset 20; at opset 18 it is its formula (what exporters emit, and what fusions match)."""
    x = ins[0]

    def op(op_type: str, *args: str) -> str:
        out = b.tmp("gelu")
        b.node(op_type, list(args), [out])
        return out

    if a["approximate"] == "tanh":
        x3 = op("Mul", op("Mul", x, x), x)
        inner = op("Add", x, op("Mul", x3, b.const(np.array(0.044715, dt))))
        t = op("Tanh", op("Mul", inner, b.const(np.array(math.sqrt(2 / math.pi), dt))))
    else:
        t = op("Erf", op("Div", x, b.const(np.array(math.sqrt(2.0), dt))))
    s = op("Add", t, b.const(np.array(1.0, dt)))
    b.node("Mul", [op("Mul", x, b.const(np.array(0.5, dt))), s], outs)


# operators written as several ONNX nodes: name -> (builder, ins, outs, attrs, dtype) -> None
COMPOSED: dict[str, Callable[[Any, list[str], list[str], Attrs, str], None]] = {"gelu": _onnx_gelu}


def _import_attrs(node: Any, kinds: Mapping[str, AttrKind]) -> Attrs:
    expect_attrs(node, set(kinds))
    attrs: Attrs = {}
    for k, kind in kinds.items():
        v = kind.load(onnx_attr(node, k, kind.default))
        if v is None or not kind.valid(v):
            raise Unsupported(f"{node.op_type}: attribute {k}={v!r}")
        attrs[k] = v
    return attrs


@ONNX.register(
    "abs", "neg", "exp", "log", "sqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "sigmoid", "relu", "leaky_relu", "elu", "celu", "selu", "gelu", "softplus",
    "softsign", "erf", "floor", "ceil", "round", "sign", "not", "bitwise_not", "isnan", "isinf", "hard_sigmoid",
    "hard_swish", "mish", "thresholded_relu", "shrink", "swish",
)
def unary(spec: UnaryOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    dt = in_types[0].dtype
    if spec.name == "swish":
        b.need_opset(24)
    if spec.name == "celu" and dt != "float32":  # Celu takes float16 and double from opset 28
        b.need_opset(28)
    if spec.name == "isinf" and dt == "float16":
        b.need_opset(20)
    if spec.name in COMPOSED:
        COMPOSED[spec.name](b, ins, outs, attrs, in_types[0].dtype)
    else:
        b.node(spec.onnx_op, ins, outs, **{k: attrs[k] for k in spec.attr_kinds})


@ONNX_IMPORT.register(
    "abs", "neg", "exp", "log", "sqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "sigmoid", "relu", "leaky_relu", "elu", "celu", "selu", "gelu", "softplus",
    "softsign", "erf", "floor", "ceil", "round", "sign", "not", "bitwise_not", "isnan", "isinf", "hard_sigmoid",
    "hard_swish", "mish", "thresholded_relu", "shrink", "swish",
)
def import_unary(spec: UnaryOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    attrs = _import_attrs(node, spec.attr_kinds)
    if len(node.input) != 1:
        raise Unsupported(f"{node.op_type} with {len(node.input)} inputs")
    return [node.input[0]], attrs


@ONNX.register(
    "add", "sub", "mul", "div", "mod", "and", "or", "xor", "equal", "less", "less_equal", "greater",
    "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "bit_shift", "pow", "prelu", "swiglu",
)
def binary(spec: BinaryOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    dt = in_types[0].dtype
    if spec.name == "mod" and dt in FLOATS and attrs["fmod"] == 0:  # floor modulo of floats: opset 28
        b.need_opset(28)
    if spec.name == "bit_shift" and dt in SIGNED_INTS:  # signed BitShift: opset 28
        b.need_opset(28)
    if spec.name == "swiglu":
        b.need_opset(28)
    b.node(spec.onnx_op, ins, outs, **{k: attrs[k] for k in spec.attr_kinds})


@ONNX_IMPORT.register(
    "add", "sub", "mul", "div", "mod", "and", "or", "xor", "equal", "less", "less_equal", "greater",
    "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "bit_shift", "pow", "prelu", "swiglu",
)
def import_binary(spec: BinaryOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    attrs = _import_attrs(node, spec.attr_kinds)
    if len(node.input) != 2 or "" in node.input:
        raise Unsupported(f"{node.op_type} with inputs {list(node.input)}")
    return [node.input[0], node.input[1]], attrs


@ONNX.register("max", "min", "sum", "mean")
def variadic(spec: VariadicOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> None:
    b.node(spec.onnx_op, ins, outs)


@ONNX_IMPORT.register("max", "min", "sum", "mean")
def import_variadic(spec: VariadicOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    if not node.input or "" in node.input:
        raise Unsupported(f"{node.op_type} with inputs {list(node.input)}")
    return list(node.input), {}


@ONNX.register("where")
def where(spec: WhereOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Where", [ins[2], ins[0], ins[1]], outs)


@ONNX_IMPORT.register("where")
def import_where(spec: WhereOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node)
    if len(node.input) != 3 or "" in node.input:
        raise Unsupported(f"Where with inputs {list(node.input)}")
    return [node.input[1], node.input[2], node.input[0]], {}


@ONNX.register("cast")
def cast(spec: CastOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.node("Cast", ins, outs, to=onnx_elem_type(attrs["to"]))


@ONNX_IMPORT.register("cast")
def import_cast(spec: CastOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    import onnx

    expect_attrs(node, {"to", "saturate"})  # opset 19's `saturate` only concerns float8 targets
    try:
        to = str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(onnx_attr(node, "to"))))
    except (KeyError, TypeError, ValueError):
        raise Unsupported(f"Cast to {onnx_attr(node, 'to')}") from None
    if to not in ALL_DTYPES:
        raise Unsupported(f"Cast to {to}")
    return [node.input[0]], {"to": to}


@ONNX.register("clip")
def clip(spec: ClipOp, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    dt = in_types[0].dtype
    args = [ins[0]] + [b.const(np.asarray(attrs[k], dt)) if attrs[k] is not None else "" for k in ("min", "max")]
    while args[-1] == "":
        args.pop()
    b.node("Clip", args, outs)


@ONNX_IMPORT.register("clip")
def import_clip(spec: ClipOp, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset < 11:
        raise Unsupported("Clip before opset 11 (min/max attributes)")
    expect_attrs(node)
    if len(node.input) > 3:
        raise Unsupported(f"Clip with {len(node.input)} inputs")
    cast = float if ctx.type_of(node.input[0]).dtype in FLOATS else int
    attrs: Attrs = {}
    for i, k in ((1, "min"), (2, "max")):
        v = ctx.const_input(node, i)
        if v is not None and v.size != 1:
            raise Unsupported(f"Clip {k} of shape {v.shape}")
        attrs[k] = None if v is None else cast(v.reshape(()).item())
    return [node.input[0]], attrs
