"""Concrete confirmation: a standalone reproducer script (TVM public API + NumPy only) that
compiles both programs for target llvm, runs them on the counterexample's values and exits 1
when they disagree. The verifier runs that very script in a subprocess, so a reported
counterexample is exactly as confirmed as its reproducer (and a fault in the compiled code,
e.g. SIGFPE from a zero divisor the transformation introduced, cannot take the verifier down).

Expressions are compiled *staged*: every integer subterm is stored into a scratch buffer and read
back by its parent, so TVM's own simplifier, which runs again inside tvm.compile, cannot rewrite
the input the same (possibly wrong) way the transformation under test did.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlcfuzz.errors import Unsupported

_BINARY = ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "EQ", "NE", "LT", "LE", "GT",
           "GE", "And", "Or", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "LShift", "RShift")


def free_vars(e: Any) -> list[Any]:
    """Free TIR variables of an expression, in first-occurrence order (bound Let vars excluded)."""
    seen: dict[str, Any] = {}

    def walk(x: Any, bound: frozenset[str]) -> None:
        k = type(x).__name__
        if k == "Var":
            name = str(x.name)
            if name not in bound and name not in seen:
                seen[name] = x
        elif k in _BINARY:
            walk(x.a, bound)
            walk(x.b, bound)
        elif k in ("Not", "BitwiseNot"):
            walk(x.a, bound)
        elif k == "Select":
            for c in (x.condition, x.true_value, x.false_value):
                walk(c, bound)
        elif k == "Cast":
            walk(x.value, bound)
        elif k == "Let":
            walk(x.value, bound)
            walk(x.body, bound | {str(x.var.name)})
        elif k == "Call":
            for c in x.args:
                walk(c, bound)
    walk(e, frozenset())
    return list(seen.values())


def expr_source(e: Any) -> str:
    """Python source that rebuilds TIR expression e with node constructors (no constant folding)."""
    k = type(e).__name__
    if k == "Var":
        return str(e.name)
    if k == "IntImm":
        return f'tirx.IntImm("{e.ty}", {int(e.value)})'
    if k == "FloatImm":
        return f'tirx.FloatImm("{e.ty}", {float(e.value)!r})'
    if k in _BINARY:
        return f"tirx.{k}({expr_source(e.a)}, {expr_source(e.b)})"
    if k in ("Not", "BitwiseNot"):
        return f"tirx.{k}({expr_source(e.a)})"
    if k == "Select":
        return f"tirx.Select({expr_source(e.condition)}, {expr_source(e.true_value)}, {expr_source(e.false_value)})"
    if k == "Cast":
        return f'tirx.Cast("{e.ty}", {expr_source(e.value)})'
    if k == "Let":
        v = e.var
        return (f'(lambda {v.name}: tirx.Let({v.name}, {expr_source(e.value)}, {expr_source(e.body)}))'
                f'(tirx.Var("{v.name}", "{v.ty}"))')
    if k == "Call":
        op = str(e.op.name)
        args = ", ".join(expr_source(a) for a in e.args)
        if op.endswith("if_then_else"):
            return f"tirx.if_then_else({args})"
        if op.endswith("likely"):
            return f"tirx.likely({args})"
    raise Unsupported(f"cannot write TIR node {k} as source")


# The staged evaluator, written into every reproducer (so it needs nothing but TVM and NumPy).
_STAGED = '''
def staged_func(expr, params):
    """PrimFunc computing expr with every integer subterm stored to and reloaded from a scratch
    buffer: the simplifier inside tvm.compile sees one operation at a time."""
    stmts, bufs = [], {}

    def count(e):
        return 1 + sum(count(c) for c in getattr(e, "args", []) or []) + sum(
            count(getattr(e, f)) for f in ("a", "b", "value", "condition", "true_value", "false_value")
            if hasattr(e, f) and not isinstance(getattr(e, f), (int, float)))

    size = count(expr)

    def slot(dtype):
        if dtype not in bufs:
            bufs[dtype] = (tirx.decl_buffer((size,), dtype, name="tmp_" + dtype), 0)
        buf, n = bufs[dtype]
        bufs[dtype] = (buf, n + 1)
        return n

    def load(dtype, k):
        return tirx.BufferLoad(bufs[dtype][0], [tirx.IntImm("int32", k)])

    def store(body, dtype, k, value):
        body.append(tirx.BufferStore(bufs[dtype][0], value, [tirx.IntImm("int32", k)]))

    def stage(e, body):
        kind = type(e).__name__
        if kind in ("Var", "IntImm", "FloatImm"):
            return e
        if kind == "Call" and str(e.op.name).endswith("if_then_else"):
            c = stage(e.args[0], body)
            k = slot(str(e.ty))
            then_body, else_body = [], []
            store(then_body, str(e.ty), k, stage(e.args[1], then_body))
            store(else_body, str(e.ty), k, stage(e.args[2], else_body))
            body.append(tirx.IfThenElse(c, tirx.SeqStmt(then_body) if len(then_body) > 1 else then_body[0],
                                        tirx.SeqStmt(else_body) if len(else_body) > 1 else else_body[0]))
            return ("slot", str(e.ty), k)
        if kind in ("Not", "BitwiseNot"):
            new = type(e)(resolve(stage(e.a, body)))
        elif kind == "Select":
            new = tirx.Select(*(resolve(stage(x, body)) for x in (e.condition, e.true_value, e.false_value)))
        elif kind == "Cast":
            new = tirx.Cast(str(e.ty), resolve(stage(e.value, body)))
        elif kind == "Call" and str(e.op.name).endswith("likely"):
            return stage(e.args[0], body)
        elif hasattr(e, "a") and hasattr(e, "b"):
            new = type(e)(resolve(stage(e.a, body)), resolve(stage(e.b, body)))
        else:
            raise NotImplementedError(kind)
        if str(new.ty) == "bool":
            return new  # comparisons and logic stay inline: their operands are already opaque
        k = slot(str(new.ty))
        store(body, str(new.ty), k, new)
        return ("slot", str(new.ty), k)

    def resolve(v):
        return load(v[1], v[2]) if isinstance(v, tuple) else v

    result = resolve(stage(expr, stmts))
    out = tirx.decl_buffer((1,), "int64", name="out")
    stmts.append(tirx.BufferStore(out, tirx.Cast("int64", result), [tirx.IntImm("int32", 0)]))
    scratch = [bufs[dt][0] for dt in sorted(bufs)]
    body = tirx.SeqStmt(stmts) if len(stmts) > 1 else stmts[0]
    func = tirx.PrimFunc(list(params) + scratch + [out], body).with_attr("global_symbol", "main")
    return func, [(str(b.dtype), int(b.shape[0])) for b in scratch]


def run_staged(expr, params, values):
    func, scratch = staged_func(expr, params)
    lib = tvm.compile(tvm.IRModule({"main": func}), target="llvm")
    args = [values[str(p.name)] for p in params]
    args += [tvm.runtime.tensor(np.zeros(n, dtype=dt)) for dt, n in scratch]
    out = tvm.runtime.tensor(np.zeros(1, dtype="int64"))
    lib["main"](*args, out)
    return int(out.numpy()[0])
'''

_EXPR_TEMPLATE = '''"""{title}

