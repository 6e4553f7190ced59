"""In-memory TIR mutation: a node table, holes with their constraints, a generator and the mutators.

A *hole* is a position in a PrimFunc's body (a path of slots from the body) with the constraints
a replacement must satisfy: statement or expression, dtype, the scalar variables in scope (loop,
Bind, Let and thread variables with their ranges), the buffers in scope, and whether it lies in a
parallel context (parallel/vectorized loop, virtual thread) where a store or a cross-iteration load
would race.

Every mutant must stay defined behaviour, otherwise the result-inconsistency oracle reports
undefined behaviour rather than compiler bugs. The rules the generator follows for that:
- loads index in bounds (a constant, a loop variable whose range fits, or `floormod(e, extent)`);
- integer division and remainder divide by a guarded divisor, shifts shift by `floormod(b, 4)`;
- integer multiplication has a small constant operand (no signed overflow in bounded expressions);
- no float-to-integer casts (out-of-range or NaN conversions are poison in LLVM);
- generated stores write float buffers only (integer buffers are never accumulated into), never
  inside a parallel context;
- a loop becomes parallel, vectorized or a virtual thread only when its iterations are independent
  (every access to a buffer it writes uses one index tuple that contains the loop variable).
Loads of buffers allocated by the seed itself (possibly uninitialized where the hole is) are never
generated; buffers the memory mutator allocates are initialized right after their allocation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

ARITH = ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max")
COMPARE = ("EQ", "NE", "LT", "LE", "GT", "GE")
LOGIC = ("And", "Or")
BITWISE = ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LShift", "RShift")
SHIFTS = ("LShift", "RShift")  # the shift amount is guarded to stay below the bit width
BINARY = ARITH + COMPARE + LOGIC + BITWISE
FLOAT_ARITH = ("Add", "Sub", "Mul", "Div", "Min", "Max")
INT_ARITH = ("Add", "Sub", "Mul", "Min", "Max", "FloorDiv", "FloorMod", "Div", "Mod") + BITWISE
DIVISIONS = ("Div", "Mod", "FloorDiv", "FloorMod")

# Intrinsics called through `call_intrin` by name with the signature below: argument kinds and the
# result kind ("f" float, "i" integer, "b" bool). The op helpers (tirx.exp, ...) constant-fold and
# check; call_intrin does not, so the generator casts every argument to the signature's dtype.
INTRINSICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    **{n: (f"tirx.{n}", ("f",), "f") for n in (
        "exp", "exp2", "exp10", "log", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
        "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "sigmoid", "floor",
        "trunc", "round", "nearbyint", "fabs")},
    "log2": ("prim.log2", ("f",), "f"),
    "ceil": ("prim.ceil", ("f",), "f"),
    **{n: (f"tirx.{n}", ("f", "f"), "f") for n in ("pow", "hypot", "copysign", "nextafter", "atan2")},
    "ldexp": ("tirx.ldexp", ("f", "i"), "f"),
    "isnan": ("tirx.isnan", ("f",), "b"),
    "popcount": ("tirx.popcount", ("i",), "i"),
}
# Left out: `fmod`, which LLVM codegen does not know ("unknown intrinsic tirx.fmod", any float dtype),
# and `likely` (prim.likely) reaches LLVM codegen as "unknown intrinsic" unless LoopPartition
# removed it first (a TVM 0.27 bug found by this fuzzer; README "Low-level IR (Tzer)"), so every
# test using it would be invalid in the lowest configuration.
BY_OP = {op: name for name, (op, _, _) in INTRINSICS.items()}
FOR_KINDS = {"serial": tirx.ForKind.SERIAL, "parallel": tirx.ForKind.PARALLEL,
             "vectorized": tirx.ForKind.VECTORIZED, "unrolled": tirx.ForKind.UNROLLED}
OUR_BUFFER = "dlc_"  # prefix of buffers the memory mutator allocates (initialized, so loadable)
MAX_VECTOR = 64


def dtype_of(e: Any) -> str:
    """A TIR expression's dtype: `PrimExpr.ty.dtype` on apache-tvm 0.27, `PrimExpr.dtype` on 0.25."""
    ty = getattr(e, "ty", None)
    return str(ty.dtype if ty is not None else e.dtype)


def kind_of(dtype: str) -> str:
    return "b" if dtype == "bool" else ("f" if dtype.startswith(("float", "bfloat")) else "i")


def node_kind(node: Any) -> str:
    return type(node).__name__


# ---- the node table: slots, rebuild -----------------------------------------

def slots(node: Any) -> list[str]:
    """Every child slot of a node (expression and statement children; "field.i" for list items)."""
    t = node_kind(node)
    if t in BINARY:
        return ["a", "b"]
    if t in ("Not", "BitwiseNot"):
        return ["a"]
    if t == "Select":
        return ["condition", "true_value", "false_value"]
    if t == "Cast":
        return ["value"]
    if t == "Call":
        return [f"args.{i}" for i in range(len(node.args))]
    if t == "TensorLoad":
        return [f"indices.{i}" for i in range(len(node.indices))]
    if t == "Let":
        return ["value", "body"]
    if t == "Ramp":
        return ["base", "stride"]
    if t == "Broadcast":
        return ["value"]
    if t == "For":
        return ["min", "extent", "body"]
    if t == "IfThenElse":
        return ["condition", "then_case"] + (["else_case"] if node.else_case is not None else [])
    if t == "SeqStmt":
        return [f"seq.{i}" for i in range(len(node.seq))]
    if t == "BufferStore":
        return ["value"] + [f"indices.{i}" for i in range(len(node.indices))]
    if t in ("Evaluate", "Bind"):
        return ["value"]
    if t == "AttrStmt":
        return ["value", "body"]
    if t == "While":
        return ["condition", "body"]
    return []


