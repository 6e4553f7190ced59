"""Semantics of TIR (TVM's HalideIR descendant) in Z3 and in NumPy.

Every integer expression means a bit-vector of its dtype's width (wrap-around arithmetic) *and*
a definedness condition, following Alive2: TVM's simplifier reasons about mathematical integers,
so signed overflow of any subterm, a zero divisor, MIN / -1 and out-of-range shift amounts make
the expression undefined. Where everything is defined the wrap-around value equals the
mathematical one, which is why a single bit-vector value serves both checks:

  refinement   input defined  =>  output defined and equal          (a violation is a bug)
  wrap-around  input traps-free =>  output trap-free and equal bits (a violation that is not a
               refinement violation only differs where the input overflows: lower severity)

`trap` is the part of undefinedness that also breaks wrap-around execution (zero divisors, MIN / -1,
bad shift amounts): the hardware faults or the result is poison. Overflow alone is in `overflow`.

Statements (item 1 of the design): Bind/let, if/else, buffer stores and loads on symbolic arrays,
sequences and for-loops with small constant extents (unrolled); their meaning is the final state
of the buffers plus the same two definedness conditions (out-of-bounds accesses trap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import z3

from dlcfuzz.errors import Unsupported

MAX_UNROLL = 16  # loops with a larger constant extent are not modelled (the formula would explode)


@dataclass(frozen=True)
class IntType:
    """An integer (or bool) dtype: its width and range."""

    name: str
    bits: int

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def min(self) -> int:
        return 0 if self.is_bool else -(1 << (self.bits - 1))

    @property
    def max(self) -> int:
        return 1 if self.is_bool else (1 << (self.bits - 1)) - 1


def int_type(dtype: str) -> IntType:
    dtype = str(dtype)
    if dtype == "bool":
        return IntType("bool", 1)
    if dtype in ("int8", "int16", "int32", "int64"):
        return IntType(dtype, int(dtype[3:]))
    raise Unsupported(f"dtype {dtype} is not modelled (signed integers, bool and floats are)")


FLOAT_SORTS = {"float16": (5, 11), "float32": (8, 24), "float64": (11, 53)}


def is_float(dtype: str) -> bool:
    return str(dtype) in FLOAT_SORTS


def boundary_constants(dtype: str) -> list[int]:
    """Leaf constants of the enumeration: 0, 1, -1, 2 and the dtype's extremes."""
    t = int_type(dtype)
    return [0, 1, -1, 2, t.min, t.max]


# ---------------------------------------------------------------------------------------------
# Z3
# ---------------------------------------------------------------------------------------------

@dataclass
class Term:
    """The meaning of one expression: value, no-overflow condition, no-trap condition."""

    value: Any  # z3 BitVecRef, BoolRef or FPRef
    no_overflow: Any  # z3 BoolRef
    no_trap: Any  # z3 BoolRef

    @property
    def defined(self) -> Any:
        return _and(self.no_overflow, self.no_trap)


def _kind(e: Any) -> str:
    return type(e).__name__


def _dtype(e: Any) -> str:
    return str(e.ty)


def z3_var(var: Any) -> Any:
    """The Z3 constant of a TIR variable (named by its name, which the enumeration keeps unique)."""
    dt = _dtype(var)
    name = str(var.name)
    if dt == "bool":
        return z3.Bool(name)
    if is_float(dt):
        return z3.FP(name, z3.FPSort(*FLOAT_SORTS[dt]))
    return z3.BitVec(name, int_type(dt).bits)


def _const(v: int, bits: int) -> Any:
    return z3.BitVecVal(v, bits)


_T = z3.BoolVal(True)


def _and(*xs: Any) -> Any:
    """Conjunction that drops the shared literal True: building z3.And is the translator's main cost."""
    kept = [x for x in xs if x is not _T]
    if not kept:
        return _T
    return kept[0] if len(kept) == 1 else z3.And(*kept)