Found by dlcfuzz verify (symbolic translation validation, refinement semantics).
{semantics}
Exit status 1: the two compiled programs disagree, or the compiled `before` differs from its
mathematical value (the counterexample is confirmed).
"""
import json
import sys

import numpy as np
import tvm
from tvm import tirx
{staged}

{var_defs}
before = {before}
{after_line}
print("before:", before, flush=True)
print("after: ", after, flush=True)
values = {values!r}
expected = {expected!r}  # the mathematical value of `before` (defined at these values)
got_before = run_staged(before, [{params}], values)
print("before computes", got_before, "(expected", expected, ")", flush=True)
got_after = run_staged(after, [{params}], values)
print("after computes ", got_after, flush=True)
print(json.dumps({{"before": got_before, "after": got_after, "expected": expected}}), flush=True)
# Confirmed when the two programs disagree, or when even the compiled `before` is wrong (tvm.compile
# runs the same simplifier on the staged input's comparisons).
sys.exit(1 if got_before != got_after or (expected is not None and got_before != expected) else 0)
'''

SEMANTICS_NOTE = ("At these values `before` is defined (no subterm overflows its dtype, no zero divisor), so\n"
                  "every correct rewrite must compute the same value.")


def expr_reproducer(before: Any, after: Any, values: Mapping[str, int], expected: int | None,
                    after_code: str | None, title: str, semantics: str = SEMANTICS_NOTE) -> str:
    """Script text. after_code rebuilds `after` from `before` with TVM (e.g. the simplifier call);
    without it the output expression is written out literally."""
    params = free_vars(before)
    names = {str(v.name) for v in params}
    params += [v for v in free_vars(after) if str(v.name) not in names]
    var_defs = "\n".join(f'{v.name} = tirx.Var("{v.name}", "{v.ty}")' for v in params)
    after_line = f"after = {after_code}" if after_code else f"after = {expr_source(after)}"
    return _EXPR_TEMPLATE.format(title=title, semantics=semantics, staged=_STAGED, var_defs=var_defs,
                                 before=expr_source(before), after_line=after_line,
                                 values={str(v.name): int(values.get(str(v.name), 0)) for v in params},
                                 expected=expected, params=", ".join(str(v.name) for v in params))


_STMT_TEMPLATE = '''"""{title}

