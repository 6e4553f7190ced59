"""OATest's synthesis: splice an optimization pattern into a seed graph at a synthesis point.

1. Choose a seed graph (a fresh random graph, or an earlier synthesized test: high-order synthesis)
   and a synthesis point k: nodes[:k] are the preceding context, nodes[k:] the succeeding one.
2. Bind each hole of the pattern to a value of the preceding context: an exactly-typed value first
   (reuse), else one of the same rank and dtype class, for which the pattern is re-concretized
   (its types re-inferred for that value); where no value fits or re-concretization fails, bridge
   nodes adapt a value to the hole's example type: cast to the dtype, flatten, slice or pad (edge
   mode: no new zeros that a division could meet) to the element count, reshape to the shape.
   With no value at all, the hole becomes a graph input.
3. Connect each dangling output of the pattern to an input of the succeeding context whose type
   it has (or, bridged, one of its dtype class) and whose operator accepts any value there (never
   a log's or a divisor's input, never an index); outputs left over become graph outputs.
4. Check the result with the IR's own type checker (`Graph.check`): what it accepts is concrete.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlcfuzz.errors import DlcfuzzError, TypeRuleError
from dlcfuzz.gen.inputs import value_domains
from dlcfuzz.gen.random import generate
from dlcfuzz.ir.graph import CALL_OP, Graph, Node, Value
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops import ANY, get_op
from dlcfuzz.synth.pattern import Pattern, dtype_class

Supported = Callable[[str, str], bool]
POOL_SIZE = 64  # synthesized graphs kept as seeds for high-order synthesis
POOL_MAX_NODES = 48  # bigger ones compile too slowly to be worth growing further
P_FROM_POOL = 0.5
SEED_DTYPES = ("float32",)  # the optimizations under test are float rewrites; bridges cast the rest


@dataclass
class Splice:
    """One synthesized graph and how it was made."""

    graph: Graph
    pattern: str
    point: int
    reused: int = 0  # holes bound to a context value without a bridge
    bridged: int = 0  # holes bound through bridge nodes
    fresh: int = 0  # holes that became graph inputs
    connected: int = 0  # pattern outputs wired into the succeeding context
    order: int = 1  # how many patterns the graph holds (high-order synthesis)
    patterns: list[str] = field(default_factory=list)


def pattern_supported(p: Pattern, supported: Supported | None) -> bool:
    if supported is None:
        return True
    types = p.graph.types()
    return all(supported(n.op, types[n.inputs[0]].dtype if n.inputs else n.outputs[0].type.dtype)
               for n in p.graph.nodes)


def retype(p: Pattern, bound: dict[str, TensorType]) -> Graph | None:
    """The pattern re-concretized for holes of the types `bound` (same rank and dtype class):
    float constants follow a hole's float dtype, every node's types are re-inferred. None when the
    pattern's attributes or weights do not fit the new types."""
    g = p.graph.copy()
    dtypes = {t.dtype for t in bound.values()}
    old = {v.type.dtype for v in g.inputs}
    float_to = next(iter(dtypes)) if len(dtypes) == 1 and dtypes <= set(FLOATS) and old <= set(FLOATS) else None
    g.inputs = [Value(v.name, bound.get(v.name, v.type)) for v in g.inputs]
    if float_to is not None:
        g.constants = {k: a.astype(float_to) if str(a.dtype) in FLOATS else a for k, a in g.constants.items()}
    env = {v.name: v.type for v in g.inputs}
    env.update({k: TensorType.of(a) for k, a in g.constants.items()})
    try:
        for n in g.nodes:
            attrs = n.attrs
            if n.op == "cast" and float_to is not None and attrs.get("to") in FLOATS:
                attrs = {**attrs, "to": float_to if attrs["to"] == next(iter(old)) else attrs["to"]}
            outs = get_op(n.op).infer([env[i] for i in n.inputs], attrs)
            n.attrs = attrs
            n.outputs = [Value(v.name, t) for v, t in zip(n.outputs, outs)]
            env.update({v.name: v.type for v in n.outputs})
    except (TypeRuleError, KeyError, ValueError):
        return None
    return g


