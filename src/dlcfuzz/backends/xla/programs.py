"""XLA's program language: JAX programs with JAX's own semantics (`programs/core.py`'s representation):
the op table, type inference by `jax.eval_shape`, the run (eager op by op under `jax.disable_jit()`, a
float64 eager reference, compiled by `jax.jit(...).lower(...).compile(compiler_options=...)`), the
whole-program transformations, the guards, and the reproducer as a plain JAX script.

The op space is what ONNX graphs cannot say or spell differently: lax.atan2, rem, div, integer_pow,
nextafter, clamp, reduce_precision, population_count, the three shifts, bitwise ops on every integer
type (uint8..uint64, int8..int64) and bool, cumsum/cumprod/cummax/cummin/cumlogsumexp (forward and
reverse), lax.sort of several operands with num_keys, argsort, top_k, dynamic_slice and
dynamic_update_slice with starts out of range (clamped: JAX's documented semantics) and read from data,
lax.pad with negative and interior padding, dot_general with batch and contracting dimensions, select_n,
bitcast_convert_type (same width, or narrower and wider along a last axis), reductions (lax.reduce_* and
lax.reduce with the computation's own identity), jnp.where and arithmetic with Python scalars (weak types),
`.at[].set/add/min/max` and jnp.take with their index modes; and what users' programs hold beside them:
lax.linalg.triangular_solve (in float16 too: XLA's own expansion; on CPU float32/float64 go to LAPACK, as
cholesky, qr and eigh always do), pooling (lax.reduce_window max/min/add) and the gradient of max/min pooling
(`jax.grad`: a select-and-scatter), jax.random with explicit keys (threefry, rbg and unsafe_rbg: the last two
draw with lax.rng_bit_generator; uniform, normal, bits, dropout; a key folded with data), lax.rng_uniform's
range (its numbers differ call by call: the statement counts the draws outside [lo, hi)), bfloat16 activations
(ops exact on bfloat16-rounded values) and the same ops in float8, float4_e2m1fn, int4 and uint4, max/min
reductions whose computation branches (a lax.cond in the reducer), and optimization_barrier. `jax_enable_x64` is on (float64 and int64
stay themselves). JAX has no
memory layouts: an input's `layout` is ignored (every input is an array).

Transformations are per-test configurations (`per_test_configs`): the plain `jit`; `jit(vmap(f))` over
leading batch axes (up to a few hundred, sometimes nested vmap) against eager vmap on the same batched
inputs; `jit(jvp)` (tangents of the float outputs) and `jit(grad)` (of the float outputs' sum, with
respect to each float input) against the same transformation run eagerly; XLA option variants
(`xla_backend_optimization_level` 0..3, `xla_disable_hlo_passes` with one sampled optional pass); every
input donated (`jax.jit(f, donate_argnums=...)`: XLA may alias an input's buffer with an output's). A
transformed configuration names its own references ("eager+T", "fp64+T": run meta "reference" and
"reference64"); a grad configuration's input slots hold the gradients ("in_slot").

Guards (a test that trips one is an `unknown`, never a finding), from what JAX and XLA document:
- integer division or remainder by zero, and of INT_MIN by -1 (lax.div/lax.rem: "produces an
  implementation defined value"; jnp.floor_divide and jnp.remainder lower to them);
- a float converted to an integer type while NaN or out of the type's range (implementation defined:
  XLA's emitter saturates, its constant folder need not);
- nextafter, reduce_precision and bitcast_convert_type with a subnormal argument or result: XLA:CPU
  flushes subnormals to zero in compiled code (denormals-are-zero), which a constant folded at compile
  time does not; and a float bitcast to an integer while NaN (NaN payloads are not preserved);
- `.at[].set` with indices that repeat after the mode's normalization (which update wins is
  implementation defined: JAX's `.at` documentation);
- a triangular solve whose matrix (float64 copy) has a condition number past `COND_LIMIT` of its dtype
  (an ill-conditioned output: rounding alone decides it);
- a NaN converted to a type that has none (float4_e2m1fn, int4, uint4: implementation defined).
Not guards: signed integer overflow wraps (two's complement) in XLA's emitted code and in its constant
folder (the HLO evaluator) alike, so an overflowing intermediate, folded or not, is compared exactly;
shifts by the type's width or more are defined by XLA (0, or the sign for an arithmetic right shift);
lax.clamp with lo > hi is min(max(x, lo), hi) (StableHLO). Fast-math options are never set (the XLA
backend refuses them). An eager error is an invalid program, not a bug.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from dlcfuzz.lower.jax import enable_x64

enable_x64()  # before any other use of jax in this process: float64 otherwise silently becomes float32

import jax  # noqa: E402 - after jax_enable_x64
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from dlcfuzz.oracle import categories as C  # noqa: E402
from dlcfuzz.oracle.numeric import has_subnormal  # noqa: E402
from dlcfuzz.programs import core  # noqa: E402 - its region helpers: core.body_names, emit_function, differentiable
from dlcfuzz.programs.core import Draw, Input, OpSpec, Pool, Program, Stmt, Value, emit  # noqa: E402
from dlcfuzz.programs.reproducer import JUDGE_SOURCE, VERDICT_SOURCE  # noqa: E402

UNDEFINED = "undefined-behaviour"  # the program guards' category (the torch dialect registers the same row)
C.add_category(C.Category(UNDEFINED, "unknown", routine=True))

UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
SIGNED = ("int8", "int16", "int32", "int64")
INTS = UNSIGNED + SIGNED
FLOATS = ("float16", "float32", "float64")
NUM = INTS + FLOATS
INT_OR_BOOL = INTS + ("bool",)
ANY = NUM + ("bool",)
WIDTH = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "float16": 16, "int32": 32, "uint32": 32,
         "float32": 32, "int64": 64, "uint64": 64, "float64": 64}
INPUT_DTYPES = (("float32", 6.0), ("float64", 1.0), ("float16", 1.0), ("int64", 1.0), ("int32", 2.0),
                ("int16", 0.7), ("int8", 1.0), ("uint8", 1.0), ("uint16", 0.5), ("uint32", 0.7), ("uint64", 0.5),
                ("bool", 1.0))
UNIMPLEMENTED = re.compile(r"UNIMPLEMENTED")
MAX_ELEMENTS = 4096  # per value: keeps compiles fast
BATCH_ELEMENTS = 1 << 18  # a vmap test's batch times its largest value's elements

# The inputs, built the same way by the runner and by the reproducer (it embeds this source): floats on a
# grid of eighths in [-4, 4] (sums and products of a few are exact in float32), integers small, unsigned
# ones non-negative. `lead`: leading batch axes (a vmap test's batched inputs).
INPUTS_SOURCE = '''
def make_inputs(specs, seed, lead=()):
    """(name, dtype, shape) -> numpy array, with `lead` batch axes in front."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, dtype, shape in specs:
        shape = tuple(lead) + tuple(shape)
        if dtype == "bool":
            a = rng.random(shape) < 0.5
        elif dtype.startswith("uint"):
            a = rng.integers(0, 17, shape)
        elif dtype.startswith("int"):
            a = rng.integers(-8, 9, shape)
        else:
            a = rng.integers(-32, 33, shape) / 8
        out[name] = np.array(np.asarray(a).astype(dtype))
    return out