class Z3Translator:
    """TIR expression -> Term. `env` maps bound variables (Let/Bind/loop vars, by object) to Terms."""

    def __init__(self) -> None:
        self.rm = z3.RNE()
        self._float_rm = z3.RNE()

    # Subterms replaced by opaque Terms (see abstract_common); keyed by structural hash, then
    # confirmed with structural equality.
    abstract: dict[int, list[tuple[Any, Term]]] | None = None

    def expr(self, e: Any, env: Mapping[Any, Term] | None = None) -> Term:
        env = env or {}
        return self._expr(e, env)

    # The dispatch is on the class name: TIR node classes are final.
    def _expr(self, e: Any, env: Mapping[Any, Term]) -> Term:  # noqa: C901 - one case per node kind
        k = _kind(e)
        if self.abstract and k in NONLINEAR:
            import tvm_ffi

            for node, term in self.abstract.get(int(tvm_ffi.structural_hash(e)), []):
                if tvm_ffi.structural_equal(node, e):
                    return term
        if k == "Var":
            for key, term in env.items():
                if key.same_as(e):
                    return term
            return Term(z3_var(e), _T, _T)
        if k == "IntImm":
            if _dtype(e) == "bool":
                return Term(z3.BoolVal(bool(e.value)), _T, _T)
            return Term(_const(int(e.value), int_type(_dtype(e)).bits), _T, _T)
        if k == "FloatImm":
            return Term(z3.FPVal(float(e.value), z3.FPSort(*FLOAT_SORTS[_dtype(e)])), _T, _T)
        if k in _BINARY:
            a, b = self._expr(e.a, env), self._expr(e.b, env)
            return _BINARY[k](self, e, a, b)
        if k == "Not":
            a = self._expr(e.a, env)
            return Term(z3.Not(a.value), a.no_overflow, a.no_trap)
        if k == "BitwiseNot":
            a = self._expr(e.a, env)
            return Term(~a.value, a.no_overflow, a.no_trap)
        if k == "Select":
            c, t, f = self._expr(e.condition, env), self._expr(e.true_value, env), self._expr(e.false_value, env)
            # Select evaluates both operands: undefinedness of either is undefinedness of the Select.
            return Term(z3.If(c.value, t.value, f.value), _and(c.no_overflow, t.no_overflow, f.no_overflow),
                        _and(c.no_trap, t.no_trap, f.no_trap))
        if k == "Cast":
            return self._cast(e, self._expr(e.value, env))
        if k == "Let":
            v = self._expr(e.value, env)
            inner = dict(env)
            inner[e.var] = Term(v.value, _T, _T)
            body = self._expr(e.body, inner)
            return Term(body.value, _and(v.no_overflow, body.no_overflow), _and(v.no_trap, body.no_trap))
        if k == "Call":
            op = str(e.op.name)
            args = list(e.args)
            if op in ("prim.if_then_else", "tirx.if_then_else", "tir.if_then_else"):
                c, t, f = (self._expr(x, env) for x in args)
                # if_then_else evaluates only the chosen branch.
                return Term(z3.If(c.value, t.value, f.value), _and(c.no_overflow, z3.If(c.value, t.no_overflow, f.no_overflow)),
                            _and(c.no_trap, z3.If(c.value, t.no_trap, f.no_trap)))
            if op.endswith("likely") and len(args) == 1:
                return self._expr(args[0], env)
            raise Unsupported(f"call to {op} is not modelled")
        if k in ("BufferLoad", "TensorLoad"):
            if self.state is None:
                raise Unsupported("BufferLoad outside a statement")
            return self.state.load(self, e, env)
        raise Unsupported(f"TIR node {k} is not modelled")

    state: StmtState | None = None

    def _cast(self, e: Any, a: Term) -> Term:
        to, frm = _dtype(e), _dtype(e.value)
        v = a.value
        if to == frm:
            return a
        if is_float(to):
            sort = z3.FPSort(*FLOAT_SORTS[to])
            if frm == "bool":
                val = z3.If(v, z3.FPVal(1.0, sort), z3.FPVal(0.0, sort))
            elif is_float(frm):
                val = z3.fpFPToFP(self.rm, v, sort)
            else:
                val = z3.fpSignedToFP(self.rm, v, sort)
            return Term(val, a.no_overflow, a.no_trap)
        if is_float(frm):
            t = int_type(to)
            if t.is_bool:
                return Term(z3.Not(z3.fpIsZero(v)), a.no_overflow, a.no_trap)
            r = z3.fpRoundToIntegral(z3.RTZ(), v)
            sort = v.sort()
            in_range = _and(z3.Not(z3.fpIsNaN(v)), z3.fpGEQ(r, z3.FPVal(float(t.min), sort)),
                              z3.fpLEQ(r, z3.FPVal(float(t.max), sort)))
            return Term(z3.fpToSBV(z3.RTZ(), v, z3.BitVecSort(t.bits)), _and(a.no_overflow, in_range), a.no_trap)
        t, f = int_type(to), int_type(frm)
        if f.is_bool:
            return Term(z3.If(v, _const(1, t.bits), _const(0, t.bits)), a.no_overflow, a.no_trap)
        if t.is_bool:
            return Term(v != 0, a.no_overflow, a.no_trap)
        if t.bits >= f.bits:
            return Term(z3.SignExt(t.bits - f.bits, v), a.no_overflow, a.no_trap)
        # Narrowing keeps the low bits (LLVM trunc); TVM treats it as defined.
        return Term(z3.Extract(t.bits - 1, 0, v), a.no_overflow, a.no_trap)


