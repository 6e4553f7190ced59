"""MT-DLComp metamorphic mutations: always-zero opaque conditions guarding dead "garbage" code.

One mutation step picks a target value t and rewrites every later use of t to

    t' = Sub(t, Abs(Mul(fit(cond), garbage)))

where `cond` is an opaque condition that is zero, `fit` brings it to t's shape and `garbage` is a
random dead subgraph (conv2d, matmul, gemm, add, sub, mul) fed from values that already exist.
Two kinds of condition:

  - UOC (universally zero):  Relu(Neg(Mul(d, d))) with d = Sub(Clip(i), Clip(j)), for two values
    i, j of the target's dtype (j bridged to i's shape with reshape/pad/slice); i == j is allowed.
  - PIOC (zero for the profiled input): Relu(Sub(Abs(Sub(v, Constant(o))), Constant(b))) where o is
    what value v computed when the reference interpreter ran the graph on `profile_inputs` and
    b = SLACK[dtype] * max(1, |o|) is a bound on the rounding a correct compiler may add to v.

Why this is exactly the identity in IEEE-754 arithmetic (not only over the reals)
----------------------------------------------------------------------------------
The textbook condition Relu(-(i*i - 2*i*j + j*j)) is zero over the reals but NOT in floating
point: for i != j the three rounded products can cancel to a slightly negative number, and then
Relu(-x) is a small positive number that leaks garbage into t. We therefore compute (i - j)^2 as
one rounded subtraction followed by squaring that same rounded value:
  1. Clip(x, -MAX, MAX) with MAX the dtype's largest finite number maps +-Inf to +-MAX and leaves
     every finite x unchanged, so both operands of the subtraction are finite;
  2. d = ci - cj of two finite numbers is finite or +-Inf (overflow), never NaN;
  3. d * d is a product of two equal-signed numbers: +0, a positive number or +Inf, never
     negative and never NaN (Inf * Inf = Inf; 0 * Inf cannot occur since both factors are d);
  4. Neg gives -0, a negative number or -Inf; Relu = max(x, 0) of that is +0 or -0.
So cond is a (signed) zero for every input in which i and j hold no NaN. For PIOC, a compiler
computes v with its own rounding (another summation order in a conv), so v - o alone is only near
zero there, and |cond * garbage| leaked up to 1.6e-4 into resnet18's scores with every optimization
disabled (a false "metamorphic" finding). With the bound, |v - o| - b < 0 wherever v is within b of
the profile, so Relu gives +0 exactly for the reference (v == o) and for every compiler whose v
is within legal rounding of it.
The garbage must be finite, or 0 * Inf = NaN: every graph value read by the garbage is first
clipped to [-LEAF, LEAF], weights are bounded by 1/fan_in, and mutate() only emits a Mul when the
bound it tracks for the product stays below CAP (far below the dtype's maximum), so every garbage
value is finite whatever the input (NaN inputs aside). Then cond * garbage is +-0, Abs makes it
+0 exactly, and t - (+0) == t bit for bit for every t, including t = -0 (-0 - +0 = -0) and NaN
(a plain `t + (+-0)` would turn -0 into +0, which 1/x or log distinguish). Mutants therefore give
bit-identical outputs on the reference interpreter: for every input (UOC), for the profiled input
(PIOC), and on a compiler that computes v within legal rounding of the reference.

Regions (issue 40)
------------------
A region step wraps a range of the mutant's nodes (1-MAX_RANGE contiguous ones, gen/regions.py) in a region that
always takes it: `if` on `Greater(ReduceMax(cond), 0)` (false: the signed zero of a UOC for every input, a PIOC's
+0 for the chain's inputs; a NaN compares false too) or its `Not`, the range the branch it selects and the range
with its outputs negated the other; or `loop` with the trip count `Cast(that, int64) + 1`, one trip whose carried
values start from what the range reads. The range's outputs keep their names, so the mutant computes what it did
bit for bit, and whatever the compiler does to the untaken branch or the loop machinery must not show.

Replay
------
A Step records everything apply() needs: the values it reads, the choices drawn (garbage program,
weight seed, the profiled constant). Inserted values are named `mt<id>_<k>`, so the step that
created a value is known from its name and `deps` lists exactly the earlier steps whose values
this one reads. New nodes go right after the producer of t and may read only values defined up to
there; that rule keeps any dependency-closed subset of a sequence replayable.
"""

