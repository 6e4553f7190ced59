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
   a log's or a divisor's input, never an index); outputs left over become graph outputs, and so do the inner
   values a neighbour variant names (`graph_outputs` in its meta: a fusion must not remove them).
4. Check the result (`validity_fault`) before anything runs it: the IR's own type checker
   (`ops.check_graph`, every node re-inferred) and the strict value domains (indices, shift amounts,
   float -> int8 casts: only a graph input sampled inside the domain or a constant inside it may
   feed them; re-concretization wraps index constants into their new range). An attempt that
   fails is counted and another is made; a pattern that is not valid by itself is dropped.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlcfuzz.errors import DlcfuzzError, TypeRuleError
from dlcfuzz.gen.inputs import value_domains
from dlcfuzz.gen.random import allowed_choices, generate
from dlcfuzz.gen.sizes import SizeProfile, within_bounds
from dlcfuzz.ir.graph import CALL_OP, Graph, Node, Value
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops import ANY, Domain, OpSpec, check_graph, get_op
from dlcfuzz.synth.pattern import Pattern, dtype_class

Supported = Callable[[str, str], bool]
# what a malformed pattern (a missing attribute, one of the wrong type) makes our type rules raise
# besides their own errors: counted as "error: ..." where an attempt is refused, never raised
PATTERN_FAULTS = (KeyError, IndexError, ValueError, TypeError)
POOL_SIZE = 64  # synthesized graphs kept as seeds for high-order synthesis
POOL_MAX_NODES = 48  # bigger ones compile too slowly to be worth growing further
P_FROM_POOL = 0.5
WRITTEN_SHARE = 0.5  # of an optimization's draws, for the library's written patterns when mined ones share it
AS_GIVEN_SHARE = 0.5  # of a pattern's draws, for the pattern as given (its variants share the rest)
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
    context: Graph | None = None  # the seed graph the pattern was spliced into (what fires without it)
    long: bool = False  # made for a long-axis test (gen/sizes.py): its seed graph has long axes


def pattern_supported(p: Pattern, supported: Supported | None) -> bool:
    return supported is None or _graph_supported(p.graph, supported)


def _graph_supported(g: Graph, supported: Supported) -> bool:
    """Every node of `g` supported; a region by the operators of its bodies (the capability probe draws from
    `registry()`, which holds no region operator, so it never answers for one)."""
    types = g.types()
    return all(all(_graph_supported(body, supported) for body in n.bodies().values()) if n.bodies()
               else supported(n.op, types[n.inputs[0]].dtype if n.inputs else n.outputs[0].type.dtype)
               for n in g.nodes)


