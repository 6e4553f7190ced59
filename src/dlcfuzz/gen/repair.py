"""Domain repair: values that reach an operator lie in its domain, intermediate values included.

Value domains constrain the graph's inputs and constants when they are sampled; a computed value
that feeds a domain-restricted operator (asin of a sum, log of a difference) is not constrained,
and about one generated graph in six went non-finite, so its test was never judged. After
generation the reference runs on the sampled inputs; where an operator makes a non-finite value
out of finite inputs, the computed input that leaves the operator's domain is clipped into it by
an inserted `clip` node, and the check runs again. A computed input that an operator's kernels sum or
multiply in its float dtype (OpSpec.magnitude: a float16 reduction or norm over a long axis) is clipped
alike where it passes the magnitude those kernels hold (gen/inputs.magnitude_limits), finite result or not:
the reference calls that an intermediate overflow and judges nothing. Deterministic: a function of graph and
inputs.
"""

from __future__ import annotations

import numpy as np

from dlcfuzz import reference
from dlcfuzz.gen.inputs import (
    EdgeValues,
    attr_values,
    edge_values,
    held,
    magnitude_limits,
    sample_inputs,
    set_attr_values,
    value_domains,
)
from dlcfuzz.gen.regions import fresh_name
from dlcfuzz.ir.graph import CALL_OP, Graph, Node, Value
from dlcfuzz.ir.types import FLOATS
from dlcfuzz.ops import Domain, get_op
from dlcfuzz.ops.regions import REGION_OPS

MAX_REPAIRS = 8


# per node of one graph (its position there): its inputs a clip can repair, as (input index, low, high, ceiling)
Bounded = dict[int, list[tuple[int, float, float, float]]]


def _ceiling(dt: np.dtype, power: float, terms: int) -> float:
    """The largest magnitude of `dt` within the limit of kernels that form `power`-th powers and sums of `terms`
    (inf where they form neither)."""
    if (power, terms) == (1.0, 1):
        return np.inf
    return float(held(magnitude_limits(dt, Domain(power=power, terms=terms))[1], dt, up=False))


def _sampled_within(d: Domain | None, dt: np.dtype, lo: float, hi: float) -> bool:
    """Whether values sampled in `d` (a graph input's or constant's merged domain, gen/inputs.value_domains) lie in
    [lo, hi]. Not where its consumers' domains do not meet: merge_domains then takes the first consumer's, and the
    others get values outside theirs (an input that a Gemm reads in [-1, 1] and an Acosh in [1.1, 4])."""
    if d is None:
        return False
    ceiling = _ceiling(dt, d.power, d.terms)
    low = max(d.lo, -ceiling) if d.lo is not None else -ceiling
    high = min(d.hi, ceiling) if d.hi is not None else ceiling
    return lo <= low and high <= hi


def _bounded_computed_inputs(g: Graph, params_computed: bool = False, functions: dict[str, Graph] | None = None
                             ) -> Bounded:
    """Per node (its position in `g`): its inputs that another node computes, of a float type, whose domain is
    bounded on both sides or whose magnitude the operator's kernels limit (Domain.power, terms), as
    (input index, low, high, ceiling): the only inputs a clip can repair; and the graph inputs and constants that
    their sampling does not keep inside (_sampled_within). `ceiling`: the largest
    magnitude of the dtype within the kernels' limit (inf where they form no powers or sums), which a
    value must not pass even where the operator's result is finite; low and high lie within it.
    `params_computed`: `g` is a region's body or a called function, whose parameters the enclosing graph
    computes (a loop's carried values, the previous trip's); `functions`: the sub-functions its calls call (the
    main graph's own where None)."""
    produced = {v.name for n in g.nodes for v in n.outputs}
    if params_computed:
        produced |= {v.name for v in g.inputs}
    types = g.types()
    sampled: dict[str, Domain] | None = None  # the graph inputs' and constants' domains, when one is asked
    found: Bounded = {}
    for at, n in enumerate(g.nodes):
        if n.op == CALL_OP or n.op in REGION_OPS:  # their bodies' nodes are repaired inside (_bounded_everywhere)
            continue
        spec = get_op(n.op)
        ins = [types[i] for i in n.inputs]
        for k, name in enumerate(n.inputs):
            if types[name].dtype not in FLOATS:
                continue
            d = spec.domain(k, ins, n.attrs)
            dt = types[name].np_dtype
            ceiling = _ceiling(dt, *spec.magnitude(k, ins, n.attrs))  # a value of the dtype: the clip's bounds take it
            lo = max(d.lo, -ceiling) if d.lo is not None else -ceiling
            hi = min(d.hi, ceiling) if d.hi is not None else ceiling
            if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
                continue
            if name not in produced:
                if sampled is None:
                    sampled = value_domains(g if functions is None else
                                            Graph(g.inputs, g.constants, g.nodes, g.outputs, functions))
                if _sampled_within(sampled.get(name), dt, lo, hi):
                    continue
            found.setdefault(at, []).append((k, float(lo), float(hi), ceiling))
    return found


