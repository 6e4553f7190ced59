"""A typed program of a framework's own language: inputs, statements, outputs; its generation,
source and statement-level reduction.

A program is inputs (name, dtype, shape, layout), a list of statements `vK = op(args, attrs)` or
in-place statements `op_(target, args, attrs)` that mutate their first argument (a value, a view of
one, or an input) and define nothing, and outputs (value names; an output may be an input or a view
of one, and may repeat). After a call every input is compared too, so a mutation is judged like an
output. A program may also be a training step (`steps` > 0): its float outputs reduced to a scalar loss,
the gradients of its float inputs, and that many in-place updates of those inputs by their gradients
(the dialect's runner says how); its statements are the same either way.

A region statement (control flow: a conditional, a loop, a scan) holds `bodies`, nested functions
(`Body`: the names it binds on each entry, its statements, its results). A body reads the values of
the enclosing scope it needs (captured: by closure, or passed as its parameters where the dialect's
construct takes operands, as a conditional's branches do); a region defines one value per result
(`out`, then `more_outs`: a loop's carried values, a scan's stacked outputs). The dialect's spelling
says which construct it is; the core emits bodies as nested functions, types them through the dialect,
and reduces them (dead statements dropped, a region replaced by one of its bodies run once).

The framework is a `Dialect` (its backend's): an op table (`OpSpec`: what an op accepts, how its
attributes are sampled, its source spelling) and the framework's own type inference (`apply`: the
framework runs the statement on shape-only values, e.g. meta tensors, and says the result's dtype
and shape, or raises). Asking the framework rather than writing a result-type rule per op keeps
the generator exact about the framework's promotion and broadcasting rules, whatever the op.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dlcfuzz.lower.pysource.codegen import literal

LAYOUTS = ("contiguous", "transposed", "channels_last")
INTEGER = ("uint8", "int8", "int16", "int32", "int64")
SIGNED = ("int8", "int16", "int32", "int64")
FLOAT = ("float16", "float32", "float64")
NUMERIC = INTEGER + FLOAT
ENTRY = "program"  # the emitted function's name


@dataclass(frozen=True)
class Input:
    name: str
    dtype: str
    shape: tuple[int, ...]
    layout: str = "contiguous"  # "transposed": a view with its last two axes swapped; "channels_last" (rank 4)


@dataclass
class Stmt:
    op: str
    args: list[Any]  # value names (str) or Python scalars (int, float, bool)
    attrs: dict[str, Any] = field(default_factory=dict)
    out: str | None = None  # None: an in-place statement (it mutates args[0])
    bodies: list[Body] = field(default_factory=list)  # a region's nested functions (empty: a plain statement)
    more_outs: list[str] = field(default_factory=list)  # a region's results after `out`

    def uses(self) -> list[str]:
        """The enclosing scope's values it reads, each once: its arguments, then what its bodies capture."""
        return list(dict.fromkeys([a for a in self.args if isinstance(a, str)]
                                  + [a for b in self.bodies for a in b.captured()]))

    def defines(self) -> list[str]:
        return [self.out, *self.more_outs] if self.out else []

    def to_json(self) -> list[Any]:
        row = [self.op, self.args, self.attrs, self.out]
        return [*row, [b.to_json() for b in self.bodies], self.more_outs] if self.bodies else row

    @classmethod
    def from_json(cls, row: list[Any]) -> Stmt:
        op, args, attrs, out = row[:4]  # a program stored before regions has 4-element rows
        bodies = [Body.from_json(b) for b in row[4]] if len(row) > 4 else []
        return cls(op, list(args), dict(attrs), out, bodies, list(row[5]) if len(row) > 5 else [])


@dataclass
class Body:
    """A region's nested function: the names it binds on each entry (`params`: a loop's carried values and
    index, a scanned slice, a branch's operands), its statements (no in-place ones) and what it returns."""

    params: list[str]
    stmts: list[Stmt]
    results: list[str]

    def captured(self) -> list[str]:
        """The names it reads from the enclosing scope (read and not bound here), in order of first use."""
        bound, out = set(self.params), []
        for s in self.stmts:
            out += [a for a in s.uses() if a not in bound and a not in out]
            bound.update(s.defines())
        return out + [r for r in self.results if r not in bound and r not in out]

    def to_json(self) -> list[Any]:
        return [self.params, [s.to_json() for s in self.stmts], self.results]

    @classmethod
    def from_json(cls, d: list[Any]) -> Body:
        return cls(list(d[0]), [Stmt.from_json(s) for s in d[1]], list(d[2]))