def retype(p: Pattern, bound: dict[str, TensorType]) -> Graph | None:
    """The pattern re-concretized for holes of the types `bound` (same rank and dtype class):
    float constants follow a hole's float dtype, every node's types are re-inferred, a reshape
    whose target no longer holds its input's elements gets a recomputed target, index-like
    constants are brought back into their new domains (`repair_strict_constants`). None when the
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
            ins = [env[i] for i in n.inputs]
            if n.op == "reshape":
                attrs = {**attrs, "shape": _reshape_target(ins[0], n.outputs[0].type, attrs["shape"])}
            outs = get_op(n.op).infer(ins, attrs)
            n.attrs = attrs
            n.outputs = [Value(v.name, t) for v, t in zip(n.outputs, outs)]
            env.update({v.name: v.type for v in n.outputs})
        if not repair_strict_constants(g) or strict_faults(g):  # a fixed node output (Range) is not repaired
            return None
        check_graph(g)
    except (DlcfuzzError, *PATTERN_FAULTS):  # DlcfuzzError covers TypeRuleError, IRError
        return None
    return g


def dtype_variants(p: Pattern, supported: Supported | None = None) -> list[Pattern]:
    """The pattern instantiated in every other numeric dtype its operators accept (our op specs' type rules,
    and `supported`: what the compiler has kernels for): holes, constants and Cast targets of its float dtype
    moved to that dtype (float constants rounded toward zero for an integer one), every node re-inferred, the
    result valid by `usable_pattern`. Patterns mined in float32 fire their fusions in float32 only; fused
    kernels and contrib operators often lack another type, which is where a fusion breaks. A variant is named
    `name@dtype`, records `retyped` in its meta, and keeps its dtype when spliced (`splice` bridges context
    values to it instead of re-concretizing it for them). Patterns whose holes are not all of one float
    dtype (quantized ones: QuantizeLinear takes float32 alone) have none."""
    from dlcfuzz.ir.types import NUMERIC

    own = {v.type.dtype for v in p.graph.inputs}
    if len(own) != 1 or not own <= set(FLOATS):
        return []
    src = next(iter(own))
    out = []
    for dt in NUMERIC:
        if dt == src:
            continue
        g = p.graph.copy()
        g.inputs = [Value(v.name, v.type.with_dtype(dt)) for v in g.inputs]
        g.constants = {k: (np.trunc(a) if dt not in FLOATS else a).astype(dt) if str(a.dtype) == src else a
                       for k, a in g.constants.items()}
        env = {v.name: v.type for v in g.inputs}
        env.update({k: TensorType.of(a) for k, a in g.constants.items()})
        try:
            for n in g.nodes:
                if n.op == "cast" and n.attrs.get("to") == src:
                    n.attrs = {**n.attrs, "to": dt}
                outs = get_op(n.op).infer([env[i] for i in n.inputs], n.attrs)
                n.outputs = [Value(v.name, t) for v, t in zip(n.outputs, outs)]
                env.update({v.name: v.type for v in n.outputs})
            check_graph(g)
        except (DlcfuzzError, *PATTERN_FAULTS):
            continue
        variant = Pattern(f"{p.name}@{dt}", g, p.targets, p.granularity, p.source, {**p.meta, "retyped": [src, dt]})
        if not pattern_supported(variant, supported):
            continue
        usable, _ = usable_pattern(variant)
        if usable is not None:
            out.append(usable)
    return out


ATTRIBUTE_TRIES = 6  # attribute samples tried per node of a pattern
ATTRIBUTE_VARIANTS = 4  # attribute variants kept per pattern at most


def attribute_variants(p: Pattern, supported: Supported | None = None, seed: int = 0) -> list[Pattern]:
    """The pattern with one node's attributes drawn again from its op spec (`OpSpec.sample` for the node's
    input 0), where the result still fits the pattern: the other inputs keep their types, except constants
    of the pattern, which are drawn again for the type the sample asks (a LayerNormalization's scale for a
    new axis), and the node's outputs keep theirs. A fusion's match usually checks an attribute (an axis, a
    transpose flag, a Clip bound); these are the forms on either side of that check. Named `name~node#k`,
    `varied` in its meta; at most ATTRIBUTE_VARIANTS, deterministic for a seed."""
    rng = np.random.default_rng(seed)
    types = p.graph.types()
    out: list[Pattern] = []
    seen: set[tuple[int, str]] = set()
    for i, n in enumerate(p.graph.nodes):
        if not n.attrs or n.op == CALL_OP or not n.inputs:
            continue
        spec = get_op(n.op)
        for _ in range(ATTRIBUTE_TRIES):
            try:
                ins, attrs = spec.sample(rng, types[n.inputs[0]])
            except (DlcfuzzError, NotImplementedError, *PATTERN_FAULTS):
                break
            key = (i, repr(sorted(attrs.items())))
            if attrs == n.attrs or key in seen or len(ins) != len(n.inputs):
                continue
            seen.add(key)
            g = p.graph.copy()
            fits = True
            for j, (name, t) in enumerate(zip(n.inputs, ins)):
                if j > 0 and name in g.constants and types[name] != t:
                    g.constants[name] = rng.normal(0.0, 0.5, t.shape).astype(t.dtype) if t.dtype in FLOATS \
                        else rng.integers(0, 3, t.shape).astype(t.dtype)
                elif types[name] != t:
                    fits = False
            if not fits or sum(name == x for x in n.inputs for name in g.constants) > 1:
                continue
            g.nodes[i].attrs = dict(attrs)
            try:
                if [v.type for v in n.outputs] != spec.infer(ins, attrs):
                    continue
                check_graph(g)
            except (DlcfuzzError, *PATTERN_FAULTS):
                continue
            variant = Pattern(f"{p.name}~{n.name or i}#{len(out)}", g, p.targets, p.granularity, p.source,
                              {**p.meta, "varied": n.name or str(i)})
            usable, _ = usable_pattern(variant)
            if usable is not None and pattern_supported(usable, supported):
                out.append(usable)
            if len(out) >= ATTRIBUTE_VARIANTS:
                return out
    return out


# a lossless round trip for a Cast pair on an edge: the values stay, the edge no longer joins the two nodes
WIDER = {"float16": "float32", "bfloat16": "float32", "float32": "float64", "int8": "int32", "uint8": "int32",
         "int16": "int32", "uint16": "int32", "int32": "int64", "uint32": "int64"}
NEIGHBOUR_KINDS = ("output", "consumer", "cast", "shared")


def neighbour_variants(p: Pattern, supported: Supported | None = None, seed: int = 0) -> list[Pattern]:
    """The pattern with a neighbour that decides whether a fusion may fire (OATest's context, issue 36): an inner
    value (one the pattern's own nodes read, not an output of it) that is also a graph output (`graph_outputs`
    in its meta, which `splice` keeps as outputs), one that has a second consumer, one whose edge into the next
    node goes through a lossless Cast pair, and the pattern twice with its constants shared by both copies.
    Fusions check each (an output edge count, a graph output, a parent of the op type, an initializer with
    one consumer, one they rewrite in place). Named `name^kind:value`, `neighbour` in its meta; one per kind,
    the inner value drawn by `seed`."""
    rng = np.random.default_rng(seed)
    g0 = p.graph
    types = g0.types()
    inner = [v.name for n in g0.nodes for v in n.outputs
             if v.name not in g0.outputs and any(v.name in m.inputs for m in g0.nodes)]
    out: list[Pattern] = []
    for kind in NEIGHBOUR_KINDS:
        at = inner[int(rng.integers(len(inner)))] if inner and kind != "shared" else ""
        if kind != "shared" and not at:
            continue
        g = g0.copy()
        meta = {**p.meta, "neighbour": kind}
        if kind == "output":
            meta["graph_outputs"] = [at]
        elif kind == "consumer":
            op = next((op for op in ("neg", "abs", "not") if _accepts(op, types[at])), None)
            if op is None:
                continue
            g.nodes.append(Node(op, [at], [Value(f"{at}_second", types[at])], {}, name=f"{at}_second"))
            g.outputs = [*g.outputs, f"{at}_second"]
        elif kind == "cast":
            wide = WIDER.get(types[at].dtype)
            reader = next((n for n in g.nodes if at in n.inputs), None)
            if wide is None or reader is None:
                continue
            up = Node("cast", [at], [Value(f"{at}_wide", types[at].with_dtype(wide))], {"to": wide}, name=f"{at}_wide")
            down = Node("cast", [up.outputs[0].name], [Value(f"{at}_back", types[at])], {"to": types[at].dtype},
                        name=f"{at}_back")
            reader.inputs = [f"{at}_back" if i == at else i for i in reader.inputs]
            g.nodes.insert(g.nodes.index(reader), up)
            g.nodes.insert(g.nodes.index(reader), down)
        else:  # shared: a second copy of the pattern, its own holes and values, the same constants
            if not g0.constants:
                continue
            own = {v.name for v in g0.inputs} | {v.name for n in g0.nodes for v in n.outputs}
            twin = {v: f"{v}_twin" for v in own}
            g.inputs = [*g.inputs, *(Value(twin[v.name], v.type) for v in g0.inputs)]
            g.nodes = [*g.nodes, *(Node(n.op, [twin.get(i, i) for i in n.inputs],
                                        [Value(twin[v.name], v.type) for v in n.outputs], dict(n.attrs),
                                        name=f"{n.name or 'n'}_twin") for n in g0.nodes)]
            g.outputs = [*g.outputs, *(twin[o] for o in g0.outputs)]
        try:
            check_graph(g)
        except (DlcfuzzError, *PATTERN_FAULTS):
            continue
        variant = Pattern(f"{p.name}^{kind}" + (f":{at}" if at else ""), g, p.targets, p.granularity, p.source, meta)
        usable, _ = usable_pattern(variant)
        if usable is not None and pattern_supported(usable, supported):
            out.append(usable)
    return out


def _accepts(op: str, t: TensorType) -> bool:
    """Whether unary `op` takes a value of type t and gives one of the same type."""
    try:
        return get_op(op).infer([t], {}) == [t]
    except (DlcfuzzError, *PATTERN_FAULTS):
        return False


def _reshape_target(t_in: TensorType, old_out: TensorType, target: list[int]) -> list[int]:
    """A reshape target for input `t_in`: the old one where it still holds the input's elements,
    else the old output shape with one dimension (the last that can) rescaled to make up the new
    element count. (Unchanged when nothing fits: inference then rejects it.)"""
    spec = get_op("reshape")
    try:
        spec.infer([t_in], {"shape": target})
        return target
    except TypeRuleError:
        pass
    dims = list(old_out.shape)
    for j in reversed(range(len(dims))):
        rest = int(np.prod([d for i, d in enumerate(dims) if i != j], dtype=np.int64))
        if rest > 0 and t_in.size % rest == 0 and t_in.size // rest > 0:
            return dims[:j] + [t_in.size // rest] + dims[j + 1:]
    return target


def _within(a: np.ndarray, d: Domain) -> bool:
    """Whether every value of constant `a` lies inside domain `d` (NaN never does)."""
    if a.size == 0:
        return True
    x = a.astype(np.float64)
    if np.isnan(x).any():
        return False
    return bool((d.lo is None or (x >= d.lo).all()) and (d.hi is None or (x <= d.hi).all())
                and (not d.nonzero or (x != 0).all()))


def repair_strict_constants(g: Graph) -> bool:
    """Constants that feed a strict value domain (gather indices, shift amounts, float -> int8
    casts: values outside are undefined behaviour) brought inside it, in place: integers wrap
    around the domain (distinct indices stay distinct where the domain allows), floats are clipped,
    zeros of a nonzero domain move to an end. False when a constant cannot be repaired (an empty or
    unbounded domain), i.e. the graph cannot be made valid."""
    for name, d in value_domains(g).items():
        if not d.strict or name not in g.constants or _within(g.constants[name], d):
            continue
        a = g.constants[name]
        if d.lo is None or d.hi is None:
            return False
        if np.issubdtype(a.dtype, np.integer):
            lo, hi = int(np.ceil(d.lo)), int(np.floor(d.hi))
            if lo > hi:
                return False
            fixed = lo + np.mod(a.astype(np.int64) - lo, hi - lo + 1)
            if d.nonzero:
                if lo == hi == 0:
                    return False
                fixed = np.where(fixed == 0, hi if hi != 0 else lo, fixed)
        elif d.lo > d.hi:
            return False
        else:
            fixed = np.clip(np.nan_to_num(a.astype(np.float64)), d.lo, d.hi)
            if d.nonzero:
                fixed = np.where(fixed == 0, d.hi if d.hi != 0 else d.lo, fixed)
        g.constants[name] = fixed.astype(a.dtype)
        if not _within(g.constants[name], d):
            return False
    return True


def strict_faults(g: Graph) -> list[str]:
    """Values feeding a strict value domain that are neither a graph input (sampled inside the
    domain) nor a constant inside it (an initializer, or the output of a node without inputs, such as a Range): a computed value there (an index, a shift amount, a float
    cast to int8) is undefined behaviour that no reference decides. Empty for a valid graph."""
    inputs = {v.name for v in g.inputs}
    made = {v.name: n for n in g.nodes for v in n.outputs}
    faults = []
    for name, d in value_domains(g).items():
        if not d.strict or name in inputs:
            continue
        fixed = g.constants.get(name)
        if fixed is None and name in made and not made[name].inputs:  # a node of attributes alone (Range): fixed too
            n = made[name]
            fixed = get_op(n.op).reference([], n.attrs)[[v.name for v in n.outputs].index(name)]
        if fixed is None:
            faults.append(f"{name}: computed value in a strict domain")
        elif not _within(fixed, d):
            faults.append(f"{name}: constant outside [{d.lo}, {d.hi}]")
    return faults


def validity_fault(g: Graph) -> str | None:
    """Why `g` is not a valid test, or None: our type rules (`ops.check_graph`, every node re-inferred)
    and the strict value domains. Runs before the NumPy reference ever sees the graph."""
    try:
        check_graph(g)
    except DlcfuzzError as e:
        return f"type: {type(e).__name__}"
    except PATTERN_FAULTS as e:  # a malformed attribute of a mined pattern (a missing key, a wrong type)
        return f"error: {type(e).__name__}"
    faults = strict_faults(g)
    return f"domain: {faults[0]}" if faults else None


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
    if _strict_cast(src, work) or _strict_cast(src.with_dtype(work), dst.dtype):
        return None  # a computed float cast to int8/uint8 is undefined out of range: a fresh input instead
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


def _strict_cast(src: TensorType, to: str) -> bool:
    """Whether casting a value of type src to dtype `to` needs a strict value domain."""
    return src.dtype != to and get_op("cast").domain(0, [src], {"to": to}).strict


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
           supported: Supported | None = None, rejected: Counter[str] | None = None) -> Splice | None:
    """The pattern spliced into the seed at a random point; None when this attempt gives no valid
    graph (`validity_fault`), with the reason counted in `rejected`."""
    g = seed.copy()
    k = int(rng.integers(0, len(g.nodes) + 1))
    types = g.types()
    preceding = [v.name for v in g.inputs] + [v.name for n in g.nodes[:k] for v in n.outputs]
    prefix = f"s{uid}_"
    em = _Emitter(prefix)
    info = Splice(g, p.name, k, patterns=[p.name], context=seed)

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
        # a dtype variant keeps its dtype: context values of another one are bridged (cast) to it
        similar = [] if p.meta.get("retyped") else [v for v in preceding if h.accepts(types[v]) and types[v].size > 0]
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
    # a neighbour variant's inner value that is a graph output too (`neighbour_variants`)
    g.outputs += [rename[v] for v in p.meta.get("graph_outputs", []) if v in rename and rename[v] not in g.outputs]
    fault = validity_fault(g)
    if fault is not None:
        if rejected is not None:
            rejected[fault] += 1
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
    """Seed pool + pattern choice + splice: one synthesized graph per call, a function of the rng.

    Patterns are checked once (`usable_pattern`): one that is not a valid graph by itself, even
    after its index constants are repaired, is dropped and counted in `dropped`, never raised.
    Every synthesized graph passes `validity_fault` before anyone runs it; attempts that do not are
    counted in `rejected` by reason."""

    def __init__(self, patterns: Sequence[Pattern], compiler: str, supported: Supported | None = None,
                 seed_ops: int = 8, only_ops: Sequence[str] | None = None, retyped: bool = True,
                 patterns_supported: Supported | None = None) -> None:
        self.dropped: Counter[str] = Counter()
        # what a pattern's operators must be supported by (default: `supported`, what seed graphs draw from)
        self.patterns_supported = patterns_supported or supported
        usable = []
        for p in patterns:
            if not pattern_supported(p, self.patterns_supported):
                continue
            fixed, why = usable_pattern(p)
            if fixed is None:
                self.dropped[why] += 1
            else:
                usable.append(fixed)
        targeted = [p for p in usable if p.targets_for(compiler)]
        self.patterns = targeted or usable
        if not self.patterns:
            raise ValueError("no pattern is usable with this compiler")
        self.compiler = compiler
        # choice by optimization first, then by pattern: 146 mined QDQ patterns do not drown the two
        # that target MatMulAddFusion (or the library's hand-written ones)
        by_opt: dict[str, list[Pattern]] = {}
        for p in self.patterns:
            for t in p.targets_for(compiler):
                by_opt.setdefault(t, []).append(p)
        self.by_optimization = [by_opt[t] for t in sorted(by_opt)] or [self.patterns]
        self.named = {p.name: p for p in self.patterns}  # `patterns` by name (the later of a name), kept with it
        self.supported = supported
        self.retyped = retyped
        self._instances: dict[str, list[Pattern]] = {}
        self.seed_ops = seed_ops
        self.only_ops = list(only_ops) if only_ops else None
        # dtypes of seed graphs (SEED_DTYPES or all) -> their (operator, dtypes) choices, made on first use
        self._seed_choices: dict[tuple[str, ...] | None, list[tuple[OpSpec, list[str]]]] = {}
        self.pool: list[tuple[Graph, list[str], bool]] = []  # (graph, its patterns, made for a long-axis test)
        self.uid = itertools.count()
        self.attempts = 0
        self.failures = 0
        self.rejected: Counter[str] = Counter()
        self.unspliced = 0  # calls that gave a plain seed graph: every splice attempt failed

    def seed_graph(self, rng: np.random.Generator, sizes: SizeProfile | None = None) -> tuple[Graph, list[str]]:
        """A seed graph: an earlier synthesized graph of the same size class (long-axis or small), or a fresh random
        one, with long axes where `sizes` is a long-axis test's profile."""
        pool = [(g, names) for g, names, long in self.pool if long == (sizes is not None)]
        if pool and rng.random() < P_FROM_POOL:
            g, names = pool[int(rng.integers(len(pool)))]
            return g, names
        n = int(rng.integers(2, self.seed_ops + 1))
        dtypes = SEED_DTYPES if rng.random() < 0.8 else None
        if dtypes not in self._seed_choices:  # what generate() would compute for each seed graph (6 ms)
            ops = [get_op(o) for o in self.only_ops] if self.only_ops else None
            self._seed_choices[dtypes] = allowed_choices(ops, dtypes, self.supported)
        return generate(rng, n, choices=self._seed_choices[dtypes], sizes=sizes), []

    def next(self, rng: np.random.Generator, tries: int = 12, sizes: SizeProfile | None = None) -> Splice:
        """A valid synthesized graph. Never raises for a pattern's fault: an attempt that does not
        give a valid graph is counted and another is made; after `tries` of them the seed graph
        itself is the test (valid by construction, counted in `unspliced`). `sizes`: a long-axis test's
        profile (gen/sizes.draw_sizes): the seed graph has long axes, a hole bound to a long value re-concretizes
        the pattern for it (its types inferred by the operators' rules, as the generator's), and an attempt past
        the test's element or work bound is refused like an invalid one; None: small shapes (an attempt whose bridge
        lengthens an axis past those bounds is refused too)."""
        seed, names = self.seed_graph(rng, sizes)
        for _ in range(tries):
            p = self.instance(self.by_optimization[int(rng.integers(len(self.by_optimization)))], rng)
            self.attempts += 1
            try:
                s = splice(seed, p, rng, next(self.uid), self.patterns_supported, self.rejected)
            except DlcfuzzError as e:  # a bridge or re-concretization our type rules refuse
                self.rejected[f"type: {type(e).__name__}"] += 1
                s = None
            except PATTERN_FAULTS as e:
                self.rejected[f"error: {type(e).__name__}"] += 1
                s = None
            if s is not None and not (sizes.holds(s.graph) if sizes is not None else within_bounds(s.graph)):
                self.rejected["size: past the long-axis test's element or work bound"] += 1
                s = None
            if s is None:
                self.failures += 1
                seed, names = self.seed_graph(rng, sizes)
                continue
            s.patterns = names + [p.name]
            s.order = len(s.patterns)
            s.long = sizes is not None
            return s
        self.unspliced += 1
        return Splice(seed.copy(), "", len(seed.nodes), order=len(names), patterns=list(names), long=sizes is not None)

    def instance(self, group: list[Pattern], rng: np.random.Generator) -> Pattern:
        """One pattern of an optimization's group, then one of its instances. Written patterns (the built-in library,
        each checked to fire its targets) get WRITTEN_SHARE of a group that also holds mined ones: a cut from a
        compiler test often lacks what its optimization checks (DoubleQDQPairsRemover's mined cuts fire it in no form
        checked: drawn among them, its written pattern made none of 83 targeted tests fire it). The pattern as written or mined gets
        AS_GIVEN_SHARE of its instances, its variants the rest: a fusion that no variant fires is still reached."""
        written = [q for q in group if q.source == "library"]
        mined = [q for q in group if q.source != "library"]
        if written and mined:
            group = written if rng.random() < WRITTEN_SHARE else mined
        inst = self.instances(group[int(rng.integers(len(group)))])
        if len(inst) == 1 or rng.random() < AS_GIVEN_SHARE:
            return inst[0]
        return inst[1 + int(rng.integers(len(inst) - 1))]

    def instances(self, p: Pattern) -> list[Pattern]:
        """The pattern and, with `retyped`, its dtype, attribute and neighbour variants (made the first time the pattern
        is chosen, a few milliseconds each, and added to `patterns`, where the strategy reads their targets)."""
        if not self.retyped:
            return [p]
        if p.name not in self._instances:
            variants = pattern_variants(p, self.patterns_supported)
            self._instances[p.name] = [p, *variants]
            self.patterns.extend(variants)
            self.named.update((v.name, v) for v in variants)
        return self._instances[p.name]

    def accept(self, s: Splice) -> None:
        """A valid synthesized test goes back into the seed pool (high-order synthesis)."""
        if s.pattern and len(s.graph.nodes) <= POOL_MAX_NODES:
            self.pool.append((s.graph, s.patterns, s.long))
            del self.pool[:-POOL_SIZE]


def pattern_variants(p: Pattern, supported: Supported | None) -> list[Pattern]:
    """The dtype, attribute and neighbour variants of `p` whose operators `supported` takes, made once per pattern and
    answers of `supported`: each making is kept with the (operator, dtype) questions it asked and their answers, and
    a later campaign whose `supported` answers them alike gets the same variants without making them again (a
    campaign made them for every pattern it drew: a fifth of an ORT oatest campaign process's CPU). The variants are
    a function of the pattern and those answers alone (their attribute draws come from a fixed seed)."""
    if supported is None:
        if "variants" not in p.derived:
            p.derived["variants"] = _make_variants(p, None)
        return list(p.derived["variants"])
    made: list[tuple[dict[tuple[str, str], bool], list[Pattern]]] = p.derived.setdefault("variants by answers", [])
    for answers, variants in made:
        if all(supported(op, dt) == ok for (op, dt), ok in answers.items()):
            return list(variants)
    asked: dict[tuple[str, str], bool] = {}

    def asking(op: str, dt: str) -> bool:
        if (op, dt) not in asked:
            asked[(op, dt)] = supported(op, dt)
        return asked[(op, dt)]

    variants = _make_variants(p, asking)
    made.append((asked, variants))
    return list(variants)


def _make_variants(p: Pattern, supported: Supported | None) -> list[Pattern]:
    return dtype_variants(p, supported) + attribute_variants(p, supported) + neighbour_variants(p, supported)


def usable_pattern(p: Pattern) -> tuple[Pattern | None, str]:
    """The pattern as synthesis uses it (index-like constants repaired into their domains), or None
    and why it cannot be made a valid graph; worked out once per pattern (`Pattern.derived`)."""
    if "usable" not in p.derived:
        p.derived["usable"] = _usable_pattern(p)
    return p.derived["usable"]


def _usable_pattern(p: Pattern) -> tuple[Pattern | None, str]:
    if validity_fault(p.graph) is None:
        return p, ""
    g = p.graph.copy()
    if not repair_strict_constants(g):
        return None, "domain: a constant outside an unbounded or empty strict domain"
    fault = validity_fault(g)
    if fault is not None:
        return None, fault
    return Pattern(p.name, g, p.targets, p.granularity, p.source, dict(p.meta)), ""