def _bounded_everywhere(g: Graph) -> dict[int, Bounded]:
    """_bounded_computed_inputs of `g`, of every region body in it (nested ones too) and of its sub-functions,
    by the graph's id: a region wraps nodes that generation made before it (gen/regions.py), and their values
    leave an operator's domain inside the body as they would outside (an asin of a sum in a loop's body)."""
    found = {id(g): _bounded_computed_inputs(g)}

    def visit(body: Graph) -> None:
        found[id(body)] = _bounded_computed_inputs(body, params_computed=True, functions=g.functions)
        for n in body.nodes:
            for inner in n.bodies().values():
                visit(inner)

    for n in g.nodes:
        for body in n.bodies().values():
            visit(body)
    for f in g.functions.values():
        visit(f)
    return found


def _holds_bounded(n: Node, bounded: dict[int, Bounded], functions: dict[str, Graph]) -> bool:
    """Whether a region's bodies or a call's callee (and the regions and calls inside them) hold a node a clip
    can repair."""
    bodies = [functions[n.attrs["callee"]]] if n.op == CALL_OP else list(n.bodies().values())
    return any(bounded.get(id(b)) or any(_holds_bounded(m, bounded, functions) for m in b.nodes
                                         if m.op == CALL_OP or m.bodies()) for b in bodies)


class _FoundInBody(Exception):
    """An offender inside a run of a body: ends that run (and the enclosing region's) at once."""

    def __init__(self, hit: tuple[Graph, Node, int, float, float]) -> None:
        super().__init__()
        self.hit = hit


def _offender_inside(n: Node, xs: list[np.ndarray], bounded: dict[int, Bounded], functions: dict[str, Graph]
                     ) -> tuple[Graph, Node, int, float, float] | None:
    """The first offender (_offender) in the runs of region `n`'s bodies, or of call `n`'s callee, on its inputs
    `xs`: each run as the reference runs it (the taken branch, each trip, each scan step)."""

    def body_outputs(body: Graph, args: list[np.ndarray], where: str = "") -> list[np.ndarray]:
        env = reference.run(body, {p.name: x for p, x in zip(body.inputs, args)}, keep_all=True,
                            _functions=functions)
        hit = _offender(body, env, bounded, functions)
        if hit is not None:
            raise _FoundInBody(hit)
        return [env[o] for o in body.outputs]

    try:
        if n.op == CALL_OP:
            body_outputs(functions[n.attrs["callee"]], xs)
        else:
            reference.run_region(n.op, n.attrs, xs, body_outputs, n.name or n.op)
    except _FoundInBody as found:
        return found.hit
    except Exception:  # noqa: BLE001 - a run the reference refuses: the reference policy reports it
        return None
    return None


