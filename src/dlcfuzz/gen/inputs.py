"""Sampling graph inputs inside every consumer's value domain, and the value profiles.

`sample_tensor` draws the *small* profile (ints in [-5, 5], floats in [-2, 2], or the consumer's
domain): what probing and the reference policy's re-sampling need (a probe asks whether the compiler
runs an operator at all; a re-sample after a non-finite reference must be tame). A campaign's tests
draw more: `edge_values` gives a share of tests (EDGE_TEST_SHARE) edge profiles on some of their
inputs and constants, each profile a row of PROFILES (the dtype's full range, boundaries, float
magnitude classes, signed zeros), always inside the merged domain of the value's consumers; in a few edge
tests (NONFINITE_TENSOR_SHARE), some elements of a tensor become +-inf or NaN where every operator they reach
defines them (OpSpec.nonfinite, nonfinite_allowed). Edge values are drawn from a generator of their own, seeded
by one draw of the test's, on top of the small values the test's generator drew as it always did: a test's
graph does not depend on the profiles, and `--values small` makes exactly the tests it made before profiles
existed. In an edge test,
`edge_attrs` then draws some of the nodes' value attributes (OpSpec.value_attrs: a multiplier, a threshold,
a fill value) from their legal ranges with the same profiles; only those attributes differ from the small test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from dlcfuzz.errors import TypeRuleError
from dlcfuzz.ir.graph import CALL_OP, Graph, Node
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops import ANY, Attrs, Domain, ValueAttr, get_op
from dlcfuzz.ops.base import IEEE, INFINITIES, UNDEFINED, OpSpec
from dlcfuzz.ops.regions import REGION_OPS

INT_DEFAULT = (-5, 5)
FLOAT_DEFAULT = (-2.0, 2.0)


def merge_domains(domains: list[Domain]) -> Domain:
    """The intersection of several domains (the first wins when they are disjoint)."""
    if not domains:
        return ANY
    if len(domains) == 1:  # most values have one consumer, whose domain is the intersection itself
        return domains[0]
    lo = max((d.lo for d in domains if d.lo is not None), default=None)
    hi = min((d.hi for d in domains if d.hi is not None), default=None)
    if lo is not None and hi is not None and lo > hi:
        return domains[0]
    return Domain(lo, hi, any(d.nonzero for d in domains), any(d.strict for d in domains),
                  max(d.power for d in domains), max(d.terms for d in domains))


def value_domains(g: Graph) -> dict[str, Domain]:
    """Domain needs of every value, from the operators that consume it (through calls too)."""
    types = g.types()
    needs: dict[str, list[Domain]] = {}
    for n in g.nodes:
        if n.op == CALL_OP:
            f = g.functions[n.attrs["callee"]]
            inner = value_domains(Graph(f.inputs, f.constants, f.nodes, f.outputs, g.functions))
            for p, a in zip(f.inputs, n.inputs):
                if p.name in inner:
                    needs.setdefault(a, []).append(inner[p.name])
            continue
        if n.op in REGION_OPS:  # what a body's consumers ask of a parameter, its node input must meet
            for attr, bound in REGION_OPS[n.op].bound_inputs(n.inputs, n.attrs).items():
                body = n.attrs[attr]
                inner = value_domains(Graph(body.inputs, body.constants, body.nodes, body.outputs, g.functions))
                for p, a in zip(body.inputs, bound):
                    if a is not None and p.name in inner:
                        needs.setdefault(a, []).append(inner[p.name])
        # an operator's needs of its inputs; a region's own too (a loop's trip count: LoopSpec.domain)
        spec = get_op(n.op)
        in_types = [types[i] for i in n.inputs]
        for k, i in enumerate(n.inputs):
            d = consumer_domain(spec, k, in_types, n.attrs)
            if d != ANY:
                needs.setdefault(i, []).append(d)
    return {k: merge_domains(v) for k, v in needs.items()}


def consumer_domain(spec: OpSpec, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
    """What operator `spec` needs of its input `index`: its domain, with the powers and sums its kernels form of
    the input (OpSpec.magnitude: Domain.power, terms), which bound the magnitudes a float input may take."""
    d = spec.domain(index, ins, attrs)
    power, terms = spec.magnitude(index, ins, attrs)
    if (power, terms) != (1.0, 1):
        d = replace(d, power=max(d.power, power), terms=max(d.terms, terms))
    return d


def sample_tensor(rng: np.random.Generator, t: TensorType, d: Domain = ANY) -> np.ndarray:
    dt = t.np_dtype
    if t.dtype == "bool":
        return np.asarray(rng.random(t.shape) < 0.5)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        lo = int(np.ceil(d.lo)) if d.lo is not None else INT_DEFAULT[0]
        hi = int(np.floor(d.hi)) if d.hi is not None else INT_DEFAULT[1]
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        if lo > hi:
            lo = hi
        a = rng.integers(lo, hi + 1, size=t.shape, dtype=np.int64)
        if d.nonzero:
            a = np.where(a == 0, hi if hi != 0 else lo if lo != 0 else 1, a)
        return a.astype(dt)
    lo = d.lo if d.lo is not None else FLOAT_DEFAULT[0]
    hi = d.hi if d.hi is not None else FLOAT_DEFAULT[1]
    # a consumer whose kernels sum or multiply the input in its dtype (Domain.power, terms: a float16 reduction or
    # norm over a long axis) gets magnitudes its kernels hold (magnitude_limits), where its domain leaves some; the
    # same draw, so only the values past the limit change (2 x 65,537 summed in float16 overflowed)
    ceiling = float(held(magnitude_limits(dt, d)[1], dt, up=False))  # rounding to the dtype stays below it
    if max(lo, -ceiling) <= min(hi, ceiling):
        lo, hi = max(lo, -ceiling), min(hi, ceiling)
    a = rng.uniform(lo, hi, size=t.shape)
    if d.nonzero:
        # keep divisors away from zero, not just nonzero: 1/1e-9 is legal but flaky to compare
        a = np.where(np.abs(a) < 0.25, np.copysign(0.25 + np.abs(a), a), a)
    return a.astype(dt)


def sample_inputs(g: Graph, rng: np.random.Generator) -> dict[str, np.ndarray]:
    doms = value_domains(g)
    return {v.name: sample_tensor(rng, v.type, doms.get(v.name, ANY)) for v in g.inputs}


# ---- value profiles ---------------------------------------------------------------------------
VALUES_MODES = ("edge", "small")  # --values: edge profiles on a share of tests (default), or small only
# A third of tests with edge values (35% drawn; 34.5% keep some after repair over the five compilers' operators,
# bench/value_space.py), in the middle of the 25-50% target:
# enough that every campaign meets the edges compilers break at within minutes, while most tests stay
# in the small corner where the other findings (fusions, layouts, shapes) are judged on exact,
# well-conditioned values, and where the test cost and the discarded share stay as they were.
EDGE_TEST_SHARE = 0.35
EDGE_TENSOR_SHARE = 0.5  # in an edge test, each eligible input or constant gets an edge profile this often
MIXED_SHARE = 0.25  # a "mixed" boundary tensor: this share of its elements on boundaries, the rest small
POWERS = (7, 8, 15, 16, 24, 31, 32, 53, 63)  # 2^p - 1, 2^p, 2^p + 1 (and negated) where the dtype holds them


def _bounds(dt: np.dtype, d: Domain) -> tuple[float, float]:
    """The domain's bounds inside the dtype's finite range."""
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        lo = max(int(np.ceil(d.lo)), int(info.min)) if d.lo is not None else int(info.min)
        hi = min(int(np.floor(d.hi)), int(info.max)) if d.hi is not None else int(info.max)
        return lo, hi
    fmax = magnitude_limits(dt, d)[1]
    lo = max(float(d.lo), -fmax) if d.lo is not None else -fmax
    hi = min(float(d.hi), fmax) if d.hi is not None else fmax
    return lo, hi


def magnitude_limits(dt: np.dtype, d: Domain) -> tuple[float, float]:
    """The smallest and largest float magnitude edge values take for a consumer with domain `d`: the dtype's
    smallest subnormal and largest finite numbers, narrowed by the consumer's powers and sums (Domain.power,
    Domain.terms) so that no intermediate of its kernels underflows or overflows where the result would not."""
    fi = np.finfo(dt)
    if d.power == 1.0 and d.terms == 1:
        return float(fi.smallest_subnormal), float(fi.max)
    return float(fi.tiny) ** (1.0 / d.power), (float(fi.max) / d.terms) ** (1.0 / d.power)


def boundary_values(dt: np.dtype, d: Domain) -> np.ndarray:
    """The boundary values of dtype `dt` inside domain `d`: 0, +-1, the range's ends and their neighbours,
    and the values around 2^7 .. 2^63 the dtype holds exactly (floats: signed zero, the smallest normal and
    subnormal numbers too). Empty when none lies in the domain."""
    lo, hi = _bounds(dt, d)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        cands = {0, 1, -1, int(info.min), int(info.min) + 1, int(info.max) - 1, int(info.max), lo, lo + 1, hi - 1, hi}
        cands |= {s * (2 ** p + k) for p in POWERS for k in (-1, 0, 1) for s in (1, -1)}
        vals = sorted(v for v in cands if lo <= v <= hi and not (d.nonzero and v == 0))
        return np.array(vals, dtype=dt)
    fi = np.finfo(dt)
    mags = {0.0, 1.0, float(fi.max), float(fi.tiny), float(fi.smallest_subnormal), abs(lo), abs(hi)}
    mags |= {float(2 ** p + k) for p in POWERS for k in (-1, 0, 1)}
    vals = {s * m for m in mags for s in (1.0, -1.0)}
    # exactly representable, inside the domain and the consumer's magnitude limits, and at least 0.25 from zero
    # where the consumer needs a nonzero (as sample_tensor keeps divisors)
    floor = magnitude_limits(dt, d)[0]
    with np.errstate(over="ignore"):
        keep = sorted(v for v in vals if float(np.asarray(v).astype(dt)) == v and lo <= v <= hi
                      and not (d.nonzero and abs(v) < 0.25) and (v == 0 or abs(v) >= floor))
    out = np.array(keep, dtype=dt)
    if 0.0 in keep and not d.nonzero and lo <= -0.0 <= hi:
        out = np.concatenate([out, np.array([-0.0], dtype=dt)])  # signed zero beside +0
    return out


def _magnitudes(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype, d: Domain,
                low: float, high: float) -> np.ndarray | None:
    """Values whose magnitudes are log-uniform in [low, high], of either sign the domain allows; None when
    no such value lies in the domain."""
    lo, hi = _bounds(dt, d)
    low = max(low, magnitude_limits(dt, d)[0], 0.25 if d.nonzero else 0.0)
    # (sign, magnitude interval): +m needs m in [lo, hi], -m needs m in [-hi, -lo]
    sides = [(1.0, max(low, lo), min(high, hi)), (-1.0, max(low, -hi), min(high, -lo))]
    sides = [(s, a, b) for s, a, b in sides if 0 < a <= b]
    if not sides:
        return None
    pick = rng.integers(len(sides), size=shape)
    out = np.empty(shape, dtype=np.float64)
    for k, (s, a, b) in enumerate(sides):
        m = pick == k
        out[m] = s * np.exp(rng.uniform(np.log(a), np.log(b), size=int(m.sum())))
    with np.errstate(over="ignore", under="ignore"):
        cast = out.astype(dt)
    # rounding to the dtype must not leave the domain (a magnitude rounded up past hi), nor may the bounds
    # themselves round out of it (float16's nearest to 0.99999988 is 1.0)
    return np.clip(cast, held(lo, dt, up=True), held(hi, dt, up=False))


def held(bound: float, dt: np.dtype, up: bool) -> np.ndarray:
    """The dtype's nearest value to `bound` on its inner side (`up`: at or above a lower bound)."""
    with np.errstate(over="ignore"):
        v = np.asarray(bound).astype(dt)
    if (float(v) < bound) if up else (float(v) > bound):
        v = np.nextafter(v, np.asarray(np.inf if up else -np.inf, dtype=dt))
    return v


