"""Graph -> TVM Relax IRModule, built with the BlockBuilder.

Sub-functions become global Relax functions, local functions (closures) bound in their callers,
or local functions returned by global makers (`form`), and call nodes become calls to them.
Each operator's Relax lowering is a rule registered against its name in this package's family
modules (elementwise.py, nn.py, shape.py, reduce.py, quant.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from dlcfuzz.errors import DlcfuzzError, LoweringGap
from dlcfuzz.ir.graph import CALL_OP, Graph, Node
from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_type, type_of
from dlcfuzz.ops.regions import REGION_OPS

RELAX = target("relax")
WRITTEN_FOR = "0.27."  # the apache-tvm release the rules are written and tested against (pyproject's pin)


FORMS = ("global", "closure", "returned")


class _Callees:
    """How a function body reaches the sub-functions it calls, per form.

    global:   a call to the GlobalVar.
    closure:  the callee is bound as a local function (a relax.Function value) at the start of the
              caller's body, in an ordinary binding block before its dataflow block, then called
              through that variable. (Bound inside the dataflow block, a local function makes
              FuseOps fail with "it_creator != group2func_.end()" in apache-tvm 0.27: a known bug
              that would stop every closure test short of the passes after it.)
    returned: a global `make_<callee>` without parameters returns the callee as a local function;
              the caller binds `fv = make_<callee>()` (a pure call, in its dataflow block) and
              calls `fv(args)`.
    """

    def __init__(self, g: Graph, form: str, gvars: dict[str, Any]) -> None:
        self.g = g
        self.form = form
        self.gvars = gvars
        self.bound: dict[str, Any] = {}  # callee -> the variable holding it in the current body

    def bind_closures(self, bb: Any, g: Graph) -> None:
        """Closure form: bind every callee of `g` as a local function, in first-call order."""
        if self.form != "closure":
            return
        for n in g.nodes:
            if n.op == CALL_OP:
                self.callee(bb, n.attrs["callee"])

    def callee(self, bb: Any, name: str) -> Any:
        from tvm import relax

        if self.form == "global":
            return self.gvars[name]
        if name not in self.bound:
            if self.form == "closure":
                value = _local_function(bb, self.g, name, self.form, self.gvars)
            else:
                value = relax.Call(self.gvars[f"make_{name}"], [])
            self.bound[name] = bb.emit(value, name_hint=name if self.form == "closure" else f"{name}_fn")
        return self.bound[name]


def _reaches_an_operator(bb: Any, op: str, exprs: list[Any], operands: list[Any]) -> bool:
    """Whether a call among `exprs` of the Relax operator named like `op` (relax.nn.max_pool1d for
    max_pool1d, relax.subtract for sub) takes every one of `operands` unchanged: then that operator's own
    type inference saw the node's inputs as they are. A decomposition of ours (a pool as slices and
    maxima, a cast before the operator) hides a broken input from TVM."""
    import tvm
    from tvm import relax

    for e in exprs:
        for _ in range(4):  # a rule may emit the call itself and return its variable (or a tuple item of it)
            if isinstance(e, relax.TupleGetItem):
                e = e.tuple_value
            elif isinstance(e, relax.Var) and (b := bb.lookup_binding(e)) is not None:
                e = b
            else:
                break
        if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op) and op in e.op.name.rsplit(".", 1)[-1]:
            args = [x for a in e.args for x in (a.fields if isinstance(a, relax.Tuple) else [a])]
            if all(any(a.same_as(o) for a in args) for o in operands):
                return True
    return False


def _emit_body(bb: Any, g: Graph, env: dict[str, Any], callees: _Callees, checked: Collection[str] = (),
               nodes: list[Node] | None = None) -> None:
    """`checked`: outputs of nodes that must reach a Relax operator with their inputs unchanged (the broken
    node of a disruptive test), or LoweringGap: the front door would be our lowering, not TVM. `nodes`: a
    run of `g`'s nodes (between regions) instead of all of them."""
    from tvm import relax

    from dlcfuzz.ops import get_op

    types = g.types()
    for k, a in g.constants.items():
        env.setdefault(k, relax.const(np.asarray(a), str(a.dtype)))
    for n in g.nodes if nodes is None else nodes:
        args = [env[i] for i in n.inputs]
        if n.op == CALL_OP:
            call = bb.emit(relax.Call(callees.callee(bb, n.attrs["callee"]), args))
            if len(n.outputs) == 1:
                env[n.outputs[0].name] = call
            else:
                for i, v in enumerate(n.outputs):
                    env[v.name] = bb.emit(relax.TupleGetItem(call, i))
            continue
        try:
            exprs = RELAX.rule(n.op)(get_op(n.op), bb, args, [v.name for v in n.outputs], n.attrs,
                                     [types[i] for i in n.inputs], [v.type for v in n.outputs])
            if any(v.name in checked for v in n.outputs) and not _reaches_an_operator(
                    bb, n.op, list(exprs), [env[i] for i in dict.fromkeys(n.inputs)]):
                raise LoweringGap(f"our Relax lowering of {n.op} does not hand its inputs to one Relax operator "
                                  "unchanged: a broken rule would be ours to check, not TVM's")
            for v, e in zip(n.outputs, exprs, strict=True):
                env[v.name] = bb.emit(e) if not isinstance(e, relax.Var) else e
        except DlcfuzzError:
            raise
        except Exception as e:
            gap = _release_gap(n.op, e)
            if gap is None:
                raise
            raise gap from e