def _offender(g: Graph, env: dict[str, np.ndarray], bounded: dict[int, Bounded], functions: dict[str, Graph]
              ) -> tuple[Graph, Node, int, float, float] | None:
    """The first node that makes a non-finite value out of finite inputs, or whose kernels' magnitude
    limit a finite computed input passes, with the graph that holds it (`g`, or a body of one of its regions,
    or a function it calls), that input (one that leaves the operator's domain, or the limit) and the bounds to
    clip it to; a node no clip repairs is passed by (the nodes its inf or NaN reaches are too)."""
    mine = bounded.get(id(g), {})
    for at, n in enumerate(g.nodes):
        ins = [env[i] for i in n.inputs]
        if not all(reference.finite(x) for x in ins):
            # an inf or NaN of an edge value, or of an earlier offender no clip repairs: the nodes it reaches are
            # not this repair's, the others still are (an acos of a conv beside a max of an inf)
            continue
        if n.op == CALL_OP or n.op in REGION_OPS:
            if _holds_bounded(n, bounded, functions) and (hit := _offender_inside(n, ins, bounded, functions)):
                return hit
            continue
        finite_out = all(reference.finite(env[v.name]) for v in n.outputs)
        for k, lo, hi, ceiling in mine.get(at, ()):
            x = ins[k]
            if not x.size:
                continue
            if (not finite_out and (x.min() < lo or x.max() > hi)) or np.abs(x).max() > ceiling:
                return g, n, k, lo, hi
    return None


def _names(g: Graph) -> set[str]:
    """Every value name of `g`, of its region bodies and of its functions: a clip's value is fresh in all scopes."""
    taken = set(g.types())
    for n in g.nodes:
        for body in n.bodies().values():
            taken |= _names(body)
    for f in g.functions.values():
        taken |= _names(f)
    return taken


def repair_domains(g: Graph, inputs: dict[str, np.ndarray]) -> Graph:
    """`g` with clips inserted where a computed value leaves an operator's domain (in place), in the main graph,
    in region bodies (on each run the reference makes of them) and in called functions."""
    for _ in range(MAX_REPAIRS):
        bounded = _bounded_everywhere(g)
        if not any(bounded.values()):  # nothing a clip could repair: no need to evaluate (most graphs)
            return g
        # the nodes after the last one with a bounded input (or a body that holds one) cannot lead to a repair
        # (_offender stops at the first): they are not evaluated
        mine = bounded[id(g)]
        last = max((i for i, n in enumerate(g.nodes)
                    if i in mine or ((n.op == CALL_OP or n.bodies()) and _holds_bounded(n, bounded, g.functions))),
                   default=-1)
        if last < 0:  # only functions that no node calls hold one
            return g
        prefix = Graph(inputs=g.inputs, constants=g.constants, nodes=g.nodes[:last + 1], functions=g.functions)
        bounded[id(prefix)] = mine
        try:
            with np.errstate(all="ignore"):
                env = reference.run(prefix, inputs, keep_all=True)
                bad = _offender(prefix, env, bounded, g.functions)
        except Exception:  # noqa: BLE001 - the reference policy reports what it cannot evaluate
            return g
        if bad is None:
            return g
        where, node, k, lo, hi = bad
        where = g if where is prefix else where
        x = node.inputs[k]
        t = where.types()[x]
        # a clip in a body gets a name no scope holds; one in the main graph the name it always had
        clipped = Value(g.fresh_name("dom") if where is g else fresh_name(_names(g), "dom"), t)
        where.nodes.insert(where.nodes.index(node),
                           Node("clip", [x], [clipped], {"min": lo, "max": hi}, name=f"domain_{clipped.name}"))
        node.inputs[k] = clipped.name
    return g


# ---- edge values ------------------------------------------------------------------------------
# An edge value (gen/inputs.py's profiles) may carry a computation past its dtype's range: integer
# overflow, which the reference leaves undefined (an unknown), or a float that overflows to Inf (a
# non-finite reference). Either way the test would not be judged. Repair shrinks the edge tensors the
# failing node depends on, the largest first, a step at a time toward their small values (halved,
# then square-rooted, then the small values themselves), until the reference is exact and finite.
SHRINK_STEPS = ("halve", "root", "small")
MAX_VALUE_REPAIRS = 12  # reference evaluations per test at most; what is left then is judged as it is