def _full(rng: np.random.Generator, small: np.ndarray, d: Domain) -> np.ndarray | None:
    """The dtype's whole range inside the domain: uniform for integers; for floats, magnitudes log-uniform
    between the consumer's magnitude limits (uniform would be all huge)."""
    dt, shape = small.dtype, small.shape
    if np.issubdtype(dt, np.integer):
        lo, hi = _bounds(dt, d)
        if lo > hi or (d.nonzero and lo == hi == 0):  # no value of the dtype in the domain
            return None
        a = rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
        if d.nonzero:
            a = np.where(a == 0, np.asarray(hi if hi != 0 else lo, dtype=dt), a)
        return a
    return _magnitudes(rng, shape, dt, d, *magnitude_limits(dt, d))


def _boundary(mixed: bool) -> Callable[[np.random.Generator, np.ndarray, Domain], np.ndarray | None]:
    def draw(rng: np.random.Generator, small: np.ndarray, d: Domain) -> np.ndarray | None:
        vals = boundary_values(small.dtype, d)
        if not vals.size:
            return None
        picked = vals[rng.integers(vals.size, size=small.shape)]
        if not mixed:
            return picked
        return np.where(rng.random(small.shape) < MIXED_SHARE, picked, small)
    return draw


def _magnitude_class(low: Callable[[np.finfo, float, float], float], high: Callable[[np.finfo, float, float], float]
                     ) -> Callable[[np.random.Generator, np.ndarray, Domain], np.ndarray | None]:
    """A float magnitude class: its bounds are functions of the dtype's numbers and of the consumer's magnitude
    limits (magnitude_limits: the floor and the ceiling where its kernels underflow and overflow)."""
    def draw(rng: np.random.Generator, small: np.ndarray, d: Domain) -> np.ndarray | None:
        fi = np.finfo(small.dtype)
        floor, ceiling = magnitude_limits(small.dtype, d)
        return _magnitudes(rng, small.shape, small.dtype, d, low(fi, floor, ceiling), high(fi, floor, ceiling))
    return draw