def _release_gap(op: str, e: Exception) -> LoweringGap | None:
    """What a rule's failure to build is: on another apache-tvm release than the rules are written for, that
    release's refusal of the rule's Relax form (an older release's op checks and API differ) is a gap of that
    release, never an internal error (issue 36); None on the release they are written for: ours to fix."""
    import tvm

    if str(tvm.__version__).startswith(WRITTEN_FOR):
        return None
    last = (str(e).strip().splitlines() or [""])[-1][:200]
    return LoweringGap(f"apache-tvm {tvm.__version__} does not take our Relax lowering of {op} "
                       f"({type(e).__name__}: {last})")


def _output_expr(g: Graph, env: dict[str, Any]) -> Any:
    from tvm import relax

    if len(g.outputs) == 1:
        return env[g.outputs[0]]
    return relax.Tuple([env[o] for o in g.outputs])


def _build_function(bb: Any, top: Graph, g: Graph, name: str, form: str, gvars: dict[str, Any],
                    private: bool = False, checked: Collection[str] = ()) -> None:
    from tvm import relax

    params = [relax.Var(v.name, relax_type(v.type)) for v in g.inputs]
    env: dict[str, Any] = {v.name: p for v, p in zip(g.inputs, params)}
    callees = _Callees(top, form, gvars)
    with bb.function(name, params, private=private):
        callees.bind_closures(bb, g)
        if not any(n.op in REGION_OPS for n in g.nodes):
            with bb.dataflow():
                _emit_body(bb, g, env, callees, checked)
                out = bb.emit_output(_output_expr(g, env))
        else:  # a region cannot sit in a dataflow block: the runs of nodes between regions are blocks of their own
            _emit_split(bb, g, env, callees, checked)
            out = _output_expr(g, env)
        bb.emit_func_output(out)


def _emit_split(bb: Any, g: Graph, env: dict[str, Any], callees: _Callees, checked: Collection[str]) -> None:
    """`g`'s nodes with each region (relax.If) outside dataflow blocks and each run of nodes between them in a
    dataflow block, whose values read after it leave it as its outputs."""
    runs: list[list[Node]] = [[]]
    for n in g.nodes:
        if n.op in REGION_OPS:
            runs += [[n], []]
        else:
            runs[-1].append(n)
    for k, run in enumerate(runs):
        if not run:
            continue
        if run[0].op in REGION_OPS:
            _emit_body(bb, g, env, callees, checked, nodes=run)
            continue
        later = {i for r in runs[k + 1:] for n in r for i in n.inputs} | set(g.outputs)
        with bb.dataflow():
            _emit_body(bb, g, env, callees, checked, nodes=run)
            for v in (v for n in run for v in n.outputs if v.name in later):
                env[v.name] = bb.emit_output(env[v.name])


_BRANCHES = itertools.count()


@RELAX.register("if")
def _if(spec: Any, bb: Any, args: list[Any], outs: list[str], attrs: dict, in_types: Any, out_types: Any) -> list[Any]:
    """relax.If whose branches call global functions of the branches (built in a scratch builder over
    the module so far, then moved into it under the same GlobalVars, with the PrimFuncs their operators
    emitted, as _local_function does)."""
    from tvm import relax

    cond = args[0] if in_types[0].rank == 0 else bb.emit(relax.op.reshape(args[0], ()))
    branches = []
    for attr in ("then_branch", "else_branch"):
        body = attrs[attr]
        before = bb.get()
        known = {gv.name_hint for gv in before.functions}
        # a name this process never gave: the builder renames one its name table already holds (a function of
        # the lowering so far, or of another lowering), and the call would reach that one
        name = f"{attr}_{next(_BRANCHES)}"
        scratch = relax.BlockBuilder(before)
        # public: a private function equal to one already in the module (two branches alike) would be merged
        # into it under the other's name
        _build_function(scratch, body, body, name, "global", {}, private=False)
        built = scratch.get()
        for gv, func in built.functions.items():  # the same GlobalVars: the branch calls its PrimFuncs by them
            if gv.name_hint not in known:
                bb.update_func(gv, func)
        branches.append(relax.SeqExpr([], relax.Call(built.get_global_var(name), args[1:])))
    result = bb.emit(relax.If(cond, branches[0], branches[1]))
    return [result] if len(outs) == 1 else [relax.TupleGetItem(result, k) for k in range(len(outs))]