def _failing_node(g: Graph, inputs: dict[str, np.ndarray]) -> str | None:
    """The name of the first node whose result the reference leaves undefined (integer overflow, an integer
    division's undefined case, anything it cannot evaluate: "" when it cannot say which), makes non-finite
    out of finite values, or meets a non-finite value it does not define (reference.nonfinite_undefined; in a
    region's body, the region: the reference policy's check_nonfinite); None
    when every value is exact, and finite but for inputs' and constants' inf and NaN that every operator they reach
    defines."""
    try:
        with np.errstate(all="ignore"):
            env = reference.run(g, inputs, keep_all=True, check_overflow=True, check_nonfinite=True)
    except (reference.IntegerOverflow, reference.IntermediateOverflow, reference.NonfiniteInBody) as e:
        # integer division's cases too; a body's inf or NaN (NonfiniteInBody) names its region: what the
        # region reads is suspect
        return e.node or ""
    except Exception:  # noqa: BLE001 - an edge value the reference cannot take: shrink
        return ""
    # non-finite values where the operators define them (edge_values' non-finite profile) are kept
    return reference.nonfinite_undefined(g, env)


def _sources(g: Graph, attrs: dict[str, str]) -> dict[str, set[str]]:
    """Per node name (and op, for nodes without one): the graph inputs and constants it depends on, and the
    attributes of `attrs` (attr_key names) of the nodes on its way."""
    deps: dict[str, set[str]] = {v.name: {v.name} for v in g.inputs}
    deps.update({k: {k} for k in g.constants})
    found: dict[str, set[str]] = {}
    for n in g.nodes:
        mine = set().union(*(deps.get(i, set()) for i in n.inputs)) if n.inputs else set()
        mine |= {k for k in attrs if k.startswith(f"{n.name}.")}
        for v in n.outputs:
            deps[v.name] = mine
        found[n.name or n.op] = mine
    return found