'''
_NS: dict[str, Any] = {"np": np}
exec(INPUTS_SOURCE, _NS)  # noqa: S102 - our own source, shared with the reproducer
make_inputs: Callable[..., dict[str, np.ndarray]] = _NS["make_inputs"]
EVAL_NS: dict[str, Any] = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}


def input_specs(program: Program) -> list[list[Any]]:
    return [[i.name, i.dtype, list(i.shape)] for i in program.inputs]


def _dt(name: str) -> str:
    return f"jnp.{'bool_' if name == 'bool' else name}"


# ---- undefined-behaviour checks (numpy views of the actual arguments, before the op runs) -----------
def _np(x: Any) -> np.ndarray:
    return np.asarray(x)


def _division_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    dtype = np.dtype(jnp.result_type(*args[:2]))  # JAX's promotion: a Python scalar is weak
    if dtype.kind not in "iu":
        return None
    a, b = _np(args[0]), _np(args[1])
    if attrs.get("nonzero"):
        b = np.where(b == 0, 3, b)
    if (b == 0).any():
        return C.INTEGER_DIVISION_BY_ZERO, "an integer divided by zero (XLA: an implementation defined value)"
    if dtype.kind == "i":
        aa, bb = np.broadcast_arrays(a, b)
        if ((aa == np.iinfo(dtype).min) & (bb == -1)).any():
            return UNDEFINED, "INT_MIN divided by -1 (XLA: an implementation defined value)"
    return None


def _cast_range(x: Any, dtype: str) -> tuple[str, str] | None:
    a = _np(x)
    if a.dtype.kind != "f" or dtype not in INTS:
        return None
    info = np.iinfo(dtype)
    a64 = a.astype(np.float64)
    low, high = float(info.min) - 1, float(info.max) + 1  # truncation keeps (low, high) in range
    if not np.isfinite(a64).all() or (a64 <= low).any() or (a64 >= high).any():
        return UNDEFINED, f"a float outside {dtype}'s range converted to {dtype} (implementation defined)"
    return None


def _denormal_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    if any(has_subnormal(_np(a)) for a in args if not isinstance(a, (int, float))):
        return UNDEFINED, "a subnormal argument (XLA:CPU flushes subnormals in compiled code, not when folding)"
    return None


def _bitcast_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    a = _np(args[0])
    if a.dtype.kind == "f" and np.isnan(a).any():
        return UNDEFINED, "a NaN bitcast to an integer (NaN payloads are not preserved)"
    if a.dtype.kind in "iu" and attrs["dtype"] in FLOATS:
        as_float = np.ascontiguousarray(a).reshape(-1).view(np.dtype(attrs["dtype"]))  # the bits, any width
        if has_subnormal(as_float) or np.isnan(as_float).any():
            return UNDEFINED, "an integer bitcast to a subnormal or NaN float (flushed or canonicalized)"
    return _denormal_check(args, attrs)


def _normalized(idx: np.ndarray, n: int, mode: str) -> np.ndarray:
    i = np.where(idx < 0, idx + n, idx)
    if mode == "clip":
        return np.clip(i, 0, n - 1)
    return i[(i >= 0) & (i < n)]  # "drop": out-of-range updates are dropped


def _scatter_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    if attrs["how"] != "set":
        return None
    x, idx = _np(args[0]), _np(args[1]).astype(np.int64)
    lead = attrs.get("batch", 0)  # a vmapped test: each batch element's own indices
    rows = idx.reshape((-1,) + idx.shape[lead:]) if lead else idx[None]
    n = x.shape[lead]
    for row in rows:
        i = _normalized(row.reshape(-1), n, "clip" if attrs["mode"] in ("clip", "promise_in_bounds") else "drop")
        if len(np.unique(i)) != len(i):
            return UNDEFINED, "an .at[].set with repeated indices (which update wins is implementation defined)"
    return None


# ---- the op table ------------------------------------------------------------------------------
OPS: dict[str, OpSpec] = {}


def op(name: str, sample: Callable[[Pool], Draw | None], spell: Callable[[list[str], dict[str, Any]], str],
       **kw: Any) -> None:
    OPS[name] = OpSpec(name, sample, spell, **kw)


def _py_scalar(p: Pool, dtype: str) -> int | float | bool:
    """A Python scalar of `dtype`'s kind (a weak type: jnp keeps the array's dtype)."""
    if dtype == "bool":
        return p.coin()
    if dtype in INTS:
        return p.integers(0 if dtype in UNSIGNED else -3, 4)
    return float(p.choice((0.5, 2.5, -1.5, 3.0, 0.25, -0.75)))


def _same(p: Pool, v: Value) -> str:
    """Another value of `v`'s dtype and shape (lax's binary ops take no broadcasting nor promotion), or `v`."""
    u = p.pick((v.dtype,), where=lambda w: w.shape == v.shape and w.name != v.name)
    return u.name if u is not None else v.name


def _unary_value(dtypes: tuple[str, ...], **pick: Any) -> Callable[[Pool], Draw | None]:
    return lambda p: (lambda a: Draw([a.name]) if a else None)(p.pick(dtypes, **pick))


def _lax_binary(name: str, dtypes: tuple[str, ...], **kw: Any) -> None:
    def sample(p: Pool) -> Draw | None:
        a = p.pick(dtypes)
        return Draw([a.name, _same(p, a)]) if a else None

    op(name, sample, lambda a, at: f"lax.{name}({a[0]}, {a[1]})", **kw)


for _name in ("atan2",):
    _lax_binary(_name, FLOATS, undefined=_denormal_check)
_lax_binary("sub", NUM)
_lax_binary("max", NUM)
_lax_binary("min", NUM)
_lax_binary("nextafter", FLOATS, undefined=_denormal_check, weight=0.6)
for _name in ("lt", "eq", "ne"):
    _lax_binary(_name, NUM, weight=0.4)


def _divisor(b: str, at: dict[str, Any]) -> str:
    # an integer divisor's zeros replaced in the program itself (small integer inputs hold zeros often)
    return f"jnp.where({b} == 0, 3, {b})" if at.get("nonzero") else b


def _lax_division(name: str) -> None:
    def sample(p: Pool) -> Draw | None:
        a = p.pick(NUM)
        return Draw([a.name, _same(p, a)], {"nonzero": a.dtype in INTS and p.coin(0.9)}) if a else None

    op(name, sample, lambda a, at: f"lax.{name}({a[0]}, {_divisor(a[1], at)})", undefined=_division_check)


_lax_division("rem")
_lax_division("div")


def _jnp_binary(name: str, dtypes: tuple[str, ...], divisor: bool = False, **kw: Any) -> None:
    """A jnp binary op: broadcasting, promotion, and Python scalars (weak types)."""
    def sample(p: Pool) -> Draw | None:
        a = p.pick(dtypes)
        if a is None:
            return None
        if p.coin(0.4):
            b: Any = _py_scalar(p, a.dtype) if p.coin(0.8) else float(p.choice((0.5, -2.5)))
            if divisor and b == 0:
                b = 2
        else:
            u = p.partner(a, dtypes)
            b = u.name if u is not None else _py_scalar(p, a.dtype)
        swap = not isinstance(b, str) and p.coin(0.3)
        return Draw([a.name, b], {"swap": swap, "nonzero": divisor and isinstance(b, str)})

    def spell(a: list[str], at: dict[str, Any]) -> str:
        lhs, rhs = (a[1], a[0]) if at["swap"] else (a[0], _divisor(a[1], at))
        return f"jnp.{name}({lhs}, {rhs})"

    op(name, sample, spell, undefined=_swapped_division if divisor else None, **kw)


def _swapped_division(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    a, b = (args[1], args[0]) if attrs["swap"] else (args[0], args[1])
    return _division_check([a, b], attrs)


for _name in ("add", "multiply", "subtract"):
    _jnp_binary(_name, NUM, weight=1.5)
_jnp_binary("floor_divide", NUM, divisor=True)
_jnp_binary("remainder", NUM, divisor=True)
_jnp_binary("true_divide", NUM)
_jnp_binary("maximum", NUM)
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _jnp_binary(_name, INT_OR_BOOL)
_jnp_binary("greater_equal", NUM, weight=0.5)


def _unary(name: str, dtypes: tuple[str, ...], spelled: str, **kw: Any) -> None:
    op(name, _unary_value(dtypes), lambda a, at: spelled.format(a[0]), **kw)


_unary("neg", NUM, "lax.neg({})")
_unary("abs", NUM, "lax.abs({})")
_unary("population_count", INTS, "lax.population_count({})")
_unary("bitwise_not", INT_OR_BOOL, "jnp.bitwise_not({})")
_unary("sign", NUM, "lax.sign({})", weight=0.5)
for _name in ("exp", "log1p", "tanh", "sqrt", "floor", "logistic", "erf"):
    _unary(_name, FLOATS, f"lax.{_name}({{}})", weight=0.4)


def _round(p: Pool) -> Draw | None:
    a = p.pick(FLOATS)
    return Draw([a.name], {"method": p.integers(0, 1)}) if a else None


op("round", _round, lambda a, at: f"lax.round({a[0]}, {at['method']})", weight=0.4)


def on_value(dtypes: tuple[str, ...] | None = None, min_rank: int = 0
             ) -> Callable[[Callable[[Pool, Value], Draw | None]], Callable[[Pool], Draw | None]]:
    """A sampler of an op on one value: `build(pool, value)` draws the rest (None where no value fits)."""
    def wrap(build: Callable[[Pool, Value], Draw | None]) -> Callable[[Pool], Draw | None]:
        def sample(p: Pool) -> Draw | None:
            x = p.pick(dtypes, min_rank=min_rank)
            return build(p, x) if x is not None else None

        return sample

    return wrap


def _axis_op(build: Callable[[Pool, Value, int], Draw | None], dtypes: tuple[str, ...] | None = None,
             min_rank: int = 1) -> Callable[[Pool], Draw | None]:
    return on_value(dtypes, min_rank)(lambda p, x: build(p, x, p.integers(0, x.rank - 1)))


@on_value(NUM)
def _integer_pow(p: Pool, a: Value) -> Draw | None:
    return Draw([a.name], {"y": p.integers(-2 if a.dtype in FLOATS else 0, 5)})


op("integer_pow", _integer_pow, lambda a, at: f"lax.integer_pow({a[0]}, {at['y']})")


@on_value(NUM)
def _clamp(p: Pool, a: Value) -> Draw | None:
    lo, hi = sorted((_py_scalar(p, a.dtype), _py_scalar(p, a.dtype)))
    if p.coin(0.1):
        lo, hi = hi, lo  # lo > hi: min(max(x, lo), hi), StableHLO's definition
    return Draw([a.name], {"lo": lo, "hi": hi})


op("clamp", _clamp, lambda a, at: f"lax.clamp(jnp.asarray({at['lo']!r}, {a[0]}.dtype), {a[0]}, "
   f"jnp.asarray({at['hi']!r}, {a[0]}.dtype))")


_BITS = {"float16": (5, 10), "float32": (8, 23), "float64": (11, 52)}


@on_value(FLOATS)
def _reduce_precision(p: Pool, a: Value) -> Draw | None:
    e, m = _BITS[a.dtype]
    return Draw([a.name], {"exponent_bits": p.integers(2, e), "mantissa_bits": p.integers(0, m)})


op("reduce_precision", _reduce_precision, lambda a, at: f"lax.reduce_precision({a[0]}, {at['exponent_bits']}, "
   f"{at['mantissa_bits']})", undefined=_denormal_check, weight=0.6)


def _shift(name: str) -> None:
    def sample(p: Pool) -> Draw | None:
        a = p.pick(INTS)
        if a is None:
            return None
        u = p.pick((a.dtype,), where=lambda w: w.shape == a.shape)
        if u is not None and p.coin(0.5):
            return Draw([a.name, u.name], {"masked": WIDTH[a.dtype] - 1})  # amounts from data, within the width
        # a constant amount, sometimes the width or past it (XLA defines those: 0, or the sign)
        return Draw([a.name], {"amount": p.integers(0, WIDTH[a.dtype] + 2)})

    def spell(a: list[str], at: dict[str, Any]) -> str:
        if "masked" in at:
            return f"lax.{name}({a[0]}, {a[1]} & {at['masked']})"
        return f"lax.{name}({a[0]}, jnp.full_like({a[0]}, {at['amount']}))"

    op(name, sample, spell)


for _name in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
    _shift(_name)


def _cum(name: str, dtypes: tuple[str, ...]) -> None:
    op(name, _axis_op(lambda p, x, ax: Draw([x.name], {"axis": ax, "reverse": p.coin(0.3)}), dtypes),
       lambda a, at: f"lax.{name}({a[0]}, axis={at['axis']}, reverse={at['reverse']})")


_cum("cumsum", NUM)
_cum("cumprod", NUM)
_cum("cummax", NUM)
_cum("cummin", NUM)
_cum("cumlogsumexp", FLOATS)


@on_value(NUM + ("bool",), min_rank=1)
def _sort(p: Pool, x: Value) -> Draw | None:
    others = [v.name for v in p.values.values() if v.shape == x.shape and v.name != x.name][:2]
    operands = [x.name, *others[:p.integers(0, len(others))]]
    return Draw(operands, {"dimension": p.integers(0, x.rank - 1), "num_keys": p.integers(1, len(operands)),
                           "which": p.integers(0, len(operands) - 1)})


# stable: ties among the keys keep their order (an unstable sort of several operands is not deterministic)
op("sort", _sort, lambda a, at: f"lax.sort(({', '.join(a)},), dimension={at['dimension']}, is_stable=True, "
   f"num_keys={at['num_keys']})[{at['which']}]", weight=1.5)
op("argsort", _axis_op(lambda p, x, ax: Draw([x.name], {"axis": ax, "descending": p.coin()}), NUM),
   lambda a, at: f"jnp.argsort({a[0]}, axis={at['axis']}, stable=True, descending={at['descending']})")


@on_value(NUM, min_rank=1)
def _top_k(p: Pool, x: Value) -> Draw | None:
    return Draw([x.name], {"k": p.integers(1, x.shape[-1]), "which": p.integers(0, 1)})


# ties: the lower index first (lax.top_k's documented order)
op("top_k", _top_k, lambda a, at: f"lax.top_k({a[0]}, {at['k']})[{at['which']}]")


def _starts(p: Pool, x: Value, sizes: list[int]) -> dict[str, Any]:
    """Start indices, some past either end (JAX clamps them into range), some read from an integer value."""
    starts = [p.integers(-2, d - s + 2) for d, s in zip(x.shape, sizes)]
    src = p.pick(INTS, min_rank=0)
    return {"starts": starts, "from": src.name if src is not None and p.coin(0.4) else None}


def _spell_starts(at: dict[str, Any]) -> str:
    if at["from"]:
        return "(" + "".join(f"{at['from']}.reshape(-1)[0].astype(jnp.int32) + {s}, " for s in at["starts"]) + ")"
    return repr(tuple(at["starts"]))


@on_value(ANY, min_rank=1)
def _dynamic_slice(p: Pool, x: Value) -> Draw | None:
    sizes = [p.integers(1, d) for d in x.shape]
    at = {"sizes": sizes, **_starts(p, x, sizes)}
    return Draw([x.name, at["from"]] if at["from"] else [x.name], at)


op("dynamic_slice", _dynamic_slice, lambda a, at: f"lax.dynamic_slice({a[0]}, {_spell_starts(at)}, "
   f"{tuple(at['sizes'])!r})")


@on_value(ANY, min_rank=1)
def _dynamic_update_slice(p: Pool, x: Value) -> Draw | None:
    u = p.pick((x.dtype,), where=lambda w: w.rank == x.rank and all(a <= b for a, b in zip(w.shape, x.shape)))
    if u is None:
        return None
    at = _starts(p, x, list(u.shape))
    return Draw([x.name, u.name, at["from"]] if at["from"] else [x.name, u.name], at)


op("dynamic_update_slice", _dynamic_update_slice,
   lambda a, at: f"lax.dynamic_update_slice({a[0]}, {a[1]}, {_spell_starts(at)})")


@on_value(ANY, min_rank=1)
def _pad(p: Pool, x: Value) -> Draw | None:
    cfg = [(p.integers(-2, 2), p.integers(-2, 2), p.integers(0, 2) if p.coin(0.4) else 0) for _ in x.shape]
    return Draw([x.name], {"config": cfg, "value": _py_scalar(p, x.dtype)})


op("pad", _pad, lambda a, at: f"lax.pad({a[0]}, jnp.asarray({at['value']!r}, {a[0]}.dtype), "
   f"{[tuple(c) for c in at['config']]!r})")


@on_value(NUM, min_rank=1)
def _dot_general(p: Pool, a: Value) -> Draw | None:
    b = _same(p, a)
    axes = list(range(a.rank))
    p.rng.shuffle(axes)
    n_batch = p.integers(0, max(0, a.rank - 1))
    batch = sorted(axes[:n_batch])
    contract = sorted(axes[n_batch:n_batch + p.integers(0 if a.rank - n_batch > 1 else 1, a.rank - n_batch)])
    pref = p.choice((None, None, "float32", "int32" if a.dtype in INTS else "float64"))
    return Draw([a.name, b], {"contract": contract, "batch": batch, "preferred": pref})


def _spell_dot(a: list[str], at: dict[str, Any]) -> str:
    c, b = tuple(at["contract"]), tuple(at["batch"])
    pref = f", preferred_element_type={_dt(at['preferred'])}" if at["preferred"] else ""
    return f"lax.dot_general({a[0]}, {a[1]}, (({c!r}, {c!r}), ({b!r}, {b!r})){pref})"


op("dot_general", _dot_general, _spell_dot)


@on_value(ANY)
def _select_n(p: Pool, x: Value) -> Draw | None:
    cases = [x.name, *[v.name for v in p.values.values() if v.dtype == x.dtype and v.shape == x.shape
                       and v.name != x.name][:2]]
    which = p.pick(("bool",) if len(cases) == 2 else INTS, where=lambda w: w.shape == x.shape)
    if which is None or len(cases) < 2:
        return None
    return Draw([which.name, *cases], {"n": len(cases)})


# an integer selector clipped into [0, n): out of range is implementation defined
op("select_n", _select_n, lambda a, at: f"lax.select_n({a[0]}, {', '.join(a[1:])})" if at["n"] == 2 else
   f"lax.select_n(jnp.clip({a[0]}, 0, {at['n'] - 1}).astype(jnp.int32), {', '.join(a[1:])})")


@on_value(NUM)
def _bitcast(p: Pool, x: Value) -> Draw | None:
    same_width = [d for d in NUM if WIDTH[d] == WIDTH[x.dtype] and d != x.dtype]
    # another width: a narrower type adds a last axis of width ratio, a wider one takes that axis away
    other = [d for d in NUM if WIDTH[d] < WIDTH[x.dtype]
             or (WIDTH[d] > WIDTH[x.dtype] and x.rank and x.shape[-1] == WIDTH[d] // WIDTH[x.dtype])]
    if other and p.coin(0.4):
        return Draw([x.name], {"dtype": p.choice(other)})
    return Draw([x.name], {"dtype": p.choice(same_width)}) if same_width else None


op("bitcast_convert_type", _bitcast, lambda a, at: f"lax.bitcast_convert_type({a[0]}, {_dt(at['dtype'])})",
   undefined=_bitcast_check, weight=0.6)


def _convert(p: Pool) -> Draw | None:
    x = p.pick()
    return Draw([x.name], {"dtype": p.choice(ANY)}) if x else None


op("astype", _convert, lambda a, at: f"{a[0]}.astype({_dt(at['dtype'])})",
   undefined=lambda args, at: _cast_range(args[0], at["dtype"]))


def _axes(p: Pool, x: Value) -> list[int]:
    return sorted({p.integers(0, x.rank - 1) for _ in range(p.integers(1, x.rank))})


_REDUCERS = {"sum": NUM, "prod": NUM, "max": NUM, "min": NUM, "and": INT_OR_BOOL, "or": INT_OR_BOOL,
             "xor": INT_OR_BOOL}


def _lax_reduce(p: Pool) -> Draw | None:
    kind = p.choice(tuple(_REDUCERS))
    x = p.pick(_REDUCERS[kind], min_rank=1)
    return Draw([x.name], {"kind": kind, "axes": _axes(p, x)}) if x else None


op("reduce", _lax_reduce, lambda a, at: f"lax.reduce_{at['kind']}({a[0]}, {tuple(at['axes'])!r})")

# lax.reduce with its computation's identity as the init value (XLA may apply the init any number of times)
_IDENTITY = {"add": "0", "mul": "1", "max": "-jnp.inf if {x}.dtype.kind == 'f' else jnp.iinfo({x}.dtype).min",
             "min": "jnp.inf if {x}.dtype.kind == 'f' else jnp.iinfo({x}.dtype).max"}


def _custom_reduce(p: Pool) -> Draw | None:
    x = p.pick(NUM, min_rank=1)
    return Draw([x.name], {"computation": p.choice(tuple(_IDENTITY)), "axes": _axes(p, x)}) if x else None


op("reduce_with_identity", _custom_reduce,
   lambda a, at: f"lax.reduce({a[0]}, jnp.asarray({_IDENTITY[at['computation']].format(x=a[0])}, {a[0]}.dtype), "
   f"lax.{at['computation']}, {tuple(at['axes'])!r})")


def _cond_reduce(p: Pool) -> Draw | None:
    x = p.pick(NUM, min_rank=1)
    return Draw([x.name], {"computation": p.choice(("max", "min")), "axes": _axes(p, x)}) if x else None


def _spell_cond_reduce(a: list[str], at: dict[str, Any]) -> str:
    keep = ">=" if at["computation"] == "max" else "<="
    return (f"lax.reduce({a[0]}, jnp.asarray({_IDENTITY[at['computation']].format(x=a[0])}, {a[0]}.dtype), "
            f"lambda a, b: lax.cond((a {keep} b) | (a != a), lambda: a, lambda: b), {tuple(at['axes'])!r})")


# max (min) as a reduction computation that branches (lax.cond inside the reducer; a NaN operand wins, so it is
# commutative and associative like lax.max and XLA may apply it in any order): XLA cannot run a conditional inside
# a reducer and turns it into a select (conditional-to-select)
op("reduce_by_cond", _cond_reduce, _spell_cond_reduce, weight=0.8)


@on_value(NUM + ("bool",), min_rank=1)
def _jnp_reduce(p: Pool, x: Value) -> Draw | None:
    return Draw([x.name], {"fn": p.choice(("sum", "prod", "mean", "max")), "axis": p.integers(0, x.rank - 1),
                           "keepdims": p.coin(0.3)})


op("jnp_reduce", _jnp_reduce, lambda a, at: f"jnp.{at['fn']}({a[0]}, axis={at['axis']}, keepdims={at['keepdims']})",
   weight=0.6)


@on_value(NUM)
def _where(p: Pool, x: Value) -> Draw | None:
    cond = p.pick(("bool",), where=lambda w: len(w.shape) <= x.rank)
    other: Any = _py_scalar(p, x.dtype) if p.coin(0.6) else float(p.choice((0.5, -1.5)))
    return Draw([x.name, cond.name if cond else x.name, other], {"compare": cond is None, "swap": p.coin(0.3)})


def _spell_where(a: list[str], at: dict[str, Any]) -> str:
    cond = f"({a[1]} > 0)" if at["compare"] else a[1]
    return f"jnp.where({cond}, {a[2]}, {a[0]})" if at["swap"] else f"jnp.where({cond}, {a[0]}, {a[2]})"


op("where", _where, _spell_where, weight=1.2)


def _index_value(p: Pool, x: Value) -> Value | None:
    return p.pick(("int8", "int16", "int32", "int64", "uint8"), max_rank=2, where=lambda w: 0 < np.prod(w.shape) <= 64)


@on_value(ANY, min_rank=1)
def _take(p: Pool, x: Value) -> Draw | None:
    idx = _index_value(p, x)
    if idx is None:
        return None
    return Draw([x.name, idx.name], {"axis": p.integers(0, x.rank - 1),
                                     "mode": p.choice(("clip", "fill", "wrap", "promise_in_bounds"))})


def _in_bounds(idx: str, x: str, axis: int, at: dict[str, Any]) -> str:
    # promise_in_bounds only where the indices are in bounds: out of range it is implementation defined
    return f"jnp.clip({idx}, 0, {x}.shape[{axis}] - 1)" if at["mode"] == "promise_in_bounds" else idx


op("take", _take, lambda a, at: f"jnp.take({a[0]}, {_in_bounds(a[1], a[0], at['axis'], at)}, axis={at['axis']}, "
   f"mode={at['mode']!r})")


@on_value(ANY, min_rank=1)
def _at(p: Pool, x: Value) -> Draw | None:
    idx = _index_value(p, x)
    if idx is None:
        return None
    how = p.choice(("set", "add", "min", "max") if x.dtype != "bool" else ("set", "max", "min"))
    upd = p.pick((x.dtype,), where=lambda w: w.shape == x.shape[1:] and w.rank > 0)
    return Draw([x.name, idx.name, upd.name if upd is not None and p.coin(0.5) else _py_scalar(p, x.dtype)],
                {"how": how, "mode": p.choice(("clip", "drop", "promise_in_bounds"))})


op("at", _at, lambda a, at: f"{a[0]}.at[{_in_bounds(a[1], a[0], 0, at)}].{at['how']}({a[2]}, mode={at['mode']!r})",
   undefined=_scatter_check, weight=1.5)


@on_value(ANY, min_rank=1)
def _slice(p: Pool, x: Value) -> Draw | None:
    start = [p.integers(0, d - 1) for d in x.shape]
    limit = [p.integers(s + 1, d) for s, d in zip(start, x.shape)]
    return Draw([x.name], {"start": start, "limit": limit, "strides": [p.integers(1, 3) for _ in x.shape]})


op("slice", _slice, lambda a, at: f"lax.slice({a[0]}, {tuple(at['start'])!r}, {tuple(at['limit'])!r}, "
   f"{tuple(at['strides'])!r})")


def _transpose(p: Pool) -> Draw | None:
    x = p.pick(ANY, min_rank=2)
    return Draw([x.name], {"perm": [int(k) for k in p.rng.permutation(x.rank)]}) if x else None


op("transpose", _transpose, lambda a, at: f"lax.transpose({a[0]}, {tuple(at['perm'])!r})")
op("rev", _axis_op(lambda p, x, ax: Draw([x.name], {"dims": _axes(p, x)}), ANY),
   lambda a, at: f"lax.rev({a[0]}, {tuple(at['dims'])!r})", weight=0.5)
op("reshape", _unary_value(ANY, min_rank=1), lambda a, at: f"{a[0]}.reshape(-1)", weight=0.5)
op("concatenate", _axis_op(lambda p, x, ax: Draw([x.name, _same(p, x)], {"axis": ax}), ANY),
   lambda a, at: f"lax.concatenate([{a[0]}, {a[1]}], {at['axis']})", weight=0.5)


# ---- linear algebra, pooling, random numbers (what users' JAX programs hold beside lax's elementwise ops) ----
# On CPU, jax lowers cholesky, qr, eigh and lu to LAPACK calls; triangular_solve goes to LAPACK in float32 and
# float64 and to XLA's own TriangularSolve (triangular_solve_expander) in float16. A solve's accuracy is its
# matrix's conditioning times its dtype's rounding: past `COND_LIMIT` the test is an unknown (the guard). Alone, jit
# and eager solved 150 random systems (float16, float32; condition numbers up to 1e4) to the same bits: the limits
# bound how far a preceding statement's legal rounding difference (its dtype's tolerance) is amplified.
COND_LIMIT = {"float16": 20.0, "float32": 1e3, "float64": 1e8}


def _solve_operands(p: Pool) -> tuple[Value, Value] | None:
    """A matrix value (rank 2 or more) and a right-hand side of its dtype and batch shape (or itself)."""
    a = p.pick(FLOATS, min_rank=2, max_rank=4)
    if a is None:
        return None
    b = p.pick((a.dtype,), where=lambda v: v.rank == a.rank and v.shape[:-2] == a.shape[:-2] and v.name != a.name)
    return a, b if b is not None else a


def _triangular_solve(p: Pool) -> Draw | None:
    made = _solve_operands(p)
    if made is None:
        return None
    a, b = made
    n, left = min(a.shape[-2:]), p.coin()
    if b.shape[-2 if left else -1] < n:
        b = a
    return Draw([a.name, b.name], {"n": n, "left": left, "lower": p.coin(), "transpose": p.coin(0.3),
                                   "unit": p.coin(0.2), "shift": p.choice((0.0, 4.0, 8.0)),
                                   "half": a.dtype != "float16" and p.coin(0.5)})


def _solve_matrix(a: str, at: dict[str, Any]) -> str:
    """The square matrix a solve reads: `a`'s leading n x n block, plus a multiple of the identity where the
    statement adds one (the jitter users add to keep a solve well conditioned), in float16 with `half`."""
    m = f"{a}[..., :{at['n']}, :{at['n']}]"
    if at["shift"]:
        m = f"({m} + {at['shift']!r} * jnp.eye({at['n']}, dtype={a}.dtype))"
    return f"{m}.astype(jnp.float16)" if at["half"] else m


def _spell_triangular_solve(a: list[str], at: dict[str, Any]) -> str:
    n = at["n"]
    rhs = f"{a[1]}[..., :{n}, :]" if at["left"] else f"{a[1]}[..., :, :{n}]"
    rhs = f"{rhs}.astype(jnp.float16)" if at["half"] else rhs
    return (f"lax.linalg.triangular_solve({_solve_matrix(a[0], at)}, {rhs}, left_side={at['left']}, "
            f"lower={at['lower']}, transpose_a={at['transpose']}, unit_diagonal={at['unit']})")


def _conditioning(matrix: np.ndarray, dtype: str, what: str) -> tuple[str, str] | None:
    """An unknown where a float64 copy of the matrix a solve reads is ill conditioned for `dtype` (or not finite)."""
    if not np.isfinite(matrix).all():
        return C.ILL_CONDITIONED_OUTPUT, f"{what}: a NaN or infinite entry"
    with np.errstate(all="ignore"):
        cond = float(np.max(np.linalg.cond(matrix)))
    if not np.isfinite(cond) or cond > COND_LIMIT[dtype]:
        return C.ILL_CONDITIONED_OUTPUT, (f"{what}: condition number {cond:.3g} > {COND_LIMIT[dtype]:g}, "
                                          f"where {dtype} rounding alone moves the solution past the tolerance")
    return None


def _triangular_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    n, a = attrs["n"], _np(args[0])
    m = a[..., :n, :n].astype(np.float64) + attrs["shift"] * np.eye(n)
    if attrs["half"]:
        m = m.astype(np.float16).astype(np.float64)
    m = np.tril(m) if attrs["lower"] else np.triu(m)
    if attrs["unit"]:
        m = m - m * np.eye(n) + np.eye(n)
    return _conditioning(m, "float16" if attrs["half"] else str(a.dtype), "triangular_solve's matrix")


op("triangular_solve", _triangular_solve, _spell_triangular_solve, undefined=_triangular_check, weight=1.0)


def _window(p: Pool, x: Value) -> dict[str, Any]:
    """A pooling window over every axis (sizes up to 3, strides 1 or 2), padding VALID, SAME or explicit."""
    pad: Any = p.choice(("VALID", "SAME", "explicit"))
    if pad == "explicit":
        pad = [(p.integers(0, 1), p.integers(0, 1)) for _ in x.shape]
    return {"dims": [p.integers(1, min(d, 3)) for d in x.shape], "strides": [p.integers(1, 2) for _ in x.shape],
            "padding": pad}


def _spell_window(x: str, at: dict[str, Any], kind: str) -> str:
    # a constant (numpy) identity: jax then knows the pooling and differentiates it (a traced one it cannot)
    init = {"max": f"-np.inf if {x}.dtype.kind == 'f' else np.iinfo({x}.dtype).min",
            "min": f"np.inf if {x}.dtype.kind == 'f' else np.iinfo({x}.dtype).max", "add": "0"}[kind]
    pad = at["padding"] if isinstance(at["padding"], str) else [tuple(q) for q in at["padding"]]
    return (f"lax.reduce_window({x}, np.array({init}, {x}.dtype), lax.{kind}, {tuple(at['dims'])!r}, "
            f"{tuple(at['strides'])!r}, {pad!r})")


@on_value(NUM, min_rank=1)
def _pool(p: Pool, x: Value) -> Draw | None:
    return Draw([x.name], {"kind": p.choice(("max", "min", "add")), **_window(p, x)})


# pooling: a window reduction with its computation's identity (lax.reduce_window; jax differentiates max, min, add)
op("reduce_window", _pool, lambda a, at: _spell_window(a[0], at, at["kind"]), weight=1.0)


@on_value(FLOATS, min_rank=1)
def _pool_grad(p: Pool, x: Value) -> Draw | None:
    return Draw([x.name], {"kind": p.choice(("max", "min")), **_window(p, x)})


# the gradient of max (min) pooling: a select-and-scatter of the window's chosen element (JAX picks the first of
# equal ones), what a pooling layer's backward pass computes
op("pool_grad", _pool_grad, lambda a, at: f"jax.grad(lambda t: jnp.sum(jnp.square({_spell_window('t', at, at['kind'])})))"
   f"({a[0]})", weight=1.0)


RANDOM_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")  # rbg draws with lax.rng_bit_generator


def _random(p: Pool) -> Draw | None:
    kind = p.choice(("uniform", "normal", "bits", "dropout"))
    x = p.pick(FLOATS if kind == "dropout" else None)
    if x is None:
        return None
    data = p.pick(INTS)
    at = {"kind": kind, "impl": p.choice(RANDOM_IMPLS), "seed": p.integers(0, 1 << 16),
          "dtype": p.choice(("uint8", "uint32", "uint64") if kind == "bits" else FLOATS),
          "fold": data is not None and p.coin(0.5)}
    return Draw([x.name, data.name] if at["fold"] else [x.name], at)


def _spell_random(a: list[str], at: dict[str, Any]) -> str:
    key = f"jax.random.key({at['seed']}, impl={at['impl']!r})"
    if at["fold"]:  # a key that depends on the data: jax.random.fold_in of an integer read from a value
        key = f"jax.random.fold_in({key}, {a[1]}.reshape(-1)[0].astype(jnp.uint32))"
    if at["kind"] == "dropout":
        return f"jnp.where(jax.random.bernoulli({key}, 0.75, {a[0]}.shape), {a[0]} / 0.75, jnp.zeros_like({a[0]}))"
    if at["kind"] == "bits":
        return f"jax.random.bits({key}, {a[0]}.shape, dtype={_dt(at['dtype'])})"
    extra = ", minval=-2.0, maxval=2.0" if at["kind"] == "uniform" else ""
    return f"jax.random.{at['kind']}({key}, {a[0]}.shape, dtype={_dt(at['dtype'])}{extra})"


# random numbers from an explicit key (a value's shape; dropout of a value): the same key gives the same numbers
# eagerly and compiled, whatever the implementation
op("random", _random, _spell_random, weight=1.0)


def _rng_uniform(p: Pool) -> Draw | None:
    x = p.pick()
    if x is None:
        return None
    lo = p.integers(-4, 2)
    return Draw([x.name], {"dtype": p.choice(("float32", "float64", "int32", "int64")), "lo": lo,
                           "hi": lo + p.integers(1, 6)})


def _spell_rng_uniform(a: list[str], at: dict[str, Any]) -> str:
    lo, hi = f"jnp.asarray({at['lo']}, {_dt(at['dtype'])})", f"jnp.asarray({at['hi']}, {_dt(at['dtype'])})"
    return f"jnp.sum((lambda r: (r < {lo}) | (r >= {hi}))(lax.rng_uniform({lo}, {hi}, {a[0]}.shape))).astype(jnp.int32)"


# lax.rng_uniform is stateful: its numbers differ from call to call (eager and compiled alike), so the statement
# states its documented property instead, the count of draws outside [lo, hi): 0 (XLA's rng-expander makes them)
op("rng_uniform", _rng_uniform, _spell_rng_uniform, weight=0.3)


def _barrier(p: Pool) -> Draw | None:
    x = p.pick()
    if x is None:
        return None
    y = p.pick(where=lambda v: v.name != x.name)
    return Draw([x.name, y.name] if y is not None and p.coin() else [x.name], {"which": p.integers(0, 1)})


# an identity the optimizer may not look through (what jax.checkpoint puts around a rematerialized value)
op("optimization_barrier", _barrier, lambda a, at: f"lax.optimization_barrier(({', '.join(a)},))"
   f"[{min(at['which'], len(a) - 1)}]", weight=0.5)


# bfloat16 activations: a value rounded to bfloat16 (round to nearest even), then an op exact on bfloat16 values
# (relu, max/min of two, neg, abs), cast back. XLA:CPU computes bfloat16 in float32 (float-normalization-bf16) and
# by default may drop a bfloat16 rounding of a float32 result (xla_allow_excess_precision); these ops round nothing
# more, so compiled and eager agree exactly. Their tangents and cotangents (float32 values rounded to bfloat16 on
# the way through) would not: a program with one is not differentiated (`ROUNDED_DERIVATIVES`).
BF16_OPS = {"relu": "jnp.maximum({a}, 0)", "maximum": "jnp.maximum({a}, {b})", "minimum": "jnp.minimum({a}, {b})",
            "neg": "-{a}", "abs": "jnp.abs({a})"}


@on_value(FLOATS)
def _bf16(p: Pool, x: Value) -> Draw | None:
    fn = p.choice(tuple(BF16_OPS))
    if fn in ("maximum", "minimum"):
        return Draw([x.name, _same(p, x)], {"fn": fn})
    return Draw([x.name], {"fn": fn})


def _spell_bf16(a: list[str], at: dict[str, Any]) -> str:
    half = [f"{v}.astype(jnp.bfloat16)" for v in a]
    return f"{BF16_OPS[at['fn']].format(a=half[0], b=half[-1])}.astype({a[0]}.dtype)"


op("bf16", _bf16, _spell_bf16, weight=0.6)

# The narrower storage types jax has on CPU (ml_dtypes' float8s, float4_e2m1fn, int4, uint4): XLA:CPU computes none of
# them natively and its pipeline holds one float-normalization pass per type (to float16/float32, int8) plus
# sub-byte-size-setter for the 4-bit ones. As for bfloat16: a value clipped into the type's finite range, converted,
# an op exact on the type's values (max/min, relu; neg and abs for the signed floats), converted back. Rounding is
# monotone and symmetric, so these ops commute with it: a compile that keeps excess precision (converts the result
# once) agrees with eager bit for bit. float8_e8m0fnu (powers of two, no sign, no zero) takes |x| clipped into
# [2^-10, 2^10]; int4 and uint4 take integers (or floats, truncated) clipped into their range. Undefined (guarded):
# NaN into a type without NaN (float4_e2m1fn, int4, uint4); a subnormal argument (flushed in compiled code only).
LOW_FLOATS = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz",
              "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn")
LOW_INTS = ("int4", "uint4")
LOW_OPS = {"relu": "jnp.maximum({a}, 0)", "maximum": "jnp.maximum({a}, {b})", "minimum": "jnp.minimum({a}, {b})",
           "neg": "-{a}", "abs": "jnp.abs({a})"}
_NO_NAN = ("float4_e2m1fn", *LOW_INTS)


def _low_bounds(dtype: str, x: Value) -> tuple[float, float]:
    """The clip a value goes through before it is converted to `dtype` (inside the type's finite range)."""
    if dtype == "float8_e8m0fnu":
        return 2.0 ** -10, 2.0 ** 10
    if dtype in LOW_INTS:
        lo, hi = (-8, 7) if dtype == "int4" else (0, 15)
        return (max(lo, 0), hi) if x.dtype in UNSIGNED else (lo, hi)
    top = float(jnp.finfo(getattr(jnp, dtype)).max)
    return -top, top


def _low_precision(p: Pool) -> Draw | None:
    dtype = p.choice(LOW_FLOATS + LOW_INTS)
    x = p.pick(NUM if dtype in LOW_INTS else FLOATS)
    if x is None:
        return None
    fns = (("maximum", "minimum", "relu") if dtype in LOW_INTS else ("maximum", "minimum", "abs")
           if dtype == "float8_e8m0fnu" else tuple(LOW_OPS))
    fn = p.choice(fns)
    lo, hi = _low_bounds(dtype, x)
    return Draw([x.name, _same(p, x)] if fn in ("maximum", "minimum") else [x.name],
                {"dtype": dtype, "fn": fn, "lo": lo, "hi": hi})


def _spell_low_precision(a: list[str], at: dict[str, Any]) -> str:
    lo, hi = (int(at["lo"]), int(at["hi"])) if at["dtype"] in LOW_INTS else (at["lo"], at["hi"])
    rounded = [f"jnp.clip({'jnp.abs(' + v + ')' if at['dtype'] == 'float8_e8m0fnu' else v}, {lo!r}, {hi!r})"
               f".astype({_dt(at['dtype'])})" for v in a]
    return f"{LOW_OPS[at['fn']].format(a=rounded[0], b=rounded[-1])}.astype({a[0]}.dtype)"


def _low_precision_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    if attrs["dtype"] in _NO_NAN and any(_np(a).dtype.kind == "f" and np.isnan(_np(a)).any() for a in args):
        return UNDEFINED, f"a NaN converted to {attrs['dtype']}, which has none (implementation defined)"
    return _denormal_check(args, attrs)


op("low_precision", _low_precision, _spell_low_precision, undefined=_low_precision_check, weight=5.0)
# ops whose jvp/grad XLA may compute without their bfloat16 (float8, ...) rounding
ROUNDED_DERIVATIVES = ("bf16", "low_precision")


# ---- regions (programs/core.py's bodies; emitted as nested functions) -------------------------------
# A branch takes what it captures as its operands (lax.cond/switch pass them); a loop's body closes over
# them. Trip counts are bounded (MAX_TRIPS) so every loop terminates; a computed count is clipped into
# [0, MAX_TRIPS]. Undefined behaviour inside a body is checked on the values of each trip (`checked_run`).
MAX_TRIPS = 4


def _predicate(x: str, at: dict[str, Any]) -> str:
    """A scalar bool computed from a value: more than `k` of its elements are positive."""
    return f"jnp.sum({x} > 0) > {at['k']}"


def _trips(x: str, at: dict[str, Any]) -> str:
    """A trip count computed from a value (its positive elements), clipped into [0, MAX_TRIPS]."""
    return f"jnp.clip(jnp.sum({x} > 0) - {at['offset']}, 0, {MAX_TRIPS}).astype(jnp.int32)"


def _branches(p: Pool, n: int) -> tuple[list[Any], list[Value]] | None:
    """`n` bodies returning values of the same types (the first's); each takes every value any captures."""
    first = p.body([], p.integers(1, 3), n_results=p.integers(1, 2))
    if first is None:
        return None
    bodies, results = [first[0]], first[1]
    need = [(v.dtype, v.shape) for v in results]
    for _ in range(n - 1):
        other = _retried(lambda outer: p.body([], p.integers(1, 4), need, outer=outer))
        if other is None:
            return None
        bodies.append(other[0])
    core.pass_captured(bodies)
    return bodies, results


def _cond(p: Pool) -> Draw | None:
    x = p.pick(NUM + ("bool",))
    made = _branches(p, 2) if x is not None else None
    if made is None:
        return None
    bodies, results = made
    return Draw([x.name, *bodies[0].params], {"k": p.integers(0, int(np.prod(x.shape)) // 2)}, bodies, len(results))


def _operands(a: list[str]) -> str:
    return "".join(f", {o}" for o in a)


op("cond", _cond, lambda a, at: f"lax.cond({_predicate(a[0], at)}, {at['fns'][0]}, {at['fns'][1]}{_operands(a[1:])})",
   roles=("true", "false"),
   trip=lambda s, k: s.args[1:], weight=1.2)


def _switch(p: Pool) -> Draw | None:
    x = p.pick(NUM + ("bool",))
    made = _branches(p, p.integers(2, 3)) if x is not None else None
    if made is None:
        return None
    bodies, results = made
    return Draw([x.name, *bodies[0].params], {"offset": p.integers(0, 2)}, bodies, len(results))


# an index out of range is clamped (lax.switch's documented semantics): the offset makes both ends happen
op("switch", _switch, lambda a, at: f"lax.switch(jnp.sum({a[0]} > 0) - {at['offset']}, [{', '.join(at['fns'])}]"
   f"{_operands(a[1:])})", trip=lambda s, k: s.args[1:], weight=0.8)


BRANCHING = ("cond", "switch")  # regions whose bodies are alternatives (a planted fault reverses them)


def _carry(p: Pool) -> list[Value]:
    first = p.pick(ANY)
    if first is None:
        return []
    second = p.pick(ANY) if p.coin(0.4) else None
    return [first, *([second] if second is not None and second.name != first.name else [])]


def _step(p: Pool, carry: list[Value], index: bool = False) -> tuple[Any, list[Value]] | None:
    """A loop body: parameters like the carry (after an int32 index), its results of the carry's types."""
    params = ([Value(p.fresh(), "int32", ())] if index else []) + [Value(p.fresh(), v.dtype, v.shape) for v in carry]
    return _retried(lambda outer: p.body(params, p.integers(1, 3), [(v.dtype, v.shape) for v in carry],
                                         outer=outer))


def _retried(make: Callable[[bool], Any]) -> Any:
    """A body of the types needed: three tries, the last of which may return a parameter or a captured value."""
    return next((b for b in (make(outer) for outer in (False, False, True)) if b is not None), None)


def _carried(a: list[str]) -> str:
    return "(" + "".join(f"{x}, " for x in a).rstrip() + ")"


def _while_loop(p: Pool) -> Draw | None:
    x, carry = p.pick(NUM + ("bool",)), _carry(p)
    made = _step(p, carry) if x is not None and carry else None
    if made is None:
        return None
    return Draw([x.name, *(v.name for v in carry)], {"offset": p.integers(-1, 2)}, [made[0]], len(carry))


# the trip count is computed from data (bounded); the step counter rides in the carry in front of the body's values
op("while_loop", _while_loop, lambda a, at: f"lax.while_loop(lambda c: c[0] < {_trips(a[0], at)}, lambda c: "
   f"(c[0] + 1, *{at['fns'][0]}(*c[1:])), (jnp.int32(0), {''.join(x + ', ' for x in a[1:]).rstrip()}))[1:]",
   roles=("body",), trip=lambda s, k: s.args[1:], weight=1.0, differentiable=False)


def _fori_loop(p: Pool) -> Draw | None:
    carry = _carry(p)
    made = _step(p, carry, index=True) if carry else None
    if made is None:
        return None
    lo = p.integers(0, 2)
    at = {"lo": lo, "hi": lo + p.integers(0, MAX_TRIPS - 1), "traced": False}
    x = p.pick(NUM + ("bool",))
    if x is not None and p.coin(0.5):  # a traced upper bound (args[0]): XLA gets a while loop instead of a scan
        at.update(traced=True, offset=p.integers(-1, 2))
    return Draw([*([x.name] if at["traced"] else []), *(v.name for v in carry)], at, [made[0]], len(carry))


def _spell_fori(a: list[str], at: dict[str, Any]) -> str:
    hi = f"{at['lo']} + {_trips(a[0], at)}" if at["traced"] else str(at["hi"])
    return (f"lax.fori_loop({at['lo']}, {hi}, lambda i, c: {at['fns'][0]}(jnp.asarray(i, jnp.int32), *c), "
            f"{_carried(a[1:] if at['traced'] else a)})")


# static bounds (Python ints) lower to a scan, a traced bound to a while loop
op("fori_loop", _fori_loop, _spell_fori, roles=("body",), weight=1.0, differentiable=lambda at: not at["traced"],
   trip=lambda s, k: [s.attrs["lo"], *s.args[1 if s.attrs["traced"] else 0:]])


def _scan(p: Pool) -> Draw | None:
    carry = _carry(p)
    xs = p.pick(ANY, min_rank=1, where=lambda v: v.shape[0] <= 6)
    if not carry or xs is None:
        return None
    params = [Value(p.fresh(), v.dtype, v.shape) for v in carry] + [Value(p.fresh(), xs.dtype, xs.shape[1:])]
    made = _retried(lambda outer: p.body(params, p.integers(1, 3), [(v.dtype, v.shape) for v in carry],
                                         n_results=1, outer=outer))
    if made is None or len(made[1]) == len(carry):
        return None
    n = len(carry)
    return Draw([*(v.name for v in carry), xs.name], {"n_carry": n, "reverse": p.coin(0.3),
                                                     "unroll": p.choice((1, 1, 2, True))},
                [made[0]], len(made[1]))


def _spell_scan(a: list[str], at: dict[str, Any]) -> str:
    n = at["n_carry"]
    return (f"lax.scan(lambda c, x: (lambda r: (r[:{n}], r[{n}:]))({at['fns'][0]}(*c, x)), {_carried(a[:n])}, "
            f"{a[n]}, reverse={at['reverse']}, unroll={at['unroll']})")


# results: the final carry, then the body's other results stacked along a new leading axis
op("scan", _scan, _spell_scan, roles=("body",), weight=1.0,
   unpack=lambda outs, at: f"{_carried(outs[:at['n_carry']])}, {_carried(outs[at['n_carry']:])}")


# ---- type inference ----------------------------------------------------------------------------
def _spell(stmt: Stmt, ops: dict[str, OpSpec] = OPS) -> str:
    from dlcfuzz.lower.pysource.codegen import literal

    return ops[stmt.op].spell([a if isinstance(a, str) else literal(a) for a in stmt.args], stmt.attrs)


def _stmt_fn(stmt: Stmt) -> Callable[[dict[str, Any]], Any]:
    """The statement as a function of the values it reads (a region: of those it passes and captures too);
    a region's returns its results as a tuple."""
    if stmt.bodies:
        uses = stmt.uses()
        ns: dict[str, Any] = dict(EVAL_NS)
        exec(core.emit_function([stmt], OPS, "region", uses, stmt.defines()), ns)  # noqa: S102 - our own source
        return lambda env: ns["region"](*[env[a] for a in uses])
    code = compile(_spell(stmt), f"<{stmt.op}>", "eval")
    return lambda env: eval(code, EVAL_NS, dict(env))  # noqa: S307 - our own generated source


def _struct(i: Input) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(i.shape, np.dtype(i.dtype))


# ---- transformations (per-test configurations) -----------------------------------------------------
def transform_key(options: dict[str, Any]) -> str | None:
    """The name of a configuration's transformation ("vmap300", "vmap3x50", "jvp", "grad"), or None."""
    t = options.get("transform")
    if t == "vmap":
        return "vmap" + "x".join(str(b) for b in options["batch"])
    return t


def _floats(specs: list[list[Any]]) -> list[int]:
    return [k for k, s in enumerate(specs) if s[1] in FLOATS]


TRANSFORM_SOURCE = '''
def transformed(fn, transform, specs, out_is_float):
    """The program under `transform`: a function of the (batched) inputs returning (outputs, input slots)."""
    floats = [k for k, s in enumerate(specs) if s[1].startswith("float")]
    if transform is None:
        return lambda *xs: (tuple(fn(*xs)), tuple(xs))
    if transform["transform"] == "vmap":
        g = lambda *xs: tuple(fn(*xs))
        for _ in transform["batch"]:
            g = jax.vmap(g)
        return lambda *xs: (g(*xs), tuple(xs))
    if transform["transform"] == "jvp":
        def jvp(*args):
            xs, ts = args[:len(specs)], list(args[len(specs):])
            tangents = [ts.pop(0) if k in floats else np.zeros(np.shape(x), jax.dtypes.float0)
                        for k, x in enumerate(xs)]
            outs, touts = jax.jvp(lambda *a: tuple(fn(*a)), tuple(xs), tuple(tangents))
            return tuple(t if f else o for o, t, f in zip(outs, touts, out_is_float)), tuple(xs)
        return jvp
    if transform["transform"] == "grad":
        def total(*xs):
            outs = fn(*xs)
            return sum(jnp.sum(o.astype(jnp.float64)) for o, f in zip(outs, out_is_float) if f)
        def grad(*xs):
            gs = jax.grad(total, argnums=tuple(floats))(*xs)
            slots = list(xs)
            for k, g in zip(floats, gs):
                slots[k] = g
            return tuple(fn(*xs)), tuple(slots)
        return grad
    raise ValueError(f"unknown transform {transform!r}")