# Slots a mutation may rewrite; the others (indices, loop bounds, bound values) carry the
# in-bounds guarantees of the program and are only changed by the domain mutators.
MUTABLE = {"a", "b", "condition", "true_value", "false_value", "value", "body", "then_case", "else_case", "seq", "args"}


def mutable_slot(node: Any, slot: str) -> bool:
    t = node_kind(node)
    if t in ("Bind", "Evaluate", "AttrStmt", "While", "Let") and slot in ("value", "condition"):
        return False
    if t in ("Ramp", "Broadcast"):
        return False
    return slot.split(".")[0] in MUTABLE


def get(node: Any, slot: str) -> Any:
    name, _, i = slot.partition(".")
    v = getattr(node, name)
    return v[int(i)] if i else v


def with_slot(node: Any, slot: str, new: Any) -> Any:
    """The node with one child replaced (a new node; TIR nodes are immutable)."""
    name, _, i = slot.partition(".")
    f = fields(node)
    if i:
        f[name] = list(f[name])
        f[name][int(i)] = new
    else:
        f[name] = new
    return rebuild(node, f)


def fields(node: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in slots(node):
        name = s.split(".")[0]
        if name not in out:
            v = getattr(node, name)
            out[name] = list(v) if "." in s else v
    return out


def rebuild(node: Any, f: dict[str, Any]) -> Any:
    t = node_kind(node)
    if t in BINARY:
        return getattr(tirx, t)(f["a"], f["b"])
    if t in ("Not", "BitwiseNot"):
        return getattr(tirx, t)(f["a"])
    if t == "Select":
        return tirx.Select(f["condition"], f["true_value"], f["false_value"])
    if t == "Cast":
        return tirx.Cast(dtype_of(node), f["value"])
    if t == "Call":
        return tirx.call_intrin(dtype_of(node), node.op, *f.get("args", list(node.args)))
    if t == "TensorLoad":
        return tirx.BufferLoad(node.source, f.get("indices", list(node.indices)))
    if t == "Let":
        return tirx.Let(node.var, f["value"], f["body"])
    if t == "Ramp":
        return tirx.Ramp(f["base"], f["stride"], node.lanes)
    if t == "Broadcast":
        return tirx.Broadcast(f["value"], node.lanes)
    if t == "For":
        return tirx.For(node.loop_var, f["min"], f["extent"], node.kind, f["body"], node.thread_binding,
                        node.annotations)
    if t == "IfThenElse":
        return tirx.IfThenElse(f["condition"], f["then_case"], f.get("else_case"))
    if t == "SeqStmt":
        return seq(f["seq"])
    if t == "BufferStore":
        return tirx.BufferStore(node.buffer, f["value"], f.get("indices", list(node.indices)))
    if t == "Evaluate":
        return tirx.Evaluate(f["value"])
    if t == "Bind":
        return tirx.Bind(node.var, f["value"])
    if t == "AttrStmt":
        return tirx.AttrStmt(node.node, node.attr_key, f["value"], f["body"])
    if t == "While":
        return tirx.While(f["condition"], f["body"])
    return node


def seq(stmts: list[Any]) -> Any:
    """A statement list: flattened one level, a single statement as itself, none as a no-op."""
    flat: list[Any] = []
    for s in stmts:
        flat.extend(s.seq if node_kind(s) == "SeqStmt" else [s])
    if not flat:
        return tirx.Evaluate(tirx.IntImm("int32", 0))
    return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat)


def at(root: Any, path: tuple[str, ...]) -> Any:
    for s in path:
        root = get(root, s)
    return root


def replace_at(root: Any, path: tuple[str, ...], new: Any) -> Any:
    if not path:
        return new
    return with_slot(root, path[0], replace_at(get(root, path[0]), path[1:], new))


def walk(node: Any, visit: Callable[[Any], None]) -> None:
    """Pre-order visit of every node reachable through the slot table."""
    stack = [node]
    while stack:
        n = stack.pop()
        visit(n)
        stack.extend(get(n, s) for s in reversed(slots(n)))


def substitute(node: Any, var: Any, value: Any) -> Any:
    """Replace every use of scalar `var` by `value` (raises if an opaque node mentions it)."""
    if node_kind(node) == "Var":
        return value if node.same_as(var) else node
    if node_kind(node) == "AssertStmt":
        raise ValueError("cannot substitute into AssertStmt")
    out = node
    for s in slots(node):
        c = get(out, s)
        n = substitute(c, var, value)
        if not n.same_as(c):
            out = with_slot(out, s, n)
    return out