def _shrunk(edge: np.ndarray, small: np.ndarray, step: str, lo: float | None, hi: float | None,
            nonzero: bool) -> np.ndarray:
    if step == "small":
        return small
    x = edge.astype(np.float64)
    x = np.where(np.isfinite(x), x, small.astype(np.float64))  # an inf or NaN (the non-finite profile) goes first
    x = x / 2 if step == "halve" else np.sign(x) * np.sqrt(np.abs(x))
    if edge.dtype.kind in "iu":
        x = np.trunc(x)
    x = np.clip(x, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
    # what shrinks onto zero, or below a nonzero float domain's margin (sample_tensor's 0.25), is small again
    near_zero = (x == 0) if edge.dtype.kind in "iu" else (np.abs(x) < 0.25)
    out = np.where(near_zero & nonzero, small.astype(np.float64), x)
    return out.astype(edge.dtype)


def _magnitude(a: np.ndarray) -> float:
    x = np.abs(a.astype(np.float64))
    return float(np.where(np.isnan(x), np.inf, x).max()) if a.size else 0.0  # a NaN is as large as it gets


def _node(g: Graph, name: str) -> Node:
    return next(n for n in g.nodes if n.name == name)


def _restore_attrs(g: Graph, edges: EdgeValues, node: str) -> None:
    """`node`'s attributes as its operator sampled them; its attributes leave `edges`."""
    _node(g, node).attrs = edges.small_attrs.pop(node)
    for k in [k for k in edges.attrs if k.startswith(f"{node}.")]:
        del edges.attrs[k]


def _shrink_attr(g: Graph, edges: EdgeValues, key: str, step: str) -> None:
    """One shrink step of an edge attribute (attr_key `key`): its node's sampled attributes where the step is
    "small" for the node's last edge attribute, or where its operator refuses the shrunk value (with_values)."""
    name, attr = key.rsplit(".", 1)
    node = _node(g, name)
    small = edges.small_attrs[name][attr]
    if step == "small":
        if [k for k in edges.attrs if k.startswith(f"{name}.")] != [key] and set_attr_values(g, node, {attr: small}):
            del edges.attrs[key]
            return
    else:
        va, current = attr_values(g, node, attr)
        d = va.domain
        shrunk = _shrunk(current, np.asarray(small).astype(va.dtype), step, d.lo, d.hi, d.nonzero)
        if set_attr_values(g, node, {attr: shrunk.tolist()}):
            return
    _restore_attrs(g, edges, name)


def repair_values(g: Graph, inputs: dict[str, np.ndarray], edges: EdgeValues) -> int:
    """Shrink the edge tensors of `edges` (inputs and constants of `g`, changed in place) and its edge attributes
    (the nodes' value attributes, through their operators' with_values) until the reference is exact and finite,
    or MAX_VALUE_REPAIRS evaluations are spent; those that went back to their small values leave `edges`.
    Returns the evaluations made. Deterministic: a function of graph and values."""
    if not edges.profiles and not edges.attrs:
        return 0
    doms = value_domains(g)
    sources = _sources(g, edges.attrs)
    steps = dict.fromkeys([*edges.profiles, *edges.attrs], 0)  # name -> shrink steps taken
    for evaluations in range(1, MAX_VALUE_REPAIRS + 1):
        where = _failing_node(g, inputs)
        if where is None:
            return evaluations
        live = [k for k in steps if steps[k] < len(SHRINK_STEPS) and (k in edges.profiles or k in edges.attrs)]
        suspects = [k for k in live if k in sources.get(where, steps.keys())] or live
        if not suspects:
            return evaluations
        current = {k: inputs[k] if k in inputs else g.constants[k] if k in g.constants
                   else attr_values(g, _node(g, k.rsplit(".", 1)[0]), k.rsplit(".", 1)[1])[1] for k in suspects}
        name = max(suspects, key=lambda k: (_magnitude(current[k]), k))  # the largest first; ties by name
        step = SHRINK_STEPS[steps[name]]
        steps[name] += 1
        edges.shrunk.add(name)
        if name in edges.attrs:
            _shrink_attr(g, edges, name, step)
            continue
        d = doms.get(name)
        shrunk = _shrunk(current[name], edges.small[name], step, d.lo if d else None, d.hi if d else None,
                         bool(d and d.nonzero))
        if step == "small":
            del edges.profiles[name], edges.small[name]
            steps[name] = len(SHRINK_STEPS)
        if name in inputs:
            inputs[name] = shrunk
        else:
            g.constants[name] = shrunk
    return MAX_VALUE_REPAIRS


def sample_values(g: Graph, rng: np.random.Generator, values: str = "edge") -> tuple[Graph, dict[str, np.ndarray], EdgeValues]:
    """A generated graph's inputs, sampled in the operators' domains; with values="edge" (`--values`), edge
    profiles on a share of tests (gen/inputs.edge_values: inputs and constants, and the nodes' value attributes);
    the graph repaired so that computed values reaching a domain-restricted operator stay in its domain
    (repair_domains), then the edge values shrunk where they still leave the reference's exact, finite range
    (repair_values). Returns the graph, its inputs and the edge tensors and attributes kept."""
    inputs = sample_inputs(g, rng)
    if values != "edge":
        return repair_domains(g, inputs), inputs, EdgeValues()
    edges = edge_values(g, inputs, rng, attrs=True)
    g = repair_domains(g, inputs)
    repair_values(g, inputs, edges)
    if edges.shrunk:  # a value that an edge hid behind an inf or an overflow, shown again
        g = repair_domains(g, inputs)
    return g, inputs, edges


def edge_inputs(g: Graph, inputs: dict[str, np.ndarray], rng: np.random.Generator) -> EdgeValues:
    """Edge profiles on a share of input sets, on the inputs of `g` alone (changed in place; its constants, which
    the compiled program holds, stay), shrunk where they leave the reference's exact, finite range: another input
    set of a program compiled once (oracle/policy.drawn_input_set)."""
    edges = edge_values(g.light_copy(), inputs, rng)  # the copy takes the constants' edge values, dropped here
    for name in [k for k in edges.profiles if k not in inputs]:
        del edges.profiles[name], edges.small[name]
    repair_values(g, inputs, edges)
    return edges