from __future__ import annotations

import base64
import copy
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz import reference
from dlcfuzz.errors import IRError
from dlcfuzz.gen.regions import Host, Segment, segment, wrap_if, wrap_loop
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops import check_graph, get_op
from dlcfuzz.reduce.graph import prune

KINDS = ("uoc", "pioc")
REGION_KINDS = ("if", "loop")  # region steps: a range of nodes in a conditional or a loop that always takes it
MAX_RANGE = 3  # nodes a region step wraps
RANGE_TRIES = 8  # ranges drawn before a region step gives up (a range whose values nothing reads: no outputs)
PIOC_WINDOW = 16  # profiled values a PIOC condition compares (a window of the flattened value)
FITS = ("bridge", "mean")
GARBAGE_OPS = ("conv2d", "matmul", "gemm", "add", "sub", "mul")
_OWNER = re.compile(r"^mt(\d+)_")

# Garbage leaves are clipped to [-LEAF, LEAF]; a product may only be emitted while the tracked
# bound of every garbage value stays below CAP (far from overflow, see the module docstring).
LEAF = {"float16": 16.0, "float32": 1024.0, "float64": 1024.0}
# PIOC: how far a correct compiler's v may be from the reference's profile (4x the oracle's
# per-dtype tolerance, relative to max(1, |o|): cancellation in conv sums stays inside it)
SLACK = {"float16": 4e-2, "float32": 4e-3, "float64": 4e-6}
CAP = {"float16": 1e3, "float32": 1e30, "float64": 1e200}
MAX_GARBAGE_OPS = 3
# How often a choice (target, condition input, garbage leaf) is made among the seed graph's own
# values rather than among all: after many steps most values are earlier steps' dead code, and
# reading them makes steps depend on each other (longer dependency chains for the reducer).
SEED_BIAS = 0.75


# ---- the step record --------------------------------------------------------------------------


@dataclass
class Step:
    """One replayable mutation.

    id: unique within a sequence (names of inserted values are `mt<id>_<k>`);
    kind: "uoc" or "pioc"; a region step: "if" or "loop";
    reads: the existing values the step reads (target first; a region step: its condition's, then its range's);
    params: the choices drawn (JSON-compatible): target, cond, fit, leaves, garbage, seed; a region step: nodes
      (the names of the range's nodes), outs (the values it gave out), condition (its kind: uoc or pioc), cond,
      always (an if's taken branch), seed;
    deps: ids of the earlier steps that created a value in `reads`.
    """

    id: int
    kind: str
    reads: list[str]
    params: dict[str, Any]
    deps: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "reads": list(self.reads), "params": copy.deepcopy(self.params),
                "deps": list(self.deps)}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Step:
        try:
            kind = str(d["kind"])
            if kind not in KINDS + REGION_KINDS:
                raise ValueError(f"unknown kind {kind!r}")
            return Step(int(d["id"]), kind, [str(r) for r in d["reads"]], copy.deepcopy(dict(d["params"])),
                        [int(x) for x in d.get("deps", [])])
        except (KeyError, TypeError, ValueError) as e:
            raise IRError(f"malformed mutation step: {type(e).__name__}: {e}") from None


@functools.lru_cache(maxsize=1 << 16)
def owner(name: str) -> int | None:
    """The id of the step that created value `name`, or None for a value of the seed graph. (Cached: a step asks it
    of every value of the growing mutant, whose names repeat from step to step and from chain to chain.)"""
    m = _OWNER.match(name)
    return int(m.group(1)) if m else None


def encode_array(a: np.ndarray) -> dict[str, Any]:
    # tobytes() is C-ordered for any layout (np.ascontiguousarray would turn a 0-d array into 1-d)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode()}


def decode_array(d: Mapping[str, Any]) -> np.ndarray:
    dt = np.dtype(d["dtype"])
    if dt.hasobject:
        raise IRError("object arrays are not allowed")
    return np.frombuffer(base64.b64decode(d["data"]), dtype=dt).reshape(d["shape"]).copy()


# ---- building the inserted nodes --------------------------------------------------------------


