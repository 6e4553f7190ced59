"""Graph -> TVM Relax IRModule, built with the BlockBuilder.

Sub-functions become global Relax functions and call nodes become calls to them
(later strategies add closures and function rewrites on top of this).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.ir.graph import CALL_OP, Graph


def relax_type(t: Any) -> Any:
    from tvm import relax

    # apache-tvm <= 0.25 spells it TensorStructInfo (its TensorType was the old DynTensorType)
    cls = getattr(relax, "TensorStructInfo", None) or relax.TensorType
    return cls(t.shape, t.dtype)


def _emit_body(bb: Any, g: Graph, env: dict[str, Any], gvars: dict[str, Any]) -> None:
    from tvm import relax

    from dlcfuzz.ops import get_op

    types = g.types()
    for k, a in g.constants.items():
        env[k] = relax.const(np.asarray(a), str(a.dtype))
    for n in g.nodes:
        args = [env[i] for i in n.inputs]
        if n.op == CALL_OP:
            call = bb.emit(relax.Call(gvars[n.attrs["callee"]], args))
            if len(n.outputs) == 1:
                env[n.outputs[0].name] = call
            else:
                for i, v in enumerate(n.outputs):
                    env[v.name] = bb.emit(relax.TupleGetItem(call, i))
            continue
        exprs = get_op(n.op).to_relax(bb, args, n.attrs, [types[i] for i in n.inputs], [v.type for v in n.outputs])
        for v, e in zip(n.outputs, exprs, strict=True):
            env[v.name] = bb.emit(e) if not isinstance(e, relax.Var) else e


def _output_expr(g: Graph, env: dict[str, Any]) -> Any:
    from tvm import relax

    if len(g.outputs) == 1:
        return env[g.outputs[0]]
    return relax.Tuple([env[o] for o in g.outputs])


def _build_function(bb: Any, g: Graph, name: str, gvars: dict[str, Any]) -> None:
    from tvm import relax

    params = [relax.Var(v.name, relax_type(v.type)) for v in g.inputs]
    env: dict[str, Any] = {v.name: p for v, p in zip(g.inputs, params)}
    with bb.function(name, params, private=False):
        with bb.dataflow():
            _emit_body(bb, g, env, gvars)
            out = bb.emit_output(_output_expr(g, env))
        bb.emit_func_output(out)


def _call_order(g: Graph) -> list[str]:
    """Callees before callers, so that every GlobalVar exists when it is called."""
    order: list[str] = []

    def visit(f: str) -> None:
        if f in order:
            return
        for n in g.functions[f].nodes:
            if n.op == CALL_OP:
                visit(n.attrs["callee"])
        order.append(f)

    for f in g.functions:
        visit(f)
    return order


def to_relax(g: Graph) -> Any:
    """Return a tvm.IRModule whose "main" computes `g`."""
    from tvm import relax

    bb = relax.BlockBuilder()
    gvars: dict[str, Any] = {}
    for fname in _call_order(g):
        _build_function(bb, g.functions[fname], fname, gvars)
        gvars[fname] = bb.get().get_global_var(fname)
    _build_function(bb, g, "main", gvars)
    return bb.get()
