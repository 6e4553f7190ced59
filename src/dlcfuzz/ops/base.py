"""Operator specs and the one registry.

An OpSpec states the semantics of one operator: accepted dtypes, shape inference (raising
ShapeError/DTypeError), attribute sampling, value-domain needs, near ties, error scales and a
NumPy reference. Nothing about any compiler: how a target writes the operator lives with the
target (`lower/<target>/`, registered against the operator's name). Adding an operator is one
spec, registered with `register`, in one family file, plus one rule (or documented gap) per target.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError, TypeRuleError
from dlcfuzz.ir.types import TensorType

Attrs = dict[str, Any]
MAX_ELEMENTS = 4096  # per tensor in generated graphs: keeps tests fast and memory flat
# the per-tensor limit check_size applies now: MAX_ELEMENTS, or a long-axis test's own (gen/sizes.py)
_ELEMENT_LIMIT: ContextVar[int] = ContextVar("element_limit", default=MAX_ELEMENTS)


@contextmanager
def element_limit(limit: int) -> Iterator[None]:
    """check_size refuses tensors over `limit` elements (instead of MAX_ELEMENTS) inside this block."""
    token = _ELEMENT_LIMIT.set(limit)
    try:
        yield
    finally:
        _ELEMENT_LIMIT.reset(token)


@dataclass(frozen=True)
class Domain:
    """Values an input needs so that the operator is defined and the reference is finite.

    lo/hi bound the values sampled for graph inputs and constants; `nonzero`
    excludes zero; `strict` means values out of the domain are undefined
    behaviour (indices), so the generator feeds this input only from constants
    it samples itself, never from computed values.
    `power` and `terms` (OpSpec.magnitude): the operator's kernels form up to the `power`-th power of
    the input and sum up to `terms` such values before the result, in the input's float dtype (the
    reference computes wider), so edge values (gen/inputs.py) keep float magnitudes within
    (largest finite / terms) ** (1 / power), and above the smallest normal ** (1 / power): an
    intermediate that overflows or underflows where the result would not has no single right answer.
    """

    lo: float | None = None
    hi: float | None = None
    nonzero: bool = False
    strict: bool = False
    power: float = 1.0
    terms: int = 1


ANY = Domain()


@dataclass(frozen=True)
class ValueAttr:
    """An attribute that is a value rather than structure (a scalar multiplier, a threshold, a fill value): the dtype
    its values take and its legal range. Edge tests draw it from the value profiles (gen/inputs.edge_attrs) as they
    draw inputs and constants; an attribute that decides a type, a shape or a mode is structure and keeps its sample."""

    dtype: str
    domain: Domain = ANY


def float_attr(t: TensorType, domain: Domain = ANY) -> ValueAttr:
    """A float attribute (ONNX stores float32) that multiplies or meets input values of type `t`: its values are
    exact in float32 and in `t`'s dtype where that is narrower (a float16 kernel may hold the attribute as float16)."""
    narrow = t.dtype in ("float16",)
    return ValueAttr(t.dtype if narrow else "float32", domain)

# Operators whose kernels sum over their input in its own dtype, by the power of the input each term
# holds (OpSpec.magnitude): P_ATTR the `p` attribute, ORDER the last axis's length. (A product reduction's
# partial products overflow only where its result does: the reference sees that.)
P_ATTR, ORDER = -1.0, -2.0
SUM_POWER: dict[str, float] = {
    **dict.fromkeys(("reduce_sum", "reduce_mean", "reduce_l1", "reduce_log_sum", "cumsum", "global_avg_pool",
                     "avg_pool1d", "avg_pool2d", "avg_pool3d", "col2im", "resize", "scatter_elements", "scatter_nd",
                     "tensor_scatter", "negative_log_likelihood_loss", "softmax_cross_entropy_loss", "roi_align",
                     "grid_sample", "affine_grid"), 1.0),
    **dict.fromkeys(("matmul", "gemm", "einsum", "conv1d", "conv2d", "conv_transpose2d", "deform_conv", "batch_norm",
                     "instance_norm", "layer_norm", "group_norm", "rms_norm", "mean_variance_norm", "lrn",
                     "reduce_l2", "reduce_sum_square", "attention", "linear_attention", "causal_conv_with_state",
                     "ms_fused_conv", "ms_fused_gemm", "ms_fused_matmul", "ms_skip_layer_norm", "dft", "stft",
                     "gru", "lstm", "rnn", "non_max_suppression"), 2.0),
    **dict.fromkeys(("lp_norm", "lp_pool", "global_lp_pool"), P_ATTR),
    "det": ORDER,
}
POSITIVE = Domain(lo=0.5, hi=4.0)
NONNEG = Domain(lo=0.0, hi=4.0)
UNIT_OPEN = Domain(lo=-0.9, hi=0.9)  # asin, acos, atanh
NONZERO = Domain(nonzero=True)
SMALL = Domain(lo=-3.0, hi=3.0)  # exp, sinh, cosh, pow exponents: finite results