class _Emitter:
    """Creates the nodes of one step (named mt<id>_<k>) with inferred types."""

    def __init__(self, step_id: int, types: dict[str, TensorType]) -> None:
        self.prefix = f"mt{step_id}_"
        self.types = types
        self.nodes: list[Node] = []
        self.constants: dict[str, np.ndarray] = {}
        self._k = 0

    def _name(self) -> str:
        name = f"{self.prefix}{self._k}"
        self._k += 1
        if name in self.types:
            raise IRError(f"value {name!r} already exists: step ids must be unique")
        return name

    def const(self, a: np.ndarray) -> str:
        name = self._name()
        self.constants[name] = a
        self.types[name] = TensorType.of(a)
        return name

    def op(self, op: str, inputs: Sequence[str], **attrs: Any) -> str:
        (t,) = get_op(op).infer([self.types[i] for i in inputs], attrs)
        name = self._name()
        self.nodes.append(Node(op, list(inputs), [Value(name, t)], attrs, name=name))
        self.types[name] = t
        return name

    def bridge(self, v: str, shape: tuple[int, ...]) -> str:
        """v with `shape`: reshape when the sizes agree, else flatten, zero-pad or slice, reshape."""
        t = self.types[v]
        if t.shape == shape:
            return v
        size = int(np.prod(shape, dtype=np.int64))
        if t.size != size:
            if t.rank != 1:
                v = self.op("reshape", [v], shape=[t.size])
            if t.size < size:
                v = self.op("pad", [v], pads=[0, size - t.size], mode="constant", value=0.0)
            else:
                v = self.op("slice", [v], starts=[0], ends=[size], axes=[0], steps=[1])
        return self.op("reshape", [v], shape=list(shape))

    def clip(self, v: str, bound: float) -> str:
        return self.op("clip", [v], min=-bound, max=bound)


def _finite_max(dtype: str) -> float:
    return float(np.finfo(np.dtype(dtype)).max)


def _uoc(em: _Emitter, i: str, j: str) -> str:
    # ReLU(-(d*d)), d = clip(i) - clip(j): a signed zero for every non-NaN i, j (module docstring).
    m = _finite_max(em.types[i].dtype)
    ci = em.clip(i, m)
    cj = ci if j == i else em.clip(em.bridge(j, em.types[i].shape), m)
    d = em.op("sub", [ci, cj])
    return em.op("relu", [em.op("neg", [em.op("mul", [d, d])])])


def _pioc(em: _Emitter, v: str, profile: np.ndarray, start: int | None = None) -> str:
    """Sub(v, Constant(o)); with `start`, o is a window of v's flattened values (PIOC_WINDOW of
    them): still zero exactly for the profiled input, and a campaign stores a few numbers per
    step instead of a whole activation (megabytes per test on full-size models)."""
    t = em.types[v]
    if start is not None:
        if profile.ndim != 1 or profile.dtype != t.np_dtype or start < 0 or start + profile.size > t.size:
            raise IRError(f"profiled window {TensorType.of(profile)} at {start} does not fit {v}: {t}")
        flat = v if t.rank == 1 else em.op("reshape", [v], shape=[t.size])
        if profile.size != t.size:
            flat = em.op("slice", [flat], starts=[start], ends=[start + profile.size], axes=[0], steps=[1])
        return _within(em, flat, profile)
    if TensorType.of(profile) != t:
        raise IRError(f"profiled constant {TensorType.of(profile)} does not match {v}: {t}")
    return _within(em, v, profile)


def _within(em: _Emitter, v: str, profile: np.ndarray) -> str:
    """Relu(|v - o| - b): +0 wherever v is within the rounding bound b of the profiled o."""
    bound = (SLACK[str(profile.dtype)] * np.maximum(1.0, np.abs(profile.astype(np.float64)))).astype(profile.dtype)
    dist = em.op("abs", [em.op("sub", [v, em.const(profile)])])
    return em.op("relu", [em.op("sub", [dist, em.const(bound)])])