Found by dlcfuzz verify (symbolic translation validation of a TIR pass, refinement semantics).
At these inputs the original function is defined (no overflow, no out-of-bounds access, no zero
divisor), so the transformed one must leave the same buffer contents.
Exit status 1: the two compiled functions disagree (the counterexample is confirmed).
"""
import json
import sys

import numpy as np
import tvm
from tvm.script import from_source

SOURCE = {source!r}
before = from_source(SOURCE)
mod = tvm.IRModule({{"main": before}})
{after_line}
print(before.script(), flush=True)
print(after.script(), flush=True)
scalars = {scalars!r}
buffers = {buffers!r}


def run(func):
    # The pass under test is disabled inside tvm.compile, so `before` is compiled without it.
    with tvm.transform.PassContext(disabled_pass={disabled!r}):
        lib = tvm.compile(tvm.IRModule({{"main": func}}), target="llvm")
    arrays = {{n: tvm.runtime.tensor(np.array(v, dtype="int32")) for n, v in buffers.items()}}
    lib["main"](*scalars, *arrays.values())
    return {{n: a.numpy().tolist() for n, a in arrays.items()}}


got_before = run(before)
print("before leaves", got_before, flush=True)
got_after = run(after)
print("after leaves ", got_after, flush=True)
print(json.dumps({{"before": got_before, "after": got_after}}), flush=True)
sys.exit(1 if got_before != got_after else 0)
'''


def stmt_reproducer(func: Any, pass_code: str, disabled: Sequence[str], scalars: Sequence[int],
                    buffers: Mapping[str, Sequence[int]], title: str) -> str:
    source = func.script()
    return _STMT_TEMPLATE.format(title=title, source=source, after_line=f"after = ({pass_code})(mod)['main']",
                                 scalars=list(scalars), buffers={k: list(v) for k, v in buffers.items()},
                                 disabled=list(disabled))


@dataclass
class Confirmation:
    confirmed: bool
    detail: str  # what the compiled programs did
    result: dict | None = None


def run_reproducer(script: str, timeout_s: float = 120.0) -> Confirmation:
    """Run a reproducer in a fresh interpreter; exit 1 or a fatal signal after `before` ran = confirmed."""
    try:
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Confirmation(False, f"reproducer timed out after {timeout_s:.0f} s")
    lines = p.stdout.strip().splitlines()
    result = None
    if lines and lines[-1].startswith("{"):
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = None
    if p.returncode == 1 and result is not None:
        return Confirmation(True, lines[-1], result)
    if p.returncode < 0 and any(ln.startswith(("before computes", "before leaves")) for ln in lines):
        return Confirmation(True, f"the transformed program dies with signal {-p.returncode}; original ran: "
                                  + " | ".join(lines[-2:]))
    if p.returncode == 0:
        return Confirmation(False, "compiled programs agree: " + (lines[-1] if lines else ""), result)
    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    return Confirmation(False, f"reproducer failed (exit {p.returncode}): {tail[:300]}")


_ERROR_TEMPLATE = '''"""{title}

Found by dlcfuzz verify: the transformation raises on an expression that is defined (no overflow,
no zero divisor) at {values}, where it evaluates to {expected}.
Exit status 1: the error is reproduced.
"""
import sys

import tvm
from tvm import tirx

{var_defs}
before = {before}
print("before:", before, flush=True)
try:
    after = {after_code}
except Exception as e:  # noqa: BLE001 - the error is the finding
    print("raises:", str(e).strip().splitlines()[-1], flush=True)
    sys.exit(1)
print("after: ", after, flush=True)
sys.exit(0)
'''


def error_reproducer(before: Any, after_code: str, values: Mapping[str, int], expected: int, title: str) -> str:
    params = free_vars(before)
    var_defs = "\n".join(f'{v.name} = tirx.Var("{v.name}", "{v.ty}")' for v in params)
    return _ERROR_TEMPLATE.format(title=title, values=dict(values), expected=expected, var_defs=var_defs,
                                  before=expr_source(before), after_code=after_code)