# What an operator defines for non-finite inputs (OpSpec.nonfinite), from least to most. An operator that defines
# them is elementwise (broadcasting): its output at a position is non-finite only where an input there is
# (reference.nonfinite_undefined checks that positionally).
UNDEFINED = 0  # implementations legitimately differ (or the operator was never reviewed): never fed inf or NaN
INFINITIES = 1  # +-inf ordered as numbers is defined; NaN is not (max/maxss return different operands)
IEEE = 2  # IEEE-754 (and C99 Annex F, which numpy follows) defines the result for +-inf and NaN alike
NONFINITE_KINDS = {UNDEFINED: "undefined", INFINITIES: "infinities", IEEE: "ieee"}

# What an operator's rule does with an input axis whose extent is data-dependent (TensorType.unknown), OpSpec.unknown_dims.
# Its rule is run on the bounds and again with each unknown extent moved (`infer_unknown`): an output axis that moves
# with it one for one is unknown too (its bound the rule's), one that stays is static; anything else refuses.
REFUSES = ""  # the rule cannot carry one: refused by check_graph, never drawn after a producer
FOLLOWS = "follows"  # each unknown extent reappears in an output (elementwise, Cast, Concat along it, Gather of it
# along another axis, a reduction over other axes): the operator never depends on how long it is
ABSORBS = "absorbs"  # as FOLLOWS, or it disappears where the operator is defined at every extent down to 0 (ReduceSum
# over it, Shape, Size: their output types are static)
_PROBE_DELTAS = (1, 3)  # two moves, so that an output axis computed otherwise (a half, a sum of two) is not taken for it


