"""A typed program of a framework's own language: inputs, statements, outputs; its generation,
source and statement-level reduction.

A program is inputs (name, dtype, shape, layout), a list of statements `vK = op(args, attrs)` or
in-place statements `op_(target, args, attrs)` that mutate their first argument (a value, a view of
one, or an input) and define nothing, and outputs (value names; an output may be an input or a view
of one, and may repeat). After a call every input is compared too, so a mutation is judged like an
output. A program may also be a training step (`steps` > 0): its float outputs reduced to a scalar loss,
the gradients of its float inputs, and that many in-place updates of those inputs by their gradients
(the dialect's runner says how); its statements are the same either way.

The framework is a `Dialect` (its backend's): an op table (`OpSpec`: what an op accepts, how its
attributes are sampled, its source spelling) and the framework's own type inference (`apply`: the
framework runs the statement on shape-only values, e.g. meta tensors, and says the result's dtype
and shape, or raises). Asking the framework rather than writing a result-type rule per op keeps
the generator exact about the framework's promotion and broadcasting rules, whatever the op.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
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

    def uses(self) -> list[str]:
        return [a for a in self.args if isinstance(a, str)]


@dataclass
class Program:
    inputs: list[Input]
    stmts: list[Stmt]
    outputs: list[str]
    steps: int = 0  # 0: an inference call; N: N training steps (loss, backward, in-place update)

    def to_json(self) -> dict[str, Any]:
        d = {"inputs": [[i.name, i.dtype, list(i.shape), i.layout] for i in self.inputs],
             "stmts": [[s.op, s.args, s.attrs, s.out] for s in self.stmts], "outputs": list(self.outputs)}
        return {**d, "steps": self.steps} if self.steps else d  # an inference program's form is unchanged

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Program:
        return cls([Input(n, t, tuple(s), lay) for n, t, s, lay in d["inputs"]],
                   [Stmt(op, list(a), dict(at), out) for op, a, at, out in d["stmts"]], list(d["outputs"]),
                   int(d.get("steps", 0)))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def ops(self) -> list[str]:
        return sorted({s.op for s in self.stmts})


@dataclass
class Value:
    """A value as the generator sees it: its type, and whether an in-place write to it is legal."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    writable: bool = True  # False for values whose elements share memory (an expand, an unfold)
    view: bool = False  # it aliases another value's storage

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Draw:
    """An op's sampled arguments and attributes."""

    args: list[Any]
    attrs: dict[str, Any] = field(default_factory=dict)


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


class Dialect(Protocol):
    """A framework's program language (`Backend.program_dialect()`)."""

    name: str
    ops: Mapping[str, OpSpec]
    dtypes: Sequence[tuple[str, float]]  # input dtypes and their weights

    def start(self, inputs: list[Input]) -> Any:
        """The typing state of a program's inputs (shape-only values)."""
        ...

    def apply(self, state: Any, stmt: Stmt) -> tuple[str, tuple[int, ...]] | None:
        """Run `stmt` on the typing state; the defined value's (dtype, shape) (None for an in-place
        statement). Raises when the framework rejects it."""
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
    """What an op's sampler draws from: the values defined so far and the random generator."""

    def __init__(self, rng: np.random.Generator, values: dict[str, Value]) -> None:
        self.rng = rng
        self.values = values

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


def generate(dialect: Dialect, rng: np.random.Generator, n_stmts: int = 8, max_inputs: int = 3,
             first: Callable[[Pool], list[Stmt]] | None = None) -> Program:
    """A random valid program of about `n_stmts` statements: each op's sampler draws arguments from the
    values so far and the dialect's type inference accepts or rejects the statement. `first` (a generic
    hook, e.g. a spliced seed): statements drawn from the inputs before the others (their values named
    v0, v1, ... in order), kept as they are; it raises where the framework rejects one."""
    inputs = _sample_inputs(rng, dialect.dtypes, int(rng.integers(1, max_inputs + 1)))
    state = dialect.start(inputs)
    values = {i.name: Value(i.name, i.dtype, i.shape) for i in inputs}
    pool = Pool(rng, values)
    ops = list(dialect.ops.values())
    w = np.asarray([o.weight for o in ops], float)
    w /= w.sum()
    stmts: list[Stmt] = []

    def add(op: OpSpec, stmt: Stmt) -> None:
        typed = dialect.apply(state, stmt)
        stmts.append(stmt)
        if typed is not None and stmt.out is not None:
            base = values[stmt.args[0]] if stmt.args and isinstance(stmt.args[0], str) else None
            writable = not op.overlapping and (base.writable if op.view and base is not None else True)
            values[stmt.out] = Value(stmt.out, typed[0], tuple(typed[1]), writable, op.view)

    for stmt in first(pool) if first is not None else ():
        add(dialect.ops[stmt.op], stmt)
    n_stmts += len(stmts)
    for _ in range(6 * n_stmts):
        if len(stmts) >= n_stmts:
            break
        op = ops[int(rng.choice(len(ops), p=w))]
        draw = op.sample(pool)
        if draw is None:
            continue
        try:
            add(op, Stmt(op.name, list(draw.args), dict(draw.attrs), None if op.inplace else f"v{len(stmts)}"))
        except Exception:  # noqa: S112 - the framework rejects this draw: draw another
            continue
    return Program(inputs, stmts, _outputs(rng, inputs, stmts))