def _arith(op: str):
    def f(tr: Z3Translator, e: Any, a: Term, b: Term) -> Term:
        ov, tp = _and(a.no_overflow, b.no_overflow), _and(a.no_trap, b.no_trap)
        x, y = a.value, b.value
        if is_float(_dtype(e)):
            val = {"Add": z3.fpAdd, "Sub": z3.fpSub, "Mul": z3.fpMul}[op](tr.rm, x, y)
            return Term(val, ov, tp)
        if op == "Add":
            return Term(x + y, _and(ov, z3.BVAddNoOverflow(x, y, True), z3.BVAddNoUnderflow(x, y)), tp)
        if op == "Sub":
            return Term(x - y, _and(ov, z3.BVSubNoOverflow(x, y), z3.BVSubNoUnderflow(x, y, True)), tp)
        return Term(x * y, _and(ov, _mul_fits(x, y)), tp)
    return f


def _mul_fits(x: Any, y: Any) -> Any:
    """x * y has no signed overflow. By a constant it is a range check on the other operand, which
    bit-blasts to a comparator instead of a double-width multiplier (about twice as fast to solve)."""
    bits = x.size()
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    for c, v in ((y, x), (x, y)):
        if z3.is_bv_value(c):
            k = c.as_signed_long()
            if k in (0, 1):
                return _T
            if k == -1:
                return v != lo
            if k > 0:  # lo <= v * k <= hi  <=>  ceil(lo / k) <= v <= floor(hi / k)
                return z3.And(v >= -(-lo // k), v <= hi // k)
            return z3.And(v >= -(-hi // k), v <= lo // k)  # k < 0: the bounds swap
    return z3.And(z3.BVMulNoOverflow(x, y, True), z3.BVMulNoUnderflow(x, y))


def _division(op: str):
    def f(tr: Z3Translator, e: Any, a: Term, b: Term) -> Term:
        ov, tp = _and(a.no_overflow, b.no_overflow), _and(a.no_trap, b.no_trap)
        x, y = a.value, b.value
        if is_float(_dtype(e)):
            if op != "Div":
                raise Unsupported(f"float {op} is not modelled")
            return Term(z3.fpDiv(tr.rm, x, y), ov, tp)
        bits = x.size()
        lo = _const(-(1 << (bits - 1)), bits)
        # MIN / -1 and MIN % -1 fault on x86 (idiv): a trap, like a zero divisor.
        safe = _and(y != 0, z3.Not(_and(x == lo, y == -1)))
        q, r = x / y, z3.SRem(x, y)  # z3: bvsdiv truncates, bvsrem takes the dividend's sign
        if op == "Div":
            val = q
        elif op == "Mod":
            val = r
        elif op == "FloorDiv":
            val = z3.If(_and(r != 0, (r < 0) != (y < 0)), q - 1, q)
        else:  # FloorMod: the sign of the divisor
            val = x % y  # z3py: % on bit-vectors is bvsmod
        return Term(val, ov, _and(tp, safe))
    return f


def _minmax(op: str):
    def f(tr: Z3Translator, e: Any, a: Term, b: Term) -> Term:
        ov, tp = _and(a.no_overflow, b.no_overflow), _and(a.no_trap, b.no_trap)
        x, y = a.value, b.value
        if is_float(_dtype(e)):
            return Term(z3.fpMin(x, y) if op == "Min" else z3.fpMax(x, y), ov, tp)
        return Term(z3.If(x <= y, x, y) if op == "Min" else z3.If(x >= y, x, y), ov, tp)
    return f


def _compare(op: str):
    def f(tr: Z3Translator, e: Any, a: Term, b: Term) -> Term:
        ov, tp = _and(a.no_overflow, b.no_overflow), _and(a.no_trap, b.no_trap)
        x, y = a.value, b.value
        if z3.is_fp(x):
            val = {"EQ": z3.fpEQ, "NE": z3.fpNEQ, "LT": z3.fpLT, "LE": z3.fpLEQ, "GT": z3.fpGT, "GE": z3.fpGEQ}[op](x, y)
        else:
            val = {"EQ": x == y, "NE": x != y, "LT": x < y, "LE": x <= y, "GT": x > y, "GE": x >= y}[op]
        return Term(val, ov, tp)
    return f


def _logic(op: str):
    def f(tr: Z3Translator, e: Any, a: Term, b: Term) -> Term:
        ov, tp = _and(a.no_overflow, b.no_overflow), _and(a.no_trap, b.no_trap)
        return Term(z3.And(a.value, b.value) if op == "And" else z3.Or(a.value, b.value), ov, tp)
    return f


def _bitwise(op: str):
    def f(tr: Z3Translator, e: Any, a: Term, b: Term) -> Term:
        ov, tp = _and(a.no_overflow, b.no_overflow), _and(a.no_trap, b.no_trap)
        x, y = a.value, b.value
        if op == "BitwiseAnd":
            return Term(x & y, ov, tp)
        if op == "BitwiseOr":
            return Term(x | y, ov, tp)
        if op == "BitwiseXor":
            return Term(x ^ y, ov, tp)
        bits = x.size()
        in_range = _and(y >= 0, y < bits)  # LLVM shl/ashr by >= width is poison
        if op == "RShift":
            return Term(x >> y, ov, _and(tp, in_range))
        # x << y overflows (mathematically) when the shifted-out bits are not copies of the sign.
        shifted = x << y
        no_ov = (shifted >> y) == x
        return Term(shifted, _and(ov, z3.Implies(in_range, no_ov)), _and(tp, in_range))
    return f


_BINARY = {
    **{k: _arith(k) for k in ("Add", "Sub", "Mul")},
    **{k: _division(k) for k in ("Div", "Mod", "FloorDiv", "FloorMod")},
    **{k: _minmax(k) for k in ("Min", "Max")},
    **{k: _compare(k) for k in ("EQ", "NE", "LT", "LE", "GT", "GE")},
    **{k: _logic(k) for k in ("And", "Or")},
    **{k: _bitwise(k) for k in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LShift", "RShift")},
}

NONLINEAR = {"Mul", "Div", "Mod", "FloorDiv", "FloorMod", "LShift", "RShift"}


def nonlinear_subterms(e: Any) -> list[Any]:
    """Products of two non-constants and divisions/shifts by a non-constant: what makes a bit-vector
    query expensive (a multiplier or divider circuit)."""
    out: list[Any] = []

    def walk(x: Any) -> None:
        k = _kind(x)
        if k in NONLINEAR and not is_float(_dtype(x)):
            b_const = _kind(x.b) == "IntImm"
            if not b_const and not (k == "Mul" and _kind(x.a) == "IntImm"):
                out.append(x)
        for f in ("a", "b", "value", "condition", "true_value", "false_value", "body"):
            child = getattr(x, f, None) if k not in ("IntImm", "FloatImm", "Var") else None
            if child is not None and hasattr(child, "ty"):
                walk(child)
        if k == "Call":
            for c in x.args:
                walk(c)

    walk(e)
    return out


def abstract_common(before: Any, after: Any) -> dict[int, list[tuple[Any, Term]]]:
    """Nonlinear subterms present in both expressions, each mapped to one fresh value and fresh
    definedness bits. Proving the abstracted pair equal proves the original pair (the fresh
    symbols range over every value the subterm could take), so this is only a fast first try."""
    import tvm_ffi

    mine: dict[int, list[Any]] = {}
    for x in nonlinear_subterms(before):
        mine.setdefault(int(tvm_ffi.structural_hash(x)), []).append(x)
    out: dict[int, list[tuple[Any, Term]]] = {}
    n = 0
    for y in nonlinear_subterms(after):
        h = int(tvm_ffi.structural_hash(y))
        if any(tvm_ffi.structural_equal(x, y) for x, _t in out.get(h, [])):
            continue
        for x in mine.get(h, []):
            if tvm_ffi.structural_equal(x, y):
                n += 1
                bits = int_type(_dtype(x)).bits
                term = Term(z3.BitVec(f"_abs{n}", bits), z3.Bool(f"_abs{n}_nov"), z3.Bool(f"_abs{n}_ntp"))
                out.setdefault(h, []).append((x, term))
                break
    return out


EXPR_KINDS = tuple(_BINARY) + ("Not", "BitwiseNot", "Select", "Cast", "Let", "Call")


# ---------------------------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------------------------

@dataclass
class StmtState:
    """Buffers as Z3 arrays (int32 index -> element), plus the accumulated definedness."""

    arrays: dict[str, Any]
    sizes: dict[str, int]
    no_overflow: Any = field(default_factory=lambda: _T)
    no_trap: Any = field(default_factory=lambda: _T)

    def copy(self) -> StmtState:
        return StmtState(dict(self.arrays), self.sizes, self.no_overflow, self.no_trap)

    def _index(self, tr: Z3Translator, buf: Any, indices: Any, env: Mapping[Any, Term]) -> tuple[Any, Any, Any]:
        idx = list(indices)
        if len(idx) != 1:
            raise Unsupported("only 1-D buffers are modelled")
        i = tr._expr(idx[0], env)
        name = str(buf.name)
        size = self.sizes[name]
        iv = i.value
        if iv.size() != 32:
            iv = z3.SignExt(32 - iv.size(), iv) if iv.size() < 32 else z3.Extract(31, 0, iv)
        in_bounds = _and(iv >= 0, iv < size)
        return iv, i.no_overflow, _and(i.no_trap, in_bounds)

    def load(self, tr: Z3Translator, e: Any, env: Mapping[Any, Term]) -> Term:
        iv, ov, tp = self._index(tr, e.source, e.indices, env)
        return Term(z3.Select(self.arrays[str(e.source.name)], iv), ov, tp)


def initial_state(buffers: Mapping[str, tuple[str, int]]) -> StmtState:
    """Symbolic initial contents for buffers {name: (dtype, size)}: arrays named `<name>_in`."""
    arrays = {}
    for name, (dtype, _size) in buffers.items():
        t = int_type(dtype)
        arrays[name] = z3.Array(f"{name}_in", z3.BitVecSort(32), z3.BitVecSort(t.bits))
    return StmtState(arrays, {n: s for n, (_d, s) in buffers.items()})


def run_stmt(tr: Z3Translator, s: Any, state: StmtState, env: dict[Any, Term] | None = None) -> StmtState:
    """Symbolically execute statement s from `state`; returns the final state (s is not mutated)."""
    env = dict(env or {})
    return _stmt(tr, s, state.copy(), env)


def _stmt(tr: Z3Translator, s: Any, st: StmtState, env: dict[Any, Term]) -> StmtState:  # noqa: C901
    k = _kind(s)
    prev = tr.state
    tr.state = st
    try:
        if k == "SeqStmt":
            for child in s.seq:
                st = _stmt(tr, child, st, env)
                tr.state = st
            return st
        if k == "BufferStore":
            iv, ov, tp = st._index(tr, s.buffer, s.indices, env)
            v = tr._expr(s.value, env)
            st.arrays[str(s.buffer.name)] = z3.Store(st.arrays[str(s.buffer.name)], iv, v.value)
            st.no_overflow = _and(st.no_overflow, ov, v.no_overflow)
            st.no_trap = _and(st.no_trap, tp, v.no_trap)
            return st
        if k == "Evaluate":
            v = tr._expr(s.value, env)
            st.no_overflow = _and(st.no_overflow, v.no_overflow)
            st.no_trap = _and(st.no_trap, v.no_trap)
            return st
        if k == "Bind":  # visible in the rest of the enclosing scope: env is shared with the caller
            v = tr._expr(s.value, env)
            env[s.var] = Term(v.value, _T, _T)
            st.no_overflow = _and(st.no_overflow, v.no_overflow)
            st.no_trap = _and(st.no_trap, v.no_trap)
            return st
        if k == "IfThenElse":
            c = tr._expr(s.condition, env)
            then_st = _stmt(tr, s.then_case, st.copy(), dict(env))
            else_st = _stmt(tr, s.else_case, st.copy(), dict(env)) if s.else_case is not None else st.copy()
            out = st.copy()
            for name in st.arrays:
                out.arrays[name] = z3.If(c.value, then_st.arrays[name], else_st.arrays[name])
            out.no_overflow = _and(c.no_overflow, z3.If(c.value, then_st.no_overflow, else_st.no_overflow))
            out.no_trap = _and(c.no_trap, z3.If(c.value, then_st.no_trap, else_st.no_trap))
            return out
        if k == "For":
            if _kind(s.min) != "IntImm" or _kind(s.extent) != "IntImm":
                raise Unsupported("only loops with constant bounds are modelled")
            lo, n = int(s.min.value), int(s.extent.value)
            if n > MAX_UNROLL:
                raise Unsupported(f"loop extent {n} > {MAX_UNROLL}")
            bits = int_type(_dtype(s.loop_var)).bits
            for i in range(lo, lo + n):
                inner = dict(env)
                inner[s.loop_var] = Term(_const(i, bits), _T, _T)
                st = _stmt(tr, s.body, st, inner)
                tr.state = st
            return st
        raise Unsupported(f"statement {k} is not modelled")
    finally:
        tr.state = prev


# ---------------------------------------------------------------------------------------------
# NumPy (the cheap screen): the same semantics on a batch of concrete assignments
# ---------------------------------------------------------------------------------------------

@dataclass
class Batch:
    """Values of one expression over a batch of assignments, with the two definedness masks."""

    value: np.ndarray  # int64 (bool as 0/1) for widths <= 32, object (Python ints) for int64
    no_overflow: np.ndarray
    no_trap: np.ndarray


def _wrap(v: np.ndarray, t: IntType) -> np.ndarray:
    if t.is_bool:
        return v
    if v.dtype == object:
        m = 1 << t.bits
        return np.array([((int(x) - t.min) % m) + t.min for x in v], dtype=object)
    return ((v - t.min) & ((1 << t.bits) - 1)) + t.min


def _fits(v: np.ndarray, t: IntType) -> np.ndarray:
    return (v >= t.min) & (v <= t.max)


class NumpyEvaluator:
    """Evaluate integer/bool TIR expressions on arrays of assignments {var name: array}.

    Floats are not screened (returns None): the solver decides them."""

    def __init__(self, env: Mapping[str, np.ndarray], n: int) -> None:
        self.env = env
        self.n = n

    def eval(self, e: Any) -> Batch | None:
        try:
            return self._eval(e, {})
        except _NoScreen:
            return None

    def _ones(self) -> np.ndarray:
        return np.ones(self.n, dtype=bool)

    def _eval(self, e: Any, bound: dict[str, Batch]) -> Batch:  # noqa: C901
        k = _kind(e)
        dt = _dtype(e)
        if is_float(dt):
            raise _NoScreen
        if k == "Var":
            name = str(e.name)
            if name in bound:
                return bound[name]
            if name not in self.env:
                raise _NoScreen
            return Batch(self.env[name], self._ones(), self._ones())
        if k == "IntImm":
            v = int(e.value)
            arr = np.full(self.n, v, dtype=object if int_type(dt).bits > 32 else np.int64)
            return Batch(arr, self._ones(), self._ones())
        if k == "Cast":
            a = self._eval(e.value, bound)
            t, f = int_type(dt), _dtype(e.value)
            if is_float(f):
                raise _NoScreen
            v = a.value
            if t.is_bool:
                v = (v != 0).astype(np.int64)
            else:
                if t.bits > 32 and v.dtype != object:
                    v = v.astype(object)
                elif t.bits <= 32 and v.dtype == object:
                    v = np.array([((int(x) - t.min) % (1 << t.bits)) + t.min for x in v], dtype=np.int64)
                v = _wrap(v, t)
            return Batch(v, a.no_overflow, a.no_trap)
        if k in ("Not", "BitwiseNot"):
            a = self._eval(e.a, bound)
            v = (1 - a.value) if k == "Not" else ~a.value if a.value.dtype != object else np.array(
                [~int(x) for x in a.value], dtype=object)
            return Batch(v, a.no_overflow, a.no_trap)
        if k == "Select":
            c, t_, f = (self._eval(x, bound) for x in (e.condition, e.true_value, e.false_value))
            cond = c.value != 0
            return Batch(np.where(cond, t_.value, f.value), c.no_overflow & t_.no_overflow & f.no_overflow,
                         c.no_trap & t_.no_trap & f.no_trap)
        if k == "Call":
            op = str(e.op.name)
            args = list(e.args)
            if op.endswith("if_then_else"):
                c, t_, f = (self._eval(x, bound) for x in args)
                cond = c.value != 0
                return Batch(np.where(cond, t_.value, f.value), c.no_overflow & np.where(cond, t_.no_overflow, f.no_overflow),
                             c.no_trap & np.where(cond, t_.no_trap, f.no_trap))
            if op.endswith("likely") and len(args) == 1:
                return self._eval(args[0], bound)
            raise _NoScreen
        if k == "Let":
            v = self._eval(e.value, bound)
            inner = dict(bound)
            inner[str(e.var.name)] = Batch(v.value, self._ones(), self._ones())
            b = self._eval(e.body, inner)
            return Batch(b.value, v.no_overflow & b.no_overflow, v.no_trap & b.no_trap)
        if k not in _BINARY:
            raise _NoScreen
        a, b = self._eval(e.a, bound), self._eval(e.b, bound)
        ov, tp = a.no_overflow & b.no_overflow, a.no_trap & b.no_trap
        x, y = a.value, b.value
        if x.dtype != y.dtype:
            x, y = x.astype(object), y.astype(object)
        if k in ("EQ", "NE", "LT", "LE", "GT", "GE"):
            v = {"EQ": x == y, "NE": x != y, "LT": x < y, "LE": x <= y, "GT": x > y, "GE": x >= y}[k]
            return Batch(v.astype(np.int64), ov, tp)
        if k in ("And", "Or"):
            v = (x != 0) & (y != 0) if k == "And" else (x != 0) | (y != 0)
            return Batch(v.astype(np.int64), ov, tp)
        t = int_type(dt)
        if k in ("Min", "Max"):
            return Batch(np.minimum(x, y) if k == "Min" else np.maximum(x, y), ov, tp)
        if k in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            v = {"BitwiseAnd": x & y, "BitwiseOr": x | y, "BitwiseXor": x ^ y}[k]
            return Batch(v, ov, tp)
        if k in ("Add", "Sub", "Mul"):
            v = x + y if k == "Add" else x - y if k == "Sub" else x * y
            return Batch(_wrap(v, t), ov & _fits(v, t), tp)
        if k in ("LShift", "RShift"):
            in_range = (y >= 0) & (y < t.bits)
            ys = np.where(in_range, y, 0)
            if k == "RShift":
                v = x >> ys
                return Batch(v, ov, tp & in_range)
            if x.dtype == object:
                v = np.array([int(p) << int(q) for p, q in zip(x, ys)], dtype=object)
            else:
                v = x.astype(object) * (np.ones(self.n, dtype=object) << ys.astype(object))
            fits = _fits(v, t)
            w = _wrap(v, t)
            if x.dtype != object:
                w = w.astype(np.int64)
                fits = fits.astype(bool)
            return Batch(w, ov & (fits | ~in_range), tp & in_range)
        # Division family.
        safe = (y != 0) & ~((x == t.min) & (y == -1))
        ys = np.where(safe, y, 1)
        xs = np.where(safe, x, 0)
        fq = xs // ys  # numpy / Python: floor division
        fr = xs - fq * ys
        if k == "FloorDiv":
            v = fq
        elif k == "FloorMod":
            v = fr
        else:
            adjust = (fr != 0) & ((xs < 0) != (ys < 0))
            tq = fq + adjust
            v = tq if k == "Div" else xs - tq * ys
        return Batch(v, ov, tp & safe)


class _NoScreen(Exception):
    """The expression has a part the NumPy screen does not model; leave it to the solver."""


# ---------------------------------------------------------------------------------------------
# Z3 over mathematical integers (the fast path for refinement proofs)
# ---------------------------------------------------------------------------------------------

class IntTranslator:
    """TIR expression -> (value over Z3 Int/Bool, defined). Where an expression is defined its
    bit-vector value equals its mathematical value, so a refinement proved here holds for the
    bit-vector semantics as well; linear integer arithmetic avoids bit-blasting multipliers and
    dividers, which dominate the bit-vector queries. Bitwise operators, shifts and floats are not
    modelled here (Unsupported: the caller uses the bit-vector translation)."""

    def __init__(self) -> None:
        self.domain: list[Any] = []  # range constraints of the free variables met so far

    def expr(self, e: Any) -> tuple[Any, Any]:
        return self._expr(e, {})

    def _range(self, v: Any, dtype: str) -> Any:
        t = int_type(dtype)
        return z3.And(v >= t.min, v <= t.max)

    def _expr(self, e: Any, env: dict[str, tuple[Any, Any]]) -> tuple[Any, Any]:  # noqa: C901
        k = _kind(e)
        dt = _dtype(e)
        if is_float(dt):
            raise Unsupported("floats use the bit-vector/float translation")
        if k == "Var":
            name = str(e.name)
            if name in env:
                return env[name]
            if dt == "bool":
                return z3.Bool(name), _T
            v = z3.Int(name)
            self.domain.append(self._range(v, dt))
            return v, _T
        if k == "IntImm":
            return (z3.BoolVal(bool(e.value)) if dt == "bool" else z3.IntVal(int(e.value))), _T
        if k in ("Not",):
            a, da = self._expr(e.a, env)
            return z3.Not(a), da
        if k == "Select":
            (c, dc), (t, d1), (f, d2) = (self._expr(x, env) for x in (e.condition, e.true_value, e.false_value))
            return z3.If(c, t, f), _and(dc, d1, d2)
        if k == "Call":
            op = str(e.op.name)
            args = list(e.args)
            if op.endswith("if_then_else"):
                (c, dc), (t, d1), (f, d2) = (self._expr(x, env) for x in args)
                return z3.If(c, t, f), _and(dc, z3.If(c, d1, d2))
            if op.endswith("likely") and len(args) == 1:
                return self._expr(args[0], env)
            raise Unsupported(f"call to {op} is not modelled")
        if k == "Let":
            v, dv = self._expr(e.value, env)
            inner = dict(env)
            inner[str(e.var.name)] = (v, _T)
            b, db = self._expr(e.body, inner)
            return b, _and(dv, db)
        if k == "Cast":
            a, da = self._expr(e.value, env)
            frm = _dtype(e.value)
            if is_float(frm):
                raise Unsupported("float casts use the bit-vector/float translation")
            t = int_type(dt)
            if frm == "bool":
                return (a if t.is_bool else z3.If(a, z3.IntVal(1), z3.IntVal(0))), da
            if t.is_bool:
                return a != 0, da
            if int_type(frm).bits <= t.bits:
                return a, da
            m = 1 << t.bits
            return ((a - t.min) % m) + t.min, da  # narrowing keeps the low bits
        if k not in _BINARY or k in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LShift", "RShift"):
            raise Unsupported(f"{k} uses the bit-vector translation")
        (x, dx), (y, dy) = self._expr(e.a, env), self._expr(e.b, env)
        d = _and(dx, dy)
        if k in ("And", "Or"):
            return (z3.And(x, y) if k == "And" else z3.Or(x, y)), d
        if k in ("EQ", "NE", "LT", "LE", "GT", "GE"):
            return {"EQ": x == y, "NE": x != y, "LT": x < y, "LE": x <= y, "GT": x > y, "GE": x >= y}[k], d
        if k in ("Min", "Max"):
            return (z3.If(x <= y, x, y) if k == "Min" else z3.If(x >= y, x, y)), d
        if k in ("Add", "Sub", "Mul"):
            v = x + y if k == "Add" else x - y if k == "Sub" else x * y
            return v, _and(d, self._range(v, dt))
        # Division family. SMT-LIB div/mod are Euclidean: 0 <= x mod y < |y|.
        t = int_type(dt)
        safe = z3.And(y != 0, z3.Not(z3.And(x == t.min, y == -1)))  # the same traps as the bit-vector semantics
        q, r = x / y, x % y
        floor_ok = z3.Or(y > 0, r == 0)
        fdiv = z3.If(floor_ok, q, q - 1)
        fmod = z3.If(floor_ok, r, r + y)
        if k == "FloorDiv":
            v = fdiv
        elif k == "FloorMod":
            v = fmod
        elif k == "Div":
            v = z3.If(z3.And(r != 0, (x < 0) != (y < 0)), fdiv + 1, fdiv)
        else:  # Mod: the sign of the dividend
            v = z3.If(z3.Or(fmod == 0, (x < 0) == (y < 0)), fmod, fmod - y)
        return v, _and(d, safe, self._range(v, dt))