def _garbage(em: _Emitter, leaves: Sequence[str], program: Sequence[Mapping[str, Any]], seed: int) -> str:
    rng = np.random.default_rng(seed)
    src: dict[str, str] = {}
    for k, leaf in enumerate(leaves):
        src[f"L{k}"] = em.clip(leaf, LEAF[em.types[leaf].dtype])
    out = ""
    for k, g in enumerate(program):
        op = g["op"]
        ins = [src[r] for r in g["in"]]
        a = ins[0]
        t = em.types[a]
        dt = t.np_dtype
        if op == "conv2d":
            cout, kk, s = int(g["cout"]), int(g["k"]), int(g["stride"])
            c = t.shape[1]
            w = em.const((rng.uniform(-1.0, 1.0, (cout, c, kk, kk)) / (c * kk * kk)).astype(dt))
            p = kk // 2
            out = em.op("conv2d", [a, w], strides=[s, s], dilations=[1, 1], pads=[p, p, p, p], group=1)
        elif op == "matmul":
            kdim, n = t.shape[-1], int(g["n"])
            w = em.const((rng.uniform(-1.0, 1.0, (kdim, n)) / kdim).astype(dt))
            out = em.op("matmul", [a, w])
        elif op == "gemm":
            kdim, n, tb = t.shape[-1], int(g["n"]), int(g["transB"])
            w = rng.uniform(-1.0, 1.0, (n, kdim) if tb else (kdim, n)) / kdim
            bias = rng.uniform(-1.0, 1.0, (n,))
            out = em.op("gemm", [a, em.const(w.astype(dt)), em.const(bias.astype(dt))], alpha=1.0, beta=1.0,
                        transA=0, transB=tb)
        elif op in ("add", "sub", "mul"):
            out = em.op(op, [a, em.bridge(ins[1], t.shape)])
        else:
            raise IRError(f"unknown garbage operator {op!r}")
        src[f"G{k}"] = out
    if not out:
        raise IRError("empty garbage program")
    return out


def _anchor(g: Graph, target: str) -> int:
    """Index at which the step's nodes are inserted: right after the producer of `target`."""
    for idx, n in enumerate(g.nodes):
        for v in n.outputs:
            if v.name == target:
                return idx + 1
    if target in {v.name for v in g.inputs} or target in g.constants:
        return 0
    raise IRError(f"mutation target {target!r} is not a value of the graph")


def _available(g: Graph, anchor: int) -> set[str]:
    names = {v.name for v in g.inputs} | set(g.constants)
    names.update([v.name for n in g.nodes[:anchor] for v in n.outputs])
    return names


def _condition(em: _Emitter, kind: str, cond: Mapping[str, Any]) -> str:
    """The opaque condition `cond` of kind `kind` (uoc, pioc): zeros."""
    if kind == "uoc":
        return _uoc(em, cond["i"], cond["j"])
    if kind == "pioc":
        return _pioc(em, cond["value"], decode_array(cond["profile"]), cond.get("start"))
    raise IRError(f"unknown condition kind {kind!r}")


def apply(g: Graph, step: Step, check: bool = True, in_place: bool = False) -> Graph:
    """The graph `g` with `step` applied (g itself is not modified; constant arrays are shared). `in_place`: `g` itself
    is changed and returned, for a caller that applies a sequence of steps to a copy of its own (a chain of steps
    would otherwise copy its growing mutant at every step)."""
    if step.kind in REGION_KINDS:
        return _apply_region(g, step, check, in_place)
    p = step.params
    target = p["target"]
    anchor = _anchor(g, target)
    avail = _available(g, anchor)
    for r in step.reads:
        if r not in avail:
            raise IRError(f"step {step.id} reads {r!r}, which is not defined before its insertion point")
    types = g.types()
    tt = types[target]
    if tt.dtype not in FLOATS:
        raise IRError(f"step {step.id}: target {target!r} is {tt}, not a float")
    em = _Emitter(step.id, types)
    c = _condition(em, step.kind, p["cond"])
    if p["fit"] == "bridge":
        c = em.bridge(c, tt.shape)
    elif p["fit"] == "mean":
        c = em.op("reduce_mean", [c], axes=[], keepdims=0, noop_with_empty_axes=0)
    else:
        raise IRError(f"unknown fit {p['fit']!r}")
    garbage = em.bridge(_garbage(em, p["leaves"], p["garbage"], int(p["seed"])), tt.shape)
    dead = em.op("abs", [em.op("mul", [c, garbage])])
    new = em.op("sub", [target, dead])

    out = g if in_place else g.light_copy()
    out.constants.update(em.constants)
    rest = out.nodes[anchor:]
    for n in rest:
        n.inputs = [new if i == target else i for i in n.inputs]
    out.nodes = out.nodes[:anchor] + em.nodes + rest
    out.outputs = [new if o == target else o for o in out.outputs]
    if check:
        check_graph(out)
    return out