def _signed_zeros(rng: np.random.Generator, small: np.ndarray, d: Domain) -> np.ndarray | None:
    if d.nonzero or not _bounds(small.dtype, d)[0] <= 0.0 <= _bounds(small.dtype, d)[1]:
        return None
    zeros = np.where(rng.random(small.shape) < 0.5, -0.0, 0.0).astype(small.dtype)
    return np.where(rng.random(small.shape) < MIXED_SHARE * 2, zeros, small)


@dataclass(frozen=True)
class ValueProfile:
    """One way to draw a tensor's values: `draw(rng, small, domain)` gives values of `small`'s dtype and shape
    inside `domain` (`small`: what the small profile drew, for profiles that mix edges into it), or None where
    the profile has no value in the domain. `kinds`: the dtype kinds it applies to ("i" integers, "f" floats)."""

    name: str
    kinds: str
    weight: float
    draw: Callable[[np.random.Generator, np.ndarray, Domain], np.ndarray | None]


# The edge profiles (the small one is sample_tensor itself). The float magnitude classes are bounded by the
# dtype's numbers and the consumer's domain and magnitude limits; "large" sits below the consumer's overflow
# threshold by a margin that a few sums and products keep (repair shrinks what a test still overflows), "huge"
# up to that threshold.
PROFILES: tuple[ValueProfile, ...] = (
    ValueProfile("full", "if", 2.0, _full),
    ValueProfile("boundary", "if", 1.0, _boundary(mixed=False)),
    ValueProfile("boundary-mixed", "if", 2.0, _boundary(mixed=True)),
    ValueProfile("tiny", "f", 0.5, _magnitude_class(lambda fi, lo, hi: float(fi.tiny), lambda fi, lo, hi: 1e-3)),
    ValueProfile("denormal", "f", 0.5, _magnitude_class(lambda fi, lo, hi: float(fi.smallest_subnormal),
                                                        lambda fi, lo, hi: float(fi.tiny) * 0.5)),
    ValueProfile("large", "f", 1.0, _magnitude_class(lambda fi, lo, hi: hi * 2.0 ** -10, lambda fi, lo, hi: hi / 4)),
    ValueProfile("huge", "f", 0.5, _magnitude_class(lambda fi, lo, hi: hi / 4, lambda fi, lo, hi: hi)),
    ValueProfile("signed-zeros", "f", 0.5, _signed_zeros),
)
PROFILE_NAMES = ("small", *(p.name for p in PROFILES))


