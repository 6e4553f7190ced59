"""Graph -> the source text of a Python program: the lowering shared by the Python targets (torch, jax).

The lowering writes Python source, one statement per node, so that the very text a campaign compiles
is what a reproducer shows upstream (PyTorch's bug template asks for the model as readable torch code,
JAX's issue template for a self-contained script). Sub-functions become Python functions the main
function calls; constants become module-level tensors/arrays (which the compiler sees as constants it
may fold).

What differs between the targets is spelling, not structure: a `Spelling` says how a target writes a
module prefix, a dtype, a cast, an axis keyword, a static shape, a copy. Rules are registered on the
target's registry (`target("torch")`, `target("jax")`); a rule that is the same up to spelling is
registered on both (`lower/pysource/rules*.py`) and reads the spelling from its emitter (`e.sp`).
Every rule has the signature of the other targets' rules:
`rule(spec, e, ins, outs, attrs, in_types, out_types) -> list[str]`: the operator's spec, the `Emitter`, the argument
expressions, the names its outputs will get, the node's attributes, input types and output types; it
returns one expression per output.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import numpy as np

from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ir.types import INTS, TensorType
from dlcfuzz.lower.registry import target

ENTRY = "model"  # the name of the lowered main function


@dataclass(frozen=True)
class Spelling:
    """How one Python target writes what every Python target says."""

    target: str  # its registry name
    prelude: str  # the imports the source assumes
    reserved: frozenset[str]  # module-level names a value must not take (imports, ENTRY)
    mod: str  # the array module's prefix: "torch", "jnp"
    nn: str  # the neural-network functions' prefix: "F", "jax.nn"
    dtype_names: dict[str, str]  # our dtype names that the module spells otherwise (jnp.bool_)
    cast_method: str  # x.to(dtype), x.astype(dtype)
    axis_kw: str  # the keyword of a reduction's axes: "dim", "axis"
    keepdims_kw: str  # "keepdim", "keepdims"
    shape_type: type  # static shapes and axis lists: torch writes lists, jax tuples
    copies: bool  # whether an operator returning its input as is must copy it (torch tensors are mutable)
    take: str  # x indexed along an axis by an index tensor: a template of x, idx, axis
    take_along: str  # x read at idx (of x's rank) along an axis, elementwise: a template of x, idx, axis
    swap: str  # x with its axes a and b exchanged: a template of x, a, b
    diagonal_kw: str  # the keyword of triu/tril's diagonal offset: "diagonal", "k"
    renames: dict[str, str]  # NumPy's function name -> this target's, where the module's own name differs
    clone: str  # a copy of x (a template of x)
    flip: str  # x reversed along one axis: a template of x, axis
    trunc_div_int: str  # an integer tensor x divided by a Python int n, truncating toward zero (template)
    casts_indices: bool  # index results (argmax, argsort) need a cast to int64 (jnp's come in the default int)
    prod_one_axis: bool  # the module's prod reduces one axis per call (torch.prod)
    tensor: str  # the function making an array of Python data (a list, an int): "torch.tensor", "jnp.asarray"
    numel: str  # the number of elements of x, as a Python int (a template of x)
    bitcast: str  # x's bytes read as another dtype of the same width (a template of x, dtype)
    # a loop over the leading axis of `xs` (a tuple of arrays) that threads a carry through `step(carry, x_t)` ->
    # (carry, y_t) and stacks the y_t: a template of step, init, xs, reverse (lax.scan's signature)
    scan: str
    scan_init: str  # a carry's initial value as the scan takes it (a template of x): torch's wants it contiguous
    # a binary operator (a key of BINARY, or max/min/div/mod/bit_shift) on an unsigned dtype the module
    # has no kernels for, as (e, name, ins, attrs, dtype) -> source; None where the module has them all
    wide_binary: Callable[..., str] | None = None
    wide_dtypes: tuple[str, ...] = ()  # the dtypes wide_binary is for
    # the one-expression operators this target spells otherwise than the other Python targets (the rest are
    # pysource/rules.py's): operator -> a template of its input `{x}`, its output's static shape `{out_shape}`
    # and its attributes by name (`{alpha}`), each as a Python literal (`rules.templated`)
    templates: dict[str, str] = field(default_factory=dict)

    def fn(self, name: str) -> str:
        """The target's function of NumPy's name `name` (torch.pow for power, jax.nn.sigmoid for sigmoid)."""
        return self.renames.get(name, f"{self.mod}.{name}")

    def dtype(self, dtype: str) -> str:
        """Our dtype name as source of this module."""
        return f"{self.mod}.{self.dtype_names.get(dtype, dtype)}"

    def cast(self, x: str, dtype: str) -> str:
        """`x` converted to our dtype `dtype` (float -> int truncates, as the reference)."""
        return f"{x}.{self.cast_method}({self.dtype(dtype)})"

    def shape(self, dims: Sequence[int]) -> str:
        """A static shape or axis list as this target writes it."""
        return literal(self.shape_type(dims))

    def axes(self, dims: Sequence[int], keepdims: bool) -> str:
        """The keyword arguments of a reduction over `dims`."""
        return f"{self.axis_kw}={self.shape(dims)}, {self.keepdims_kw}={keepdims}"

    def copy(self, x: str) -> str:
        """`x` as a value of its own (an output that is an input must not alias it where that can be seen)."""
        return self.clone.format(x=x) if self.copies else x

    def shift_in(self, x: str, axis: int, n: int, rank: int, fill: str) -> str:
        """`x` (of `n` elements along `axis`) shifted one place up along it, `fill` first (an exclusive scan)."""
        raise NotImplementedError(f"{self.target} spells no shift_in")

    def arange(self, start: str, limit: str, delta: str, dtype: str, n: int) -> str:
        """The `n` values start, start + delta, ... before limit, in our dtype `dtype`."""
        return f"{self.mod}.arange({start}, {limit}, {delta}, dtype={self.dtype(dtype)})"

    def one_hot(self, idx: str, n: int, axis: int, dtype: str) -> str:
        """The one-hot vectors of `idx` (n classes) along a new axis `axis`, in our dtype `dtype`."""
        raise NotImplementedError(f"{self.target} spells no one_hot")

    def stable_order(self, keys: str, axis: int, k: int) -> str:
        """The int64 positions of the `k` smallest `keys` along `axis`, ties in index order."""
        raise NotImplementedError(f"{self.target} spells no stable_order")

    def pad(self, x: str, before: Sequence[int], after: Sequence[int], value: str | None = None) -> str:
        """`x` (N, C, spatial...) padded on its spatial axes by constant `value` (zero when None)."""
        width = literal([(0, 0), (0, 0)] + [(b, f) for b, f in zip(before, after)])
        return f"{self.mod}.pad({x}, {width}" + (f", constant_values={value})" if value is not None else ")")

    def pad_constant(self, x: str, before: Sequence[int], after: Sequence[int], value: str, dtype: str) -> str:
        """`x` (of our dtype `dtype`) padded on every axis by the constant `value` (a literal), ONNX's Pad:
        a negative pad crops."""
        raise NotImplementedError(f"{self.target} spells no pad_constant")

    def split(self, x: str, sizes: Sequence[int], axis: int) -> str:
        """The tuple of `x`'s consecutive parts of `sizes` along `axis`."""
        cuts = [int(v) for v in np.cumsum(sizes)[:-1]]
        return f"{self.mod}.split({x}, {literal(cuts)}, {self.axis_kw}={axis})"

    def gather(self, e: Emitter, x: str, idx: str, axis: int, n: int, out_shape: Sequence[int]) -> str:
        """ONNX's Gather: `x` indexed along `axis` (of length `n`) by the index tensor `idx`, whose negative
        entries (in [-n, -1]) count from the end (`wrapped`)."""
        raise NotImplementedError(f"{self.target} spells no gather")

    def variance(self, x: str, mean: str, over: str) -> str:
        """The population variance of `x` (whose mean is `mean`) over the reduction arguments `over` (`axes`)."""
        return f"{self.mod}.mean({self.mod}.square({x} - {mean}), {over})"

    def additive_mask(self, allowed: str, dtype: str) -> str:
        """0 where `allowed`, -inf elsewhere, in our dtype `dtype`: an additive attention bias."""
        m = self.mod
        return f"{m}.where({allowed}, {m}.asarray(0, {self.dtype(dtype)}), {m}.asarray(-{m}.inf, {self.dtype(dtype)}))"

    def extend_mask(self, mask: str, width: int, rank: int, boolean: bool) -> str:
        """An attention mask (of rank `rank`) extended by `width` masked-out keys: False, or -inf where the
        mask is additive."""
        fill = "False" if boolean else f"-{self.mod}.inf"
        return f"{self.mod}.pad({mask}, [(0, 0)] * {rank - 1} + [(0, {width})], constant_values={fill})"

    def bound(self, x: str, v: float, dtype: str, upper: bool) -> str:
        """`x` (of our dtype `dtype`) bounded by the scalar `v`: from below, or from above when `upper`. The
        scalar is a literal of x's kind (an int literal for an integer tensor), which keeps x's dtype."""
        scalar = literal(int(v)) if dtype in INTS else literal(float(v))
        return f"{self.fn('minimum' if upper else 'maximum')}({x}, {scalar})"


