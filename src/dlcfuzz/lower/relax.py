"""Graph -> TVM Relax IRModule, built with the BlockBuilder.

Sub-functions become global Relax functions, local functions (closures) bound in their callers,
or local functions returned by global makers (`form`), and call nodes become calls to them.
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


FORMS = ("global", "closure", "returned")


class _Callees:
    """How a function body reaches the sub-functions it calls, per form.

    global:   a call to the GlobalVar.
    closure:  the callee is bound as a local function (a relax.Function value) inside the caller
              before its first call, then called through that variable.
    returned: a global `make_<callee>` without parameters returns the callee as a local function;
              the caller binds `fv = make_<callee>()` and calls `fv(args)`.
    """

    def __init__(self, g: Graph, form: str, gvars: dict[str, Any]) -> None:
        self.g = g
        self.form = form
        self.gvars = gvars
        self.bound: dict[str, Any] = {}  # callee -> the variable holding it in the current body

    def callee(self, bb: Any, name: str) -> Any:
        from tvm import relax

        if self.form == "global":
            return self.gvars[name]
        if name not in self.bound:
            if self.form == "closure":
                value = _local_function(self.g, name, self.form, self.gvars)
            else:
                value = relax.Call(self.gvars[f"make_{name}"], [])
            self.bound[name] = bb.emit(value, name_hint=name if self.form == "closure" else f"{name}_fn")
        return self.bound[name]


def _emit_body(bb: Any, g: Graph, env: dict[str, Any], callees: _Callees) -> None:
    from tvm import relax

    from dlcfuzz.ops import get_op

    types = g.types()
    for k, a in g.constants.items():
        env[k] = relax.const(np.asarray(a), str(a.dtype))
    for n in g.nodes:
        args = [env[i] for i in n.inputs]
        if n.op == CALL_OP:
            call = bb.emit(relax.Call(callees.callee(bb, n.attrs["callee"]), args))
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


def _build_function(bb: Any, top: Graph, g: Graph, name: str, form: str, gvars: dict[str, Any],
                    private: bool = False) -> None:
    from tvm import relax

    params = [relax.Var(v.name, relax_type(v.type)) for v in g.inputs]
    env: dict[str, Any] = {v.name: p for v, p in zip(g.inputs, params)}
    with bb.function(name, params, private=private):
        with bb.dataflow():
            _emit_body(bb, g, env, _Callees(top, form, gvars))
            out = bb.emit_output(_output_expr(g, env))
        bb.emit_func_output(out)


def _local_function(top: Graph, fname: str, form: str, gvars: dict[str, Any]) -> Any:
    """Sub-function `fname` as a relax.Function value without a global symbol (fresh variables
    each time: a local function bound in two callers must not share its parameters)."""
    from tvm import relax

    bb = relax.BlockBuilder()
    _build_function(bb, top, top.functions[fname], fname, form, gvars, private=True)
    return bb.get()[fname]


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


def to_relax(g: Graph, form: str = "global") -> Any:
    """Return a tvm.IRModule whose "main" computes `g`; `form` (FORMS) says how sub-functions appear."""
    from tvm import relax

    if form not in FORMS:
        raise ValueError(f"unknown function form {form!r} (expected one of {FORMS})")
    bb = relax.BlockBuilder()
    gvars: dict[str, Any] = {}
    if form == "global":
        for fname in _call_order(g):
            _build_function(bb, g, g.functions[fname], fname, form, gvars)
            gvars[fname] = bb.get().get_global_var(fname)
    elif form == "returned":
        for fname in _call_order(g):
            local = _local_function(g, fname, form, gvars)
            maker = f"make_{fname}"
            with bb.function(maker, [], private=False):
                fv = bb.emit(local, name_hint=fname)
                bb.emit_func_output(fv)
            gvars[maker] = bb.get().get_global_var(maker)
    _build_function(bb, g, g, "main", form, gvars)
    return bb.get()