def pass_captured(bodies: Sequence[Body]) -> list[str]:
    """Alternative bodies (a conditional's branches) made to take everything any of them captures as their
    parameters, of the same names; those names, the construct's operands, in order of first use."""
    captured = list(dict.fromkeys(a for b in bodies for a in b.captured()))
    for b in bodies:
        b.params = list(captured)
    return captured


def walk(stmts: Sequence[Stmt]) -> Iterator[Stmt]:
    """Every statement, those in regions' bodies too (a region before its bodies' statements)."""
    for s in stmts:
        yield s
        for b in s.bodies:
            yield from walk(b.stmts)


@dataclass
class Program:
    inputs: list[Input]
    stmts: list[Stmt]
    outputs: list[str]
    steps: int = 0  # 0: an inference call; N: N training steps (loss, backward, in-place update)

    def to_json(self) -> dict[str, Any]:
        d = {"inputs": [[i.name, i.dtype, list(i.shape), i.layout] for i in self.inputs],
             "stmts": [s.to_json() for s in self.stmts], "outputs": list(self.outputs)}
        return {**d, "steps": self.steps} if self.steps else d  # an inference program's form is unchanged

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Program:
        return cls([Input(n, t, tuple(s), lay) for n, t, s, lay in d["inputs"]],
                   [Stmt.from_json(s) for s in d["stmts"]], list(d["outputs"]),
                   int(d.get("steps", 0)))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def ops(self) -> list[str]:
        return sorted({s.op for s in walk(self.stmts)})

    def has_region(self) -> bool:
        return any(s.bodies for s in self.stmts)


@dataclass
class Value:
    """A value as the generator sees it: its type, and whether an in-place write to it is legal."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    writable: bool = True  # False for values whose elements share memory (an expand, an unfold)
    view: bool = False  # it aliases (a region's result: may alias) another value's storage

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Draw:
    """An op's sampled arguments and attributes (a region's: its bodies and how many values it defines)."""

    args: list[Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    bodies: list[Body] = field(default_factory=list)
    n_out: int = 1


@dataclass(frozen=True)
class OpSpec:
    """One op of a dialect's table."""

    name: str
    sample: Callable[[Pool], Draw | None]  # arguments from the pool, attributes sampled; None: not applicable
    spell: Callable[[list[str], dict[str, Any]], str]  # source of the call from spelled arguments
    inplace: bool = False  # mutates args[0]; the statement defines no value
    view: bool = False  # the result aliases args[0] (a write to either shows in both)
    overlapping: bool = False  # the result's elements share memory: no in-place write to it
    weight: float = 1.0
    # the dialect's check of the actual argument values before the op runs: (category, reason) of undefined
    # behaviour, or None; opaque here (the dialect's runner calls it)
    undefined: Callable[..., tuple[str, str] | None] | None = None
    overflows: bool = False  # a signed integer result may overflow (the dialect checks it on a wide copy)
    # its float results carry gradients to its float arguments (training steps); a function of the attributes
    # where that depends on them (a Python operator that may be `//`)
    differentiable: bool | Callable[[dict[str, Any]], bool] = True
    # a Python decision on a computed value (a branch on it, `.item()`): a tracer cannot keep the program one graph
    breaks_graph: bool = False
    # a region: its bodies' roles, which name the emitted functions (`v5_true`, `v5_body`; `branchK` past them)
    roles: tuple[str, ...] = ()
    # a region: the values body K's parameters take when the reduction replaces the region by that body run
    # once (names or scalars of the enclosing scope; the body's results then stand for the region's), or None
    # where that body cannot stand for the region (a loop's condition, a scan's body: its slice has no name)
    trip: Callable[[Stmt, int], list[Any] | None] | None = None
    # a region: the assignment target of its results (default `v5, v6 = ...`; a scan's `(c, ...), (y, ...) = ...`)
    unpack: Callable[[list[str], dict[str, Any]], str] | None = None