def literal(v: Any) -> str:
    """A Python literal of an attribute value (ints, floats including inf/nan, lists, strings)."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f != f:
            return 'float("nan")'
        if f in (float("inf"), float("-inf")):
            return 'float("inf")' if f > 0 else '-float("inf")'
        return repr(f)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(literal(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


def wrapped(sp: Spelling, idx: str, n: int | str) -> str:
    """`idx` with ONNX's negative indices (in [-n, -1]) counted from the end: the targets' gathers do
    not wrap them (torch), or wrap or fill them by a mode (jnp)."""
    return f"{sp.mod}.where({idx} < 0, {idx} + {n}, {idx})"


@dataclass
class Emitter:
    """Where a rule writes: statements of the current function, fresh names, module constants."""

    sp: Spelling
    lines: list[str] = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    fnames: dict[str, str] = field(default_factory=dict)  # sub-function -> its Python name (calls in bodies)
    overrides: dict[str, Any] = field(default_factory=dict)  # planted faults' rules (bodies lower with them)

    def function(self, g: Graph, hint: str = "body") -> str:
        """Emit a nested function computing `g` (a region's body: its parameters, then a tuple of its outputs)
        and return its name."""
        name = self.fresh(hint)
        self.lines.extend(_lower_function(g, name, self, self.fnames, self.overrides))
        return name

    def fresh(self, hint: str = "t") -> str:
        i = len(self.taken)
        while f"{hint}{i}" in self.taken:
            i += 1
        name = f"{hint}{i}"
        self.taken.add(name)
        return name

    def bind(self, expr: str, hint: str = "t") -> str:
        """Emit `name = expr` and return the name (a rule's intermediate value)."""
        name = self.fresh(hint)
        self.lines.append(f"{name} = {expr}")
        return name

    def const(self, array: np.ndarray, hint: str = "k") -> str:
        """A module-level constant holding `array` (exactly); returns its name."""
        name = self.fresh(hint)
        self.consts[name] = np.array(array, copy=True, order="C")  # keeps 0-d arrays 0-d
        return name


Types = Sequence[TensorType]
Rule = Callable[[Any, Emitter, list[str], list[str], dict, Types, Types], list[str]]


def ident(name: str, used: set[str], reserved: frozenset[str]) -> str:
    """A Python identifier for an IR value name (IR names are free-form strings)."""
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in reserved:
        base = f"v_{base}"
    out, i = base, 1
    while out in used:
        out, i = f"{base}_{i}", i + 1
    used.add(out)
    return out


@dataclass
class PyProgram:
    """A lowered graph: module source (without constants' data), the constants, the entry point.
    Each target's subclass says how its constants, arguments and results are made and read."""

    spelling: ClassVar[Spelling]
    source: str  # defines the sub-functions and ENTRY; reads constants from module globals
    consts: dict[str, np.ndarray]  # module global name -> data
    input_names: list[str]  # IR input names, in ENTRY's parameter order
    n_outputs: int

    @classmethod
    def lower(cls, g: Graph, overrides: dict[str, Rule] | None = None) -> Self:
        """Lower `g` (and its sub-functions) to this target's source; raises Unsupported for a documented
        gap. `overrides` replace the registered rule of some operators (planted faults)."""
        return lower_source(g, cls.spelling, cls, overrides)

    @classmethod
    def callable_of(cls, g: Graph) -> Callable[..., tuple]:
        """`g` as this target's function of its inputs (in `g.inputs` order) returning a tuple."""
        return cls.lower(g).function()

    @classmethod
    def eager_results(cls, g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """`g` lowered and run without its compiler (`run_eager`)."""
        return cls.lower(g).run_eager(inputs)

    def function(self) -> Callable[..., tuple]:
        """The program as a callable (exec of the source in a fresh namespace, constants bound as the
        target's arrays)."""
        namespace = self.namespace()
        exec(self.spelling.prelude, namespace)  # noqa: S102 - our own generated source
        for k, a in self.consts.items():
            namespace[k] = self.constant(a)
        exec(compile(self.source, self.filename(namespace), "exec"), namespace)  # noqa: S102
        return namespace[ENTRY]

    def run_eager(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run the program without its compiler: the target's counterpart of the reference."""
        fn = self.function()
        with self.eager():
            outs = fn(*[self.argument(np.array(inputs[n])) for n in self.input_names])
        return [self.to_numpy(o) for o in outs]

    # what each target says
    def namespace(self) -> dict[str, Any]:
        """The globals the program is executed in."""
        raise NotImplementedError

    def filename(self, namespace: dict[str, Any]) -> str:
        """The file name the program's frames show."""
        raise NotImplementedError

    def constant(self, a: np.ndarray) -> Any:
        """A constant's data as the target's array."""
        raise NotImplementedError

    def argument(self, a: np.ndarray) -> Any:
        """An input as the target's eager function takes it."""
        raise NotImplementedError

    def eager(self) -> AbstractContextManager[Any]:
        """The context an eager run happens in."""
        raise NotImplementedError

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        """A result of the program as a NumPy array of its own."""
        raise NotImplementedError


def _lower_function(g: Graph, fname: str, emit: Emitter, fnames: dict[str, str],
                    overrides: dict[str, Rule]) -> list[str]:
    from dlcfuzz.ops import get_op

    sp = emit.sp
    rules = target(sp.target)
    used: set[str] = set(emit.taken)
    env: dict[str, str] = {}
    params = [ident(v.name, used, sp.reserved) for v in g.inputs]
    env.update({v.name: p for v, p in zip(g.inputs, params)})
    body = Emitter(sp, consts=emit.consts, taken=used, fnames=fnames, overrides=overrides)
    for k, a in g.constants.items():
        cname = emit.const(a, hint="c_")
        used.add(cname)
        env[k] = cname
    types = g.types()
    for n in g.nodes:
        args = [env[i] for i in n.inputs]
        outs = [ident(v.name, used, sp.reserved) for v in n.outputs]
        if n.op == CALL_OP:
            call = f"{fnames[n.attrs['callee']]}({', '.join(args)})"
            body.lines.append(f"{outs[0]}, = {call}" if len(outs) == 1 else f"{', '.join(outs)} = {call}")
        else:
            rule = overrides.get(n.op) or rules.rule(n.op)
            exprs = rule(get_op(n.op), body, args, outs, n.attrs, [types[i] for i in n.inputs],
                         [v.type for v in n.outputs])
            if len(exprs) != len(outs):
                raise AssertionError(f"{sp.target} rule of {n.op} returned {len(exprs)} values for {len(outs)} outputs")
            for o, e in zip(outs, exprs):
                body.lines.append(f"{o} = {e}")
        env.update({v.name: o for v, o in zip(n.outputs, outs)})
    ret = ", ".join(env[o] for o in g.outputs)
    body.lines.append(f"return ({ret},)" if len(g.outputs) == 1 else f"return ({ret})")
    emit.taken |= used
    head = f"def {fname}({', '.join(params)}):"
    return [head] + ["    " + ln for ln in body.lines]


def lower_source(g: Graph, sp: Spelling, program: type[PyProgram],
                 overrides: dict[str, Rule] | None = None) -> Any:
    """Lower `g` (and its sub-functions) to the source of target `sp`, as a `program` (a PyProgram
    subclass); raises Unsupported for a documented gap. `overrides` replace the registered rule of
    some operators (planted faults)."""
    emit = Emitter(sp, taken=set(sp.reserved))
    fnames: dict[str, str] = {}
    chunks: list[str] = []
    for f in g.call_order():
        fnames[f] = ident(f"fn_{f}", emit.taken, sp.reserved)
        chunks.append("\n".join(_lower_function(g.functions[f], fnames[f], emit, fnames, overrides or {})))
    chunks.append("\n".join(_lower_function(g, ENTRY, emit, fnames, overrides or {})))
    return program("\n\n\n".join(chunks) + "\n", emit.consts, [v.name for v in g.inputs], len(g.outputs))
