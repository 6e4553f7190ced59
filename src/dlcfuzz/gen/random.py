"""The random generator: the baseline that coverage-guided generation is measured against.

Uniform choice of operator and dtype; input 0 connects to an existing value of a
compatible type when one fits (deep data flow), else a fresh graph input; other
inputs reuse an exactly-typed value or become inputs/constants. Strict-domain
inputs (indices) are always constants sampled inside their domain.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.errors import ShapeError, TypeRuleError
from dlcfuzz.gen.inputs import consumer_domain, sample_tensor
from dlcfuzz.gen.sizes import SizeProfile
from dlcfuzz.ir.graph import CALL_OP, Graph, Node, Value
from dlcfuzz.ir.types import DTYPES, TensorType
from dlcfuzz.ops import ANY, Domain, OpSpec, all_ops
from dlcfuzz.ops.base import element_limit

Supported = Callable[[str, str], bool]
MAX_DIM = 6
# where an operator that takes a data-dependent extent (OpSpec.unknown_dims) connects to an existing value and one
# carries such an extent, the share of draws that take one of those (uniformly they would be rare: a producer's outputs
# are a few of many values); a graph without a producer draws exactly as before
P_DATA_SHAPE_CONSUMER = 0.6


@dataclass(frozen=True)
class FormGap:
    """A form of one operator's instances that a compiler lacks (a dtype combination, an attribute form)
    where it runs the (operator, input-0 dtype) pair otherwise, with the documented upstream reason: a
    backend's `known_form_gaps`. `matches(in_types, attrs)` says whether a sampled instance has the form."""

    op: str
    matches: Callable[[Sequence[TensorType], dict[str, Any]], bool]
    reason: str


FormGaps = Callable[[str], Sequence[FormGap]]  # operator -> its known form gaps (a backend's known_form_gaps)
FORM_TRIES = 30  # samples of an operator that avoids its form gaps before it counts as not fitting input 0


def form_gap_of(op: str, in_types: Sequence[TensorType], attrs: dict[str, Any], form_gaps: FormGaps) -> FormGap | None:
    """The form gap an instance of `op` falls in, or None."""
    return next((gap for gap in form_gaps(op) if gap.matches(in_types, attrs)), None)


def form_gaps_in(g: Graph, form_gaps: FormGaps) -> list[FormGap]:
    """The form gaps the nodes of `g` (sub-functions included) fall in."""
    env = g.types()
    found = [gap for n in g.nodes if n.op != CALL_OP and form_gaps(n.op)
             for gap in [form_gap_of(n.op, [env[i] for i in n.inputs], n.attrs, form_gaps)] if gap is not None]
    return found + [gap for f in g.functions.values() for gap in form_gaps_in(f, form_gaps)]


def avoiding(spec: OpSpec, form_gaps: FormGaps) -> OpSpec:
    """`spec` sampling only instances outside its form gaps (re-sampled with the same generator; a ShapeError,
    like any input 0 the operator does not fit, after FORM_TRIES); `spec` itself when it has none. Every other
    part is the spec's own: names, typing and the reference do not change, only which instances are made."""
    if not form_gaps(spec.name):
        return spec
    sample = spec.sample

    def sample_outside(rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], dict[str, Any]]:
        for _ in range(FORM_TRIES):
            in_types, attrs = sample(rng, first)
            if form_gap_of(spec.name, in_types, attrs, form_gaps) is None:
                return in_types, attrs
        raise ShapeError(f"{spec.name}: every instance sampled for {first} is a known form gap")

    narrowed = copy.copy(spec)
    narrowed.sample = sample_outside  # type: ignore[method-assign]
    return narrowed


def avoiding_choices(choices: Sequence[tuple[OpSpec, list[str]]],
                     form_gaps: FormGaps) -> list[tuple[OpSpec, list[str]]]:
    """`choices` (see allowed_choices) whose operators sample outside their form gaps."""
    return [(avoiding(spec, form_gaps), ds) for spec, ds in choices]


def takes(spec: OpSpec, t: TensorType) -> bool:
    """Whether `spec` may be drawn on a value of type `t`: a data-dependent extent (TensorType.unknown) only reaches
    an operator whose rule states how it takes one (OpSpec.unknown_dims); its rule still refuses a form that does
    not hold (a broadcast against the bound)."""
    return not t.unknown or bool(spec.unknown_dims)


def random_shape(rng: np.random.Generator, rank: int) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, MAX_DIM + 1, size=rank))


@dataclass
class Proposal:
    """An operator instance not yet in the graph: what coverage-guided generation scores."""

    spec: OpSpec
    in_types: list[TensorType]
    attrs: dict[str, Any]
    outs: list[TensorType]
    domains: list[Domain]
    sources: list[str | None]  # an existing value per input, or None: a new input/constant
    work: int = 0  # OpSpec.work of the instance

    @property
    def dtype(self) -> str:
        return self.in_types[0].dtype if self.in_types else self.outs[0].dtype


