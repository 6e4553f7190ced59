"""Relax dataflow blocks -> our IR, for the operators both sides model.

A binding whose operator (or attributes) we do not model is cut: its result becomes an input of the
graph when its type is a static tensor type, exactly like the ONNX importer's partial mode. Function
parameters and values bound outside the block are inputs; Relax constants are constants.
Runs where TVM is loaded (the pytest recording plugin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dlcfuzz.errors import TypeRuleError, Unsupported
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import ALL_DTYPES, TensorType

Convert = Callable[[Any, list[TensorType]], tuple[str, dict[str, Any]]]


def _ints(xs: Any) -> list[int]:
    return [int(x) for x in xs]


def _axes(call: Any, rank: int) -> list[int]:
    axis = call.attrs.axis
    return list(range(rank)) if axis is None else _ints(axis)


def _reduce(name: str) -> Convert:
    def conv(call: Any, ins: list[TensorType]) -> tuple[str, dict[str, Any]]:
        return name, {"axes": _axes(call, ins[0].rank), "keepdims": int(bool(call.attrs.keepdims)),
                      "noop_with_empty_axes": 0}
    return conv


def _plain(name: str, **attrs: Any) -> Convert:
    return lambda call, ins: (name, dict(attrs))


def _permute(call: Any, ins: list[TensorType]) -> tuple[str, dict[str, Any]]:
    axes = call.attrs.axes
    return "transpose", {"perm": list(range(ins[0].rank))[::-1] if axes is None else _ints(axes)}


def _conv2d(call: Any, ins: list[TensorType]) -> tuple[str, dict[str, Any]]:
    a = call.attrs
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW" or (a.out_layout not in ("", "NCHW")):
        raise Unsupported("conv2d layouts other than NCHW/OIHW")
    if not _same_dtype(a.out_dtype, ins[0].dtype):
        raise Unsupported("conv2d out_dtype")
    pad = _ints(a.padding)
    pad = pad * 2 if len(pad) == 2 else pad * 4 if len(pad) == 1 else pad
    return "conv2d", {"strides": _ints(a.strides), "dilations": _ints(a.dilation), "pads": pad, "group": int(a.groups)}


def _matmul(call: Any, ins: list[TensorType]) -> tuple[str, dict[str, Any]]:
    if not _same_dtype(call.attrs.out_dtype, ins[0].dtype):
        raise Unsupported("matmul out_dtype")
    return "matmul", {}


def _reshape(call: Any, ins: list[TensorType]) -> tuple[str, dict[str, Any]]:
    shape = call.args[1]
    if not hasattr(shape, "values"):
        raise Unsupported("reshape to a non-literal shape")
    return "reshape", {"shape": _ints(shape.values)}


def _axis_attr(name: str) -> Convert:
    return lambda call, ins: (name, {"axis": int(call.attrs.axis)})


def _squeeze(call: Any, ins: list[TensorType]) -> tuple[str, dict[str, Any]]:
    if call.attrs.axis is None:
        raise Unsupported("squeeze without axes")
    return "squeeze", {"axes": _ints(call.attrs.axis)}


RELAX_OPS: dict[str, Convert] = {
    "relax.add": _plain("add"), "relax.subtract": _plain("sub"), "relax.multiply": _plain("mul"),
    "relax.divide": _plain("div"), "relax.maximum": _plain("max"), "relax.minimum": _plain("min"),
    "relax.power": _plain("pow"), "relax.exp": _plain("exp"), "relax.log": _plain("log"),
    "relax.sqrt": _plain("sqrt"), "relax.tanh": _plain("tanh"), "relax.sigmoid": _plain("sigmoid"),
    "relax.negative": _plain("neg"), "relax.abs": _plain("abs"), "relax.erf": _plain("erf"),
    "relax.sin": _plain("sin"), "relax.cos": _plain("cos"), "relax.nn.relu": _plain("relu"),
    "relax.nn.gelu": _plain("gelu", approximate="none"), "relax.nn.gelu_tanh": _plain("gelu", approximate="tanh"),
    "relax.matmul": _matmul, "relax.permute_dims": _permute, "relax.reshape": _reshape,
    "relax.nn.softmax": _axis_attr("softmax"), "relax.nn.log_softmax": _axis_attr("log_softmax"),
    "relax.concat": _axis_attr("concat"), "relax.astype": lambda call, ins: ("cast", {"to": str(call.attrs.dtype)}),
    "relax.nn.conv2d": _conv2d, "relax.squeeze": _squeeze,
    "relax.expand_dims": lambda call, ins: ("unsqueeze", {"axes": _ints(call.attrs.axis)}),
    "relax.sum": _reduce("reduce_sum"), "relax.mean": _reduce("reduce_mean"), "relax.max": _reduce("reduce_max"),
    "relax.min": _reduce("reduce_min"),
}


def _var_name(v: Any) -> str:
    return str(getattr(v, "name", None) or getattr(v, "name_hint", "?"))  # apache-tvm <= 0.25: name_hint


def _info(v: Any) -> Any:
    """A Relax var's type: `ty` in apache-tvm 0.27, `struct_info` before."""
    return getattr(v, "ty", None) or getattr(v, "struct_info", None)