def profile_tensor(rng: np.random.Generator, small: np.ndarray, d: Domain) -> tuple[str, np.ndarray]:
    """An edge profile's values for a tensor whose small values are `small` (the profile's name and the values);
    ("small", small) when no edge profile has a value in the domain, or the dtype has none (bool). A domain that
    is strict and unbounded (positions chosen by the operator's own sampling) keeps its small values."""
    kind = small.dtype.kind
    if kind not in "iuf" or not small.size or (d.strict and (d.lo is None or d.hi is None)):
        return "small", small
    kind = "f" if kind == "f" else "i"
    rows = [p for p in PROFILES if kind in p.kinds]
    weights = np.array([p.weight for p in rows])
    for k in rng.choice(len(rows), size=len(rows), replace=False, p=weights / weights.sum()):
        drawn = rows[k].draw(rng, small, d)
        if drawn is not None:
            # an array even of rank 0 (a profile's numpy scalar is no input a runtime takes)
            return rows[k].name, np.asarray(drawn, dtype=small.dtype).reshape(small.shape)
    return "small", small


# ---- non-finite values ------------------------------------------------------------------------
# In an edge test, the non-finite profile is drawn with this probability on each tensor whose every downstream
# operator defines inf or NaN (nonfinite_allowed): few tensors are eligible (a graph of mostly elementwise
# arithmetic), so that about 1% of all tests hold one (bench/value_space.py), within issue 37's 2%: the share of
# tests the compilers' non-finite paths take, while the rest are judged on finite values.
NONFINITE_TENSOR_SHARE = 0.25
NONFINITE_ELEMENT_SHARE = 0.25  # of a non-finite tensor's elements, this share (one at least) is +-inf or NaN
NONFINITE_STREAM = 0x1AF  # the non-finite draws' generator, apart from the edge profiles' (their draws stay)