class Dialect(Protocol):
    """A framework's program language (`Backend.program_dialect()`)."""

    name: str
    ops: Mapping[str, OpSpec]
    dtypes: Sequence[tuple[str, float]]  # input dtypes and their weights
    train_share: float  # the share of (unspliced) programs that train: forward, backward and steps
    splice_share: float  # the share of programs that start with a seed `splice` gives (0: it has none)
    splice_ops: tuple[str, ...]  # the ops of spliced statements (a stored test's program shows it was spliced)

    def splice(self, rng: np.random.Generator, fired: set[str]
               ) -> tuple[Callable[[Pool], list[Stmt]], bool] | None:
        """A program's first statements, a seed of the compiler's own (a replacement pattern; those whose
        rewrites are not in `fired` preferred), and whether the seed trains; None where it has none."""
        ...

    def start(self, inputs: list[Input]) -> Any:
        """The typing state of a program's inputs (shape-only values)."""
        ...

    def apply(self, state: Any, stmt: Stmt) -> tuple[str, tuple[int, ...]] | list[tuple[str, tuple[int, ...]]] | None:
        """Run `stmt` on the typing state; the defined value's (dtype, shape) (None for an in-place
        statement; a list, one per defined value, for a region). Raises when the framework rejects it."""
        ...

    def enter(self, state: Any, params: list[Value]) -> Any:
        """The typing state inside a body: a copy of the enclosing `state` with the body's parameters."""
        ...

    def per_test_configs(self, rng: np.random.Generator, configs: list[tuple[str, dict[str, Any]]]
                         ) -> list[tuple[str, dict[str, Any]]]:
        """The configurations (name, options) one test compiles: `configs`, some varied per test."""
        ...

    def run(self, program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]],
            note: Callable[[str], None]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Worker side: the program run eagerly (with the guards: meta "invalid" or "undefined" when they
        stop it), as a float64 reference ("fp64") and by each configuration; arrays "RUN/out/K" and
        "RUN/in/K" (inputs after the call); meta "runs": RUN -> status, error."""
        ...

    def reproducer(self, program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]], title: str,
                   detail: str, version: str) -> str:
        """A standalone script of the framework alone that exits 1 while the finding shows."""
        ...


class Pool:
    """What an op's sampler draws from: the values defined so far and the random generator; a region's
    sampler makes its bodies with `body`."""

    def __init__(self, rng: np.random.Generator, values: dict[str, Value], scope: _Scope | None = None) -> None:
        self.rng = rng
        self.values = values
        self._scope = scope

    def body(self, params: list[Value], n_stmts: int, need: Sequence[tuple[str, tuple[int, ...]]] = (),
             n_results: int = 0, outer: bool = False) -> tuple[Body, list[Value]] | None:
        """A body generated in a scope of the values so far (captured by closure) and `params` (named by
        `fresh`), and its results' values: one of each type in `need`, then up to `n_results` more, values
        the body defines (with `outer`, a `need` the body defines none of may be met by a parameter or a
        value it captures: the framework lets a body return them); None where no body fits (or regions
        nest too deep already)."""
        return self._scope.body(self, params, n_stmts, need, n_results, outer) if self._scope is not None else None

    def fresh(self) -> str:
        """A new value name (a body's parameter), unique in the program."""
        if self._scope is None:
            raise ValueError("a pool outside a generator names no values")
        return self._scope.gen.fresh()

    def pick(self, dtypes: Sequence[str] | None = None, min_rank: int = 0, max_rank: int = 8,
             writable: bool = False, where: Callable[[Value], bool] | None = None) -> Value | None:
        """A random value of one of `dtypes` and a rank in range; later values are likelier (chains)."""
        cands = [v for v in self.values.values() if (dtypes is None or v.dtype in dtypes)
                 and min_rank <= v.rank <= max_rank and (v.writable or not writable) and (where is None or where(v))]
        if not cands:
            return None
        w = np.arange(1, len(cands) + 1, dtype=float)
        return cands[int(self.rng.choice(len(cands), p=w / w.sum()))]

    def partner(self, v: Value, dtypes: Sequence[str] | None = None) -> Value | None:
        """Another value whose shape broadcasts to `v`'s (so an in-place op on `v` accepts it too)."""
        return self.pick(dtypes, where=lambda u: broadcasts_to(u.shape, v.shape))

    def axis(self, v: Value) -> int:
        """An axis of `v`, sometimes negative."""
        a = int(self.rng.integers(v.rank))
        return a - v.rank if self.rng.random() < 0.3 else a

    def integers(self, lo: int, hi: int) -> int:
        """A random integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def coin(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def scalar(self, dtype: str) -> int | float | bool:
        """A Python scalar: an int for an integer or bool value, and sometimes a float for any value
        (the framework's promotion of a Python scalar is what such a statement tests)."""
        if dtype == "bool":
            return self.coin()
        if dtype in INTEGER and self.coin(0.75):
            return self.integers(0 if dtype == "uint8" else -3, 4)
        return float(self.choice((0.5, 2.5, -1.5, 3.0, 0.25, -0.75)))


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether `shape` broadcasts to `target` (without changing `target`)."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def _sample_inputs(rng: np.random.Generator, dtypes: Sequence[tuple[str, float]], n: int) -> list[Input]:
    names, weights = zip(*dtypes)
    p = np.asarray(weights, float) / sum(weights)
    first: tuple[int, ...] = ()
    out = []
    for k in range(n):
        if k and rng.random() < 0.5:  # shapes that broadcast together
            shape = first[int(rng.integers(len(first) + 1)):] if rng.random() < 0.3 else first
        else:
            shape = tuple(int(d) for d in rng.integers(1, 6, size=int(rng.integers(1, 5))))
        first = first or shape
        layout = "contiguous"
        r = rng.random()
        if len(shape) == 4 and r < 0.3:
            layout = "channels_last"
        elif len(shape) >= 2 and r < 0.5:
            layout = "transposed"
        out.append(Input(f"x{k}", str(rng.choice(names, p=p)), shape, layout))
    return out


MAX_DEPTH = 2  # regions nest this deep at most (a region in a body of a region)


class _Generator:
    """One program's generation: the value names (unique across bodies) and the statements of a scope."""

    def __init__(self, dialect: Dialect, rng: np.random.Generator) -> None:
        self.dialect, self.rng, self.count = dialect, rng, 0
        self.ops = list(dialect.ops.values())

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count - 1}"

    def fill(self, state: Any, values: dict[str, Value], n_stmts: int, depth: int) -> list[Stmt]:
        """About `n_stmts` statements drawn into `values` (typed on `state`); in a body (depth > 0) no
        in-place, view or graph-breaking op: a body is a pure function of its parameters and captures."""
        ops = self.ops if depth == 0 else [o for o in self.ops if not (o.inplace or o.view or o.breaks_graph
                                                                        or o.overlapping)]
        w = np.asarray([o.weight for o in ops], float)
        w /= w.sum()
        pool = Pool(self.rng, values, _Scope(self, state, depth))
        stmts: list[Stmt] = []
        for _ in range(6 * n_stmts):
            if len(stmts) >= n_stmts:
                break
            op = ops[int(self.rng.choice(len(ops), p=w))]
            mark = self.count  # a rejected draw gives its names back
            draw = op.sample(pool)
            if draw is None:
                self.count = mark
                continue
            outs = [] if op.inplace else [self.fresh() for _ in range(draw.n_out)]
            stmt = Stmt(op.name, list(draw.args), dict(draw.attrs), outs[0] if outs else None, list(draw.bodies),
                        outs[1:])
            try:
                typed = self.dialect.apply(state, stmt)
            except Exception:  # noqa: S112 - the framework rejects this draw: draw another
                self.count = mark
                continue
            stmts.append(stmt)
            self.define(op, stmt, typed, values)
        return stmts

    def define(self, op: OpSpec, stmt: Stmt, typed: Any, values: dict[str, Value]) -> None:
        """The values `stmt` (typed `typed` by the dialect) defines, as the pool sees them."""
        if typed is None or stmt.out is None:
            return
        base = values[stmt.args[0]] if stmt.args and isinstance(stmt.args[0], str) else None
        writable = not op.overlapping and (base.writable if op.view and base is not None else True)
        # a region's results may alias what it read (a loop that ran no trip returns its carry)
        writable = writable and not stmt.bodies
        for name, (dtype, shape) in zip(stmt.defines(), typed if isinstance(typed, list) else [typed]):
            values[name] = Value(name, dtype, tuple(shape), writable, op.view or bool(stmt.bodies))


@dataclass
class _Scope:
    """Where a pool draws: its generator, the typing state and how deep in regions it is."""

    gen: _Generator
    state: Any
    depth: int

    def body(self, pool: Pool, params: list[Value], n_stmts: int, need: Sequence[tuple[str, tuple[int, ...]]],
             n_results: int, outer: bool) -> tuple[Body, list[Value]] | None:
        if self.depth >= MAX_DEPTH:
            return None
        values = {**pool.values, **{p.name: p for p in params}}
        stmts = self.gen.fill(self.gen.dialect.enter(self.state, params), values, n_stmts, self.depth + 1)
        defined = [values[d] for s in stmts for d in s.defines() if d in values]
        picks: list[Value] = []
        for dtype, shape in need:
            fit = [v for v in defined if v.dtype == dtype and v.shape == tuple(shape) and v not in picks]
            if not fit and outer:
                fit = [v for v in values.values() if v.dtype == dtype and v.shape == tuple(shape)]
            if not fit:
                return None
            picks.append(fit[int(self.gen.rng.integers(len(fit)))])
        used = {a for s in stmts for a in s.uses()}
        free = [v for v in defined if v.name not in used] or defined  # what nothing else reads first
        if n_results and free:
            picks += [free[int(k)] for k in sorted(self.gen.rng.choice(len(free), min(n_results, len(free)),
                                                                         replace=False))]
        if not picks:
            return None
        return Body([p.name for p in params], stmts, [v.name for v in picks]), picks


def generate(dialect: Dialect, rng: np.random.Generator, n_stmts: int = 8, max_inputs: int = 3,
             first: Callable[[Pool], list[Stmt]] | None = None) -> Program:
    """A random valid program of about `n_stmts` statements: each op's sampler draws arguments from the
    values so far and the dialect's type inference accepts or rejects the statement; a region's sampler
    draws its bodies the same way, in their own scopes. `first` (a generic hook, e.g. a spliced seed):
    statements drawn from the inputs before the others (their values named v0, v1, ... in order), kept as
    they are; it raises where the framework rejects one."""
    inputs = _sample_inputs(rng, dialect.dtypes, int(rng.integers(1, max_inputs + 1)))
    values = {i.name: Value(i.name, i.dtype, i.shape) for i in inputs}
    state = dialect.start(inputs)
    gen = _Generator(dialect, rng)
    stmts: list[Stmt] = []
    for stmt in first(Pool(rng, values, _Scope(gen, state, 0))) if first is not None else ():
        gen.define(dialect.ops[stmt.op], stmt, dialect.apply(state, stmt), values)
        stmts.append(stmt)
        gen.count += len(stmt.defines())
    stmts += gen.fill(state, values, n_stmts, 0)
    return Program(inputs, stmts, _outputs(rng, inputs, stmts))


def one_graph(program: Program, ops: Mapping[str, OpSpec]) -> bool:
    """Whether a tracer can keep `program` one graph (no statement's op breaks it)."""
    return not any(ops[s.op].breaks_graph for s in walk(program.stmts))


def differentiable(program: Program, ops: Mapping[str, OpSpec]) -> bool:
    """Whether reverse-mode differentiation is defined through every statement (those in bodies too)."""
    def defined(s: Stmt) -> bool:
        d = ops[s.op].differentiable
        return d(s.attrs) if callable(d) else d

    return all(map(defined, walk(program.stmts)))


def trainable(program: Program, ops: Mapping[str, OpSpec]) -> bool:
    """Whether `program` can run as a training step: a float input (a parameter) and only differentiable ops."""
    return any(i.dtype in FLOAT for i in program.inputs) and differentiable(program, ops)


def with_training(program: Program, ops: Mapping[str, OpSpec], rng: np.random.Generator, share: float,
                  max_steps: int = 3) -> Program:
    """`program` as a training step of 1..max_steps steps for a `share` of the trainable programs."""
    if share <= 0 or not trainable(program, ops) or rng.random() >= share:
        return program
    return dataclasses.replace(program, steps=int(rng.integers(1, max_steps + 1)))


def value_dtypes(program: Program, dialect: Dialect) -> dict[str, str]:
    """The dtype of each value `program` names, typed by the dialect as the generator typed it (`start`, `apply`):
    its inputs, what its statements define and, where the region's op says what a body's parameters take
    (`OpSpec.trip`; a body it does not bind is left out), the body's parameters and what its statements define. A finding's
    dtypes facts (the strategy stores them beside its program). Typing stops at a statement the dialect rejects
    (a program stored under another release of the framework): what was typed before it is kept."""
    types = {i.name: (i.dtype, tuple(i.shape)) for i in program.inputs}

    def scope(state: Any, stmts: Sequence[Stmt]) -> None:
        for s in stmts:
            typed = dialect.apply(state, s)
            if typed is not None:
                for name, (dtype, shape) in zip(s.defines(), typed if isinstance(typed, list) else [typed]):
                    types[name] = (dtype, tuple(shape))
            spec = dialect.ops[s.op]
            for j, body in enumerate(s.bodies):
                binding = spec.trip(s, j) if spec.trip is not None else None
                if binding is None or len(binding) != len(body.params) or not all(
                        isinstance(a, str) and a in types for a in binding):
                    continue
                params = [Value(p, *types[a]) for p, a in zip(body.params, binding)]
                types.update({v.name: (v.dtype, v.shape) for v in params})
                scope(dialect.enter(state, params), body.stmts)

    try:
        scope(dialect.start(program.inputs), program.stmts)
    except Exception:  # noqa: BLE001, S110 - the framework rejects a statement: its values and those after it untyped
        pass
    return {name: dtype for name, (dtype, _) in types.items()}


def _outputs(rng: np.random.Generator, inputs: list[Input], stmts: list[Stmt]) -> list[str]:
    """The values nothing later reads (the program's results), sometimes an input itself or a value
    twice (outputs that alias an input or each other)."""
    defined = [d for s in stmts for d in s.defines()]
    used = {a for s in stmts for a in s.uses()}
    outs = [v for v in defined if v not in used][-6:] or defined[-1:]
    if defined and rng.random() < 0.2:
        outs.append(str(rng.choice(defined)))
    if rng.random() < 0.1:
        outs.append(inputs[int(rng.integers(len(inputs)))].name)
    return outs


def emit(program: Program, ops: Mapping[str, OpSpec], name: str = ENTRY) -> str:
    """The program as a Python function `name(inputs...)` returning a tuple of its outputs."""
    return emit_function(program.stmts, ops, name, [i.name for i in program.inputs], program.outputs)


def emit_function(stmts: Sequence[Stmt], ops: Mapping[str, OpSpec], name: str, params: Sequence[str],
                  results: Sequence[str], indent: str = "") -> str:
    """`def name(params): stmts; return (results,)`: a program, a body, or one statement alone (the
    dialects type and check a region statement by running this function of what it reads)."""
    lines = [f"{indent}def {name}({', '.join(params)}):", *_emit_stmts(stmts, ops, indent + "    ")]
    outs = "".join(f"{o}, " for o in results)
    lines.append(f"{indent}    return ({outs.rstrip()})")
    return "\n".join(lines) + "\n"


def body_names(stmt: Stmt, spec: OpSpec) -> list[str]:
    """The emitted functions' names of a region's bodies: `v5_true`, `v5_body`, or `v5_branchK`."""
    return [f"{stmt.out}_{spec.roles[k] if k < len(spec.roles) else f'branch{k}'}" for k in range(len(stmt.bodies))]


def _emit_stmts(stmts: Sequence[Stmt], ops: Mapping[str, OpSpec], indent: str) -> list[str]:
    lines = []
    for s in stmts:
        spec = ops[s.op]
        args = [a if isinstance(a, str) else literal(a) for a in s.args]
        if not s.bodies:
            expr = spec.spell(args, s.attrs)
            lines.append(f"{indent}{s.out} = {expr}" if s.out else f"{indent}{expr}")
            continue
        fns = body_names(s, spec)
        for fn, b in zip(fns, s.bodies):
            lines += emit_function(b.stmts, ops, fn, b.params, b.results, indent).rstrip("\n").split("\n")
        target = spec.unpack(s.defines(), s.attrs) if spec.unpack else ", ".join(s.defines()) + "," * (not s.more_outs)
        lines.append(f"{indent}{target} = {spec.spell(args, {**s.attrs, 'fns': fns})}")
    return lines


# ---- statement-level reduction --------------------------------------------------------------------
def closure(program: Program, kept: Sequence[int]) -> list[int]:
    """Statement indices `kept` completed by the statements that define what they read (transitively);
    an in-place statement stays only where it is kept itself (dropping a write keeps a program valid)."""
    where = {d: k for k, s in enumerate(program.stmts) for d in s.defines()}
    out, todo = set(kept), list(kept)
    while todo:
        for a in program.stmts[todo.pop()].uses():
            k = where.get(a)
            if k is not None and k not in out:
                out.add(k)
                todo.append(k)
    return sorted(out)


def restrict(program: Program, kept: Sequence[int], outputs: Sequence[str] | None = None) -> Program:
    """The program of statements `kept` (closed by `closure`), its outputs those still defined, and only
    the inputs it reads."""
    stmts = [program.stmts[k] for k in closure(program, kept)]
    defined = {d for s in stmts for d in s.defines()} | {i.name for i in program.inputs}
    outs = [o for o in (program.outputs if outputs is None else outputs) if o in defined]
    read = {a for s in stmts for a in s.uses()} | set(outs)
    return Program([i for i in program.inputs if i.name in read], stmts, outs, program.steps)


def reduce_program(program: Program, fails: Callable[[Program], bool], max_checks: int = 40,
                   ops: Mapping[str, OpSpec] | None = None) -> Program:
    """Delta debugging over the statements (each candidate closed over its dependencies), then over the
    outputs; with the dialect's `ops`, then the regions (`simplify_regions`: one replaced by one of its
    bodies, a body's dead statements dropped) and the statements again where that helped; then each
    input's layout made contiguous; `fails(program)` is assumed. What it returns was judged failing: ddmin does not
    judge the whole set it starts from, and `restrict` of every statement still drops the inputs nothing reads,
    which changes the other inputs' values where a dialect draws them in order from one seed (Inductor's
    make_inputs): that program, never judged, was a finding's reduced program and reproducer that did not show it
    (issue 38's finding 10); where it does not fail, the last program that did is returned."""
    shown = {program.dumps()}  # the programs judged failing (`program` assumed)
    last = [program]  # the last of them

    def judged(p: Program) -> bool:
        if fails(p):
            shown.add(p.dumps())
            last[0] = p
            return True
        return False

    cur = _reduce(program, judged, max_checks, ops)
    return cur if cur.dumps() in shown or judged(cur) else last[0]


def _reduce(program: Program, fails: Callable[[Program], bool], max_checks: int,
            ops: Mapping[str, OpSpec] | None) -> Program:
    cur = _reduce_statements(program, fails, max_checks)
    if ops is not None and cur.has_region():
        simpler = simplify_regions(cur, ops, fails, max_checks)
        if simpler is not cur:
            cur = _reduce_statements(simpler, fails, max_checks)
    for k, i in enumerate(cur.inputs):
        if i.layout != "contiguous":
            cand = dataclasses.replace(cur, inputs=[*cur.inputs[:k], Input(i.name, i.dtype, i.shape),
                                                    *cur.inputs[k + 1:]])
            if fails(cand):
                cur = cand
    return cur


def _reduce_statements(program: Program, fails: Callable[[Program], bool], max_checks: int) -> Program:
    from dlcfuzz.reduce.ddmin import ddmin

    idx = list(range(len(program.stmts)))
    keep = ddmin(idx, lambda sub: fails(restrict(program, sub)), close=lambda sub: closure(program, sub),
                 max_checks=max_checks)
    cur = restrict(program, keep)
    if len(cur.outputs) > 1:
        outs = ddmin(list(range(len(cur.outputs))),
                     lambda sub: fails(restrict(cur, range(len(cur.stmts)), [cur.outputs[k] for k in sub])),
                     max_checks=max(4, max_checks // 4))
        cur = restrict(cur, range(len(cur.stmts)), [cur.outputs[k] for k in outs])
    return cur


def simplify_regions(program: Program, ops: Mapping[str, OpSpec], fails: Callable[[Program], bool],
                     max_checks: int = 40) -> Program:
    """Greedy: the first candidate of `region_candidates` that still fails replaces the program, until none
    does or `max_checks` candidates ran (a body inlined at the top level makes its own regions candidates)."""
    cur, checks, found = program, 0, True
    while found and checks < max_checks:
        found = False
        for cand in region_candidates(cur, ops):
            checks += 1
            if fails(cand):
                cur, found = cand, True
                break
            if checks >= max_checks:
                break
    return cur


def region_candidates(program: Program, ops: Mapping[str, OpSpec]) -> Iterator[Program]:
    """Simpler programs, region by region: the region replaced by one of its bodies run once (where its op's
    `trip` says what the body's parameters take), then the region with its bodies' dead statements dropped."""
    for k, s in enumerate(program.stmts):
        if not s.bodies:
            continue
        spec = ops[s.op]
        for j in range(len(s.bodies)):
            binding = spec.trip(s, j) if spec.trip is not None else None
            if binding is not None and (cand := inline_body(program, k, j, binding)) is not None:
                yield cand
        pruned = _pruned(s)
        if pruned != s:
            yield dataclasses.replace(program, stmts=[*program.stmts[:k], pruned, *program.stmts[k + 1:]])


class _NotInlinable(Exception):
    """A scalar would stand where a name must (a body's parameter or result)."""


def _renamed(stmt: Stmt, sub: Mapping[str, Any]) -> Stmt:
    """`stmt` with the names in `sub` replaced (its arguments, the value names its attributes hold, its bodies)."""
    def name(a: str) -> str:
        b = sub.get(a, a)
        if not isinstance(b, str):
            raise _NotInlinable(a)
        return b

    return dataclasses.replace(
        stmt, args=[sub.get(a, a) if isinstance(a, str) else a for a in stmt.args],
        attrs={k: sub.get(v, v) if isinstance(v, str) and isinstance(sub.get(v, v), str) else v
               for k, v in stmt.attrs.items()},
        bodies=[Body([name(p) for p in b.params], [_renamed(t, sub) for t in b.stmts], [name(r) for r in b.results])
                for b in stmt.bodies])


def inline_body(program: Program, k: int, j: int, binding: Sequence[Any]) -> Program | None:
    """Region statement `k` replaced by its body `j` run once, its parameters bound to `binding` and its
    results standing for the region's values; None where a scalar would stand for a name."""
    s = program.stmts[k]
    body = s.bodies[j]
    try:
        params = dict(zip(body.params, binding))
        inlined = [_renamed(t, params) for t in body.stmts]
        results = [params.get(r, r) for r in body.results]
        if not all(isinstance(r, str) for r in results):
            return None
        outs = dict(zip(s.defines(), results))
        rest = [_renamed(t, outs) for t in program.stmts[k + 1:]]
    except _NotInlinable:
        return None
    stmts = [*program.stmts[:k], *inlined, *rest]
    cand = Program(program.inputs, stmts, [outs.get(o, o) for o in program.outputs], program.steps)
    return restrict(cand, range(len(stmts)))


def _pruned(stmt: Stmt) -> Stmt:
    """`stmt` with each body's statements that its results do not need dropped (bodies are pure)."""
    bodies = []
    for b in stmt.bodies:
        where = {d: k for k, t in enumerate(b.stmts) for d in t.defines()}
        need = {where[r] for r in b.results if r in where}
        todo = list(need)
        while todo:
            for a in b.stmts[todo.pop()].uses():
                if (k := where.get(a)) is not None and k not in need:
                    need.add(k)
                    todo.append(k)
        bodies.append(Body(b.params, [_pruned(b.stmts[k]) for k in sorted(need)], b.results))
    return dataclasses.replace(stmt, bodies=bodies)


# ---- a test as the worker gets it and the store keeps it --------------------------------------------
def encode_test(program: Program, seed: int, configs: Sequence[tuple[str, dict[str, Any]]]) -> bytes:
    """A program test: the program, the seed of its inputs, the configurations (name, options) to compile."""
    return json.dumps({"program": program.to_json(), "seed": int(seed), "configs": [[n, o] for n, o in configs]},
                      sort_keys=True).encode()


def decode_test(blob: bytes) -> tuple[Program, int, list[tuple[str, dict[str, Any]]]]:
    d = json.loads(blob.decode())
    return Program.from_json(d["program"]), int(d["seed"]), [(n, dict(o)) for n, o in d["configs"]]


__all__ = ["ENTRY", "FLOAT", "INTEGER", "LAYOUTS", "MAX_DEPTH", "NUMERIC", "SIGNED", "Body", "Dialect", "Draw", "Input",
           "OpSpec", "Pool", "Program", "Stmt", "Value", "body_names", "broadcasts_to", "closure", "decode_test", "differentiable", "emit",
           "emit_function", "encode_test", "generate", "inline_body", "one_graph", "pass_captured", "reduce_program", "region_candidates",
           "restrict", "simplify_regions", "trainable", "value_dtypes", "walk", "with_training"]