def _local_function(into: Any, top: Graph, fname: str, form: str, gvars: dict[str, Any]) -> Any:
    """Sub-function `fname` as a relax.Function value without a global symbol (fresh variables
    each time: a local function bound in two callers must not share its parameters). It is built in
    a scratch builder over `into`'s module; the PrimFuncs its operators emit there (emit_te: DFT's
    TOPI kernel) move into `into` under the same GlobalVars, which the local function calls."""
    from tvm import relax

    before = into.get()
    known = {gv.name_hint for gv in before.functions}
    bb = relax.BlockBuilder(before)
    _build_function(bb, top, top.functions[fname], fname, form, gvars, private=True)
    built = bb.get()
    for gv, func in built.functions.items():
        if gv.name_hint != fname and gv.name_hint not in known:
            into.update_func(gv, func)
    return built[fname]



def to_relax(g: Graph, form: str = "global", checked: Collection[str] = ()) -> Any:
    """Return a tvm.IRModule whose "main" computes `g`; `form` (FORMS) says how sub-functions appear;
    `checked`: outputs of main's nodes that must reach a Relax operator unchanged (see _emit_body)."""
    from tvm import relax

    if form not in FORMS:
        raise ValueError(f"unknown function form {form!r} (expected one of {FORMS})")
    bb = relax.BlockBuilder()
    gvars: dict[str, Any] = {}
    if form == "global":
        for fname in g.call_order():
            _build_function(bb, g, g.functions[fname], fname, form, gvars)
            gvars[fname] = bb.get().get_global_var(fname)
    elif form == "returned":
        for fname in g.call_order():
            local = _local_function(bb, g, fname, form, gvars)
            maker = f"make_{fname}"
            with bb.function(maker, [], private=False):
                fv = bb.emit(local, name_hint=fname)
                bb.emit_func_output(fv)
            gvars[maker] = bb.get().get_global_var(maker)
    _build_function(bb, g, g, "main", form, gvars, checked=checked)
    return bb.get()


CONST_MARK = "dlcfuzz_const_"


def constant_data(c: Any) -> Any:
    """The tensor of a Relax constant (apache-tvm <= 0.25 calls it `.data`)."""
    return c.value if hasattr(c, "value") else c.data


def map_constants(mod: Any, fn: Callable[[Any], Any]) -> Any:
    """`mod` with every Relax constant `c` of its Relax functions replaced by `fn(c)`."""
    from tvm import relax
    from tvm.relax.expr_functor import PyExprMutator, mutator

    @mutator
    class Replace(PyExprMutator):
        def visit_generic_const_(self, c: Any) -> Any:
            return fn(c)

        def visit_constant_(self, c: Any) -> Any:  # apache-tvm <= 0.25
            return fn(c)

    m = Replace(mod)
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            m.builder_.update_func(gv, m.visit_expr(func))
    return m.builder_.get()


def to_script(mod: Any, prefix: str = "") -> tuple[str, dict[str, np.ndarray]]:
    """TVMScript of `mod` that parses back without metadata: each Relax constant is printed as
    `R.const(CONSTS["<prefix><i>"], "<dtype>")` and its data returned under that key. (Printing
    constants otherwise needs show_meta, whose JSON export crashes on apache-tvm 0.27.)
    Parse it with from_script(source, arrays)."""
    import re

    from tvm import relax

    arrays: dict[str, np.ndarray] = {}

    def mark(c: Any) -> Any:
        name = f"{prefix}{len(arrays)}"
        arrays[name] = constant_data(c).numpy()
        return relax.Var(CONST_MARK + name, type_of(c))

    source = map_constants(mod, mark).script()
    # the printer declares free variables (our markers) as annotations at the top of a function
    source = re.sub(rf"(?m)^[ \t]*{CONST_MARK}\w+: .*\n", "", source)
    source = re.sub(rf"\b{CONST_MARK}(\w+)\b",
                    lambda mt: f'R.const(CONSTS["{mt.group(1)}"], "{arrays[mt.group(1)].dtype}")', source)
    # the printer writes a non-finite float attribute as a string (`pad_value="-inf"`), which the
    # parser rejects: a reproducer would fail to parse and "reproduce" any error
    source = re.sub(r'=\s*"(-?inf|nan)"', r'=float("\1")', source)
    return source, arrays


def from_script(source: str, arrays: dict[str, np.ndarray]) -> Any:
    """The IRModule of a to_script() result."""
    import tvm
    from tvm.script import ir as I  # noqa: N812
    from tvm.script import relax as R  # noqa: N812

    try:
        from tvm.script import tirx as T  # noqa: N812
    except ImportError:  # apache-tvm <= 0.25
        from tvm.script import tir as T  # noqa: N812
    return tvm.script.from_source(source, extra_vars={"I": I, "R": R, "T": T, "CONSTS": arrays})


# the rules register themselves on import (after the names above)
from dlcfuzz.lower.relax import (  # noqa: E402, F401
    attention,
    control,
    data_shape,
    elementwise,
    indexing,
    linalg,
    loss,
    meta,
    nn,
    normalization,
    ordering,
    quant,
    quant_integer,
    recurrent,
    reduce,
    reduce_lp,
    shape,
    spatial,
    spectral,
)