def compile_and_run(g, args, compiler_options, donate=False):
    """(outputs, input slots) of `g` compiled by jax.jit(...).lower(...).compile(...) and called. `donate`: every
    argument donated (jax.jit's donate_argnums; no transformation): XLA may reuse their buffers for the outputs
    (jax aliases an input with an output of its type, or leaves one of the same size to XLA's
    optimize_input_output_buffer_alias), so the compiled function returns the outputs alone and the input slots
    are the arguments as read before the call, which deletes them."""
    if not donate:
        return jax.jit(g).lower(*args).compile(compiler_options=compiler_options)(*args)
    import warnings

    slots = tuple(np.asarray(a).copy() for a in args)
    f = jax.jit(lambda *xs: g(*xs)[0], donate_argnums=tuple(range(len(args))))
    with warnings.catch_warnings():  # an input no output can take stays the caller's: as documented, not news
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        return f.lower(*args).compile(compiler_options=compiler_options)(*args), slots


def transform_inputs(specs, seed, transform, wide=False):
    """The arguments of the transformed program: the inputs (batched for vmap), then a jvp's tangents."""
    lead = tuple(transform["batch"]) if transform and transform["transform"] == "vmap" else ()
    ins = make_inputs(specs, seed, lead)
    args = [ins[s[0]] for s in specs]
    if transform and transform["transform"] == "jvp":
        tan = make_inputs(specs, seed + 1)
        args += [tan[s[0]] for s in specs if s[1].startswith("float")]
    if wide:
        args = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in args]
    return [jnp.asarray(a) for a in args]  # arrays (an input's `.at` is jax's)