def _tensor_type(sinfo: Any) -> TensorType | None:
    shape = getattr(sinfo, "shape", None)
    dtype = str(getattr(sinfo, "dtype", ""))
    if shape is None or not hasattr(shape, "values") or dtype not in ALL_DTYPES:
        return None
    try:
        return TensorType(dtype, tuple(int(v) for v in shape.values))
    except (TypeError, ValueError):  # symbolic dimensions
        return None


def block_to_graph(block: Any, name: str = "block") -> tuple[Graph | None, list[str]]:
    """One Relax binding block -> (Graph or None, reasons for the bindings that were cut)."""
    from tvm import relax

    from dlcfuzz.ops import get_op

    g = Graph(name=name)
    env: dict[Any, str] = {}  # relax Var -> our value name
    types: dict[str, TensorType] = {}
    cut: list[str] = []
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def operand(e: Any) -> str:
        if isinstance(e, relax.Var):
            if e not in env:  # a parameter or a value of an earlier block
                t = _tensor_type(_info(e))
                if t is None:
                    raise Unsupported(f"operand {_var_name(e)} has no static tensor type")
                env[e] = fresh("x")
                g.inputs.append(Value(env[e], t))
                types[env[e]] = t
            return env[e]
        if _is_constant(e):
            a = (e.value if hasattr(e, "value") else e.data).numpy()  # apache-tvm <= 0.25: .data
            if str(a.dtype) not in ALL_DTYPES:
                raise Unsupported(f"constant of dtype {a.dtype}")
            k = fresh("c")
            g.constants[k] = np.ascontiguousarray(a)
            types[k] = TensorType.of(a)
            return k
        raise Unsupported(f"operand {type(e).__name__}")

    for b in block.bindings:
        if not isinstance(b, relax.VarBinding):
            continue
        value = b.value
        try:
            if not isinstance(value, relax.Call) or not isinstance(value.op, tvm_op_type()):
                raise Unsupported(f"binding of {type(value).__name__}")
            conv = RELAX_OPS.get(value.op.name)
            if conv is None:
                raise Unsupported(f"operator {value.op.name}")
            args = list(value.args[0].fields) if value.op.name == "relax.concat" else \
                [value.args[0]] if value.op.name == "relax.reshape" else list(value.args)
            ins = [operand(a) for a in args]
            op, attrs = conv(value, [types[i] for i in ins])
            (t,) = get_op(op).infer([types[i] for i in ins], attrs)
            if _tensor_type(_info(b.var)) not in (None, t):
                raise Unsupported(f"our type {t} differs from Relax's {_info(b.var)}")
            out = fresh("v")
            g.nodes.append(Node(op, ins, [Value(out, t)], attrs, name=f"n{len(g.nodes)}"))
            env[b.var] = out
            types[out] = t
        except (Unsupported, TypeRuleError, AttributeError, TypeError, ValueError) as e:
            cut.append(f"{_var_name(b.var)}: {e}")
            t = _tensor_type(_info(b.var))
            if t is not None:  # cut here: later bindings see a fresh input
                env[b.var] = fresh("x")
                g.inputs.append(Value(env[b.var], t))
                types[env[b.var]] = t
    if not g.nodes:
        return None, cut
    used = {i for n in g.nodes for i in n.inputs}
    g.inputs = [v for v in g.inputs if v.name in used]
    g.constants = {k: a for k, a in g.constants.items() if k in used}
    produced = [v.name for n in g.nodes for v in n.outputs]
    g.outputs = [v for v in produced if v not in used] or produced[-1:]
    return g, cut


def _is_constant(e: Any) -> bool:
    import tvm

    cls = getattr(tvm.relax, "Constant", None) or tvm.ir.expr.Constant  # apache-tvm 0.27: tvm.ir Constant
    return isinstance(e, cls)


def _same_dtype(out_dtype: Any, dtype: str) -> bool:
    return out_dtype is None or str(out_dtype) in ("", "void", dtype)


def tvm_op_type() -> Any:
    import tvm

    return tvm.ir.Op


def module_to_graphs(mod: Any) -> list[tuple[str, Graph]]:
    """Every binding block of every Relax function of `mod` that converts (dataflow blocks first)."""
    from tvm import relax

    out = []
    for gv, func in mod.functions.items():
        if not isinstance(func, relax.Function) or not isinstance(func.body, relax.SeqExpr):
            continue
        blocks = sorted(func.body.blocks, key=lambda b: not isinstance(b, relax.DataflowBlock))
        for k, block in enumerate(blocks):
            g, _ = block_to_graph(block, f"{gv.name_hint}_{k}")
            if g is not None:
                out.append((f"{gv.name_hint}#{k}", g))
    return out