def uses_var(node: Any, var: Any) -> bool:
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        if node_kind(n) == "Var" and n.same_as(var):
            found = True
        if node_kind(n) == "TensorLoad" and n.source.same_as(var):
            found = True
        if node_kind(n) == "BufferStore" and n.buffer.same_as(var):
            found = True
    walk(node, visit)
    return found


def kinds_histogram(node: Any) -> dict[str, int]:
    hist: dict[str, int] = {}

    def visit(n: Any) -> None:
        k = node_kind(n)
        hist[k] = hist.get(k, 0) + 1
    walk(node, visit)
    return hist


# ---- holes ------------------------------------------------------------------

@dataclass(frozen=True)
class ScalarVar:
    var: Any
    lo: int | None  # known constant range [lo, hi] (None: symbolic)
    hi: int | None


@dataclass
class Scope:
    vars: list[ScalarVar] = field(default_factory=list)
    buffers: list[Any] = field(default_factory=list)  # loadable and storable buffers (params and ours)
    parallel: bool = False  # inside a parallel/vectorized loop or a virtual thread
    written_in_parallel: tuple[Any, ...] = ()  # buffers stored to inside the enclosing parallel body
    loops: tuple[Any, ...] = ()  # enclosing For nodes, outermost first

    def extend(self, **kw: Any) -> Scope:
        return replace(self, **kw)


@dataclass
class Hole:
    path: tuple[str, ...]
    stmt: bool
    dtype: str | None
    scope: Scope
    node: Any
    parent: Any = None


def static_shape(buf: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(d) for d in buf.shape)
    except (TypeError, ValueError):
        return None


def _const(e: Any) -> int | None:
    return int(e.value) if node_kind(e) == "IntImm" else None


def stored_buffers(node: Any) -> list[Any]:
    out: list[Any] = []

    def visit(n: Any) -> None:
        if node_kind(n) == "BufferStore" and not any(b.same_as(n.buffer) for b in out):
            out.append(n.buffer)
    walk(node, visit)
    return out


def param_buffers(func: Any) -> list[Any]:
    return [p for p in func.params if hasattr(p, "shape") and static_shape(p) is not None]  # not plain Vars


def holes(func: Any) -> list[Hole]:
    """Every mutable position of the body with its constraints."""
    params = param_buffers(func)
    scalars = [ScalarVar(p, None, None) for p in func.params if not hasattr(p, "shape")]
    out: list[Hole] = []
    _walk_stmt(func.body, (), Scope(vars=scalars, buffers=params), out, None)
    return out


def _walk_stmt(s: Any, path: tuple[str, ...], scope: Scope, out: list[Hole], parent: Any) -> None:
    out.append(Hole(path, True, None, scope, s, parent))
    t = node_kind(s)
    if t == "SeqStmt":
        cur = scope
        pending = None  # our buffer becomes loadable after the loop that initializes it (the next statement)
        for i, c in enumerate(s.seq):
            _walk_stmt(c, path + (f"seq.{i}",), cur, out, s)
            ck = node_kind(c)
            if pending is not None:
                if any(pending.same_as(b) for b in stored_buffers(c)):
                    cur = cur.extend(buffers=cur.buffers + [pending])
                pending = None
            if ck == "Bind":
                cur = cur.extend(vars=cur.vars + [ScalarVar(c.var, _const(c.value), _const(c.value))])
            elif ck in ("AllocBuffer", "DeclBuffer") and c.buffer.name.startswith(OUR_BUFFER):
                pending = c.buffer
    elif t == "For":
        lo, ext = _const(s.min), _const(s.extent)
        var = ScalarVar(s.loop_var, lo, lo + ext - 1 if lo is not None and ext is not None else None)
        par = s.kind in (tirx.ForKind.PARALLEL, tirx.ForKind.VECTORIZED)
        inner = scope.extend(vars=scope.vars + [var], loops=scope.loops + (s,), parallel=scope.parallel or par,
                             written_in_parallel=tuple(stored_buffers(s.body)) + scope.written_in_parallel
                             if par else scope.written_in_parallel)
        _walk_stmt(s.body, path + ("body",), inner, out, s)
    elif t == "IfThenElse":
        # A condition guarding memory accesses stays: it may keep an index in bounds (padding) or
        # initialize a buffer the seed allocated before later reads.
        if not _accesses(s.then_case) and not (s.else_case is not None and _accesses(s.else_case)):
            _walk_expr(s.condition, path + ("condition",), scope, out, s)
        _walk_stmt(s.then_case, path + ("then_case",), scope, out, s)
        if s.else_case is not None:
            _walk_stmt(s.else_case, path + ("else_case",), scope, out, s)
    elif t == "BufferStore":
        _walk_expr(s.value, path + ("value",), scope, out, s)
    elif t == "AttrStmt":
        inner = scope
        if node_kind(s.node) == "IterVar":
            ext = _const(s.value)
            inner = scope.extend(vars=scope.vars + [ScalarVar(s.node.var, 0, ext - 1 if ext else None)],
                                 parallel=True, written_in_parallel=tuple(stored_buffers(s.body)) + scope.written_in_parallel)
        _walk_stmt(s.body, path + ("body",), inner, out, s)