'''
exec(TRANSFORM_SOURCE, {**EVAL_NS, "make_inputs": make_inputs, "__name__": __name__}, _NS)  # noqa: S102
transformed: Callable[..., Callable[..., Any]] = _NS["transformed"]
transform_inputs: Callable[..., list[np.ndarray]] = _NS["transform_inputs"]
compile_and_run: Callable[..., tuple[Any, Any]] = _NS["compile_and_run"]


def _transform_of(options: dict[str, Any]) -> dict[str, Any] | None:
    t = options.get("transform")
    return {"transform": t, "batch": list(options.get("batch") or [])} if t else None


# ---- the dialect ---------------------------------------------------------------------------------
class JaxDialect:
    """JAX programs (`programs/core.Dialect`) for XLA. `fault`: (pass, op) of a planted fault: every
    compile in which HLO pass `pass` runs gets op `op`'s results off by one (backends/xla/planted.py); with
    `poison`, such a compile raises instead, and so does every later one in the process of a program with the same
    input seed, whatever its ops (`planted_poison`)."""

    name = "jax"
    ops = OPS
    dtypes = INPUT_DTYPES
    train_share = 0.0  # grad/jvp/vjp are transformations of its programs (`transform`), not a training loop
    splice_share = 0.0
    splice_ops: tuple[str, ...] = ()

    def __init__(self, fault: tuple[str, str] | None = None, poison: bool = False) -> None:
        self.fault = fault
        self.poison = poison

    def splice(self, rng: np.random.Generator, fired: set[str]) -> None:
        """No seeds of XLA's own to splice (yet)."""
        return None

    def start(self, inputs: list[Input]) -> dict[str, jax.ShapeDtypeStruct]:
        return {i.name: _struct(i) for i in inputs}

    def enter(self, state: dict[str, Any], params: list[Value]) -> dict[str, Any]:
        return {**state, **{p.name: jax.ShapeDtypeStruct(p.shape, np.dtype(p.dtype)) for p in params}}

    def apply(self, state: dict[str, Any], stmt: Stmt) -> tuple[str, tuple[int, ...]] | None:
        used = {a: state[a] for a in stmt.uses()}
        r = jax.eval_shape(_stmt_fn(stmt), used)
        results = list(r) if stmt.bodies else [r]
        for name, t in zip(stmt.defines(), results, strict=True):
            if not isinstance(t, jax.ShapeDtypeStruct) or str(t.dtype) not in ANY:
                raise TypeError("not a real array")
            if t.size > MAX_ELEMENTS or t.size == 0 or len(t.shape) > 5:
                raise ValueError("too large or empty")  # keep programs small: compiles stay fast
            state[name] = jax.ShapeDtypeStruct(t.shape, t.dtype)
        types = [(str(t.dtype), tuple(t.shape)) for t in results]
        return types if stmt.bodies else types[0]

    def per_test_configs(self, rng: np.random.Generator, configs: list[tuple[str, dict[str, Any]]]
                         ) -> list[tuple[str, dict[str, Any]]]:
        """Next to the campaign's configurations, most tests add one variant of its plain `jit` one: a
        transformation (vmap at batch sizes up to a few hundred, sometimes nested; jvp; grad), XLA options (an
        LLVM optimization level, one sampled optional HLO pass disabled) or every input donated."""
        from dlcfuzz.backends.xla.passes import optional_passes

        base = next(((n, o) for n, o in configs if o.get("mode", "jit") == "jit"
                     and not (o.get("compiler_options") or {}) and not o.get("transform")), None)
        r = rng.random()
        if base is None or r < 0.15:
            return configs
        name, options = base
        if r < 0.5:
            batch = [int(rng.choice((2, 7, 64, 128, 300)))]
            if rng.random() < 0.25:
                batch = [int(rng.integers(2, 5)), int(rng.choice((3, 50)))]  # nested vmap
            variant = {"transform": "vmap", "batch": batch}
        elif r < 0.62:
            variant = {"transform": "jvp"}
        elif r < 0.74:
            variant = {"transform": "grad"}
        elif r < 0.8:
            variant = {"compiler_options": {"xla_backend_optimization_level": int(rng.integers(0, 4))}}
        elif r < 0.87:
            variant = {"donate": True}  # every input donated: jax.jit(f, donate_argnums=...)
        else:
            variant = {"compiler_options": {"xla_disable_hlo_passes": str(rng.choice(optional_passes()))}}
        extra = transform_key(variant) or ("donate" if variant.get("donate") else
                                           ",".join(f"{k}={v}" for k, v in variant["compiler_options"].items()))
        return [*configs, (f"{name}+{extra}", {**options, **variant})]

    def run(self, program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]],
            note: Callable[[str], None] = lambda s: None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return run_program(program, seed, configs, note, self.fault, self.poison)

    def reproducer(self, program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]], title: str,
                   detail: str, version: str) -> str:
        return reproducer(program, seed, configs, title, detail, version, self.fault, self.poison)


DIALECT = JaxDialect()


# ---- the run -------------------------------------------------------------------------------------
def _planted_ops(fault: tuple[str, str] | None, options: dict[str, Any], poison: bool = False) -> dict[str, OpSpec]:
    """The op table a compile sees: with a planted fault whose pass runs in it, its op off by one (a
    conditional region, cond or switch: its branches in reverse order, so the fault shows only inside it); a
    `poison` fault's op raises `POISON_ERROR` (the reproducer's compile: a fresh process, no damage yet)."""
    from dlcfuzz.backends.xla.passes import pass_enabled

    if fault is None or fault[1] not in OPS or not pass_enabled(options, fault[0]):
        return OPS
    spec = OPS[fault[1]]
    if poison:
        return {**OPS, fault[1]: replace(spec, spell=lambda a, at: f"_planted_error({spec.spell(a, at)})")}
    if fault[1] in BRANCHING:
        return {**OPS, fault[1]: replace(spec, spell=lambda a, at: spec.spell(a, {**at, "fns": at["fns"][::-1]}))}
    return {**OPS, fault[1]: replace(spec, spell=lambda a, at: f"_planted({spec.spell(a, at)})")}


POISON_ERROR = "planted internal error in an HLO pass"
PLANTED_SOURCE = f'''
def _planted(r):
    """The planted fault: the result off by one (True for a bool)."""
    return (r + jnp.ones((), r.dtype)).astype(r.dtype)