class GraphBuilder:
    """Incrementally grows a valid graph; shared by the random and coverage-guided generators."""

    def __init__(self, rng: np.random.Generator, sizes: SizeProfile | None = None) -> None:
        self.rng = rng
        self.sizes = sizes  # a long-axis test's profile (gen/sizes.py); None: today's small shapes
        self.work = 0  # OpSpec.work of the nodes placed, which a long-axis test keeps within its bound
        self.g = Graph()
        self.values: list[Value] = []  # values a later node may consume
        self.used: set[str] = set()
        self.producer: dict[str, Node] = {}  # value -> the operator node computing it
        self.from_kept = False  # grown from a kept graph's prefix (from_prefix)

    @classmethod
    def from_prefix(cls, rng: np.random.Generator, g: Graph, k: int) -> GraphBuilder:
        """A builder holding the first `k` nodes of `g`'s main function (with the inputs, constants and
        sub-functions they use), to grow further: a kept graph's prefix, continued differently."""
        b = cls(rng)
        b.g = g.light_copy()
        b.g.nodes = b.g.nodes[:k]
        used = {i for n in b.g.nodes for i in n.inputs}
        b.g.inputs = [v for v in b.g.inputs if v.name in used]
        b.g.constants = {c: a for c, a in b.g.constants.items() if c in used}
        called: set[str] = set()
        todo = [n.attrs["callee"] for n in b.g.nodes if n.op == CALL_OP]
        while todo:
            f = todo.pop()
            if f not in called:
                called.add(f)
                todo += [n.attrs["callee"] for n in g.functions[f].nodes if n.op == CALL_OP]
        b.g.functions = {f: body for f, body in b.g.functions.items() if f in called}
        b.g.outputs = []
        b.from_kept = True
        b.values = list(b.g.inputs)
        for n in b.g.nodes:
            b.used.update(n.inputs)
            b.values.extend(n.outputs)
            if n.op != CALL_OP:
                b.producer.update({v.name: n for v in n.outputs})
        return b

    def _fresh(self, count: int, *patterns: str) -> int:
        """The lowest number from `count` on whose names (`patterns` formatted with it) are all unused:
        a kept prefix keeps its own names, which need not follow the counts."""
        if not self.from_kept:
            return count
        taken = {v.name for v in self.values} | set(self.g.constants) | {n.name for n in self.g.nodes}
        while any(p.format(count) in taken for p in patterns):
            count += 1
        return count

    def new_input(self, t: TensorType) -> str:
        name = f"x{self._fresh(len(self.g.inputs), 'x{}')}"
        self.g.inputs.append(Value(name, t))
        self.values.append(Value(name, t))
        return name

    def new_constant(self, t: TensorType, domain: Domain | None = None) -> str:
        name = f"c{self._fresh(len(self.g.constants), 'c{}')}"
        self.g.constants[name] = sample_tensor(self.rng, t, domain or ANY)
        return name

    def fresh_shape(self, rank: int) -> tuple[int, ...]:
        """The shape of a new input 0: small, with long axes in a long-axis test."""
        shape = random_shape(self.rng, rank)
        return shape if self.sizes is None else self.sizes.lengthen(shape)

    def candidates(self, dtype: str, ranks: Sequence[int]) -> list[Value]:
        return [v for v in self.values if v.type.dtype == dtype and v.type.rank in ranks]

    def propose(self, spec: OpSpec, first_name: str | None, first: TensorType) -> Proposal | None:
        """Sample an instance of `spec` whose input 0 has type `first` (value `first_name`, or new)."""
        rng = self.rng
        try:
            if self.sizes is None:
                in_types, attrs = spec.sample(rng, first)
            else:  # the operator may sample tensors as large as the test's own
                with element_limit(self.sizes.max_elements):
                    in_types, attrs = spec.sample(rng, first)
            outs = spec.infer(in_types, attrs)
        except TypeRuleError:
            return None
        work = 0
        if self.sizes is not None:  # a long-axis test's bounds: each tensor's elements, the graph's work
            work = spec.work(in_types, outs)
            if not self.sizes.admits(self.work + work, (*in_types, *outs)):
                return None
        domains: list[Domain] = []
        sources: list[str | None] = []
        for k, t in enumerate(in_types):
            d = consumer_domain(spec, k, in_types, attrs)  # a constant's magnitudes too (a long float16 norm's scale)
            domains.append(d)
            if d.strict:
                sources.append(None)
            elif k == 0:
                sources.append(first_name)
            else:
                same = [v for v in self.values if v.type == t and v.name not in sources]
                restricted = d.lo is not None or d.hi is not None or d.nonzero
                reuse = bool(same) and rng.random() < (0.4 if restricted else 0.7)
                sources.append(same[int(rng.integers(len(same)))].name if reuse else None)
        if any(src is None and t.unknown for src, t in zip(sources, in_types)):
            return None  # a new input or constant has a static shape (a strict input 0 is sampled, not connected)
        return Proposal(spec, list(in_types), attrs, list(outs), domains, sources, work)

    def commit(self, p: Proposal) -> Node:
        names: list[str] = []
        for k, (t, d, src) in enumerate(zip(p.in_types, p.domains, p.sources)):
            if src is not None:
                names.append(src)
            elif d.strict or (k > 0 and self.rng.random() >= 0.5):
                names.append(self.new_constant(t, d))
            else:
                names.append(self.new_input(t))
        idx = self._fresh(len(self.g.nodes), "n{}", "v{}", "v{}_0")
        outputs = [Value(f"v{idx}_{i}" if len(p.outs) > 1 else f"v{idx}", t) for i, t in enumerate(p.outs)]
        node = Node(p.spec.name, names, outputs, p.attrs, name=f"n{idx}")
        self.g.nodes.append(node)
        self.work += p.work
        self.used.update(names)
        self.values.extend(outputs)
        self.producer.update({v.name: node for v in outputs})
        return node

    def try_add(self, spec: OpSpec, first_name: str | None, first: TensorType) -> Node | None:
        p = self.propose(spec, first_name, first)
        return None if p is None else self.commit(p)

    def finish(self) -> Graph:
        produced = [v.name for n in self.g.nodes for v in n.outputs]
        leaves = [v for v in produced if v not in self.used]
        self.g.outputs = leaves or produced[-1:]
        return self.g