def _walk_expr(e: Any, path: tuple[str, ...], scope: Scope, out: list[Hole], parent: Any) -> None:
    out.append(Hole(path, False, dtype_of(e), scope, e, parent))
    t = node_kind(e)
    if t == "TensorLoad":
        return  # indices keep their in-bounds guarantee
    if t == "Let":
        _walk_expr(e.value, path + ("value",), scope, out, e)
        _walk_expr(e.body, path + ("body",), scope.extend(vars=scope.vars + [ScalarVar(e.var, None, None)]), out, e)
        return
    guard = _guards_access(e)
    # an integer divisor or a shift amount keeps its guard (1 + floormod(b, 7), floormod(b, 4))
    keep_b = (t in DIVISIONS and kind_of(dtype_of(e)) == "i") or t in SHIFTS
    for s in slots(e):
        if keep_b and s == "b":
            continue
        if mutable_slot(e, s) and not (guard and s in ("condition", "args.0")):
            _walk_expr(get(e, s), path + (s,), scope, out, e)


def _accesses(node: Any) -> bool:
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        found = found or node_kind(n) in ("TensorLoad", "BufferStore")
    walk(node, visit)
    return found


def _guards_access(e: Any) -> bool:
    """A Select / if_then_else whose branches load memory: its condition may be what keeps an
    index in bounds (the padding pattern `if_then_else(1 <= i and i < 17, A[i - 1], 0)`)."""
    t = node_kind(e)
    if t == "Select":
        return _accesses(e.true_value) or _accesses(e.false_value)
    if t == "Call" and e.op.name.endswith("if_then_else"):
        return any(_accesses(a) for a in list(e.args)[1:])
    return False


# ---- the generator ----------------------------------------------------------

def const(dtype: str, value: float) -> Any:
    k = kind_of(dtype)
    if k == "b":
        return tirx.IntImm("bool", int(bool(value)))
    if k == "i":
        return tirx.IntImm(dtype, abs(int(value)) if dtype.startswith("uint") else int(value))
    return tirx.FloatImm(dtype, float(value))


def cast(dtype: str, e: Any) -> Any:
    return e if dtype_of(e) == dtype else tirx.Cast(dtype, e)