def _planted_error(r):
    """The planted poison fault: the compile raises."""
    raise RuntimeError({POISON_ERROR!r})
'''
_POISONED: set[int] = set()  # the input seeds of the programs a planted poison fault fired on in this process


def planted_poison(fault: tuple[str, str], options: dict[str, Any], holds_op: bool, seed: int) -> None:
    """A planted poison fault (tests only): a compile in which pass fault[0] runs raises `POISON_ERROR` where its
    program holds op fault[1], and from then on so does every such compile in this process of a program with the
    same input seed, whatever its ops: a compiler whose state an error it survived left damaged for what it was
    compiling (its inputs), as a cache entry left broken would be. A reduction whose checks all run in that worker
    (its candidates keep the test's input seed) would "reduce" the finding to an unrelated statement; the worker's
    other tests, drawn with other seeds, stay correct."""
    from dlcfuzz.backends.xla.passes import pass_enabled

    if pass_enabled(options, fault[0]) and (holds_op or seed in _POISONED):
        _POISONED.add(seed)
        raise RuntimeError(POISON_ERROR)


def source_function(program: Program, ops: dict[str, OpSpec] = OPS) -> Callable[..., tuple]:
    ns: dict[str, Any] = dict(EVAL_NS)
    exec(PLANTED_SOURCE + emit(program, ops), ns)  # noqa: S102 - our own generated source
    return ns["program"]


class _Undefined(Exception):
    """Undefined behaviour met inside a region's body (its (category, reason) in args[0])."""


def checked_run(program: Program, inputs: dict[str, np.ndarray], batch: int = 0) -> tuple[str, str] | None:
    """Run the program eagerly a statement at a time (each under `batch` vmaps: a vmap test's batched
    inputs) with each op's guards on the actual values, a region's bodies too, on each trip; (category,
    reason) of the first undefined behaviour, or None. Raises what eager raises (an invalid program)."""
    env: dict[str, Any] = {k: jnp.asarray(v) for k, v in inputs.items()}
    with jax.disable_jit():
        try:
            _checked_stmts(program.stmts, env, batch)
        except _Undefined as ub:
            return ub.args[0]
    return None


def _checked_stmts(stmts: list[Stmt], env: dict[str, Any], batch: int) -> None:
    for stmt in stmts:
        if stmt.bodies:
            for name, value in zip(stmt.defines(), _checked_region(stmt, env, batch), strict=True):
                env[name] = value
            continue
        spec = OPS[stmt.op]
        if spec.undefined is not None:
            args = [env[a] if isinstance(a, str) else a for a in stmt.args]
            if (ub := spec.undefined(args, {**stmt.attrs, "batch": batch})) is not None:
                raise _Undefined(ub)
        f = _stmt_fn(stmt)
        for _ in range(batch):
            f = jax.vmap(f)
        env[stmt.out] = f({a: env[a] for a in stmt.uses()})
        if stmt.op in ("nextafter", "reduce_precision", "bitcast_convert_type") \
                and has_subnormal(np.asarray(env[stmt.out])):
            raise _Undefined((UNDEFINED, f"{stmt.op}: a subnormal result (XLA:CPU flushes subnormals in compiled "
                                         "code)"))


def _checked_region(stmt: Stmt, env: dict[str, Any], batch: int) -> list[Any]:
    """A region run by its own construct under `jax.disable_jit()` (lax.cond, while_loop, scan and
    fori_loop then call the bodies on concrete values, trip by trip) with bodies that check each
    statement; in a batched run, each batch element on its own (a guard needs concrete values), stacked."""
    if batch:
        uses = stmt.uses()
        rows = [_checked_region(stmt, {a: env[a][b] for a in uses}, batch - 1) for b in range(env[uses[0]].shape[0])]
        return [jnp.stack(col) for col in zip(*rows)]
    spec = OPS[stmt.op]
    fns = core.body_names(stmt, spec)

    def checked_body(body: Any) -> Callable[..., tuple]:
        def call(*params: Any) -> tuple:
            local = {**env, **dict(zip(body.params, params))}
            _checked_stmts(body.stmts, local, 0)
            return tuple(local[r] for r in body.results)
        return call

    ns = {**EVAL_NS, **{a: env[a] for a in stmt.uses()}, **{f: checked_body(b) for f, b in zip(fns, stmt.bodies)}}
    expr = spec.spell([a if isinstance(a, str) else repr(a) for a in stmt.args], {**stmt.attrs, "fns": fns})
    return jax.tree_util.tree_leaves(eval(expr, ns))  # noqa: S307 - our own generated source


def _arrays(tag: str, result: tuple[Any, Any]) -> dict[str, np.ndarray]:
    outs, slots = result
    out = {f"{tag}/out/{k}": np.asarray(o).copy() for k, o in enumerate(outs)}
    out.update({f"{tag}/in/{k}": np.asarray(s).copy() for k, s in enumerate(slots)})
    return out


def _same_quantity(wide: np.ndarray, eager: np.ndarray) -> bool:
    """Whether a float64 run's slot reads what eager's does: its shape, and an integer or bool slot its type."""
    return wide.shape == eager.shape and (eager.dtype.kind == "f" or wide.dtype == eager.dtype)


def _out_is_float(fn: Callable[..., tuple], args: list[np.ndarray]) -> list[bool]:
    shapes = jax.eval_shape(lambda *xs: tuple(fn(*xs)), *args)
    return [np.dtype(s.dtype).kind == "f" for s in shapes]


def run_program(program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]],
                note: Callable[[str], None] = lambda s: None, fault: tuple[str, str] | None = None,
                poison: bool = False) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Eager (the guards first), a float64 eager reference, then every compiled configuration; a
    transformed configuration against its transformation run eagerly (and in float64). Arrays
    "RUN/out/K" and "RUN/in/K" (the inputs, or a grad run's gradients)."""
    from dlcfuzz.backends.xla.passes import FAST_MATH, PIPELINE_PRECONDITION, dumped_changes

    specs = input_specs(program)
    fn = source_function(program)
    note("eager:run")
    try:
        ub = checked_run(program, make_inputs(specs, seed))
        if ub is not None:
            return {"undefined": list(ub)}, {}
        args = transform_inputs(specs, seed, None)
        out_is_float = _out_is_float(fn, args)
        with jax.disable_jit():
            arrays = _arrays("eager", transformed(fn, None, specs, out_is_float)(*args))
    except Exception as e:  # noqa: BLE001 - eager rejects the program: invalid, not a bug
        return {"invalid": f"{type(e).__name__}: {str(e)[:600]}"}, {}
    runs: dict[str, dict[str, Any]] = {"eager": {"status": "ok"}}
    skipped: dict[str, str] = {}

    def reference(key: str, transform: dict[str, Any] | None) -> bool:
        """The eager and float64 runs of a transformation ("eager+KEY", "fp64+KEY"); False when eager
        rejects the transformed program (e.g. a derivative JAX does not define, or undefined behaviour in
        a batch): the configuration is then not run."""
        tag, f64 = (f"eager+{key}", f"fp64+{key}") if key else ("eager", "fp64")
        if f64 in runs:
            return True
        try:
            if tag in runs:  # the plain program's eager run: made first, with the guards
                pass
            elif transform and transform["transform"] == "vmap":
                batched = make_inputs(specs, seed, tuple(transform["batch"]))
                if (ub := checked_run(program, batched, len(transform["batch"]))) is not None:
                    skipped[tag] = f"{ub[0]}: {ub[1]}"
                    return False
            if tag not in runs:
                with jax.disable_jit():
                    arrays.update(_arrays(tag, transformed(fn, transform, specs, out_is_float)(
                        *transform_inputs(specs, seed, transform))))
                runs[tag] = {"status": "ok", "role": "reference"}
        except Exception as e:  # noqa: BLE001 - eager rejects the transformation: not applicable
            skipped[tag] = f"{type(e).__name__}: {str(e)[:300]}"
            return False
        try:  # the float64 reference: float inputs widened, the same program
            with jax.disable_jit():
                wide = _arrays(f64, transformed(fn, transform, specs, out_is_float)(
                    *transform_inputs(specs, seed, transform, wide=True)))
            # a slot the widened program computes as another quantity (a float's bits: another shape, or another
            # integer type) has no float64 reading: judged against eager alone
            arrays.update({k: a for k, a in wide.items() if _same_quantity(a, arrays[tag + k[len(f64):]])})
            runs[f64] = {"status": "ok", "role": "reference"}
        except Exception as e:  # noqa: BLE001 - no float64 reading of this program
            runs[f64] = {"status": "error", "role": "reference", "error": f"{type(e).__name__}: {str(e)[:300]}"}
        return True

    note("fp64:run")
    reference("", None)
    for name, options in configs:
        if options.get("mode", "jit") == "eager":
            continue
        transform = _transform_of(options)
        key = transform_key(options) or ""
        if key == "grad" and not core.differentiable(program, OPS):
            # eager runs a while loop in Python, where grad works; jit cannot (JAX: "Reverse-mode
            # differentiation does not work for lax.while_loop or lax.fori_loop with dynamic start/stop values")
            skipped[name] = "grad: JAX defines no reverse-mode derivative of while_loop (or a traced fori_loop)"
            continue
        if key in ("jvp", "grad") and (rounded := set(program.ops()) & set(ROUNDED_DERIVATIVES)):
            skipped[name] = (f"{key}: {', '.join(sorted(rounded))} rounds its derivative to bfloat16, which XLA may "
                             "skip (xla_allow_excess_precision): not compared")
            continue
        if not reference(key, transform):
            continue
        co = dict(options.get("compiler_options") or {})
        if set(co) & set(FAST_MATH):
            raise ValueError("fast-math options change results by design: not compared for equality")
        t0 = time.perf_counter()
        note(f"{name}:compile")
        args = transform_inputs(specs, seed, transform)
        try:
            if poison and fault is not None:
                planted_poison(fault, options, fault[1] in program.ops(), seed)
            g = transformed(source_function(program, _planted_ops(fault, options)), transform, specs, out_is_float)
            note(f"{name}:run")
            with dumped_changes(co) as (recording, changed):  # the passes that changed its module (the report's)
                arrays.update(_arrays(name, compile_and_run(g, args, recording, bool(options.get("donate")))))
            runs[name] = {"status": "ok", "compile_s": round(time.perf_counter() - t0, 4), "applied": sorted(changed)}
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - eager ran it: any failure here is the compiler's
            if transform and isinstance(e, NotImplementedError) and "Differentiation rule" in str(e):
                # jit differentiates every branch of a cond/switch, eager (disable_jit) only the one it takes: JAX
                # defines no derivative of an op in another branch (e.g. nextafter), not a compiler failure
                skipped[name] = f"[not differentiable] {str(e)[:300]}"
                continue
            if (co.get("xla_disable_hlo_passes") or co.get("xla_disable_all_hlo_passes")) and (
                    PIPELINE_PRECONDITION.search(str(e)) or UNIMPLEMENTED.search(str(e))):
                # XLA:CPU refusing a module a skipped pass should have prepared (e.g. "TopK is not yet supported
                # by XLA:CPU ThunkEmitter" without the pass that rewrites TopK into a sort): a debug option's
                # documented consequence, not a miscompile (backends/xla/backend.py)
                skipped[name] = f"[passes disabled] {str(e).splitlines()[0][:300]}"
                continue
            runs[name] = {"status": "error", "error": f"{type(e).__name__}: {str(e)[:6000]}",
                          "traceback": traceback.format_exc(limit=8)[-3000:],
                          "compile_s": round(time.perf_counter() - t0, 4)}
            continue
        if key:
            runs[name].update(reference=f"eager+{key}", reference64=f"fp64+{key}")
        if transform and transform["transform"] == "grad":
            runs[name]["in_slot"] = "gradient (d sum of float outputs / d input)"
    meta: dict[str, Any] = {"runs": runs, "n_out": len(program.outputs), "n_in": len(program.inputs)}
    if skipped:
        meta["skipped"] = skipped
    return meta, arrays


# ---- the reproducer ------------------------------------------------------------------------------
_REPRO_MAIN = '''