def allowed_choices(ops: Sequence[OpSpec] | None, dtypes: Sequence[str] | None,
                    supported: Supported | None) -> list[tuple[OpSpec, list[str]]]:
    """(operator, its dtypes) pairs a generator may use: the registry filtered by dtype and capability.
    Without a capability (no compiler in view) only the standard ONNX domain: an operator of another
    domain (ORT's contrib operators), or a dtype outside DTYPES (uint16/32/64), is generated only where a
    capability probe admits it."""
    specs = list(ops) if ops is not None else [s for s in all_ops() if supported is not None or not s.onnx_domain]
    choices = [
        (s, [d for d in s.dtypes if (dtypes is None or d in dtypes) and (d in DTYPES or supported is not None)
             and (supported is None or supported(s.name, d))])
        for s in specs
    ]
    choices = [(s, ds) for s, ds in choices if ds]
    if not choices:
        raise ValueError("no operator/dtype pair is allowed")
    return choices


def generate(
    rng: np.random.Generator,
    n_ops: int,
    *,
    ops: Sequence[OpSpec] | None = None,
    dtypes: Sequence[str] | None = None,
    supported: Supported | None = None,
    reuse: float = 0.8,
    choices: Sequence[tuple[OpSpec, Sequence[str]]] | None = None,
    sizes: SizeProfile | None = None,
) -> Graph:
    """A valid graph of `n_ops` operator nodes (fewer only if nothing fits after many tries).
    `choices`: the (operator, dtypes) pairs when the caller has them (see allowed_choices; computing
    them costs as much as a third of generating a graph), instead of ops/dtypes/supported.
    `sizes`: a long-axis test's profile (gen/sizes.draw_sizes); None: small shapes."""
    choices = choices if choices is not None else allowed_choices(ops, dtypes, supported)
    b = GraphBuilder(rng, sizes)
    attempts = 0
    while len(b.g.nodes) < n_ops and attempts < 40 * max(n_ops, 1):
        attempts += 1
        spec, ds = choices[int(rng.integers(len(choices)))]
        # Connect to any existing value this op accepts (deep data flow), else start fresh.
        cands = [v for v in b.values if v.type.dtype in ds and v.type.rank in spec.ranks and takes(spec, v.type)]
        dtype = ds[int(rng.integers(len(ds)))]
        if cands and rng.random() < reuse:
            dynamic = [v for v in cands if v.type.unknown]  # a data-dependent extent's consumers: drawn on purpose
            pool = dynamic if dynamic and rng.random() < P_DATA_SHAPE_CONSUMER else cands
            v = pool[int(rng.integers(len(pool)))]
            if b.try_add(spec, v.name, v.type) is not None:
                continue
        rank = int(spec.ranks[int(rng.integers(len(spec.ranks)))])
        b.try_add(spec, None, TensorType(dtype, b.fresh_shape(rank)))
    if not b.g.nodes:
        raise ValueError("could not place any operator")
    return b.finish()