class Generator:
    """Builds expressions and statements of a requested size over the operators above."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.counter = 0

    def pick(self, xs: Any) -> Any:
        xs = list(xs)
        return xs[int(self.rng.integers(len(xs)))]

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}_{int(self.rng.integers(1 << 20))}"

    # -- leaves
    def index(self, extent: int, scope: Scope, dtype: str = "int64") -> Any:
        """An in-bounds index into a dimension of `extent`."""
        fits = [v for v in scope.vars if v.lo is not None and v.hi is not None and 0 <= v.lo and v.hi < extent
                and kind_of(dtype_of(v.var)) == "i"]
        r = self.rng.random()
        if fits and r < 0.5:
            return cast(dtype, self.pick(fits).var)
        if r < 0.75 or extent == 1:
            return const(dtype, int(self.rng.integers(extent)))
        # no loads inside an index (an index of a load of an index ... would not terminate)
        return tirx.FloorMod(self.expr(dtype, 3, scope.extend(buffers=[])), const(dtype, extent))

    def load(self, dtype_kind: str, scope: Scope) -> Any | None:
        cands = [b for b in scope.buffers if kind_of(str(b.dtype)) == dtype_kind and static_shape(b)
                 and not (scope.parallel and any(b.same_as(w) for w in scope.written_in_parallel))]
        if not cands:
            return None
        b = self.pick(cands)
        return tirx.BufferLoad(b, [self.index(n, scope) for n in static_shape(b)])

    def leaf(self, dtype: str, scope: Scope) -> Any:
        k = kind_of(dtype)
        r = self.rng.random()
        if k == "b":
            return const("bool", self.rng.random() < 0.5) if r < 0.3 else \
                getattr(tirx, self.pick(COMPARE))(self.leaf("int32", scope), self.leaf("int32", scope))
        if r < 0.45:
            ld = self.load(k, scope)
            if ld is not None:
                return cast(dtype, ld)
        if r < 0.7 and k == "i":
            ints = [v.var for v in scope.vars if kind_of(dtype_of(v.var)) == "i"]
            if ints:
                return cast(dtype, self.pick(ints))
        if k == "f":
            return const(dtype, float(np.round(self.rng.uniform(-4, 4), 2)))
        return const(dtype, int(self.rng.integers(-8, 9)))

    # -- expressions
    def expr(self, dtype: str, size: int, scope: Scope) -> Any:
        """An expression of `dtype` with about `size` nodes."""
        if dtype not in ("float32", "float64", "int32", "int64", "bool"):
            base = "float32" if kind_of(dtype) == "f" else "int32"
            return cast(dtype, self.expr(base, size - 1, scope))  # float->float and int->int casts only
        if size <= 1:
            return self.leaf(dtype, scope)
        k = kind_of(dtype)
        choice = self.rng.random()
        if k == "b":
            if choice < 0.35:
                return getattr(tirx, self.pick(LOGIC))(self.expr("bool", size // 2, scope), self.expr("bool", size // 2, scope))
            if choice < 0.45:
                return tirx.Not(self.expr("bool", size - 1, scope))
            if choice < 0.6:
                got = self.intrinsic(dtype, size, scope)
                return got if got is not None else self.leaf(dtype, scope)
            other = self.pick(("float32", "int32", "int64"))
            return getattr(tirx, self.pick(COMPARE))(self.expr(other, size // 2, scope), self.expr(other, size // 2, scope))
        if choice < 0.45:
            return self.arith(self.pick(FLOAT_ARITH if k == "f" else INT_ARITH), dtype, size, scope)
        if choice < 0.75:
            got = self.intrinsic(dtype, size, scope)
            if got is not None:
                return got
        if choice < 0.85:
            return tirx.Select(self.expr("bool", size // 3, scope), self.expr(dtype, size // 3, scope),
                               self.expr(dtype, size // 3, scope))
        if choice < 0.9:
            v = tirx.Var(self.fresh("let"), dtype)
            value = self.expr(dtype, size // 2, scope)
            body = self.expr(dtype, size // 2, scope.extend(vars=scope.vars + [ScalarVar(v, None, None)]))
            return tirx.Let(v, value, body)
        # a cast from the other kind (integer -> float, or bool -> either)
        src = "bool" if k == "i" or self.rng.random() < 0.3 else self.pick(("int32", "int64"))
        return cast(dtype, self.expr(src, size - 1, scope))

    def arith(self, op: str, dtype: str, size: int, scope: Scope, a: Any = None) -> Any:
        a = a if a is not None else self.expr(dtype, size // 2, scope)
        if kind_of(dtype) == "i" and op == "Mul":
            return tirx.Mul(a, const(dtype, int(self.rng.integers(-7, 8))))
        b = self.expr(dtype, size // 2, scope)
        if kind_of(dtype) == "i" and op in DIVISIONS:
            b = self.guard_divisor(b)
        if op in SHIFTS:
            b = tirx.FloorMod(b, const(dtype, 4))
        return getattr(tirx, op)(a, b)

    def guard_divisor(self, b: Any) -> Any:
        """A non-zero, small divisor made from b (1 + floormod(b, 7), defined for every b)."""
        d = dtype_of(b)
        return tirx.Add(tirx.FloorMod(b, const(d, 7)), const(d, 1))

    def intrinsic(self, dtype: str, size: int, scope: Scope, first: Any = None) -> Any | None:
        k = kind_of(dtype)
        names = [n for n, (_, args, res) in INTRINSICS.items() if res == k
                 and (first is None or args[0] == kind_of(dtype_of(first)))]
        if not names:
            return None
        name = self.pick(names)
        op, arg_kinds, _ = INTRINSICS[name]
        # intrinsics in float32/float64 and int32/int64 (float16 ones are unknown to LLVM codegen)
        fdt = dtype if dtype in ("float32", "float64") else "float32"
        idt = dtype if dtype in ("int32", "int64") else "int32"
        args = []
        for j, ak in enumerate(arg_kinds):
            adt = {"f": fdt, "i": idt, "b": "bool"}[ak]
            arg = first if (j == 0 and first is not None) else self.expr(adt, max(1, (size - 1) // len(arg_kinds)), scope)
            args.append(cast(adt, arg))
        if name == "ldexp":
            args[1] = tirx.FloorMod(args[1], const(idt, 8))
        rdt = {"f": fdt, "i": idt, "b": "bool"}[k]
        return cast(dtype, tirx.call_intrin(rdt, op, *args))

    # -- statements
    def stmt(self, size: int, scope: Scope) -> Any | None:
        """A statement of about `size` nodes: a store, a guarded store, a loop of stores or a Bind + store."""
        if scope.parallel:
            return None  # a store in a parallel context would race
        targets = [b for b in scope.buffers if kind_of(str(b.dtype)) == "f" and static_shape(b)]
        if not targets:
            return None
        b = self.pick(targets)
        r = self.rng.random()
        if r < 0.2 and size > 4:
            ext = int(self.rng.integers(1, 9))
            v = tirx.Var(self.fresh("j"), "int64")
            inner = scope.extend(vars=scope.vars + [ScalarVar(v, 0, ext - 1)])
            body = self.stmt(size - 2, inner)
            if body is None:
                return None
            return tirx.For(v, const("int64", 0), const("int64", ext), tirx.ForKind.SERIAL, body)
        if r < 0.4 and size > 3:
            then = self.stmt(size - 2, scope)
            return None if then is None else tirx.IfThenElse(self.expr("bool", 2, scope), then, None)
        idx = [self.index(n, scope) for n in static_shape(b)]
        return tirx.BufferStore(b, self.expr(str(b.dtype), max(1, size - len(idx)), scope), idx)


# ---- mutators ---------------------------------------------------------------

class MutationFailed(Exception):
    """The chosen hole admits no mutation of this kind (the caller tries another)."""


def _same_dtype_children(e: Any) -> list[str]:
    d = dtype_of(e)
    return [s for s in slots(e) if mutable_slot(e, s) and not isinstance(get(e, s), tirx.Stmt)
            and dtype_of(get(e, s)) == d and node_kind(e) != "Let"]


def _splice(func: Any, h: Hole, new_stmts: list[Any], drop: bool = False) -> Any:
    """Insert statements before the statement at a hole (or replace it when drop): spliced into
    the enclosing SeqStmt, so that a Bind or buffer declaration there keeps its scope."""
    if h.path and h.path[-1].startswith("seq."):
        i = int(h.path[-1].split(".")[1])
        items = list(h.parent.seq)
        items[i:i + 1] = new_stmts if drop else new_stmts + [items[i]]
        return func.with_body(replace_at(func.body, h.path[:-1], seq(items)))
    return func.with_body(replace_at(func.body, h.path, seq(new_stmts if drop else new_stmts + [h.node])))


def insertion(func: Any, gen: Generator, h: Hole, size: int = 6) -> Any:
    """Statement hole: a generated statement spliced in. Expression hole: a new operator whose
    first operand is the old expression (the rest generated)."""
    if h.stmt:
        new = gen.stmt(size, h.scope)
        if new is None:
            raise MutationFailed("no statement fits here")
        return _splice(func, h, [new])
    d = h.dtype
    k = kind_of(d)
    e = h.node
    if k == "f" and gen.rng.random() < 0.5:
        new = gen.intrinsic(d, size, h.scope, first=e)
    elif k == "b":
        new = getattr(tirx, gen.pick(LOGIC))(e, gen.expr("bool", size, h.scope))
    else:
        new = gen.arith(gen.pick(FLOAT_ARITH if k == "f" else INT_ARITH), d, size, h.scope, a=e)
    if new is None or dtype_of(new) != d:
        raise MutationFailed("no operator fits")
    return func.with_body(replace_at(func.body, h.path, new))


def deletion(func: Any, gen: Generator, h: Hole) -> Any:
    """Replace a node by one of its children that satisfies the hole (same dtype; a loop by its
    body at the first iteration; a branch by one of its cases; a statement of a list removed)."""
    n = h.node
    t = node_kind(n)
    if not h.stmt:
        if _guards_access(n):
            raise MutationFailed("a guard of memory accesses stays")
        cands = _same_dtype_children(n)
        if not cands:
            raise MutationFailed("no child of the same dtype")
        return func.with_body(replace_at(func.body, h.path, get(n, gen.pick(cands))))
    # Whatever stops running must not be what initializes a buffer the seed allocated: a later
    # read of the uninitialized elements would be undefined.
    params = param_buffers(func)
    if t == "For" and not _initializes(n.body, params):
        new = substitute(n.body, n.loop_var, n.min)
    elif t == "IfThenElse" and not _accesses(n.then_case) and not (n.else_case is not None and _accesses(n.else_case)):
        new = n.then_case if n.else_case is None or gen.rng.random() < 0.5 else n.else_case
    elif t == "AttrStmt" and node_kind(n.node) == "IterVar" and not _initializes(n.body, params):
        new = substitute(n.body, n.node.var, const(dtype_of(n.node.var), 0))
    elif h.path and h.path[-1].startswith("seq.") and t not in ("Bind", "AllocBuffer", "DeclBuffer") \
            and not _initializes(n, params):
        return _splice(func, h, [], drop=True)
    else:
        raise MutationFailed(f"cannot delete {t}")
    return func.with_body(replace_at(func.body, h.path, new))


def _initializes(node: Any, params: list[Any]) -> bool:
    """Whether `node` stores to an allocated buffer (the seed's or ours), not only to parameters."""
    return any(not any(b.same_as(p) for p in params) for b in stored_buffers(node))


def replacement(func: Any, gen: Generator, h: Hole, size: int = 4) -> Any:
    """Swap the node's constructor for another of the same category, reusing its children and
    generating what is missing."""
    n = h.node
    t = node_kind(n)
    if h.stmt:
        if t == "IfThenElse":
            return func.with_body(replace_at(func.body, h.path, tirx.IfThenElse(
                tirx.Not(n.condition), n.else_case if n.else_case is not None else tirx.Evaluate(const("int32", 0)),
                n.then_case)))
        if t == "BufferStore" and kind_of(str(n.buffer.dtype)) == "f" and not h.scope.parallel:
            return func.with_body(replace_at(func.body, h.path + ("value",),
                                             gen.expr(str(n.buffer.dtype), size, h.scope)))
        raise MutationFailed(f"no replacement for {t}")
    d = h.dtype
    k = kind_of(d)
    if t in ARITH:
        op = gen.pick([o for o in (FLOAT_ARITH if k == "f" else INT_ARITH) if o != t])
        a, b = n.a, n.b
        if k == "i" and op == "Mul":
            b = const(d, int(gen.rng.integers(-7, 8)))
        elif k == "i" and op in DIVISIONS:
            b = gen.guard_divisor(b)
        new = getattr(tirx, op)(a, b)
    elif t in COMPARE:
        new = getattr(tirx, gen.pick([o for o in COMPARE if o != t]))(n.a, n.b)
    elif t in LOGIC:
        new = getattr(tirx, "Or" if t == "And" else "And")(n.a, n.b)
    elif t in BITWISE and t not in SHIFTS:
        new = getattr(tirx, gen.pick([o for o in BITWISE if o != t and o not in SHIFTS]))(n.a, n.b)
    elif t == "Call" and n.op.name in BY_OP and BY_OP[n.op.name] != "ldexp":
        _, arg_kinds, res = INTRINSICS[BY_OP[n.op.name]]
        same = [op for m, (op, a2, r2) in INTRINSICS.items() if a2 == arg_kinds and r2 == res
                and op != n.op.name and m != "ldexp"]
        if not same:
            raise MutationFailed("no intrinsic with this signature")
        new = tirx.call_intrin(d, gen.pick(same), *n.args)
    elif t == "Select" and not _guards_access(n):
        new = tirx.Select(tirx.Not(n.condition), n.true_value, n.false_value)
    else:
        new = gen.expr(d, size, h.scope)  # a leaf or an opaque node: a new subtree of the same dtype
    return func.with_body(replace_at(func.body, h.path, new))


# ---- domain-specific mutators ---------------------------------------------------

def independent(loop: Any) -> bool:
    """Iterations of `loop` touch disjoint elements of every buffer the body writes: every load and
    store of such a buffer uses one and the same index tuple, containing the bare loop variable."""
    written = stored_buffers(loop.body)
    accesses: dict[int, list[Any]] = {}
    ok = True

    def visit(n: Any) -> None:
        nonlocal ok
        t = node_kind(n)
        if t in ("BufferStore", "TensorLoad"):
            b = n.buffer if t == "BufferStore" else n.source
            for i, w in enumerate(written):
                if b.same_as(w):
                    accesses.setdefault(i, []).append(n.indices)
        if t in ("AllocBuffer", "DeclBuffer", "Bind", "While", "AssertStmt", "Let"):
            ok = False  # per-iteration state: keep it simple, not parallelized
    walk(loop.body, visit)
    if not ok:
        return False
    for idx_lists in accesses.values():
        first = idx_lists[0]
        if not any(node_kind(i) == "Var" and i.same_as(loop.loop_var) for i in first):
            return False
        for other in idx_lists[1:]:
            if len(other) != len(first) or not all(tvm_ffi.structural_equal(a, b) for a, b in zip(first, other)):
                return False
    return True


def _has_parallel(node: Any) -> bool:
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        if node_kind(n) == "For" and n.kind in (tirx.ForKind.PARALLEL, tirx.ForKind.VECTORIZED):
            found = True
        if node_kind(n) == "AttrStmt" and n.attr_key == "virtual_thread":
            found = True
    walk(node, visit)
    return found


def loop_kind(func: Any, gen: Generator, h: Hole) -> Any:
    """Change a loop's ForKind (serial, parallel, vectorized, unrolled), where that stays defined and lowers on CPU."""
    n = h.node
    if node_kind(n) != "For":
        raise MutationFailed("not a loop")
    ext = _const(n.extent)
    kinds = ["serial"] + (["unrolled"] if ext is not None else [])  # UnrollLoop refuses symbolic extents
    if not h.scope.parallel and not _has_parallel(n.body) and independent(n) and not any(
            node_kind(x) == "For" and x.kind == tirx.ForKind.PARALLEL for x in h.scope.loops):
        kinds.append("parallel")
        if ext is not None and ext <= MAX_VECTOR and not any(node_kind(x) == "For" for x in _stmts(n.body)):
            kinds.append("vectorized")
    kinds = [k for k in kinds if FOR_KINDS[k] != n.kind]
    if not kinds:
        raise MutationFailed("no other loop kind fits")
    new = tirx.For(n.loop_var, n.min, n.extent, FOR_KINDS[gen.pick(kinds)], n.body, None, n.annotations)
    return func.with_body(replace_at(func.body, h.path, new))


def _stmts(node: Any) -> list[Any]:
    out: list[Any] = []
    walk(node, lambda n: out.append(n) if isinstance(n, tirx.Stmt) else None)
    return out


def loop_annotation(func: Any, gen: Generator, h: Hole) -> Any:
    """Annotate a loop with an unroll limit / explicit-unroll pragma (read by UnrollLoop)."""
    n = h.node
    if node_kind(n) != "For":
        raise MutationFailed("not a loop")
    key = gen.pick(("pragma_auto_unroll_max_step", "pragma_unroll_explicit"))
    value = int(gen.pick((0, 1, 4, 16, 64))) if key == "pragma_auto_unroll_max_step" else int(gen.rng.integers(2))
    ann = {**{str(k): v for k, v in n.annotations.items()}, key: tirx.IntImm("int32", value)}
    new = tirx.For(n.loop_var, n.min, n.extent, n.kind, n.body, n.thread_binding, ann)
    return func.with_body(replace_at(func.body, h.path, new))


def loop_nest(func: Any, gen: Generator, h: Hole) -> Any:
    """Insert a new loop around a generated statement, with a constant or a symbolic extent
    (an enclosing loop variable + 1, never empty), of any kind that stays defined."""
    if not h.stmt or h.scope.parallel:
        raise MutationFailed("no loop here")
    v = tirx.Var(gen.fresh("k"), "int64")
    sym = [x for x in h.scope.vars if x.lo is not None and x.lo >= 0 and kind_of(dtype_of(x.var)) == "i"]
    if sym and gen.rng.random() < 0.4:
        src = gen.pick(sym)
        extent = tirx.Add(cast("int64", src.var), const("int64", 1))
        hi = src.hi
    else:
        hi_c = int(gen.rng.integers(1, 17))
        extent, hi = const("int64", hi_c), hi_c - 1
    inner = h.scope.extend(vars=h.scope.vars + [ScalarVar(v, 0, hi)])
    body = gen.stmt(5, inner)
    if body is None:
        raise MutationFailed("no statement fits here")
    loop = tirx.For(v, const("int64", 0), extent, tirx.ForKind.SERIAL, body)
    if _const(extent) is not None and independent(loop) and gen.rng.random() < 0.5:
        kind = gen.pick(("parallel", "vectorized", "unrolled") if not any(
            node_kind(x) == "For" and x.kind == tirx.ForKind.PARALLEL for x in h.scope.loops) else ("unrolled",))
        if kind == "vectorized" and node_kind(body) != "BufferStore":
            kind = "unrolled"
        loop = tirx.For(v, loop.min, loop.extent, FOR_KINDS[kind], body)
    return _splice(func, h, [loop])


def memory(func: Any, gen: Generator, h: Hole) -> Any:
    """Allocate a buffer, initialize every element with a generated expression of the index, then
    store an expression that loads it (at a generated in-bounds index) into a float buffer."""
    if not h.stmt or h.scope.parallel or not (h.path and h.path[-1].startswith("seq.")) and h.path:
        raise MutationFailed("no allocation here")
    dtype = gen.pick(("float32", "float32", "int32", "float64"))
    n = int(gen.rng.integers(1, 33))
    buf = tirx.decl_buffer((n,), dtype, name=gen.fresh(OUR_BUFFER))
    k = tirx.Var(gen.fresh("m"), "int64")
    init_scope = h.scope.extend(vars=h.scope.vars + [ScalarVar(k, 0, n - 1)])
    init = tirx.For(k, const("int64", 0), const("int64", n), tirx.ForKind.SERIAL,
                    tirx.BufferStore(buf, gen.expr(dtype, 4, init_scope), [k]))
    use_scope = h.scope.extend(buffers=h.scope.buffers + [buf])
    targets = [b for b in h.scope.buffers if kind_of(str(b.dtype)) == "f" and static_shape(b)]
    if not targets:
        raise MutationFailed("no float buffer to store into")
    t = gen.pick(targets)
    ld = tirx.BufferLoad(buf, [gen.index(n, use_scope)])
    value = gen.arith(gen.pick(FLOAT_ARITH), str(t.dtype), 4, use_scope, a=cast(str(t.dtype), ld))
    store = tirx.BufferStore(t, value, [gen.index(d, use_scope) for d in static_shape(t)])
    stmts = [tirx.AllocBuffer(buf), init, store]
    if not h.path:
        return func.with_body(seq([*stmts, h.node]))
    return _splice(func, h, stmts)


def thread_binding(func: Any, gen: Generator, h: Hole) -> Any:
    """Turn a loop with independent iterations and a small constant extent into a virtual thread
    (`T.launch_thread("vthread", n)`, lowered by InjectVirtualThread)."""
    n = h.node
    if node_kind(n) != "For" or h.scope.parallel or _has_parallel(n.body):
        raise MutationFailed("not a loop that can become a thread")
    ext, lo = _const(n.extent), _const(n.min)
    if ext is None or ext > 8 or lo is None or not independent(n):
        raise MutationFailed("loop not independent or too long")
    dt = dtype_of(n.loop_var)
    tv = tirx.Var(gen.fresh("vthread"), dt)
    iv = tirx.IterVar(tvm.ir.Range(const(dt, 0), const(dt, ext)), tv, tirx.IterVar.ThreadIndex, "vthread")
    body = substitute(n.body, n.loop_var, tirx.Add(tv, const(dt, lo)) if lo else tv)
    new = tirx.AttrStmt(iv, "virtual_thread", const(dt, ext), body)
    return func.with_body(replace_at(func.body, h.path, new))


GENERAL: dict[str, Callable[..., Any]] = {"insertion": insertion, "deletion": deletion, "replacement": replacement}
DOMAIN: dict[str, Callable[..., Any]] = {"loop-kind": loop_kind, "loop-annotation": loop_annotation,
                                         "loop-nest": loop_nest, "memory": memory, "thread-binding": thread_binding}
MUTATORS = {**GENERAL, **DOMAIN}


def applicable(name: str, h: Hole) -> bool:
    if name in ("loop-kind", "loop-annotation", "thread-binding"):
        return h.stmt and node_kind(h.node) == "For"
    if name in ("loop-nest", "memory"):
        return h.stmt
    return True


def well_formed(func: Any) -> bool:
    try:
        return bool(tirx.analysis.verify_well_formed(func, False))
    except Exception:
        return False


def mutate(func: Any, rng: np.random.Generator, mutators: list[str], tries: int = 20) -> tuple[Any, str]:
    """One mutation by a mutator drawn from `mutators` at a hole that admits it; (mutant, its name).
    Raises MutationFailed after `tries` unsuccessful draws."""
    gen = Generator(rng)
    hs = holes(func)
    for _ in range(tries):
        name = mutators[int(rng.integers(len(mutators)))]
        cands = [h for h in hs if applicable(name, h)]
        if not cands:
            continue
        h = cands[int(rng.integers(len(cands)))]
        try:
            return MUTATORS[name](func, gen, h), name
        except MutationFailed:
            continue
    raise MutationFailed(f"no applicable mutation among {mutators}")