class _Emitter:
    """Appends bridge nodes with fresh names."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.nodes: list[Node] = []
        self.count = 0

    def op(self, op: str, x: str, t_in: TensorType, **attrs: object) -> tuple[str, TensorType]:
        (t,) = get_op(op).infer([t_in], attrs)
        name = f"{self.prefix}b{self.count}"
        self.count += 1
        self.nodes.append(Node(op, [x], [Value(name, t)], dict(attrs), name=name))
        return name, t


def bridge(em: _Emitter, x: str, src: TensorType, dst: TensorType, supported: Supported | None = None) -> str | None:
    """Nodes turning value x of type src into one of type dst: cast, flatten, slice or pad to the
    element count, reshape. The shape is adapted in a dtype the compiler pads (the source's, else
    the target's, else float32). None when impossible (an empty source for a non-empty target)."""
    if src.size == 0 or dst.size == 0:  # (a 0 in a reshape's shape would copy a dimension instead)
        return None
    ok = supported or (lambda op, dt: True)
    work = next((d for d in (src.dtype, dst.dtype, "float32") if ok("pad", d) and ok("slice", d) and ok("reshape", d)),
                dst.dtype) if src.shape != dst.shape else dst.dtype
    t = src
    if t.dtype != work:
        x, t = em.op("cast", x, t, to=work)
    if t.shape == dst.shape:
        return x if t.dtype == dst.dtype else em.op("cast", x, t, to=dst.dtype)[0]
    if t.rank != 1:
        x, t = em.op("reshape", x, t, shape=[-1] if t.size > 0 else [0])
    if t.size > dst.size:
        x, t = em.op("slice", x, t, starts=[0], ends=[dst.size], axes=[0], steps=[1])
    elif t.size < dst.size:
        x, t = em.op("pad", x, t, pads=[0, dst.size - t.size], mode="edge", value=0)
    if t.shape != dst.shape:
        x, t = em.op("reshape", x, t, shape=list(dst.shape))
    if t.dtype != dst.dtype:
        x, t = em.op("cast", x, t, to=dst.dtype)
    return x


def _free_input(n: Node, k: int, types: dict[str, TensorType]) -> bool:
    """Whether input k of node n accepts any value (no value-domain need, not an index)."""
    if n.op == CALL_OP:
        return False
    spec = get_op(n.op)
    try:
        return spec.domain(k, [types[i] for i in n.inputs], n.attrs) == ANY
    except (KeyError, IndexError, TypeRuleError):
        return False


def splice(seed: Graph, p: Pattern, rng: np.random.Generator, uid: int = 0,
           supported: Supported | None = None) -> Splice | None:
    """The pattern spliced into the seed at a random point (None when this attempt does not type)."""
    g = seed.copy()
    k = int(rng.integers(0, len(g.nodes) + 1))
    types = g.types()
    preceding = [v.name for v in g.inputs] + [v.name for n in g.nodes[:k] for v in n.outputs]
    prefix = f"s{uid}_"
    em = _Emitter(prefix)
    info = Splice(g, p.name, k, patterns=[p.name])

    # 2. bind holes: exact type, else same rank and class (re-concretized), else bridged; a hole
    # whose operators need a value domain (a divisor, a log's input) becomes a graph input, which
    # is sampled inside that domain: a computed value could be zero there
    binding: dict[str, str] = {}
    by_class: dict[str, TensorType] = {}
    needs = value_domains(p.graph)
    for h in p.holes:
        if needs.get(h.name, ANY) != ANY:
            continue
        exact = [v for v in preceding if types[v] == h.example]
        similar = [v for v in preceding if h.accepts(types[v]) and types[v].size > 0]
        other = [v for v in preceding if types[v].size > 0]
        # a bridge that slices keeps more of the context's data than one that pads a scalar out
        other = [v for v in other if types[v].size >= h.example.size] or other
        similar = [v for v in similar if types[v].size >= h.example.size] or similar
        if exact and rng.random() < 0.9:
            binding[h.name] = exact[int(rng.integers(len(exact)))]
        elif similar:
            v = similar[int(rng.integers(len(similar)))]
            binding[h.name] = v
            by_class[h.name] = types[v]
        elif other:
            binding[h.name] = other[int(rng.integers(len(other)))]
    body = retype(p, by_class) if by_class else p.graph
    if body is None or not pattern_supported(Pattern(p.name, body, p.targets), supported):
        body = p.graph  # re-concretization failed: bridge those holes to the example types
    hole_types = {v.name: v.type for v in body.inputs}
    rename: dict[str, str] = {}
    new_inputs: list[Value] = []
    for h in p.holes:
        want = hole_types[h.name]
        src = binding.get(h.name)
        if src is not None and types[src] == want:
            rename[h.name] = src
            info.reused += 1
            continue
        bridged = bridge(em, src, types[src], want, supported) if src is not None else None
        if bridged is None:
            name = f"{prefix}in_{h.name}"
            new_inputs.append(Value(name, want))
            rename[h.name] = name
            info.fresh += 1
        else:
            rename[h.name] = bridged
            info.bridged += 1
    for c in body.constants:
        rename[c] = f"{prefix}{c}"
    for n in body.nodes:
        for v in n.outputs:
            rename[v.name] = f"{prefix}{v.name}"
    inserted = list(em.nodes)
    for n in body.nodes:
        inserted.append(Node(n.op, [rename[i] for i in n.inputs], [Value(rename[v.name], v.type) for v in n.outputs],
                             dict(n.attrs), name=f"{prefix}{n.name or 'n'}"))
    g.constants.update({rename[c]: a for c, a in body.constants.items()})
    g.inputs.extend(new_inputs)
    after = g.nodes[k:]
    g.nodes = g.nodes[:k] + inserted

    # 3. connect dangling outputs to free inputs of the succeeding context
    body_types = body.types()
    types.update({n.outputs[0].name: n.outputs[0].type for n in em.nodes})
    types.update({rename[v]: t for v, t in body_types.items() if v in rename})
    out_em = _Emitter(f"{prefix}o")
    for o in body.outputs:
        t_o = body_types[o]
        slots = [(n, j) for n in after for j, i in enumerate(n.inputs) if _free_input(n, j, types)]
        exact = [(n, j) for n, j in slots if types[n.inputs[j]] == t_o]
        near = [(n, j) for n, j in slots if dtype_class(types[n.inputs[j]].dtype) == dtype_class(t_o.dtype)]
        if exact and rng.random() < 0.9:
            n, j = exact[int(rng.integers(len(exact)))]
            n.inputs[j] = rename[o]
            info.connected += 1
        elif near and rng.random() < 0.7:
            n, j = near[int(rng.integers(len(near)))]
            x = bridge(out_em, rename[o], t_o, types[n.inputs[j]], supported)
            types.update({m.outputs[0].name: m.outputs[0].type for m in out_em.nodes})
            if x is not None:
                n.inputs[j] = x
                info.connected += 1
    g.nodes.extend(out_em.nodes)
    g.nodes.extend(after)
    _reorder(g)

    # 4. outputs: every value nobody consumes
    used = {i for n in g.nodes for i in n.inputs}
    produced = [v.name for n in g.nodes for v in n.outputs]
    g.outputs = [v for v in produced if v not in used] or produced[-1:]
    try:
        g.check()
    except Exception:  # any checker objection (IRError, ShapeError, ...) means: not this attempt
        return None
    info.graph = g
    return info


def _reorder(g: Graph) -> None:
    """Topological order (bridges of outputs come after the pattern but before their consumers)."""
    defined = {v.name for v in g.inputs} | set(g.constants)
    pending = list(g.nodes)
    out: list[Node] = []
    while pending:
        for idx, n in enumerate(pending):
            if all(i in defined for i in n.inputs):
                out.append(n)
                defined.update(v.name for v in n.outputs)
                del pending[idx]
                break
        else:  # a cycle cannot arise from splicing; leave the rest for the checker to name
            out.extend(pending)
            break
    g.nodes = out


class Synthesizer:
    """Seed pool + pattern choice + splice: one synthesized graph per call, a function of the rng."""

    def __init__(self, patterns: Sequence[Pattern], compiler: str, supported: Supported | None = None,
                 seed_ops: int = 8, only_ops: Sequence[str] | None = None) -> None:
        usable = [p for p in patterns if pattern_supported(p, supported)]
        targeted = [p for p in usable if p.targets_for(compiler)]
        self.patterns = targeted or usable
        if not self.patterns:
            raise ValueError("no pattern is usable with this compiler")
        self.compiler = compiler
        self.supported = supported
        self.seed_ops = seed_ops
        self.only_ops = list(only_ops) if only_ops else None
        self.pool: list[tuple[Graph, list[str]]] = []
        self.uid = itertools.count()
        self.attempts = 0
        self.failures = 0

    def seed_graph(self, rng: np.random.Generator) -> tuple[Graph, list[str]]:
        if self.pool and rng.random() < P_FROM_POOL:
            g, names = self.pool[int(rng.integers(len(self.pool)))]
            return g, names
        from dlcfuzz.ops import get_op as _get

        ops = [_get(o) for o in self.only_ops] if self.only_ops else None
        n = int(rng.integers(2, self.seed_ops + 1))
        return generate(rng, n, ops=ops, dtypes=SEED_DTYPES if rng.random() < 0.8 else None,
                        supported=self.supported), []

    def next(self, rng: np.random.Generator, tries: int = 12) -> Splice:
        for _ in range(tries):
            seed, names = self.seed_graph(rng)
            p = self.patterns[int(rng.integers(len(self.patterns)))]
            self.attempts += 1
            try:
                s = splice(seed, p, rng, next(self.uid), self.supported)
            except DlcfuzzError:  # a bridge or re-concretization that does not type: another attempt
                s = None
            if s is None:
                self.failures += 1
                continue
            s.patterns = names + [p.name]
            s.order = len(s.patterns)
            return s
        raise RuntimeError("synthesis failed on every attempt")

    def accept(self, s: Splice) -> None:
        """A valid synthesized test goes back into the seed pool (high-order synthesis)."""
        if len(s.graph.nodes) <= POOL_MAX_NODES:
            self.pool.append((s.graph, s.patterns))
            del self.pool[:-POOL_SIZE]