def nonfinite_allowed(g: Graph) -> dict[str, int]:
    """Per value of `g`'s main function (inputs, constants, computed values): the non-finite values it may hold
    (UNDEFINED, INFINITIES or IEEE of ops/base.py) so that every operator downstream of it defines them: the least
    of its consumers' facts (OpSpec.nonfinite; a call's is UNDEFINED), where a consumer's float outputs allow as
    much (an IEEE operator makes NaN of infinities: inf - inf). A graph output allows IEEE (compare_one matches
    NaN and inf); a bool or integer output (a comparison's, IsNaN's) carries no non-finite value, so it allows IEEE
    too; a value neither read nor output (the broken node's inputs when hirgen's disruptive mode leaves it out)
    allows nothing, and is not in the result."""
    types = g.types()
    allowed: dict[str, int] = dict.fromkeys(g.outputs, IEEE)
    for n in reversed(g.nodes):  # topological: a node's consumers come after it
        kind = UNDEFINED if n.op == CALL_OP else get_op(n.op).nonfinite
        outs = [allowed.get(v.name, UNDEFINED) for v in n.outputs if types[v.name].dtype in FLOATS]
        if kind == IEEE and any(a != IEEE for a in outs):
            kind = UNDEFINED
        elif kind == INFINITIES and any(a == UNDEFINED for a in outs):
            kind = UNDEFINED
        for i in n.inputs:
            allowed[i] = min(allowed.get(i, IEEE), kind)
    return allowed


def nonfinite_tensor(rng: np.random.Generator, x: np.ndarray, allowed: int) -> np.ndarray:
    """`x` with a share of its elements (NONFINITE_ELEMENT_SHARE, one at least) replaced by +inf, -inf or, where
    `allowed` is IEEE, NaN."""
    specials = np.array([np.inf, -np.inf, np.nan][:3 if allowed == IEEE else 2], dtype=x.dtype)
    hit = rng.random(x.shape) < NONFINITE_ELEMENT_SHARE
    hit.reshape(-1)[rng.integers(x.size)] = True
    return np.where(hit, specials[rng.integers(specials.size, size=x.shape)], x)


@dataclass
class EdgeValues:
    """What `edge_values` changed: per input or constant name, its profile and its small values (repair puts
    these back where an edge value leaves the reference's exact range); `drawn`: how many tensors got an edge
    profile, `shrunk`: those that repair shrank (gen/repair.py), attribute keys too. `attrs`: per value attribute
    that got an edge profile (attr_key: node and attribute), its profile; `small_attrs`: per node with one, the
    attributes its operator sampled."""

    profiles: dict[str, str] = field(default_factory=dict)
    small: dict[str, np.ndarray] = field(default_factory=dict)
    drawn: int = 0
    shrunk: set[str] = field(default_factory=set)
    attrs: dict[str, str] = field(default_factory=dict)
    small_attrs: dict[str, Attrs] = field(default_factory=dict)