def _apply_region(g: Graph, step: Step, check: bool, in_place: bool) -> Graph:
    """`g` with the nodes a region step names wrapped in a region that always takes them (module docstring)."""
    p = step.params
    out = g if in_place else g.light_copy()
    where = {n.name: k for k, n in enumerate(out.nodes)}
    ks = [where.get(name, -1) for name in p["nodes"]]
    if not ks or ks[0] < 0 or ks != list(range(ks[0], ks[0] + len(ks))):
        raise IRError(f"step {step.id} wraps nodes {p['nodes']}, which are not a contiguous range of the graph")
    start, stop = ks[0], ks[-1] + 1
    avail = _available(out, start)
    for r in step.reads:
        if r not in avail:
            raise IRError(f"step {step.id} reads {r!r}, which is not defined before the range it wraps")
    em = _Emitter(step.id, out.types())
    c = _condition(em, p["condition"], p["cond"])
    t = em.types[c]
    top = em.op("reduce_max", [c], axes=list(range(t.rank)), keepdims=0, noop_with_empty_axes=0) if t.rank else c
    never = em.op("greater", [top, em.const(np.zeros((), t.np_dtype))])
    seg = segment(out, start, stop, move_constants=False)  # the weights stay the seed's, shared
    # the values the range gave out when the step was drawn stay outputs (a later step may read one), whether or
    # not what read them then is in this replay
    given = set(p["outs"]) | {v.name for v in seg.outs}
    seg = Segment(seg.body, seg.reads, [v for x in seg.body for v in x.outputs if v.name in given], seg.moved)
    host = Host(out, top=True, prefix=f"mt{step.id}_")
    rng = np.random.default_rng(int(p["seed"]))  # the carried values' initial values (gen/regions.py)

    def every(op: str, dtype: str) -> bool:
        return True

    if step.kind == "if":
        always = bool(p["always"])
        cond = em.op("not", [never]) if always else never
        wrap_if(host, start, stop, seg, rng, every, condition=(em.nodes, cond, always))
    else:
        count = em.op("add", [em.op("cast", [never], to="int64"), em.const(np.array(1, np.int64))])
        wrap_loop(host, start, stop, seg, rng, every, count=(em.nodes, count))
    out.constants.update(em.constants)
    if check:
        check_graph(out)
    return out


# ---- drawing random steps ---------------------------------------------------------------------


def next_id(g: Graph) -> int:
    # region bodies included: a later region may hide a step's values in its body
    names = [*(v.name for v in g.inputs), *g.constants, *(v.name for n in g.all_nodes() for v in n.outputs)]
    return 1 + max((i for i in map(owner, names) if i is not None), default=-1)


def _deps(g: Graph, reads: Sequence[str], step_id: int) -> list[int]:
    """The earlier steps that made a value of `reads`, or the region node producing one: a region's outputs are
    defined together after its range, which without it may define them apart (a step anchored after one of them
    could no longer read another)."""
    producer = g.producers()
    names = [*reads, *(p.name for r in reads if (p := producer.get(r)) is not None and p.name)]
    return sorted({o for r in names if (o := owner(r)) is not None and o != step_id})


def _pick(rng: np.random.Generator, pool: Sequence[str]) -> str:
    """A value of `pool`, preferring (SEED_BIAS) those of the seed graph."""
    own = [v for v in pool if owner(v) is None]
    return str(rng.choice(own if own and rng.random() < SEED_BIAS else pool))