def infer_unknown(spec: OpSpec, rule: Callable[[Sequence[TensorType], Attrs], list[TensorType]],
                  ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
    """The output types of `spec` (whose static rule is `rule`) on inputs with data-dependent axes: see REFUSES."""
    if not spec.unknown_dims:
        raise ShapeError(f"{spec.name}: its rule does not accept a data-dependent dimension")
    bounds = [t.bound for t in ins]
    outs = rule(bounds, attrs)
    unknown: list[set[int]] = [set() for _ in outs]
    for k, t in enumerate(ins):
        for axis in t.unknown:
            moved: set[tuple[int, int]] | None = None
            for delta in _PROBE_DELTAS:
                shape = list(t.shape)
                shape[axis] += delta
                try:
                    probe = rule([*bounds[:k], t.with_shape(tuple(shape)), *bounds[k + 1:]], attrs)
                except TypeRuleError:
                    probe = []
                if [o.rank for o in probe] != [o.rank for o in outs]:
                    raise ShapeError(f"{spec.name}: input {k}'s data-dependent axis {axis} must keep its bound")
                axes = {(o, p) for o, (x, y) in enumerate(zip(outs, probe))
                        for p, (dx, dy) in enumerate(zip(x.shape, y.shape)) if dx != dy}
                if any(probe[o].shape[p] - outs[o].shape[p] != delta for o, p in axes) or moved not in (None, axes):
                    raise ShapeError(f"{spec.name}: an output depends otherwise on input {k}'s data-dependent axis")
                moved = axes
            if not moved and spec.unknown_dims != ABSORBS:
                raise ShapeError(f"{spec.name}: input {k}'s data-dependent axis {axis} must reach an output")
            for o, p in moved or ():
                unknown[o].add(p)
    return [TensorType(o.dtype, o.shape, tuple(u)) for o, u in zip(outs, unknown)]


class OpSpec:
    """Base class of operator specs. Subclasses set the class attributes and override methods."""

    name: ClassVar[str]
    family: ClassVar[str]
    n_inputs: ClassVar[int] = 1  # tensor inputs; -1 for variadic (concat)
    n_outputs: ClassVar[int] = 1
    dtypes: ClassVar[tuple[str, ...]]  # dtypes accepted for input 0
    onnx_ops: ClassVar[tuple[str, ...]] = ()  # ONNX op types this spec imports
    onnx_domain: ClassVar[str] = ""  # "": the standard ONNX domain; else e.g. ORT's "com.microsoft"
    # Ranks the generator may pick for input 0 (infer() is the authority).
    ranks: ClassVar[tuple[int, ...]] = (0, 1, 2, 3, 4)
    # inputs whose values the operator never reads, only their types (Shape's input, CastLike's
    # target): an importer folds a node whose other inputs are constants
    type_only_inputs: ClassVar[tuple[int, ...]] = ()
    # True: the import rule's attributes say which optional outputs exist; "" outputs are dropped
    skips_absent_outputs: ClassVar[bool] = False
    # True: its work outgrows the tensors it reads and writes (a contraction, a window, a recurrence, a
    # transform): matmul, conv, attention, pooling, DFT; see work()
    contracts: ClassVar[bool] = False
    # what it defines for +-inf and NaN inputs (UNDEFINED, INFINITIES, IEEE above): edge tests draw non-finite
    # values only where every operator they reach defines them (gen/inputs.nonfinite_allowed)
    nonfinite: int = UNDEFINED
    # what its rule does with an input axis whose extent is data-dependent (REFUSES, FOLLOWS, ABSORBS above)
    unknown_dims: str = REFUSES

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every spec's `infer` sees static types only: inputs with data-dependent axes go to `infer_unknown`,
        which runs the spec's own rule on their bounds (one place for every operator, so that an operator that
        does not state how it takes them refuses them)."""
        super().__init_subclass__(**kwargs)
        rule = cls.__dict__.get("infer")
        if rule is None or getattr(rule, "takes_static", False):
            return

        @functools.wraps(rule)
        def infer(self: OpSpec, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
            if any(t.unknown for t in ins):
                return infer_unknown(self, lambda static, a: rule(self, static, a), ins, attrs)
            return rule(self, ins, attrs)

        infer.takes_static = True  # type: ignore[attr-defined]
        cls.infer = infer  # type: ignore[method-assign]

    # ---- typing --------------------------------------------------------
    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        """Given input 0's type, choose types of all inputs and the attributes.

        Raises ShapeError/DTypeError when `first` cannot be input 0 of this op.
        The result must satisfy infer().
        """
        raise NotImplementedError

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return ANY

    def magnitude(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> tuple[float, int]:
        """(power, terms) of input `index` (see Domain): products and squares the kernels form inside the
        operator (matmul, norms, variances: 2; Lp: p; a determinant: its order), and sums over up to the input's elements (reductions, pools, contractions)."""
        power = SUM_POWER.get(self.name)
        if power is None:
            return 1.0, 1
        if power == P_ATTR:
            power = float(attrs.get("p", 2))
        elif power == ORDER:
            power = float(ins[index].shape[-1]) if ins[index].rank else 1.0
        return power, max(ins[index].size, 1)

    def value_attrs(self, ins: Sequence[TensorType], attrs: Attrs) -> dict[str, ValueAttr]:
        """The attributes of this instance that are values rather than structure, with their dtypes and legal ranges
        (see ValueAttr); none by default."""
        return {}

    def with_values(self, ins: Sequence[TensorType], attrs: Attrs, drawn: Attrs) -> Attrs | None:
        """`attrs` with the value attributes `drawn` (see value_attrs) in place and what depends on them adjusted, or
        None where they do not fit together (the edge profile draws again or keeps the sampled ones). The caller
        keeps the instance's output types: an edge attribute changes values, never the graph's types."""
        return {**attrs, **drawn}

    def work(self, ins: Sequence[TensorType], outs: Sequence[TensorType]) -> int:
        """An upper bound of the element operations of one instance, which the size bound of generated tests
        sums over a graph's nodes: the elements read and written, plus, for an operator that `contracts`, every
        output element reading all of its smallest operand of rank 2 or more (matmul [M,K]x[K,N]: MN*min(MK,KN)
        >= MNK; conv: out * weight; attention: out * K)."""
        moved = sum(t.size for t in ins) + sum(t.size for t in outs)
        if not self.contracts:
            return moved
        operand = min((t.size for t in ins if t.rank >= 2), default=max((t.size for t in ins), default=1))
        return moved + sum(t.size for t in outs) * operand

    def broken_attrs(self, rng: np.random.Generator, ins: Sequence[TensorType], attrs: Attrs) -> Attrs | None:
        """`attrs` with one value the spec forbids (disruptive mode's `attribute` rule: infer() must raise on it, and
        ONNX's strict inference reject it), or None where the operator declares no such break."""
        return None

    # ---- semantics -----------------------------------------------------
    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        """Whether the result here is decided by input differences within `tol` (relative): a
        discontinuity (argmax between near-equal values) where legal rounding can flip it."""
        return False

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        raise NotImplementedError

    def other_reading(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray] | None:
        """Where the specification is ambiguous for these attributes, the outputs of the other reading a correct
        compiler may follow (the oracle accepts the reference's or this one); None where it is not ambiguous."""
        return None

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        """The magnitude, in units of the dtype's epsilon, of the error a correct compiler may make
        in output `y` (the reference's sensitivity analysis perturbs y by a few of these). A few
        ulps of the result by default; operators that accumulate terms of either sign override it
        with the sum of the terms' magnitudes, since cancellation there loses relative accuracy
        legally (a float32 conv whose terms cancel to 1e-5 may be off by 1e-3 relative)."""
        return np.abs(y)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