def run(compiled=False, wide=False):
    """Outputs and input slots (the inputs, or a grad's gradients) of the transformed program."""
    args = transform_inputs(SPECS, SEED, TRANSFORM, wide)
    ins = make_inputs(SPECS, SEED)
    fn = program_compiled if compiled else program
    shapes = jax.eval_shape(lambda *xs: tuple(program(*xs)), *[ins[s[0]] for s in SPECS])
    out_is_float = [np.dtype(s.dtype).kind == "f" for s in shapes]
    g = transformed(fn, TRANSFORM, SPECS, out_is_float)
    if compiled:
        outs, slots = compile_and_run(g, args, COMPILER_OPTIONS, DONATE)
    else:
        with jax.disable_jit():
            outs, slots = g(*args)
    return [np.asarray(a) for a in list(outs) + list(slots)]


'''
_REPRO_END = '''
eager = run()
try:
    fp64 = run(wide=True)
    # a slot the widened program computes as another quantity (a float's bits) has no float64 reading
    fp64 = [w if w.shape == e.shape and (e.dtype.kind == "f" or w.dtype == e.dtype) else None
            for w, e in zip(fp64, eager)]
except Exception:
    fp64 = None
try:
    got = run(compiled=True)
except Exception as e:
    print(f"BUG REPRODUCED: eager runs the program, the XLA compile or run raises {type(e).__name__}: {e}")
    sys.exit(1)