def _draw_garbage(rng: np.random.Generator, types: Mapping[str, TensorType], pool: Sequence[str]
                  ) -> tuple[list[str], list[dict[str, Any]]]:
    dtype = types[pool[0]].dtype
    leaves = [_pick(rng, pool)]
    shapes: dict[str, tuple[int, ...]] = {"L0": types[leaves[0]].shape}
    bounds: dict[str, float] = {"L0": LEAF[dtype]}
    program: list[dict[str, Any]] = []
    cur = "L0"
    for k in range(int(rng.integers(1, MAX_GARBAGE_OPS + 1))):
        shape, bound = shapes[cur], bounds[cur]
        options = ["add", "sub", "mul"]
        if len(shape) == 4:
            options += ["conv2d", "conv2d"]
        if len(shape) >= 2 and shape[-1] > 0:
            options.append("matmul")
        if len(shape) == 2 and shape[-1] > 0:
            options.append("gemm")
        op = str(rng.choice(options))
        g: dict[str, Any] = {"op": op, "in": [cur]}
        if op == "conv2d":
            g.update(cout=int(rng.integers(1, 5)), k=int(rng.choice([1, 3])), stride=int(rng.choice([1, 2])))
            n, _, h, w = shape
            s = g["stride"]
            out_shape: tuple[int, ...] = (n, g["cout"], (h - 1) // s + 1, (w - 1) // s + 1)
            out_bound = bound
        elif op == "matmul":
            g["n"] = int(rng.integers(1, 9))
            out_shape, out_bound = shape[:-1] + (g["n"],), bound
        elif op == "gemm":
            g.update(n=int(rng.integers(1, 9)), transB=int(rng.integers(2)))
            out_shape, out_bound = (shape[0], g["n"]), bound + 1.0
        else:
            # the partner: a fresh leaf, or any garbage value drawn so far
            names = list(shapes)
            if rng.random() < 0.6:
                ref = f"L{len(leaves)}"
                leaves.append(_pick(rng, pool))
                shapes[ref], bounds[ref] = types[leaves[-1]].shape, LEAF[dtype]
            else:
                ref = names[int(rng.integers(len(names)))]
            other = bounds[ref]
            if op == "mul" and bound * other > CAP[dtype]:
                op = "add"
                g["op"] = op
            g["in"] = [cur, ref]
            out_shape, out_bound = shape, (bound * other if op == "mul" else bound + other)
        cur = f"G{k}"
        shapes[cur], bounds[cur] = out_shape, out_bound
        program.append(g)
    return leaves, program


def _candidates(g: Graph) -> list[str]:
    """Mutation targets: float node outputs (inputs and constants are never rewired)."""
    return [v.name for n in g.nodes for v in n.outputs if v.type.dtype in FLOATS and 0 not in v.type.shape]


def mutate(g: Graph, rng: np.random.Generator, profile_inputs: Mapping[str, np.ndarray] | None = None,
           step_id: int | None = None, kinds: Sequence[str] = KINDS,
           profile: dict[str, np.ndarray] | None = None, in_place: bool = False) -> tuple[Graph, Step]:
    """One random step (UOC, or PIOC when profile_inputs are given) with garbage, applied to g (to g itself with
    `in_place`, see apply).

    `profile` caches the values the reference computed on profile_inputs across the steps of one
    chain: every step leaves every existing value bit-identical on that input, so values profiled
    once stay valid in every later mutant (values created by steps are simply not in it).
    Without it each PIOC step re-runs the whole model (~0.5 s on resnet18)."""
    sid = next_id(g) if step_id is None else step_id
    types = g.types()
    targets = _candidates(g)
    if not targets:
        raise IRError("no float value to mutate")
    target = _pick(rng, targets)
    anchor = _anchor(g, target)
    avail = _available(g, anchor) - set(g.constants)
    tt = types[target]
    pool = sorted(v for v in avail if types[v].dtype == tt.dtype and 0 not in types[v].shape)
    kind_choices = [k for k in kinds if k in KINDS and (k != "pioc" or profile_inputs is not None)]
    if not kind_choices:
        raise ValueError(f"no usable mutation kind in {list(kinds)} (PIOC needs profile_inputs)")
    kind = str(rng.choice(kind_choices))
    kind, cond = _draw_condition(g, types, rng, kind, pool, anchor, profile_inputs, profile)
    fit = str(rng.choice(FITS))
    leaves, program = _draw_garbage(rng, types, pool)
    params = {"target": target, "cond": cond, "fit": fit, "leaves": leaves, "garbage": program,
              "seed": int(rng.integers(2**31))}
    reads = list(dict.fromkeys([target, *_condition_reads(kind, cond), *leaves]))
    step = Step(sid, kind, reads, params, _deps(g, reads, sid))
    # the emitter infers every inserted node's type and rewired uses get a value of the same type:
    # a full check of the (growing) graph per step would make a chain quadratic
    return apply(g, step, check=False, in_place=in_place), step


def _condition_reads(kind: str, cond: Mapping[str, Any]) -> list[str]:
    return [cond["i"], cond["j"]] if kind == "uoc" else [cond["value"]]


def _draw_condition(g: Graph, types: Mapping[str, TensorType], rng: np.random.Generator, kind: str,
                    pool: Sequence[str], anchor: int,
                    profile_inputs: Mapping[str, np.ndarray] | None, profile: dict[str, np.ndarray] | None
                    ) -> tuple[str, dict[str, Any]]:
    """An opaque condition of `kind` over values of `pool` defined before node `anchor`, and its kind (a PIOC
    without a finite profiled value falls back to a UOC)."""
    cond: dict[str, Any] = {}
    if kind == "pioc":
        assert profile_inputs is not None
        if profile is None:
            env = reference.run(g, profile_inputs, keep_all=True)
        else:
            if not profile:
                profile.update(reference.run(g, profile_inputs, keep_all=True))
            env = profile
        produced = {v.name for n in g.nodes[:anchor] for v in n.outputs}
        finite = [v for v in pool if v in produced and v in env and np.all(np.isfinite(env[v]))]
        if finite:
            v = _pick(rng, finite)
            flat = np.asarray(env[v], dtype=types[v].np_dtype).reshape(-1)
            width = min(PIOC_WINDOW, flat.size)
            start = int(rng.integers(flat.size - width + 1))
            cond = {"value": v, "start": start, "profile": encode_array(flat[start:start + width].copy())}
        else:
            kind = "uoc"
    if kind == "uoc":
        i = _pick(rng, pool)
        j = i if rng.random() < 0.25 else _pick(rng, pool)
        cond = {"i": i, "j": j}
    return kind, cond


def wrap_region(g: Graph, rng: np.random.Generator, kinds: Sequence[str] = REGION_KINDS,
                profile_inputs: Mapping[str, np.ndarray] | None = None, profile: dict[str, np.ndarray] | None = None,
                step_id: int | None = None, in_place: bool = False) -> tuple[Graph, Step] | None:
    """One region step of a kind of `kinds` (if, loop) applied to g: a range of 1-MAX_RANGE nodes in a region
    that always takes it, on a UOC or (with profile_inputs) a PIOC condition over values before the range. None
    when no range drawn fits (RANGE_TRIES): one whose values something reads after it, with a float value before."""
    kinds = [k for k in kinds if k in REGION_KINDS]
    if not kinds or not g.nodes:
        return None
    sid = next_id(g) if step_id is None else step_id
    types = g.types()
    kind = str(rng.choice(kinds))
    n = len(g.nodes)
    for _ in range(RANGE_TRIES):
        start = int(rng.integers(n))
        stop = int(rng.integers(start + 1, min(n, start + MAX_RANGE) + 1))
        seg = segment(g, start, stop, move_constants=False)
        floats = sorted(v for v in _available(g, start) - set(g.constants)
                        if types[v].dtype in FLOATS and types[v].size > 0)
        if not seg.outs or not floats or any(not x.name for x in seg.body):
            continue
        dtype = types[_pick(rng, floats)].dtype
        pool = [v for v in floats if types[v].dtype == dtype]
        cond_kind = str(rng.choice([k for k in KINDS if k != "pioc" or profile_inputs is not None]))
        cond_kind, cond = _draw_condition(g, types, rng, cond_kind, pool, start, profile_inputs, profile)
        params = {"nodes": [x.name for x in seg.body], "outs": [v.name for v in seg.outs], "condition": cond_kind,
                  "cond": cond,
                  "always": bool(rng.random() < 0.5), "seed": int(rng.integers(2**31))}
        reads = list(dict.fromkeys([*_condition_reads(cond_kind, cond), *seg.reads]))
        deps = sorted(set(_deps(g, reads, sid)) | {o for x in seg.body if (o := owner(x.name)) is not None})
        step = Step(sid, kind, reads, params, deps)
        return apply(g, step, check=False, in_place=in_place), step
    return None


def iterate(g: Graph, rng: np.random.Generator, steps: int,
            profile_inputs: Mapping[str, np.ndarray] | None = None, kinds: Sequence[str] = KINDS,
            profile: dict[str, np.ndarray] | None = None,
            regions: tuple[np.random.Generator, Sequence[str]] | None = None) -> tuple[Graph, list[Step]]:
    """M_0 = g, M_k = mutate(M_{k-1}): the last mutant and the steps that made it. `regions`: a random stream
    and region kinds; one step, drawn from that stream, is a region step (wrap_region) where a range fits. `rng`
    draws the other steps as it would without it."""
    at = int(regions[0].integers(steps)) if regions is not None else -1
    out: list[Step] = []
    # a step names every value it adds after its id, so the next step's id (next_id of its mutant) is one more:
    # next_id walks the whole growing mutant, once here instead of once per step
    sid = next_id(g)
    g = g.light_copy()  # the steps change this copy in place: the mutants between them are seen by no one
    for k in range(steps):
        made = wrap_region(g, regions[0], regions[1], profile_inputs, profile, sid, in_place=True) \
            if regions and k == at else None
        g, s = made if made is not None else mutate(g, rng, profile_inputs, sid, kinds=kinds, profile=profile,
                                                    in_place=True)
        out.append(s)
        sid = s.id + 1
    return g, out


def replay(seed_graph: Graph, steps: Sequence[Step], check: bool = True) -> Graph:
    """Rebuild a mutant from its seed; `steps` may be any dependency-closed subsequence."""
    g = seed_graph.light_copy()  # one copy, which every step changes in place
    for s in steps:
        g = apply(g, s, check=check, in_place=True)
    return g


def closure(steps: Sequence[Step], keep: set[int] | Sequence[int]) -> list[Step]:
    """The steps whose ids are in `keep` plus everything they depend on, in sequence order."""
    by_id = {s.id: s for s in steps}
    need: set[int] = set()
    todo = [i for i in keep if i in by_id]
    while todo:
        i = todo.pop()
        if i not in need:
            need.add(i)
            todo.extend(by_id[i].deps)
    return [s for s in steps if s.id in need]


def condition_of(g: Graph, step_id: int) -> str | None:
    """The value of step `step_id`'s opaque condition (fitted to the target's shape) in mutant g:
    the first operand of the Mul under the step's dead Abs (dead = Abs(Mul(c, garbage)); a PIOC
    condition has an Abs of its own, over a Sub)."""
    prefix = f"mt{step_id}_"
    producer = {v.name: n for n in g.nodes for v in n.outputs}
    for n in g.nodes:
        if n.op == "abs" and n.name and n.name.startswith(prefix):
            mul = producer.get(n.inputs[0])
            if mul is not None and mul.op == "mul":
                return mul.inputs[0]
    return None


def constant_conditions(g: Graph, still_fails: Callable[[Graph], bool]) -> Graph:
    """Reduction stage 2: replace each step's condition by the constant it provably is (zeros;
    for PIOC on the profiled input), which deletes the condition's subgraph, wherever the mutant
    then still fails. The graph's inputs are kept (the test feeds the model's inputs)."""
    ids = sorted({o for n in g.nodes if n.name and (o := owner(n.name)) is not None})
    for sid in ids:
        c = condition_of(g, sid)
        if c is None or c in g.constants:
            continue
        t = g.types()[c]
        zero = f"mt{sid}_zero"
        cand = g.light_copy()
        cand.constants[zero] = np.zeros(t.shape, t.np_dtype)
        for n in cand.nodes:
            n.inputs = [zero if i == c else i for i in n.inputs]
        cand.outputs = [zero if o == c else o for o in cand.outputs]
        cand = prune(cand)  # drops what only the condition used
        cand.inputs = list(g.inputs)
        check_graph(cand)
        if still_fails(cand):
            g = cand
    return g


def steps_to_json(steps: Sequence[Step]) -> list[dict[str, Any]]:
    return [s.to_json() for s in steps]


def steps_from_json(data: Sequence[Mapping[str, Any]]) -> list[Step]:
    return [Step.from_json(d) for d in data]


__all__ = [
    "CAP", "FITS", "GARBAGE_OPS", "KINDS", "LEAF", "REGION_KINDS", "Step", "apply", "closure", "condition_of", "constant_conditions",
    "decode_array", "encode_array",
    "iterate", "mutate", "next_id", "owner", "replay", "steps_from_json", "steps_to_json", "wrap_region",
]