_REGISTRY: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    if spec.name in _REGISTRY:
        raise ValueError(f"operator {spec.name!r} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def registry() -> dict[str, OpSpec]:
    return _REGISTRY


# ---- helpers shared by the family files --------------------------------


def require_dtype(spec: OpSpec, t: TensorType, allowed: Sequence[str] | None = None, what: str = "input") -> None:
    allowed = spec.dtypes if allowed is None else allowed
    if t.dtype not in allowed:
        raise DTypeError(f"{spec.name}: {what} dtype {t.dtype} not in {list(allowed)}")


def require_same_dtype(spec: OpSpec, ins: Sequence[TensorType]) -> None:
    if len({t.dtype for t in ins}) > 1:
        raise DTypeError(f"{spec.name}: inputs must share a dtype, got {[t.dtype for t in ins]}")


def require_arity(spec: OpSpec, ins: Sequence[TensorType]) -> None:
    if spec.n_inputs >= 0 and len(ins) != spec.n_inputs:
        raise ShapeError(f"{spec.name}: expects {spec.n_inputs} inputs, got {len(ins)}")
    if spec.n_inputs < 0 and not ins:
        raise ShapeError(f"{spec.name}: expects at least one input")


def require_rank(spec: OpSpec, t: TensorType, ranks: Sequence[int]) -> None:
    if t.rank not in ranks:
        raise ShapeError(f"{spec.name}: rank {t.rank} not in {list(ranks)}")


def norm_axis(spec: OpSpec, axis: int, rank: int) -> int:
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise ShapeError(f"{spec.name}: axis {axis} out of range for rank {rank}")
    return axis % max(rank, 1)


def broadcast_shapes(spec: OpSpec, *shapes: Sequence[int]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ShapeError(f"{spec.name}: shapes {[tuple(s) for s in shapes]} do not broadcast") from None


def sample_broadcast_partner(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` to exactly `shape` (or a broadcast-compatible superset)."""
    r = len(shape)
    choice = rng.integers(4)
    if choice == 0 or r == 0:
        return shape
    if choice == 1:  # drop leading dims
        return shape[rng.integers(0, r + 1):]
    if choice == 2:  # set some dims to 1
        return tuple(1 if rng.random() < 0.5 else d for d in shape)
    # the partner broadcasts *this* side: our 1-dims may grow
    return tuple(int(rng.integers(1, 4)) if d == 1 else d for d in shape)


def check_size(spec: OpSpec, shape: Sequence[int]) -> None:
    """Generated graphs stay small; sample() uses this to refuse huge outputs."""
    limit = _ELEMENT_LIMIT.get()
    if math.prod(int(d) for d in shape) > limit:
        raise ShapeError(f"{spec.name}: output {tuple(shape)} exceeds {limit} elements")


def decode(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


def summed_roundings(terms: int) -> float:
    """The rounding error that a float sum of `terms` terms may carry in some order, in epsilons of the sum of the
    terms' magnitudes: (terms - 1) half-epsilons, recursive summation's bound; at least one, the result's own
    rounding. A compiler that adds in sequence attains much of it where the terms are alike (ONNXRuntime 1.32's
    float64 log-sum-exp over 13,862 classes was 528 epsilons off, one epsilon of the sum being the bound before)."""
    return max(1.0, (terms - 1) / 2)


def magnitude_of_terms(spec: OpSpec, xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    """The reference on the inputs' magnitudes: for a sum of products (conv, matmul, mean) the sum
    of its terms' magnitudes, which bounds the rounding error of any summation order."""
    return np.abs(spec.reference([np.abs(x) for x in xs], attrs)[0])