SLOT_NAMES = [f"output {k}" for k in range(N_OUT)] + [f"input slot {s[0]}" for s in SPECS]
'''


def reproducer(program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]], title: str, detail: str,
               version: str, fault: tuple[str, str] | None = None, poison: bool = False) -> str:
    """A standalone script (jax and numpy alone): the program as a function, its inputs rebuilt from the
    seed, the transformation and the exact compiler options, eager (`jax.disable_jit()`) vs compiled vs
    float64; exits 1 with "BUG REPRODUCED" while the finding shows."""
    from dlcfuzz.oracle.numeric import TOLERANCE

    compiled = [(n, o) for n, o in configs if o.get("mode", "jit") != "eager"]
    name, options = compiled[0] if compiled else ("xla", {"mode": "jit", "compiler_options": {}})
    ops = _planted_ops(fault, options, poison)
    planted = ops is not OPS
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    faulty = emit(program, ops, "program_compiled") if planted else "program_compiled = program\n"
    wrong = ("raising" if poison else "branches in reverse order" if fault and fault[1] in BRANCHING
             else "off by one")
    note = (f"\nPLANTED FAULT (dlcfuzz's own, not XLA's): the compiled program is the one with {fault[1]!r} {wrong}, "
            f"as if HLO pass {fault[0]!r} miscompiled it.\n") if planted and fault else ""
    return f'''"""{title}

Found by dlcfuzz (programs strategy) against {version}. The program runs eagerly op by op
(jax.disable_jit()) and compiled by jax.jit(...).lower(...).compile(compiler_options=...) (configuration
{name!r}, transformation {transform_key(options) or "none"}), each on the same inputs; float results are
judged against the program run on float64 inputs. Exits 1 with "BUG REPRODUCED" while the bug is present.
{note}"""
{det}
import sys

import jax

jax.config.update("jax_enable_x64", True)  # float64 stays float64
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

SEED = {seed}
SPECS = {json.dumps(input_specs(program))}  # (name, dtype, shape)
N_OUT = {len(program.outputs)}
TRANSFORM = {_transform_of(options)!r}
COMPILER_OPTIONS = {dict(options.get("compiler_options") or {})!r}
DONATE = {bool(options.get("donate"))!r}
TOL = {TOLERANCE!r}
{INPUTS_SOURCE}{TRANSFORM_SOURCE}{PLANTED_SOURCE if planted else ""}

{emit(program, OPS)}
{faulty}{_REPRO_MAIN}
{JUDGE_SOURCE}{_REPRO_END}{VERDICT_SOURCE}print("not reproduced: jax.jit agrees with eager")
'''


__all__ = ["DIALECT", "INPUTS_SOURCE", "OPS", "UNDEFINED", "JaxDialect", "checked_run", "input_specs", "make_inputs",
           "reproducer", "run_program", "source_function", "transform_key"]
