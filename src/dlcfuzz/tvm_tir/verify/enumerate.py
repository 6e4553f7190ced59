"""Enumeration of TIR inputs for a transformation under test (the paper's path-enumeration step).

Expressions are enumerated by node kind up to a depth bound over leaves that are symbolic
variables or boundary constants. Three reductions keep depth 2 small:
  - type pruning: only the node kinds the transformation distinguishes; everything else is the
    "other" placeholder, which is simply a variable (the transformation cannot look inside it);
  - symmetry: trees are built over anonymous variable slots and then given variables in
    first-occurrence order (x0, then x0 or x1, ...), so no two inputs differ by a renaming;
    operands of commutative kinds are ordered;
  - constant-only subtrees are left out (every one of them is just another constant), and so are
    constant zero divisors (undefined everywhere: nothing to check).
Everything is deterministic: the order depends only on the arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from dlcfuzz.errors import UsageError
from dlcfuzz.tvm_tir.verify.semantics import boundary_constants, int_type

# Abstract trees: ("V",) a variable slot, ("C", value), (kind, left, right).
Tree = tuple

ARITH_KINDS = ("Add", "Sub", "Mul", "FloorDiv", "FloorMod", "Div", "Mod", "Min", "Max")
# The simplifier's default type pruning: TVM's index arithmetic (floor division; truncating Div/Mod
# are available with --kinds) and the comparisons LT, EQ at the root (the others with --root-kinds).
INDEX_KINDS = ("Add", "Sub", "Mul", "FloorDiv", "FloorMod", "Min", "Max")
COMPARE_KINDS = ("EQ", "NE", "LT", "LE", "GT", "GE")
BITWISE_KINDS = ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LShift", "RShift")
LOGIC_KINDS = ("And", "Or")
COMMUTATIVE = {"Add", "Mul", "Min", "Max", "EQ", "NE", "And", "Or", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}
DIVISIONS = {"FloorDiv", "FloorMod", "Div", "Mod"}
BOOL_RESULT = set(COMPARE_KINDS) | set(LOGIC_KINDS)
ALL_EXPR_KINDS = ARITH_KINDS + COMPARE_KINDS + BITWISE_KINDS


@dataclass(frozen=True)
class ExprSpace:
    """What to enumerate: integer kinds inside the tree, kinds allowed at the root, leaves."""

    dtype: str = "int32"
    depth: int = 2
    kinds: tuple[str, ...] = INDEX_KINDS
    root_kinds: tuple[str, ...] = INDEX_KINDS + ("LT", "EQ")
    n_vars: int = 2
    constants: tuple[int, ...] | None = None

    def leaf_constants(self) -> list[int]:
        return list(self.constants) if self.constants is not None else boundary_constants(self.dtype)


def parse_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in ALL_EXPR_KINDS]
    if bad:
        raise UsageError(f"unknown node kind(s) {', '.join(bad)} (known: {', '.join(ALL_EXPR_KINDS)})")
    return kinds


def _has_var(t: Tree) -> bool:
    if t[0] == "V":
        return True
    if t[0] == "C":
        return False
    return any(_has_var(c) for c in t[1:])


def _key(t: Tree) -> str:
    return repr(t)


def _combine(kind: str, left: Sequence[Tree], right: Sequence[Tree], need_one: Sequence[Tree] | None) -> Iterator[Tree]:
    """kind(l, r) for l in left, r in right; with need_one, at least one operand from it (depth exact)."""
    need = {_key(t) for t in need_one} if need_one is not None else None
    for a in left:
        for b in right:
            if need is not None and _key(a) not in need and _key(b) not in need:
                continue
            if not (_has_var(a) or _has_var(b)):
                continue
            if kind in COMMUTATIVE and _key(a) > _key(b):
                continue
            if kind in DIVISIONS and b == ("C", 0):
                continue
            if kind in ("LShift", "RShift") and b[0] == "C" and not 0 <= b[1] < 64:
                continue
            yield (kind, a, b)


def abstract_trees(space: ExprSpace) -> Iterator[Tree]:
    """Integer-valued trees of depth exactly 0..space.depth (inner kinds), then the root kinds."""
    if space.depth < 1:
        raise UsageError("--depth must be at least 1")
    leaves: list[Tree] = [("V",)] + [("C", c) for c in space.leaf_constants()]
    levels: list[list[Tree]] = [leaves]
    below: list[Tree] = list(leaves)  # all trees of depth < d
    for _d in range(1, space.depth):
        level = [t for k in space.kinds if k not in BOOL_RESULT for t in _combine(k, below, below, levels[-1])]
        levels.append(level)
        below = below + level
    # The root: depth exactly space.depth, of a root kind.
    for k in space.root_kinds:
        yield from _combine(k, below, below, levels[-1])


def _slots(t: Tree) -> int:
    if t[0] == "V":
        return 1
    if t[0] == "C":
        return 0
    return sum(_slots(c) for c in t[1:])


def _rgs(m: int, k: int) -> Iterator[tuple[int, ...]]:
    """Restricted growth strings of length m over at most k symbols: variable assignments up to renaming."""
    def rec(prefix: tuple[int, ...], top: int) -> Iterator[tuple[int, ...]]:
        if len(prefix) == m:
            yield prefix
            return
        for v in range(min(top + 2, k)):
            yield from rec(prefix + (v,), max(top, v))
    if m == 0:
        yield ()
    else:
        yield from rec((0,), 0)


def var_names(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


class TirBuilder:
    """Abstract trees -> TVM TIR expressions over shared variables x0, x1, ... of one dtype."""

    def __init__(self, dtype: str, n_vars: int) -> None:
        from tvm import tirx

        self.tirx = tirx
        self.dtype = dtype
        self.vars = [tirx.Var(n, dtype) for n in var_names(n_vars)]

    def build(self, t: Tree, assignment: Sequence[int]) -> object:
        it = iter(assignment)
        return self._build(t, it)

    def _build(self, t: Tree, it: Iterator[int]) -> object:
        tirx = self.tirx
        if t[0] == "V":
            return self.vars[next(it)]
        if t[0] == "C":
            return tirx.IntImm(self.dtype, int(t[1]))
        a = self._build(t[1], it)
        b = self._build(t[2], it)
        return getattr(tirx, t[0])(a, b)


def enumerate_exprs(space: ExprSpace) -> Iterator[object]:
    """All TIR expressions of the space, canonical up to variable renaming (deterministic order)."""
    int_type(space.dtype)  # reject unmodelled dtypes early
    builder = TirBuilder(space.dtype, space.n_vars)
    for t in abstract_trees(space):
        for assignment in _rgs(_slots(t), space.n_vars):
            yield builder.build(t, assignment)


def count_exprs(space: ExprSpace) -> int:
    return sum(sum(1 for _ in _rgs(_slots(t), space.n_vars)) for t in abstract_trees(space))


# ---------------------------------------------------------------------------------------------
# Statements (for the TIR passes)
# ---------------------------------------------------------------------------------------------

STMT_KINDS = ("Store", "Seq", "If", "For", "Evaluate")


@dataclass(frozen=True)
class StmtSpace:
    """Statements over int32 scalars x0, x1 and one int32 buffer A of BUF_SIZE elements."""

    kinds: tuple[str, ...] = STMT_KINDS
    depth: int = 2
    limit: int = 2000  # depth-2 statements are sampled (seeded) down to this many
    seed: int = 0


BUF_SIZE = 4


class StmtBuilder:
    """Base statements and their combinations, built as TIR over fixed params."""

    def __init__(self) -> None:
        from tvm import tirx

        self.tirx = tirx
        self.x = [tirx.Var(n, "int32") for n in var_names(2)]
        self.A = tirx.decl_buffer((BUF_SIZE,), "int32", name="A")
        self._loop_vars = 0

    def c(self, v: int) -> object:
        return self.tirx.IntImm("int32", v)

    def load(self, i: object) -> object:
        return self.tirx.BufferLoad(self.A, [i])

    def values(self) -> list[object]:
        t, x = self.tirx, self.x
        return [x[0], x[1], self.c(0), self.c(1), self.load(self.c(0)), self.load(self.c(1)),
                t.Add(x[0], self.c(1)), t.Add(self.load(self.c(0)), x[1]), t.FloorDiv(x[0], self.c(2)),
                t.Max(x[0], x[1])]

    def indices(self) -> list[object]:
        return [self.c(0), self.c(1), self.tirx.FloorMod(self.x[0], self.c(BUF_SIZE))]

    def conditions(self) -> list[object]:
        t, x = self.tirx, self.x
        return [t.LT(x[0], x[1]), t.EQ(x[0], self.c(0)), t.LT(self.load(self.c(0)), self.c(1))]

    def base(self, kinds: Sequence[str]) -> list[object]:
        t = self.tirx
        out: list[object] = []
        if "Store" in kinds:
            for i in self.indices():
                for v in self.values():
                    out.append(t.BufferStore(self.A, v, [i]))
            # A store of the value already there: what RemoveNoOp looks for.
            out.append(t.BufferStore(self.A, self.load(self.c(1)), [self.c(1)]))
        if "Evaluate" in kinds:
            out.append(t.Evaluate(self.c(0)))
        return out

    def loop(self, body_of) -> object:
        t = self.tirx
        self._loop_vars += 1
        i = t.Var(f"i{self._loop_vars}", "int32")
        return t.For(i, self.c(0), self.c(2), t.ForKind.SERIAL, body_of(i))

    def loop_bodies(self) -> list:
        t, x = self.tirx, self.x
        return [lambda i: t.BufferStore(self.A, t.Add(self.load(i), x[0]), [i]),
                lambda i: t.BufferStore(self.A, i, [t.Add(i, self.c(1))]),
                lambda i: t.IfThenElse(t.LT(i, x[0]), t.BufferStore(self.A, x[1], [i]), None)]

    def combine(self, kinds: Sequence[str], parts: Sequence[object], rng: np.random.Generator | None,
                limit: int | None) -> list[object]:
        """Seq/If of two parts, For over loop bodies; sampled down to `limit` with rng."""
        t = self.tirx
        n = len(parts)
        conds = self.conditions()
        n_seq = n * n if "Seq" in kinds else 0
        n_if = len(conds) * n * (n + 1) if "If" in kinds else 0
        total = n_seq + n_if
        if rng is not None and limit is not None and total > limit:
            # Sample indices, not candidates: at depth 2 there are ~10^7 of them.
            picked: set[int] = set()
            while len(picked) < limit:
                picked.add(int(rng.integers(total)))
            indices: Iterable[int] = sorted(picked)
        else:
            indices = range(total)
        out: list[object] = []
        for k in indices:
            if k < n_seq:
                out.append(t.SeqStmt([parts[k // n], parts[k % n]]))
            else:
                k -= n_seq
                c, rest = divmod(k, n * (n + 1))
                i, j = divmod(rest, n + 1)
                out.append(t.IfThenElse(conds[c], parts[i], parts[j - 1] if j > 0 else None))
        if "For" in kinds:
            out += [self.loop(b) for b in self.loop_bodies()]
        return out

    def func(self, body: object) -> object:
        t = self.tirx
        return t.PrimFunc([self.x[0], self.x[1], self.A], body).with_attr("global_symbol", "main")


def enumerate_stmts(space: StmtSpace) -> Iterator[object]:
    """PrimFuncs whose bodies are the statements of the space: depth 0 and 1 in full, depth 2 sampled."""
    b = StmtBuilder()
    rng = np.random.default_rng(space.seed)
    level0 = b.base(space.kinds)
    for s in level0:
        yield b.func(s)
    if space.depth < 1:
        return
    level1 = b.combine(space.kinds, level0, None, None)
    for s in level1:
        yield b.func(s)
    if space.depth < 2:
        return
    # Depth 2 combines a depth-1 statement with anything below: sampled, the full product is ~10^6.
    parts = level1 + level0
    for s in b.combine(space.kinds, parts, rng, space.limit):
        yield b.func(s)
