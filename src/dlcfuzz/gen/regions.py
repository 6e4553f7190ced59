"""Regions around generated subgraphs (ops/regions.py): a contiguous range of a graph's nodes (a valid
subgraph, as for function outlining in gen/functions.py) becomes the body of a conditional, a loop or a
scan whose outputs keep the names of the values they stand for, so nothing after the range changes.

- `if`: on a computed condition (the largest element of a value before the range, greater than a
  sampled constant; a constant condition where the compiler lacks those operators), the range is the
  then-branch; the else-branch is the range with each output negated (bool: not), so the two differ.
- `loop`: a small constant trip count (1-3), the range is the body; each output the range computes is
  carried: its initial value is a value the range reads of the same type (a real recurrence: the next
  trip reads the last one's result) or else a fresh constant; now and then the body ends the loop early
  on its iteration number, or (at the top level) the carried values are scan outputs as well. Where the
  target lowers it (COMPUTED_TRIPS among the kinds), a share of the loops with scan outputs count their trips
  from data: the number of positive elements of a value before the range, clipped to the drawn 1-3, which is
  the loop's `max_trips`; its scan outputs' leading extent is data-dependent, and consumers that take one
  (OpSpec.unknown_dims) may read them.
- `scan`: over the leading axis of a fresh constant of 1-3 slices, each slice standing for a value of the
  range's type that the range reads; the outputs are states, initialized as a loop's carried values;
  at the top level, sometimes scan outputs too (read forwards or backwards).
Scan and loop outputs that are new values become graph outputs. A region may wrap ranges holding
regions, or sit inside another's body (nested)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.gen.inputs import sample_tensor
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import FLOATS, SIGNED_INTS, TensorType
from dlcfuzz.ops import ANY, check_graph, get_op

REGION_KINDS = ("if", "loop", "scan")
# Not a region kind but a form of `loop`: in a strategy's kinds, the target lowers a loop whose trip count is computed
# from data (scan outputs of a data-dependent extent); drawing a kind never picks it, so the draws of the other kinds
# stay as they were.
COMPUTED_TRIPS = "loop-computed-trips"
P_NESTED = 0.3  # the next region goes inside an existing region's body
P_EARLY_EXIT = 0.3  # a loop's body ends it on its iteration number
P_SCAN_OUTPUTS = 0.5  # a top-level loop or scan also stacks its carried values
P_COMPUTED_TRIPS = 0.5  # of the loops with scan outputs where COMPUTED_TRIPS is lowered: a trip count from data
P_CONSUMER = 0.7  # a computed loop's scan output is read by a consumer of its data-dependent extent
MAX_TRIPS = 3

Supported = Callable[[str, str], bool]


def _all_supported(op: str, dtype: str) -> bool:
    return True


def _can(op: str, dtype: str, supported: Supported) -> bool:
    """Whether a helper operator (a condition's, an else-branch's) takes `dtype`: its spec and the compiler."""
    return dtype in get_op(op).dtypes and supported(op, dtype)


def fresh_name(taken: set[str], base: str) -> str:
    """`base`, or `base_1`, `base_2`, ...: the first not in `taken` (which it joins)."""
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    return name


class Host:
    """A graph that receives a region (the main graph or a region body), with fresh names in its scope, each
    starting with `prefix` (a metamorphic step's own, so that its names say which step made them)."""

    def __init__(self, g: Graph, top: bool, prefix: str = "") -> None:
        self.g, self.top, self.prefix = g, top, prefix
        self.taken = set(g.types()) | {n.name for n in g.nodes}

    def fresh(self, base: str) -> str:
        return fresh_name(self.taken, self.prefix + base)

    def constant(self, array: np.ndarray, base: str = "rc") -> str:
        name = self.fresh(base)
        self.g.constants[name] = array
        return name


@dataclass
class Segment:
    """A range of a graph's nodes: its nodes, what it reads from before it (its captures), the values read
    after it (the region's outputs), and the constants only it reads, which move into its body: a trip count
    stays a constant of its loop, never a value a region around it carries or scans."""

    body: list[Node]
    reads: list[str]
    outs: list[Value]
    moved: dict[str, np.ndarray]


def segment(g: Graph, start: int, stop: int, move_constants: bool = True) -> Segment:
    """nodes[start:stop] of `g` as a Segment; without `move_constants`, the constants it reads are captures (a zoo
    model's weights stay top-level constants, which a metamorphic test shares with its seed instead of storing)."""
    body = g.nodes[start:stop]
    defined = {v.name for n in body for v in n.outputs}
    reads = list(dict.fromkeys(i for n in body for i in n.inputs if i not in defined))
    later = {i for n in g.nodes[stop:] for i in n.inputs} | set(g.outputs)
    outs = [v for n in body for v in n.outputs if v.name in later]
    elsewhere = {i for n in g.nodes[:start] + g.nodes[stop:] for i in n.inputs} | set(g.outputs)
    moved = {r: g.constants[r] for r in reads if move_constants and r in g.constants and r not in elsewhere}
    return Segment(body, [r for r in reads if r not in moved], outs, moved)


def _move(g: Graph, moved: dict[str, np.ndarray]) -> None:
    for k in moved:
        del g.constants[k]


def _names_of(g: Graph) -> set[str]:
    return set(g.types()) | {n.name for n in g.nodes}


def _condition(h: Host, start: int, rng: np.random.Generator, supported: Supported,
               moved: dict[str, np.ndarray]) -> tuple[list[Node], str]:
    """Nodes computing a bool scalar from a value defined before `start` (not a constant moving into the
    region), and its name."""
    g = h.g
    before = [*g.inputs, *(Value(k, TensorType.of(a)) for k, a in g.constants.items() if k not in moved),
              *(v for n in g.nodes[:start] for v in n.outputs)]
    fits = [v for v in before if v.type.dtype != "bool" and v.type.size and not v.type.unknown
            and _can("reduce_max", v.type.dtype, supported) and _can("greater", v.type.dtype, supported)]
    if not fits:
        return [], h.constant(np.array(bool(rng.random() < 0.5)), "rcond")
    v = fits[int(rng.integers(len(fits)))]
    nodes = []
    top = v.name
    if v.type.rank:
        top = h.fresh("rmax")
        nodes.append(Node("reduce_max", [v.name], [Value(top, v.type.with_shape(()))],
                          {"axes": list(range(v.type.rank)), "keepdims": 0, "noop_with_empty_axes": 0},
                          name=h.fresh("n_rmax")))
    threshold = h.constant(sample_tensor(rng, v.type.with_shape(()), ANY), "rthreshold")
    cond = h.fresh("rcond")
    nodes.append(Node("greater", [top, threshold], [Value(cond, TensorType("bool", ()))], {},
                      name=h.fresh("n_rcond")))
    return nodes, cond


def _other_branch(then: Graph, supported: Supported) -> Graph:
    """`then` with each output negated (bool: not; where the compiler lacks that operator: unchanged)."""
    other = then.light_copy()
    taken = _names_of(other)
    types = other.types()
    outputs = []
    for o in other.outputs:
        t = types[o]
        op = "not" if t.dtype == "bool" else "neg" if t.dtype in FLOATS + SIGNED_INTS else None
        if op is None or not _can(op, t.dtype, supported):
            outputs.append(o)
            continue
        name = fresh_name(taken, f"{o}_else")
        other.nodes.append(Node(op, [o], [Value(name, t)], {}, name=fresh_name(taken, f"n_{o}_else")))
        outputs.append(name)
    other.outputs = outputs
    return other


def _carried(h: Host, reads: list[str], outs: list[Value], body: list[Node], rng: np.random.Generator
             ) -> tuple[list[str], list[Value], list[str]]:
    """Per output of the range, its initial value outside and its parameter inside (a read of the same
    type, or a fresh constant and an unread parameter); and the reads left to capture."""
    types = h.g.types()
    free = list(reads)
    inits, params = [], []
    taken = set(reads) | {v.name for n in body for v in n.outputs}
    for o in outs:
        same = [r for r in free if types[r] == o.type]
        if same:
            r = same[int(rng.integers(len(same)))]
            free.remove(r)
            inits.append(r)
            params.append(Value(r, o.type))
        else:
            inits.append(h.constant(sample_tensor(rng, o.type, ANY), "rinit"))
            params.append(Value(fresh_name(taken, f"{o.name}_prev"), o.type))
    return inits, params, free


def wrap_if(h: Host, start: int, stop: int, seg: Segment, rng: np.random.Generator, supported: Supported,
            condition: tuple[list[Node], str, bool] | None = None) -> bool:
    """`condition`: the nodes computing a condition, its name and the value it always has (a metamorphic
    opaque condition): the range is the branch it takes. None: a computed condition, the range either branch."""
    g = h.g
    body, reads, outs, moved = seg.body, seg.reads, seg.outs, seg.moved
    types = g.types()
    if condition is None:
        cond_nodes, cond = _condition(h, start, rng, supported, moved)
    else:
        cond_nodes, cond, always = condition
    then = Graph(inputs=[Value(r, types[r]) for r in reads], constants=moved, nodes=list(body),
                 outputs=[o.name for o in outs], name="then_branch")
    other = _other_branch(then, supported)
    if (rng.random() < 0.5) if condition is None else not always:
        then, other = other, then
    then.name, other.name = "then_branch", "else_branch"
    node = Node("if", [cond, *reads], list(outs), {"then_branch": then, "else_branch": other}, name=h.fresh("n_if"))
    g.nodes[start:stop] = [*cond_nodes, node]
    _move(g, moved)
    return True


def _stacked(h: Host, outs: list[Value], length: int, suffix: str) -> list[Value]:
    """New graph outputs stacking `length` values of each of `outs` (a loop's or a scan's scan outputs)."""
    stacked = [Value(h.fresh(f"{o.name}_{suffix}"), o.type.with_shape((length, *o.type.shape))) for o in outs]
    h.g.outputs.extend(v.name for v in stacked)
    return stacked


def computed_trip_count(h: Host, start: int, bound: int, rng: np.random.Generator, supported: Supported,
                        moved: dict[str, np.ndarray]) -> tuple[list[Node], str] | None:
    """Nodes computing a trip count from data, and its name: the number of positive elements of a value defined
    before `start` (Greater than 0, Cast to int64, ReduceSum), clipped to [0, `bound`]. Defined for every input: a
    NaN is not positive, and no float is ever converted to an integer. None where no value fits or the compiler
    lacks one of these operators."""
    g = h.g
    if not all(_can(op, "int64", supported) for op in ("reduce_sum", "clip")) or not _can("cast", "bool", supported):
        return None
    before = [*g.inputs, *(Value(k, TensorType.of(a)) for k, a in g.constants.items() if k not in moved),
              *(v for n in g.nodes[:start] for v in n.outputs)]
    fits = [v for v in before if v.type.dtype != "bool" and v.type.size and not v.type.unknown
            and _can("greater", v.type.dtype, supported)]
    if not fits:
        return None
    v = fits[int(rng.integers(len(fits)))]
    zero = h.constant(np.zeros((), v.type.np_dtype), "rzero")
    positive, counted, total, count = (h.fresh(b) for b in ("rpositive", "rcounted", "rtotal", "rcount"))
    shape = v.type.shape
    nodes = [Node("greater", [v.name, zero], [Value(positive, TensorType("bool", shape))], {}, name=h.fresh("n_rpos")),
             Node("cast", [positive], [Value(counted, TensorType("int64", shape))], {"to": "int64"},
                  name=h.fresh("n_rcounted"))]
    if shape:
        nodes.append(Node("reduce_sum", [counted], [Value(total, TensorType("int64", ()))],
                          {"axes": list(range(len(shape))), "keepdims": 0, "noop_with_empty_axes": 0},
                          name=h.fresh("n_rtotal")))
    else:
        total = counted
    nodes.append(Node("clip", [total], [Value(count, TensorType("int64", ()))], {"min": 0, "max": bound},
                      name=h.fresh("n_rcount")))
    return nodes, count


def _consume(h: Host, v: Value, rng: np.random.Generator, supported: Supported) -> None:
    """A consumer of scan output `v`'s data-dependent leading extent, drawn among forms whose rule takes one
    (OpSpec.unknown_dims): Neg (Not of a bool), ReduceSum over the extent (defined when it is 0) or a Cast to
    float32; its result becomes a graph output in place of `v`'s."""
    t = v.type
    forms: list[tuple[str, dict]] = []
    if t.dtype in FLOATS + SIGNED_INTS and _can("neg", t.dtype, supported):
        forms.append(("neg", {}))
    if t.dtype == "bool" and _can("not", "bool", supported):
        forms.append(("not", {}))
    if t.dtype != "bool" and _can("reduce_sum", t.dtype, supported):
        forms.append(("reduce_sum", {"axes": [0], "keepdims": 0, "noop_with_empty_axes": 0}))
    if t.dtype != "float32" and _can("cast", t.dtype, supported):
        forms.append(("cast", {"to": "float32"}))
    if not forms:
        return
    op, attrs = forms[int(rng.integers(len(forms)))]
    out = Value(h.fresh(f"{v.name}_{op}"), get_op(op).infer([t], attrs)[0])  # its rule states the extent's fate
    h.g.nodes.append(Node(op, [v.name], [out], attrs, name=h.fresh(f"n_{v.name}_{op}")))
    h.g.outputs[h.g.outputs.index(v.name)] = out.name


def wrap_loop(h: Host, start: int, stop: int, seg: Segment, rng: np.random.Generator, supported: Supported,
              count: tuple[list[Node], str] | None = None, computed: bool = False) -> bool:
    """`count`: the nodes computing a trip count that is always one (a metamorphic opaque one) and its name: the
    loop neither exits early nor stacks scan outputs. None: a constant count of 1-MAX_TRIPS, or, where `computed`
    (the target lowers it) for a share of the loops with scan outputs, a count computed from data
    (computed_trip_count) bounded by that draw, the loop's `max_trips`."""
    g = h.g
    body, reads, outs, moved = seg.body, seg.reads, seg.outs, seg.moved
    types = g.types()
    inits, params, captured = _carried(h, reads, outs, body, rng)
    trips = int(rng.integers(1, MAX_TRIPS + 1)) if count is None else 1
    inner = Graph(constants=dict(moved), nodes=list(body), name="body")
    taken = set(reads) | set(moved) | {v.name for n in body for v in n.outputs} | {n.name for n in body} \
        | {p.name for p in params}
    iteration, cond_in = fresh_name(taken, "iteration"), fresh_name(taken, "cond_in")
    scan_outputs = count is None and h.top and rng.random() < P_SCAN_OUTPUTS
    cond_out = cond_in
    if count is None and not scan_outputs and rng.random() < P_EARLY_EXIT and _can("less", "int64", supported):
        last = fresh_name(taken, "last_trip")
        inner.constants[last] = np.array(int(rng.integers(0, trips)), dtype=np.int64)
        cond_out = fresh_name(taken, "cond_out")
        inner.nodes.append(Node("less", [iteration, last], [Value(cond_out, TensorType("bool", ()))], {},
                                name=fresh_name(taken, "n_exit")))
    inner.inputs = [Value(iteration, TensorType("int64", ())), Value(cond_in, TensorType("bool", ())), *params,
                    *(Value(r, types[r]) for r in captured)]
    inner.outputs = [cond_out, *(o.name for o in outs), *((o.name for o in outs) if scan_outputs else ())]
    node_outs = list(outs)
    attrs: dict = {"body": inner, "num_carried": len(outs)}
    from_data = None
    if scan_outputs and computed and rng.random() < P_COMPUTED_TRIPS:
        from_data = computed_trip_count(h, start, trips, rng, supported, moved)
    if scan_outputs:
        stacked = _stacked(h, outs, trips, "trips")
        if from_data is not None:  # the stacked axis is as long as the trips the data decides, at most `trips`
            stacked = [Value(v.name, TensorType(v.type.dtype, v.type.shape, (0,))) for v in stacked]
        node_outs += stacked
        attrs["max_trips" if from_data is not None else "trips"] = trips
    if count is None and from_data is not None:
        count = from_data
    count_nodes, trip_count = count if count is not None else ([], h.constant(np.array(trips, dtype=np.int64), "rtrips"))
    go = h.constant(np.array(True), "rgo")
    g.nodes[start:stop] = [*count_nodes,
                           Node("loop", [trip_count, go, *inits, *captured], node_outs, attrs, name=h.fresh("n_loop"))]
    _move(g, moved)
    if from_data is not None:
        for v in node_outs[len(outs):]:
            if rng.random() < P_CONSUMER:
                _consume(h, v, rng, supported)
    return True


def wrap_scan(h: Host, start: int, stop: int, seg: Segment, rng: np.random.Generator, supported: Supported) -> bool:
    g = h.g
    body, reads, outs, moved = seg.body, seg.reads, seg.outs, seg.moved
    if not reads:
        return False
    types = g.types()
    sliced = reads[int(rng.integers(len(reads)))]  # a value the range reads, one slice per step
    inits, params, free = _carried(h, [r for r in reads if r != sliced], outs, body, rng)
    length = int(rng.integers(1, MAX_TRIPS + 1))
    t = types[sliced]
    scanned = h.constant(sample_tensor(rng, t.with_shape((length, *t.shape)), ANY), "rscanned")
    scan_outputs = h.top and rng.random() < P_SCAN_OUTPUTS
    inner = Graph(inputs=[*params, Value(sliced, t), *(Value(r, types[r]) for r in free)], constants=moved,
                  nodes=list(body), outputs=[o.name for o in outs] * (2 if scan_outputs else 1), name="body")
    node_outs = list(outs)
    if scan_outputs:
        node_outs += _stacked(h, outs, length, "steps")
    k = len(node_outs) - len(outs)
    attrs = {"body": inner, "num_states": len(outs), "num_scan_inputs": 1, "scan_input_axes": [0],
             "scan_input_directions": [int(rng.integers(2))], "scan_output_axes": [0] * k,
             "scan_output_directions": [int(rng.integers(2)) for _ in range(k)]}
    g.nodes[start:stop] = [Node("scan", [*inits, scanned, *free], node_outs, attrs, name=h.fresh("n_scan"))]
    _move(g, moved)
    return True


WRAPPERS = {"if": wrap_if, "loop": wrap_loop, "scan": wrap_scan}


def bodies_in(g: Graph) -> list[Graph]:
    """Every region body in `g` (nested ones included)."""
    out = []
    for n in g.nodes:
        for body in n.bodies().values():
            out.append(body)
            out.extend(bodies_in(body))
    return out


def _drawn(kinds: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """The region kinds to draw from, and whether COMPUTED_TRIPS (a form of loop, never drawn as a kind) is among
    `kinds`."""
    return tuple(k for k in kinds if k != COMPUTED_TRIPS), COMPUTED_TRIPS in kinds


def add_regions(g: Graph, rng: np.random.Generator, max_regions: int = 2, kinds: tuple[str, ...] = REGION_KINDS,
                supported: Supported = _all_supported) -> Graph:
    """A copy of `g` with 1..`max_regions` random node ranges wrapped in regions of `kinds` (now and then
    inside an earlier region's body: nested; COMPUTED_TRIPS among them: some loops count their trips from data).
    Checked (ops.check_graph)."""
    kinds, computed = _drawn(kinds)
    h = g.copy()
    want = int(rng.integers(1, max_regions + 1))
    made = 0
    for _ in range(4 * want):
        if made >= want:
            break
        inner = [b for b in bodies_in(h) if b.nodes]
        top = not inner or rng.random() >= P_NESTED
        host = Host(h if top else inner[int(rng.integers(len(inner)))], top)
        n = len(host.g.nodes)
        if n == 0:
            continue
        start = int(rng.integers(n))
        stop = int(rng.integers(start + 1, min(n, start + 4) + 1))
        made += _wrap(host, start, stop, kinds[int(rng.integers(len(kinds)))], rng, supported, computed)
    check_graph(h)
    return h


def _wrap(host: Host, start: int, stop: int, kind: str, rng: np.random.Generator, supported: Supported,
          computed: bool = False) -> bool:
    """host's nodes[start:stop] in a region of `kind`; False when nothing after the range reads its values.
    `computed`: a loop may count its trips from data (wrap_loop)."""
    seg = segment(host.g, start, stop)
    types = host.g.types()
    if any(types[r].unknown for r in seg.reads) or any(v.type.unknown for v in seg.outs):
        return False  # a region's signature is static: its rule refuses a data-dependent extent
    if not seg.outs:
        return False
    if kind == "loop":
        return wrap_loop(host, start, stop, seg, rng, supported, computed=computed)
    return WRAPPERS[kind](host, start, stop, seg, rng, supported)


def wrap_range(g: Graph, start: int, stop: int, rng: np.random.Generator, kinds: tuple[str, ...] = REGION_KINDS,
               supported: Supported = _all_supported) -> Graph | None:
    """A copy of `g` with its top-level nodes[start:stop] (a range a strategy chose: a spliced pattern) in a region
    of one of `kinds`; None when nothing after the range reads its values. Checked (ops.check_graph)."""
    kinds, computed = _drawn(kinds)
    h = g.copy()
    if not _wrap(Host(h, top=True), start, stop, kinds[int(rng.integers(len(kinds)))], rng, supported, computed):
        return None
    check_graph(h)
    return h


def region_samples() -> list[Graph]:
    """One small graph per region kind (relu and add in the region's body): what a strategy lowers once to ask
    whether a compiler's configuration takes regions at all."""
    out = []
    t = TensorType("float32", (2, 3))
    for kind in REGION_KINDS:
        g = Graph(inputs=[Value("x", t), Value("y", TensorType("float32", (3,)))],
                  nodes=[Node("relu", ["x"], [Value("v0", t)], name="n0"),
                         Node("add", ["v0", "y"], [Value("v1", t)], name="n1")],
                  outputs=["v1"])
        rng = np.random.default_rng(0)
        if not WRAPPERS[kind](Host(g, top=True), 0, 2, segment(g, 0, 2), rng, _all_supported):
            raise AssertionError(f"no {kind} sample")
        check_graph(g)
        out.append(g)
    return out


def computed_trips_sample() -> Graph:
    """A loop whose trip count is computed from data (the positive elements of x, at most 3) and whose scan output
    stacks its carried sum: what a strategy lowers once to ask whether a configuration takes COMPUTED_TRIPS."""
    t = TensorType("float32", (2, 3))
    g = Graph(inputs=[Value("x", t)], outputs=["acc"])
    h = Host(g, top=True)
    found = computed_trip_count(h, 0, MAX_TRIPS, np.random.default_rng(0), _all_supported, {})
    if found is None:
        raise AssertionError("no computed trip count")
    count_nodes, count = found
    body = Graph(inputs=[Value("iteration", TensorType("int64", ())), Value("cond", TensorType("bool", ())),
                         Value("prev", t), Value("x", t)],
                 nodes=[Node("add", ["prev", "x"], [Value("next", t)], name="n_next")],
                 outputs=["cond", "next", "next"], name="body")
    go = h.constant(np.array(True), "rgo")
    g.nodes = [*count_nodes, Node("loop", [count, go, "x", "x"],
                                  [Value("acc", t), Value("stacked", TensorType("float32", (MAX_TRIPS, 2, 3), (0,)))],
                                  {"body": body, "num_carried": 1, "max_trips": MAX_TRIPS}, name="n_loop")]
    g.outputs = ["acc", "stacked"]
    check_graph(g)
    return g


def lowered_kinds(backend: Any, config: Any) -> tuple[str, ...]:
    """The region kinds `backend` lowers for configuration `config` (one sample of each lowered: a target without a
    kind's rule documents it as a gap), and COMPUTED_TRIPS where it lowers loops and one whose trip count is computed
    from data too."""
    from dlcfuzz.errors import Unsupported

    kinds = []
    samples = zip([*REGION_KINDS, COMPUTED_TRIPS], [*region_samples(), computed_trips_sample()], strict=True)
    for kind, g in samples:
        if kind == COMPUTED_TRIPS and "loop" not in kinds:
            continue
        try:
            backend.lower(g, config)
            kinds.append(kind)
        except Unsupported:
            pass
    return tuple(kinds)
