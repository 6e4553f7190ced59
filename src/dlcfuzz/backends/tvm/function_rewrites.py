"""HirGen's three semantics-preserving function rewrites on a TVM Relax IRModule.

For a global function f (not main):
  (a) f becomes a local closure inside a new global g with f's parameters, which binds the
      closure and returns a call to it; calls to f become calls to g (and global f is removed
      when nothing else refers to it).
  (b) a new global g without parameters returns f as a function value; every call f(args)
      becomes fv = g(); fv(args).
  (c) a new global g with f's parameters returns the call f(params); calls to f elsewhere
      become calls to g.
Each rewrite leaves main's results unchanged: a mismatch after one is a compiler bug.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.relax.common import type_of

KINDS = ("a", "b", "c")


# apache-tvm 0.27 renamed struct_info to ty (lower/relax/common.type_of), Var.name_hint to name, Call.sinfo_args
# to ty_args.
def _var_name(v: Any) -> str:
    return v.name if hasattr(v, "name") else v.name_hint


def _type_args(call: Any) -> Any:
    return call.ty_args if hasattr(call, "ty_args") else call.sinfo_args


def _fresh_name(mod: Any, base: str) -> str:
    taken = {gv.name_hint for gv in mod.get_global_vars()}
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}{i}"
    return name


def _relax_function(mod: Any, fname: str) -> tuple[Any, Any]:
    from tvm import relax

    gv = mod.get_global_var(fname)
    func = mod[gv]
    if not isinstance(func, relax.Function):
        raise ValueError(f"{fname!r} is not a Relax function")
    return gv, func


def _fresh_params(func: Any) -> list[Any]:
    from tvm import relax

    return [relax.Var(_var_name(p), type_of(p)) for p in func.params]


def _new_global(name: str, params: list[Any], like: Any, body: Any) -> Any:
    """A function `name`(params) whose body `body(bb, params)` emits bindings and returns the result;
    public or private and pure or impure like `like`."""
    from tvm import relax

    bb = relax.BlockBuilder()
    private = like.attrs is None or "global_symbol" not in like.attrs
    with bb.function(name, params, private=private, pure=bool(type_of(like).purity)):
        bb.emit_func_output(body(bb, params))
    return bb.get()[name]


def _local(func: Any) -> Any:
    """`func` as a local function value: fresh variables, no global symbol."""
    from tvm import relax

    local = relax.utils.copy_with_new_vars(func)
    if local.attrs is not None and "global_symbol" in local.attrs:
        local = local.without_attr("global_symbol")
    return local


def _redirect(mod: Any, old: Any, new: Any, *, returned: bool, skip: tuple[Any, ...]) -> Any:
    """Every call old(args) in the Relax functions of `mod` (but those in `skip`) becomes
    new(args), or, when `returned`, fv = new(); fv(args)."""
    from tvm import relax
    from tvm.relax.expr_functor import PyExprMutator, mutator

    @mutator
    class Redirect(PyExprMutator):
        def visit_call_(self, call: Any) -> Any:
            call = super().visit_call_(call)
            if not (isinstance(call.op, relax.GlobalVar) and call.op.same_as(old)):
                return call
            op = self.builder_.emit(relax.Call(new, []), name_hint=f"{old.name_hint}_fn") if returned else new
            return relax.Call(op, call.args, call.attrs, _type_args(call), call.span)

    r = Redirect(mod)
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function) and not any(gv.same_as(s) for s in skip):
            r.builder_.update_func(gv, r.visit_expr(func))
    return r.builder_.get()


def _refers_to(mod: Any, gv: Any) -> bool:
    from tvm import relax

    for other, func in mod.functions.items():
        if isinstance(func, relax.Function) and not other.same_as(gv):
            if any(v.same_as(gv) for v in relax.analysis.all_global_vars(func)):
                return True
    return False


def _add(mod: Any, name: str, func: Any) -> tuple[Any, Any]:
    from tvm import relax

    bb = relax.BlockBuilder(mod)
    gv = bb.add_func(func, name)
    return bb.get(), gv


def rewrite_a(mod: Any, fname: str) -> Any:
    """(a) f becomes the local closure of a new global g(params) = f_local(params)."""
    import tvm
    from tvm import relax

    f_gv, f = _relax_function(mod, fname)
    gname = _fresh_name(mod, f"{fname}_closure")

    def body(bb: Any, params: list[Any]) -> Any:
        fv = bb.emit(_local(f), name_hint=fname)
        return bb.emit(relax.Call(fv, params))

    mod, g_gv = _add(mod, gname, _new_global(gname, _fresh_params(f), f, body))
    mod = _redirect(mod, f_gv, g_gv, returned=False, skip=(g_gv,))
    if not _refers_to(mod, f_gv):
        mod = tvm.IRModule({gv: fn for gv, fn in mod.functions.items() if not gv.same_as(f_gv)}, attrs=mod.attrs)
    return mod


def rewrite_b(mod: Any, fname: str) -> Any:
    """(b) a new global g() returns f; every call f(args) becomes g()(args)."""
    f_gv, f = _relax_function(mod, fname)
    gname = _fresh_name(mod, f"{fname}_getter")
    mod, g_gv = _add(mod, gname, _new_global(gname, [], f, lambda bb, params: f_gv))
    return _redirect(mod, f_gv, g_gv, returned=True, skip=(g_gv,))


def rewrite_c(mod: Any, fname: str) -> Any:
    """(c) a new global g(params) returns f(params); calls to f elsewhere become calls to g."""
    from tvm import relax

    f_gv, f = _relax_function(mod, fname)
    gname = _fresh_name(mod, f"{fname}_wrapper")

    def body(bb: Any, params: list[Any]) -> Any:
        return bb.emit(relax.Call(f_gv, params))

    mod, g_gv = _add(mod, gname, _new_global(gname, _fresh_params(f), f, body))
    return _redirect(mod, f_gv, g_gv, returned=False, skip=(g_gv,))


REWRITES = {"a": rewrite_a, "b": rewrite_b, "c": rewrite_c}


def rewritable(mod: Any) -> list[str]:
    """Names of the global Relax functions a rewrite may pick: all but main, sorted."""
    from tvm import relax

    return sorted(gv.name_hint for gv, f in mod.functions.items()
                  if isinstance(f, relax.Function) and gv.name_hint != "main")


def apply_rewrite(mod: Any, kind: str, rng_or_seed: np.random.Generator | int) -> Any:
    """Apply rewrite `kind` ("a", "b" or "c") to a random non-main global Relax function of `mod`
    (unchanged when there is none)."""
    if kind not in REWRITES:
        raise ValueError(f"unknown function rewrite {kind!r} (expected one of {KINDS})")
    rng = rng_or_seed if isinstance(rng_or_seed, np.random.Generator) else np.random.default_rng(rng_or_seed)
    names = rewritable(mod)
    if not names:
        return mod
    return REWRITES[kind](mod, names[int(rng.integers(len(names)))])