def edge_values(g: Graph, inputs: dict[str, np.ndarray], rng: np.random.Generator,
                attrs: bool = False) -> EdgeValues:
    """Edge profiles on a share of tests (EDGE_TEST_SHARE), on some of their inputs and constants, inside the
    merged domain of each one's consumers: changes `inputs` and `g.constants` in place; with `attrs`, on some
    value attributes of its nodes too (edge_attrs). One draw of `rng` seeds the profiles' own generator
    (reproducible from the test's seed), which draws the attributes after the tensors: a test's tensors are
    the same with and without them."""
    seed = int(rng.integers(2 ** 63))
    prng = np.random.default_rng(seed)
    out = EdgeValues()
    if prng.random() >= EDGE_TEST_SHARE:
        return out
    doms = value_domains(g)
    nrng, allowed = np.random.default_rng([seed, NONFINITE_STREAM]), nonfinite_allowed(g)
    for name, values in [*inputs.items(), *g.constants.items()]:
        if prng.random() >= EDGE_TENSOR_SHARE:
            continue
        small = np.asarray(values)
        profile, drawn = profile_tensor(prng, small, doms.get(name, ANY))
        if (small.dtype.kind == "f" and small.size and allowed.get(name, UNDEFINED) != UNDEFINED
                and not doms.get(name, ANY).strict and nrng.random() < NONFINITE_TENSOR_SHARE):
            profile, drawn = "nonfinite", nonfinite_tensor(nrng, drawn, allowed[name])
        if profile == "small":
            continue
        out.profiles[name], out.small[name] = profile, small
        out.drawn += 1
        if name in inputs:
            inputs[name] = drawn
        else:
            g.constants[name] = drawn
    if attrs:
        edge_attrs(g, prng, out)
    return out


# ---- attribute edges --------------------------------------------------------------------------
EDGE_ATTR_SHARE = 0.5  # in an edge test, each value attribute (OpSpec.value_attrs) gets an edge profile this often
ATTR_TRIES = 4  # draws of one node's value attributes that OpSpec.with_values may refuse before they stay sampled


def attr_key(node: str, attr: str) -> str:
    """The name of a node's attribute among the edge tensors' names (EdgeValues.attrs, gen/repair.py)."""
    return f"{node}.{attr}"


def attr_values(g: Graph, node: Node, attr: str) -> tuple[ValueAttr, np.ndarray]:
    """A value attribute of `node` (OpSpec.value_attrs): its dtype and range, and its value as an array of that
    dtype (a scalar, or OneHot's [off, on])."""
    types = g.types()
    va = get_op(node.op).value_attrs([types[i] for i in node.inputs], node.attrs)[attr]
    with np.errstate(over="ignore"):
        return va, np.asarray(node.attrs[attr]).astype(va.dtype)


def set_attr_values(g: Graph, node: Node, drawn: Attrs) -> bool:
    """Put value attributes `drawn` (python numbers or lists, as attributes hold them) into `node`, through its
    operator's with_values; False, with `node` unchanged, where they do not fit or would change its output types."""
    spec = get_op(node.op)
    types = g.types()
    ins = [types[i] for i in node.inputs]
    new = spec.with_values(ins, node.attrs, drawn)
    try:
        if new is None or spec.infer(ins, new) != spec.infer(ins, node.attrs):
            return False
    except TypeRuleError:
        return False
    node.attrs = new
    return True


def edge_attrs(g: Graph, rng: np.random.Generator, out: EdgeValues) -> None:
    """Edge profiles on some value attributes (OpSpec.value_attrs) of the nodes of `g`'s main function, each drawn
    from its legal range as an input is from its domain (a fill value of the dtype's range, a large multiplier, a
    boundary threshold); a draw the operator refuses (with_values) is drawn again, ATTR_TRIES times at most.
    Changes the nodes' attributes in place and records them in `out`; the graph's types stay. A node that computes a
    loop's trip count keeps its attributes: they are the loop's structure (gen/regions.computed_trip_count's Clip
    to the bound of its scan outputs' data-dependent extent, `max_trips`)."""
    types = g.types()
    trip_counts = {n.inputs[0] for n in g.nodes if n.op == "loop"}
    for n in g.nodes:
        if n.op == CALL_OP or not n.name or trip_counts.intersection(n.output_names):
            continue
        values = get_op(n.op).value_attrs([types[i] for i in n.inputs], n.attrs)
        picked = [k for k in values if rng.random() < EDGE_ATTR_SHARE]
        for _ in range(ATTR_TRIES if picked else 0):
            drawn, profiles = {}, {}
            for k in picked:
                small = attr_values(g, n, k)[1]
                profile, x = profile_tensor(rng, small, values[k].domain)
                if x.tobytes() != small.tobytes():  # a mixed profile may keep a scalar's small value
                    drawn[k], profiles[k] = x.tolist(), profile
            sampled = n.attrs
            if not drawn:
                break
            if set_attr_values(g, n, drawn):
                out.small_attrs[n.name] = sampled
                out.attrs.update({attr_key(n.name, k): p for k, p in profiles.items()})
                break