def one_graph(program: Program, ops: Mapping[str, OpSpec]) -> bool:
    """Whether a tracer can keep `program` one graph (no statement's op breaks it)."""
    return not any(ops[s.op].breaks_graph for s in program.stmts)


def trainable(program: Program, ops: Mapping[str, OpSpec]) -> bool:
    """Whether `program` can run as a training step: a float input (a parameter) and only differentiable ops."""
    def differentiable(s: Stmt) -> bool:
        d = ops[s.op].differentiable
        return d(s.attrs) if callable(d) else d

    return any(i.dtype in FLOAT for i in program.inputs) and all(map(differentiable, program.stmts))


def with_training(program: Program, ops: Mapping[str, OpSpec], rng: np.random.Generator, share: float,
                  max_steps: int = 3) -> Program:
    """`program` as a training step of 1..max_steps steps for a `share` of the trainable programs."""
    if share <= 0 or not trainable(program, ops) or rng.random() >= share:
        return program
    return dataclasses.replace(program, steps=int(rng.integers(1, max_steps + 1)))


def _outputs(rng: np.random.Generator, inputs: list[Input], stmts: list[Stmt]) -> list[str]:
    """The values nothing later reads (the program's results), sometimes an input itself or a value
    twice (outputs that alias an input or each other)."""
    defined = [s.out for s in stmts if s.out]
    used = {a for s in stmts for a in s.uses()}
    outs = [v for v in defined if v not in used][-6:] or defined[-1:]
    if defined and rng.random() < 0.2:
        outs.append(str(rng.choice(defined)))
    if rng.random() < 0.1:
        outs.append(inputs[int(rng.integers(len(inputs)))].name)
    return outs


def emit(program: Program, ops: Mapping[str, OpSpec], name: str = ENTRY) -> str:
    """The program as a Python function `name(inputs...)` returning a tuple of its outputs."""
    lines = [f"def {name}({', '.join(i.name for i in program.inputs)}):"]
    for s in program.stmts:
        expr = ops[s.op].spell([a if isinstance(a, str) else literal(a) for a in s.args], s.attrs)
        lines.append(f"    {s.out} = {expr}" if s.out else f"    {expr}")
    outs = "".join(f"{o}, " for o in program.outputs)
    lines.append(f"    return ({outs.rstrip()})")
    return "\n".join(lines) + "\n"


# ---- statement-level reduction --------------------------------------------------------------------
def closure(program: Program, kept: Sequence[int]) -> list[int]:
    """Statement indices `kept` completed by the statements that define what they read (transitively);
    an in-place statement stays only where it is kept itself (dropping a write keeps a program valid)."""
    where = {s.out: k for k, s in enumerate(program.stmts) if s.out}
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
    defined = {s.out for s in stmts if s.out} | {i.name for i in program.inputs}
    outs = [o for o in (program.outputs if outputs is None else outputs) if o in defined]
    read = {a for s in stmts for a in s.uses()} | set(outs)
    return Program([i for i in program.inputs if i.name in read], stmts, outs, program.steps)


def reduce_program(program: Program, fails: Callable[[Program], bool], max_checks: int = 40) -> Program:
    """Delta debugging over the statements (each candidate closed over its dependencies), then over the
    outputs, then each input's layout made contiguous; `fails(program)` is assumed."""
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
    for k, i in enumerate(cur.inputs):
        if i.layout != "contiguous":
            cand = dataclasses.replace(cur, inputs=[*cur.inputs[:k], Input(i.name, i.dtype, i.shape),
                                                    *cur.inputs[k + 1:]])
            if fails(cand):
                cur = cand
    return cur


# ---- a test as the worker gets it and the store keeps it --------------------------------------------
def encode_test(program: Program, seed: int, configs: Sequence[tuple[str, dict[str, Any]]]) -> bytes:
    """A program test: the program, the seed of its inputs, the configurations (name, options) to compile."""
    return json.dumps({"program": program.to_json(), "seed": int(seed), "configs": [[n, o] for n, o in configs]},
                      sort_keys=True).encode()


def decode_test(blob: bytes) -> tuple[Program, int, list[tuple[str, dict[str, Any]]]]:
    d = json.loads(blob.decode())
    return Program.from_json(d["program"]), int(d["seed"]), [(n, dict(o)) for n, o in d["configs"]]


__all__ = ["ENTRY", "FLOAT", "INTEGER", "LAYOUTS", "NUMERIC", "SIGNED", "Dialect", "Draw", "Input", "OpSpec", "Pool",
           "Program", "Stmt", "Value", "broadcasts_to", "closure", "decode_test", "emit", "encode_test", "generate", "one_graph", "reduce_program",
           "restrict", "trainable", "with_training"]
