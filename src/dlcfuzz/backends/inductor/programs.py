"""Inductor's program language: PyTorch programs with PyTorch's own semantics (`programs/core.py`'s
representation): the op table, type inference on meta tensors, the run (eager, a float64 eager
reference, compiled), the undefined-behaviour guards, and the reproducer in PyTorch's bug-template form.

The op space is what ONNX graphs cannot say: floor_divide/remainder/fmod on integers, atan2, scans
(cumsum, cumprod, logcumsumexp), scatter_reduce/index_add/index_put with accumulate, masked_fill,
where with Python scalars, bucketize/searchsorted, sort (values; indices only with stable=True) and
topk values, shifts and bitwise ops on every integer type including uint8, clamp on integers, Python
scalars in arithmetic (torch's type promotion), reductions with dtype=, views (strided slices,
transpose, permute, expand, unsqueeze, narrow, unfold, view/reshape, select) and in-place ops on
views and on inputs, and inputs that are transposed views or channels_last.

Guards (a test that trips one is an `unknown`, never a finding): each statement runs eagerly first,
one at a time, with its op's check of the actual values: float-to-integer casts of non-finite or
out-of-range values (undefined in C++, e.g. a negative float to uint8), integer division or remainder
by zero, shifts by a negative amount or past the width and left shifts of negative values, signed
integer overflow (the op re-run on float64 copies of its integer arguments leaves the result dtype's
range). An eager error is an invalid program, not a bug.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from dlcfuzz.backends.inductor.knobs import FREEZING, SPLIT_CAT_FUSIONS
from dlcfuzz.backends.inductor.pattern_seeds import BFLOAT16_TOLERANCE, SPLICE_ELEMENTS, SPLICE_SCALE, inductor_pattern
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.numeric import tolerance
from dlcfuzz.programs.core import (
    FLOAT,
    INTEGER,
    NUMERIC,
    SIGNED,
    Draw,
    Input,
    OpSpec,
    Pool,
    Program,
    Stmt,
    Value,
    emit,
    one_graph,
    pass_captured,
    walk,
)
from dlcfuzz.programs.reproducer import JUDGE_SOURCE, VERDICT_SOURCE

UNDEFINED = "undefined-behaviour"  # a category of the program guards (registered below)
C.add_category(C.Category(UNDEFINED, "unknown", routine=True))

INPUT_DTYPES = (("float32", 6.0), ("float64", 1.0), ("float16", 1.0), ("int64", 2.0), ("int32", 1.5),
                ("int16", 1.0), ("int8", 1.0), ("uint8", 1.5), ("bool", 1.0))
INT_OR_BOOL = INTEGER + ("bool",)
DYNAMIC_SHARE = 0.3  # tests whose plain Inductor configuration compiles with dynamic=True
FREEZING_SHARE = 0.2  # of the other tests, those whose plain Inductor configuration compiles with freezing=True
FUSIONS_SHARE = 0.2  # of the other tests, those compiled with the split/cat pattern passes on (knobs.SPLIT_CAT_FUSIONS)
TRAIN_SHARE = 0.3  # trainable programs (programs.core.trainable) run as training steps
SPLICE_SHARE = 0.3  # tests whose program starts with one of Inductor's replacement patterns (TorchDialect.splice)
GRADIENT_FAULT = "gradient"  # a configuration's planted fault "gradient": compiled gradients scaled (tests only)
COND_FAULT = "cond"  # a configuration's planted fault "cond": torch.cond's branches swapped when compiled (tests only)
PROGRAM_FAULTS = (GRADIENT_FAULT, COND_FAULT)  # planted in the program dialect, not in Inductor's kernels

# The inputs, built the same way by the runner and by the reproducer (the reproducer embeds this source):
# floats on a grid of eighths in [-4, 4] (sums and products of a few are exact in float32, so rounding
# decides few results), integers small (far from overflow), unsigned ones non-negative.
INPUTS_SOURCE = '''
def make_inputs(specs, seed):
    """(name, dtype, shape, layout) -> tensor; "transposed": a view with its last two axes swapped."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, dtype, shape, layout in specs:
        shape = tuple(shape)
        stored = shape[:-2] + (shape[-1], shape[-2]) if layout == "transposed" else shape
        if dtype == "bool":
            a = rng.random(stored) < 0.5
        elif dtype == "uint8":
            a = rng.integers(0, 17, stored)
        elif dtype.startswith("int"):
            a = rng.integers(-8, 9, stored)
        else:
            a = rng.integers(-32, 33, stored) / 8
        t = torch.from_numpy(np.array(np.asarray(a).astype(dtype)))
        if layout == "transposed":
            t = t.transpose(-1, -2)
        elif layout == "channels_last":
            t = t.contiguous(memory_format=torch.channels_last)
        out[name] = t
    return out
'''
_NS: dict[str, Any] = {"np": np, "torch": torch}
exec(INPUTS_SOURCE, _NS)  # noqa: S102 - our own source, shared with the reproducer
make_inputs: Callable[[list[Any], int], dict[str, torch.Tensor]] = _NS["make_inputs"]

# One call of a program, or a training program's steps, the same in the runner and in the reproducer (it embeds
# this source). Training compiles the forward alone (the program and the loss are traced by Dynamo; AOTAutograd
# derives the backward and Inductor compiles both); `loss.backward()` and the update run outside the compiled
# function: Dynamo with fullgraph=True cannot trace `backward()` (a graph break), and the update's arithmetic is
# the same in every run, so a difference is the compiled forward's or backward's. The loss, half the sum of
# squares of every float result that requires a gradient (the outputs and the float inputs after the call),
# sends each result's own values back as its gradient (a sum would send ones). The float inputs are the
# parameters: each step calls the program on a clone of them (a leaf that requires a gradient cannot be written
# in place) and updates them in place by LR times their gradient (a power of two: the product is exact).
RUN_SOURCE = '''
LR = 0.125


def execute(fn, inputs, order, steps):
    """Outputs and inputs after the call ("out", "in"); with steps > 0 those of the first step, its gradients of
    the float inputs ("grad") and the float inputs after `steps` updates ("param"). `inputs` is consumed."""
    if not steps:
        with torch.no_grad():
            outs = fn(*[inputs[n] for n in order])
        return {"out": list(outs), "in": [inputs[n] for n in order]}
    params = {n: t.requires_grad_() for n, t in inputs.items() if t.is_floating_point()}
    first = {}
    for step in range(steps):
        args = {n: params[n].clone() if n in params else t for n, t in inputs.items()}
        outs = fn(*[args[n] for n in order])
        results = [t for t in list(outs) + [args[n] for n in params] if t.is_floating_point() and t.requires_grad]
        sum(0.5 * (t * t).sum() for t in results).backward()
        with torch.no_grad():
            if step == 0:
                first = {"out": [t.detach().clone() for t in outs], "in": [args[n].detach().clone() for n in order],
                         "grad": [p.grad.clone() for p in params.values()]}
            for p in params.values():
                p.sub_(LR * p.grad)
                p.grad = None
    return {**first, "param": [p.detach() for p in params.values()]}
'''
exec(RUN_SOURCE, _NS)  # noqa: S102 - our own source, shared with the reproducer
execute: Callable[[Callable[..., tuple], dict[str, torch.Tensor], list[str], int], dict[str, list[torch.Tensor]]] = (
    _NS["execute"])


def input_specs(program: Program) -> list[list[Any]]:
    return [[i.name, i.dtype, list(i.shape), i.layout] for i in program.inputs]


def _dt(name: str) -> str:
    return f"torch.{name}"


# ---- undefined-behaviour checks (on the actual arguments, before the op runs) -----------------------
def _is_int(x: Any) -> bool:
    if isinstance(x, torch.Tensor):
        return not x.is_floating_point() and x.dtype != torch.bool
    return isinstance(x, int) and not isinstance(x, bool)


def _zero_divisor(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    if attrs.get("nonzero") and not attrs.get("swap"):
        return None  # the program replaces the divisor's zeros
    a, b = (args[1], args[0]) if attrs.get("swap") else (args[0], args[1])
    if not (_is_int(a) or isinstance(a, torch.Tensor) and a.dtype == torch.bool) or not (
            _is_int(b) or isinstance(b, torch.Tensor) and b.dtype == torch.bool):
        return None
    zero = bool((b == 0).any()) if isinstance(b, torch.Tensor) else b == 0
    return (C.INTEGER_DIVISION_BY_ZERO, "an integer divided by zero") if zero else None


def _cast_range(x: Any, dtype: str) -> tuple[str, str] | None:
    """A float converted to an integer type: undefined when non-finite or out of the type's range."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or dtype not in INTEGER:
        return None
    info = torch.iinfo(getattr(torch, dtype))
    x64 = x.double()
    low, high = float(info.min) - 1, -float(info.min)  # truncation keeps (low, high) in range
    if not bool(torch.isfinite(x64).all()) or bool((x64 <= low).any()) or bool((x64 >= high).any()):
        return UNDEFINED, f"a float outside {dtype}'s range converted to {dtype}"
    return None


def _cast_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    return _cast_range(args[0], attrs["dtype"])


def _copy_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    dst = args[0]
    return _cast_range(args[1], str(dst.dtype).removeprefix("torch."))


def _shift_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    a, b = args[0], args[1]
    if attrs.get("lhs_clamped"):
        a = a.clamp(min=0)
    if isinstance(b, torch.Tensor) and attrs.get("masked"):
        b = b & 7
    dtype = torch.result_type(a, b) if isinstance(b, torch.Tensor) else a.dtype
    bits = torch.iinfo(dtype).bits if dtype != torch.bool else 1
    bt = b if isinstance(b, torch.Tensor) else torch.tensor(b)
    if bool((bt < 0).any()) or bool((bt >= bits).any()):
        return UNDEFINED, "a shift by a negative amount or past the type's width"
    if attrs.get("left") and dtype.is_signed:
        if bool((a < 0).any()):
            return UNDEFINED, "a left shift of a negative value"
        wide = a.double() * torch.pow(2.0, bt.double())
        if bool((wide > torch.iinfo(dtype).max).any()):
            return C.INTEGER_OVERFLOW, "a left shift past the signed type's range"
    return None


def _operator_check(args: list[Any], attrs: dict[str, Any]) -> tuple[str, str] | None:
    op = attrs["op"]
    if op in ("//", "%"):
        return _zero_divisor(args, attrs)
    if op in ("<<", ">>"):
        a, b = (args[1], args[0]) if attrs.get("swap") else (args[0], args[1])
        if not isinstance(a, torch.Tensor):
            return UNDEFINED, "a Python int shifted by a tensor"  # not generated; a guard nonetheless
        return _shift_check([a, b], {"left": op == "<<"})
    return None


# ---- the op table ------------------------------------------------------------------------------
OPS: dict[str, OpSpec] = {}


def op(name: str, sample: Callable[[Pool], Draw | None], spell: Callable[[list[str], dict[str, Any]], str],
       **kw: Any) -> None:
    OPS[name] = OpSpec(name, sample, spell, **kw)


def _other(p: Pool, v: Value, dtypes: tuple[str, ...], scalar: float = 0.35, same: bool = False) -> Any:
    """A second operand for `v`: a broadcast-compatible value or, sometimes, a Python scalar; `same`: of
    `v`'s dtype, a scalar of its kind (an in-place op's result type must be `v`'s own; a bitwise op takes no
    float)."""
    if p.coin(scalar) or same and v.dtype not in dtypes:
        return _scalar(p, v.dtype, same)
    u = p.partner(v, (v.dtype,) if same else dtypes)
    return u.name if u is not None else _scalar(p, v.dtype, same)


def _scalar(p: Pool, dtype: str, same: bool) -> Any:
    s = p.scalar(dtype)
    return int(s) if same and dtype in INTEGER and isinstance(s, float) else s


def along_axis(build: Callable[[Pool, Value, int], Draw | None], dtypes: tuple[str, ...] | None = None,
               **pick: Any) -> Callable[[Pool], Draw | None]:
    """A sampler of an op on one value and one of its axes: `build(pool, value, axis)` draws the rest."""
    def sample(p: Pool) -> Draw | None:
        x = p.pick(dtypes, **{"min_rank": 1, **pick})
        return build(p, x, p.integers(0, x.rank - 1)) if x is not None else None

    return sample


def _binary(name: str, dtypes: tuple[str, ...], scalar: bool = True, same: bool = False, divisor: bool = False,
            **kw: Any) -> None:
    def sample(p: Pool) -> Draw | None:
        a = p.pick(dtypes)
        if a is None:
            return None
        b = _other(p, a, dtypes, 0.35 if scalar else 0.0, same)
        return Draw([a.name, _nonzero(p, b) if divisor else b], {"nonzero": divisor and _integral(p, b)})

    op(name, sample, lambda a, at: f"torch.{name}({a[0]}, {_divisor(a[1], at)})", **kw)


def _integral(p: Pool, b: Any) -> bool:
    return isinstance(b, str) and p.values[b].dtype in INTEGER


def _nonzero(p: Pool, b: Any) -> Any:
    """A divisor that is rarely zero: a zero scalar drawn again (an integer division by zero is undefined)."""
    return (b or 2) if isinstance(b, (int, float)) and not isinstance(b, bool) else b


def _divisor(b: str, at: dict[str, Any]) -> str:
    # an integer tensor divisor's zeros replaced in the program itself (small integer inputs hold zeros often,
    # and a division by zero is undefined): torch.where with a Python scalar is one more semantics under test
    return f"torch.where({b} == 0, 3, {b})" if at.get("nonzero") else b


for _name in ("add", "sub", "mul"):
    _binary(_name, NUMERIC, overflows=True)
_binary("maximum", NUMERIC, scalar=False)
_binary("minimum", NUMERIC, scalar=False)
_binary("atan2", FLOAT, scalar=False)
_binary("pow", FLOAT)
for _name in ("floor_divide", "remainder", "fmod"):
    # torch implements no derivative of floor_divide (its programs never train)
    _binary(_name, NUMERIC, overflows=True, undefined=_zero_divisor, divisor=True, weight=1.5,
            differentiable=_name != "floor_divide")
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _binary(_name, INT_OR_BOOL, same=True)
for _name in ("eq", "lt", "ge"):
    _binary(_name, NUMERIC + ("bool",), weight=0.6)


def _div(p: Pool) -> Draw | None:
    a = p.pick(NUMERIC)
    if a is None:
        return None
    b = _nonzero(p, _other(p, a, NUMERIC))
    return Draw([a.name, b], {"rounding_mode": p.choice((None, "floor", "trunc")), "nonzero": _integral(p, b)})


op("div", _div, lambda a, at: f"torch.div({a[0]}, {_divisor(a[1], at)}, rounding_mode={at['rounding_mode']!r})",
   overflows=True, undefined=lambda args, at: _zero_divisor(args, at) if at["rounding_mode"] else None)

_OPERATORS = {"+": NUMERIC, "-": NUMERIC, "*": NUMERIC, "/": NUMERIC, "//": NUMERIC, "%": NUMERIC,
              "&": INT_OR_BOOL, "|": INT_OR_BOOL, "^": INT_OR_BOOL, "<<": INTEGER, ">>": INTEGER}


def _operator(p: Pool) -> Draw | None:
    sym = p.choice(tuple(_OPERATORS))
    a = p.pick(_OPERATORS[sym])
    if a is None:
        return None
    if sym in ("<<", ">>"):
        return Draw([a.name, p.integers(0, 7)], {"op": sym, "swap": False})
    b = _other(p, a, _OPERATORS[sym], 0.7, same=sym in "&|^")
    swap = not isinstance(b, str) and p.coin(0.3)
    if sym in ("//", "%") and not swap:
        b = _nonzero(p, b)
    return Draw([a.name, b], {"op": sym, "swap": swap, "nonzero": sym in ("//", "%") and _integral(p, b)})


op("operator", _operator, lambda a, at: f"({a[1]} {at['op']} {a[0]})" if at["swap"]
   else f"({a[0]} {at['op']} {_divisor(a[1], at)})",
   overflows=True, undefined=_operator_check, weight=2.0, differentiable=lambda at: at["op"] != "//")


def _shift(left: bool) -> None:
    def sample(p: Pool) -> Draw | None:
        a = p.pick(INTEGER)
        if a is None:
            return None
        # a left shift of a negative value is undefined (C++17): most signed operands are clamped at 0 first
        attrs = {"left": left, "lhs_clamped": left and a.dtype in SIGNED and p.coin(0.8)}
        b = p.partner(a, INTEGER)
        if b is None or p.coin(0.4):
            return Draw([a.name, p.integers(0, 7)], {**attrs, "masked": False})
        return Draw([a.name, b.name], {**attrs, "masked": True})

    fn = "bitwise_left_shift" if left else "bitwise_right_shift"
    op(fn, sample, lambda a, at: f"torch.{fn}({a[0]}{'.clamp(min=0)' if at.get('lhs_clamped') else ''}, "
       f"{a[1]}{' & 7' if at['masked'] else ''})", undefined=_shift_check)


_shift(True)
_shift(False)


def _unary(name: str, dtypes: tuple[str, ...], spelled: str | None = None, **kw: Any) -> None:
    op(name, lambda p: (lambda a: Draw([a.name]) if a else None)(p.pick(dtypes)),
       lambda a, at: (spelled or f"torch.{name}({{}})").format(a[0]), **kw)


_unary("neg", NUMERIC, overflows=True)
_unary("abs", NUMERIC, overflows=True)
_unary("relu", NUMERIC, weight=1.5)  # also the op of Inductor's planted faults (cpp.inject_relu_bug_TESTING_ONLY)
_unary("bitwise_not", INT_OR_BOOL)
for _name in ("sigmoid", "tanh", "exp", "sqrt", "floor", "round", "sign", "log1p"):
    _unary(_name, FLOAT, weight=0.4)


def _cast(p: Pool) -> Draw | None:
    a = p.pick()
    return Draw([a.name], {"dtype": p.choice(NUMERIC + ("bool",))}) if a else None


op("to", _cast, lambda a, at: f"{a[0]}.to({_dt(at['dtype'])})", undefined=_cast_check)


def _mask(p: Pool, v: Value) -> str:
    m = p.pick(("bool",), where=lambda u: u.shape == v.shape or len(u.shape) <= len(v.shape)
               and all(s in (1, t) for s, t in zip(reversed(u.shape), reversed(v.shape))))
    return m.name if m is not None else v.name


def _masked_fill(inplace: bool) -> Callable[[Pool], Draw | None]:
    def sample(p: Pool) -> Draw | None:
        x = p.pick(NUMERIC + ("bool",), writable=inplace)
        if x is None:
            return None
        m = _mask(p, x)
        return Draw([x.name, m], {"value": p.scalar(x.dtype), "compare": m == x.name})

    return sample


def _mask_spelled(a: list[str], at: dict[str, Any]) -> str:
    return f"({a[1]} > 0)" if at["compare"] else a[1]


op("masked_fill", _masked_fill(False),
   lambda a, at: f"torch.masked_fill({a[0]}, {_mask_spelled(a, at)}, {at['value']!r})")
op("masked_fill_", _masked_fill(True), lambda a, at: f"{a[0]}.masked_fill_({_mask_spelled(a, at)}, {at['value']!r})",
   inplace=True)


def _where(p: Pool) -> Draw | None:
    x = p.pick(NUMERIC)
    if x is None:
        return None
    m = _mask(p, x)
    other = _other(p, x, NUMERIC, 0.7)
    return Draw([x.name, m, other], {"compare": m == x.name, "swap": p.coin(0.3), "scalar": p.scalar(x.dtype)
                                     if p.coin(0.3) else None})


def _where_spelled(a: list[str], at: dict[str, Any]) -> str:
    x = repr(at["scalar"]) if at["scalar"] is not None else a[0]
    first, second = (a[2], x) if at["swap"] else (x, a[2])
    return f"torch.where({_mask_spelled(a, at)}, {first}, {second})"


op("where", _where, _where_spelled)


def _clamp(inplace: bool) -> Callable[[Pool], Draw | None]:
    def sample(p: Pool) -> Draw | None:
        x = p.pick(NUMERIC, writable=inplace)
        if x is None:
            return None
        integral = x.dtype in INTEGER and (inplace or p.coin(0.8))
        lo = p.integers(0 if x.dtype == "uint8" else -4, 2) if integral else float(p.choice((-1.5, -0.5, 0.25)))
        hi = p.integers(2, 6) if integral else float(p.choice((0.5, 1.0, 2.5)))
        if p.coin(0.1):
            lo, hi = hi, lo  # min > max: torch documents the result as max
        return Draw([x.name], {"min": lo if p.coin(0.85) else None, "max": hi})

    return sample


op("clamp", _clamp(False), lambda a, at: f"torch.clamp({a[0]}, min={at['min']!r}, max={at['max']!r})")
op("clamp_", _clamp(True), lambda a, at: f"{a[0]}.clamp_(min={at['min']!r}, max={at['max']!r})", inplace=True)


# ---- reductions and scans ----------------------------------------------------------------------
def _wider(p: Pool, dtype: str) -> str | None:
    """A dtype= that only widens (a narrowing one would be a cast of its own)."""
    if not p.coin(0.4):
        return None
    return "int64" if dtype in INTEGER + ("bool",) else "float64"


def _reduction(name: str, dtypes: tuple[str, ...], with_dtype: bool, need_dim: bool, **kw: Any) -> None:
    def sample(p: Pool) -> Draw | None:
        x = p.pick(dtypes, min_rank=1)
        if x is None:
            return None
        dim = p.axis(x) if need_dim or p.coin(0.8) else None
        attrs = {"dim": dim, "keepdim": p.coin(0.3), "dtype": _wider(p, x.dtype) if with_dtype else None}
        return Draw([x.name], attrs)

    def spell(a: list[str], at: dict[str, Any]) -> str:
        parts = [a[0]]
        if at["dim"] is not None:
            parts += [f"dim={at['dim']}", f"keepdim={at['keepdim']}"]
        if at.get("dtype"):
            parts.append(f"dtype={_dt(at['dtype'])}")
        return f"torch.{name}({', '.join(parts)})"

    op(name, sample, spell, **kw)


_reduction("sum", NUMERIC + ("bool",), True, False, overflows=True)
_reduction("prod", NUMERIC, True, True, overflows=True, weight=0.6)
_reduction("amax", NUMERIC, False, True)
_reduction("mean", FLOAT, False, False, weight=0.5)


def _scan(name: str, dtypes: tuple[str, ...], with_dtype: bool, **kw: Any) -> None:
    def sample(p: Pool) -> Draw | None:
        x = p.pick(dtypes, min_rank=1)
        if x is None:
            return None
        return Draw([x.name], {"dim": p.axis(x), "dtype": _wider(p, x.dtype) if with_dtype else None})

    op(name, sample, lambda a, at: f"torch.{name}({a[0]}, dim={at['dim']}"
       + (f", dtype={_dt(at['dtype'])})" if at.get("dtype") else ")"), **kw)


_scan("cumsum", NUMERIC + ("bool",), True, overflows=True)
_scan("cumprod", NUMERIC, True, overflows=True, weight=0.6)
_scan("logcumsumexp", FLOAT, False)
_scan("softmax", FLOAT, False, weight=0.5)


def _sort(p: Pool) -> Draw | None:
    x = p.pick(NUMERIC + ("bool",), min_rank=1)
    if x is None:
        return None
    return Draw([x.name], {"dim": p.axis(x), "descending": p.coin(), "part": p.choice(("values", "indices"))})


# indices only with stable=True: ties then have one order (PyTorch's fuzzer guidance: no ambiguous indices)
op("sort", _sort, lambda a, at: f"torch.sort({a[0]}, dim={at['dim']}, descending={at['descending']}, "
   f"stable=True).{at['part']}")


def _topk(p: Pool, x: Value, d: int) -> Draw:
    return Draw([x.name], {"k": p.integers(1, x.shape[d]), "dim": d - x.rank * p.coin(0.3), "largest": p.coin(0.7)})


op("topk", along_axis(_topk, NUMERIC), lambda a, at: f"torch.topk({a[0]}, {at['k']}, dim={at['dim']}, largest={at['largest']}).values")


def _boundaries(p: Pool, dtype: str) -> list[Any]:
    n = p.integers(1, 5)
    if dtype in INTEGER:
        lo = 0 if dtype == "uint8" else -6
        return sorted(p.integers(lo, 8) for _ in range(n))
    return sorted(float(p.integers(-24, 24)) / 8 for _ in range(n))


def _sorted_sequence(p: Pool) -> Draw | None:
    """bucketize's boundaries, searchsorted's sorted sequence: a literal of the value's dtype."""
    x = p.pick(NUMERIC)
    if x is None:
        return None
    return Draw([x.name], {"boundaries": _boundaries(p, x.dtype), "right": p.coin(), "out_int32": p.coin(0.3)})


op("bucketize", _sorted_sequence, lambda a, at: f"torch.bucketize({a[0]}, torch.tensor({at['boundaries']!r}, "
   f"dtype={a[0]}.dtype), out_int32={at['out_int32']}, right={at['right']})")
op("searchsorted", _sorted_sequence, lambda a, at: f"torch.searchsorted(torch.tensor({at['boundaries']!r}, "
   f"dtype={a[0]}.dtype), {a[0]}, out_int32={at['out_int32']}, right={at['right']})")


# ---- indexing and scatter ------------------------------------------------------------------------
def _index_add(p: Pool, x: Value, d: int) -> Draw:
    n = x.shape[d]
    length = p.integers(1, n)
    index = [p.integers(0, n - 1) for _ in range(length)]
    alpha = p.integers(1, 3) if x.dtype in INTEGER else float(p.choice((1.0, 0.5, -2.0)))
    return Draw([x.name], {"dim": d, "index": index, "alpha": alpha})


op("index_add", along_axis(_index_add, NUMERIC), lambda a, at: f"torch.index_add({a[0]}, {at['dim']}, torch.tensor({at['index']!r}), "
   f"{a[0]}.narrow({at['dim']}, 0, {len(at['index'])}), alpha={at['alpha']!r})", overflows=True)


def _index_put(inplace: bool) -> Callable[[Pool], Draw | None]:
    def sample(p: Pool) -> Draw | None:
        x = p.pick(NUMERIC, min_rank=1, writable=inplace)
        if x is None:
            return None
        n = x.shape[0]
        accumulate = p.coin(0.6)
        if accumulate:
            index = [p.integers(-n, n - 1) for _ in range(p.integers(1, n + 2))]  # repeats and negative indices
        else:  # distinct positions: which of two writes to one position wins is unspecified
            index = [int(i) for i in p.rng.permutation(n)[:p.integers(1, n)]]
        return Draw([x.name], {"index": index, "accumulate": accumulate, "value": p.scalar(x.dtype)
                               if x.dtype in FLOAT else p.integers(0, 5)})

    return sample


def _index_put_spelled(method: str) -> Callable[[list[str], dict[str, Any]], str]:
    def spell(a: list[str], at: dict[str, Any]) -> str:
        head = f"torch.index_put({a[0]}, " if method == "index_put" else f"{a[0]}.index_put_("
        return (f"{head}(torch.tensor({at['index']!r}),), {a[0]}.new_full((), {at['value']!r}), "
                f"accumulate={at['accumulate']})")

    return spell


op("index_put", _index_put(False), _index_put_spelled("index_put"), overflows=True)
op("index_put_", _index_put(True), _index_put_spelled("index_put_"), inplace=True, overflows=True)


def _index_tensor(p: Pool, shape: tuple[int, ...], high: int) -> list[Any]:
    return np.asarray(p.rng.integers(0, high, size=shape)).tolist()


def _small(v: Value) -> bool:
    return int(np.prod(v.shape)) <= 48  # its index tensor is a literal in the source


def _scatter_reduce(p: Pool, x: Value, d: int) -> Draw:
    return Draw([x.name], {"dim": d, "index": _index_tensor(p, x.shape, x.shape[d]),
                           "reduce": p.choice(("sum", "prod", "amax", "amin", "mean")), "include_self": p.coin(0.7)})


op("scatter_reduce", along_axis(_scatter_reduce, NUMERIC, where=_small), lambda a, at: f"torch.scatter_reduce({a[0]}, {at['dim']}, "
   f"torch.tensor({at['index']!r}), {a[0]}, reduce={at['reduce']!r}, include_self={at['include_self']})",
   overflows=True)


def _gather(p: Pool, x: Value, d: int) -> Draw:
    shape = tuple(p.integers(1, 4) if k == d else p.integers(1, s) for k, s in enumerate(x.shape))
    return Draw([x.name], {"dim": d, "index": _index_tensor(p, shape, x.shape[d])})


op("gather", along_axis(_gather, NUMERIC + ("bool",), where=_small), lambda a, at: f"torch.gather({a[0]}, {at['dim']}, torch.tensor({at['index']!r}))")


def _matmul(p: Pool) -> Draw | None:
    x = p.pick(("float32", "float64"), min_rank=2, max_rank=3)
    return Draw([x.name]) if x else None


op("matmul", _matmul, lambda a, at: f"torch.matmul({a[0]}, {a[0]}.transpose(-1, -2))", weight=0.5)


# ---- layers: linear and conv2d with weights held as parameters ---------------------------------------------
# A layer's weights and biases are `torch.nn.Parameter`s (requires_grad=False) the program reads as globals, made
# by `layer_weights` from the statement's seed (the runner's namespace and the reproducer make them alike): Dynamo
# lifts a global parameter as one, so a compile with `freezing=True` folds it as a constant and runs Inductor's
# freezing passes on it (mkldnn's weight packing of linear and convolution, binary folding of a scale into the
# convolution, the concatenation of linears that share an input), then the post-grad mkldnn lowerings of a packed
# layer followed by an activation or an add. A tensor global is no parameter: freezing leaves it an input.
# `.to(x)`: the weight in the input's dtype (the float64 reference, a float16 layer) and device (type inference
# on meta tensors); a no-op, returning the parameter itself, where they agree.
WEIGHTS_SOURCE = '''
def layer_weights(shape, seed):
    """A layer's weight or bias: eighths in [-1, 1] (products with the inputs' eighths are exact in float32)."""
    values = np.random.default_rng(seed).integers(-8, 9, tuple(shape)) / 8
    return torch.nn.Parameter(torch.from_numpy(values.astype("float32")), requires_grad=False)
'''
exec(WEIGHTS_SOURCE, _NS)  # noqa: S102 - our own source, shared with the reproducer
layer_weights: Callable[[Sequence[int], int], torch.Tensor] = _NS["layer_weights"]
LAYER_FLOATS = ("float32", "float64", "float16")
# the activations Inductor's mkldnn lowerings fuse into a packed layer (None: none), as the program spells them
LAYER_ACTIVATIONS: tuple[str | None, ...] = (
    None, "torch.relu({})", "torch.nn.functional.gelu({})", "torch.nn.functional.gelu({}, approximate='tanh')",
    "torch.nn.functional.hardtanh({}, -0.5, 0.5)", "torch.nn.functional.leaky_relu({}, 0.125)",
    "torch.sigmoid({})", "torch.tanh({})", "torch.nn.functional.silu({})", "torch.nn.functional.hardswish({})",
    "torch.nn.functional.hardsigmoid({})", "torch.nn.functional.relu6({})")


def layer_parameters(stmt_attrs: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], int]]:
    """A layer statement's parameters: global name -> (shape, seed)."""
    at, out = stmt_attrs, {}
    for k in range(at["heads"]):
        seed = at["seed"] + k
        out[f"w{seed}"] = (tuple(at["weight"]), seed)
        if at["bias"]:
            out[f"b{seed}"] = ((at["weight"][0],), seed + 1_000_003)
    return out


def _layer(kind: str) -> Callable[[Pool], Draw | None]:
    def sample(p: Pool) -> Draw | None:
        if kind == "linear":
            x = p.pick(LAYER_FLOATS, min_rank=1, max_rank=3, where=lambda v: 0 < v.shape[-1] <= 32)
            if x is None:
                return None
            weight = [p.integers(1, 8), x.shape[-1]]
            attrs: dict[str, Any] = {"heads": p.choice((1, 1, 2, 3))}
        else:
            x = p.pick(LAYER_FLOATS, min_rank=4, max_rank=4,
                       where=lambda v: 0 < v.shape[1] <= 8 and min(v.shape[2:]) > 0)
            if x is None:
                return None
            padding = p.integers(0, 1)
            kernel = p.integers(1, min(3, min(x.shape[2:]) + 2 * padding))
            weight = [p.integers(1, 4), x.shape[1], kernel, kernel]
            attrs = {"heads": 1, "padding": padding}
        # an add of another value after the layer (mkldnn's binary fusion) wants its shape: a scale folds in anyway
        attrs.update({"weight": weight, "bias": p.coin(0.6), "seed": p.integers(0, 1 << 30),
                      "scale": p.choice((None, None, 0.5, 2.0)) if kind == "conv2d" else None,
                      "act": p.choice(LAYER_ACTIVATIONS)})
        return Draw([x.name], attrs)

    return sample


def _layer_spelled(kind: str) -> Callable[[list[str], dict[str, Any]], str]:
    def spell(a: list[str], at: dict[str, Any]) -> str:
        calls = []
        for k in range(at["heads"]):
            seed = at["seed"] + k
            bias = f"b{seed}.to({a[0]})" if at["bias"] else "None"
            if kind == "linear":
                call = f"torch.nn.functional.linear({a[0]}, w{seed}.to({a[0]}), {bias})"
            else:
                call = f"torch.nn.functional.conv2d({a[0]}, w{seed}.to({a[0]}), {bias}, padding={at['padding']})"
            if at.get("scale") is not None:
                call = f"{call} * {at['scale']!r}"
            calls.append(at["act"].format(call) if at["act"] else call)
        return calls[0] if len(calls) == 1 else f"torch.stack(({', '.join(calls)}))"

    return spell


op("linear", _layer("linear"), _layer_spelled("linear"), weight=0.8)
op("conv2d", _layer("conv2d"), _layer_spelled("conv2d"), weight=0.8)


def _cat(p: Pool, x: Value, d: int) -> Draw:
    y = p.pick(where=lambda v: v.rank == x.rank and all(s == t for k, (s, t) in enumerate(zip(v.shape, x.shape))
                                                       if k != d))
    return Draw([x.name, (y or x).name], {"dim": d})


op("cat", along_axis(_cat), lambda a, at: f"torch.cat(({a[0]}, {a[1]}), dim={at['dim']})", weight=0.6)


# ---- views ---------------------------------------------------------------------------------------
def _slice(p: Pool, x: Value, d: int) -> Draw:
    n = x.shape[d]
    start = p.integers(0, n - 1)
    return Draw([x.name], {"dim": d, "start": start, "stop": p.integers(start + 1, n), "step": p.integers(1, 3)})


op("slice", along_axis(_slice), lambda a, at: f"{a[0]}[{':, ' * at['dim']}{at['start']}:{at['stop']}:{at['step']}]", view=True,
   weight=1.5)


def _transpose(p: Pool) -> Draw | None:
    x = p.pick(min_rank=2)
    return Draw([x.name], {"dims": [int(d) for d in p.rng.choice(x.rank, 2, replace=False)]}) if x else None


op("transpose", _transpose, lambda a, at: f"{a[0]}.transpose({at['dims'][0]}, {at['dims'][1]})", view=True)


def _permute(p: Pool) -> Draw | None:
    x = p.pick(min_rank=2)
    return Draw([x.name], {"perm": [int(d) for d in p.rng.permutation(x.rank)]}) if x else None


op("permute", _permute, lambda a, at: f"{a[0]}.permute({', '.join(map(str, at['perm']))})", view=True)


def _expand(p: Pool) -> Draw | None:
    x = p.pick(max_rank=3)
    if x is None:
        return None
    shape = [p.integers(2, 3) if s == 1 else s for s in x.shape]
    if p.coin(0.4) or shape == list(x.shape):
        shape = [p.integers(2, 3), *shape]
    return Draw([x.name], {"shape": shape})


op("expand", _expand, lambda a, at: f"{a[0]}.expand({', '.join(map(str, at['shape']))})", view=True, overlapping=True)


def _unsqueeze(p: Pool) -> Draw | None:
    x = p.pick(max_rank=3)
    return Draw([x.name], {"dim": p.integers(-x.rank - 1, x.rank)}) if x else None


op("unsqueeze", _unsqueeze, lambda a, at: f"{a[0]}.unsqueeze({at['dim']})", view=True)


def _narrow(p: Pool, x: Value, d: int) -> Draw:
    start = p.integers(0, x.shape[d] - 1)
    return Draw([x.name], {"dim": d, "start": start, "length": p.integers(1, x.shape[d] - start)})


op("narrow", along_axis(_narrow), lambda a, at: f"{a[0]}.narrow({at['dim']}, {at['start']}, {at['length']})", view=True)


def _unfold(p: Pool, x: Value, d: int) -> Draw:
    return Draw([x.name], {"dim": d, "size": p.integers(1, x.shape[d]), "step": p.integers(1, 2)})


op("unfold", along_axis(_unfold, max_rank=3), lambda a, at: f"{a[0]}.unfold({at['dim']}, {at['size']}, {at['step']})", view=True,
   overlapping=True, weight=0.6)


def _reshape(p: Pool) -> Draw | None:
    x = p.pick(min_rank=1)
    if x is None:
        return None
    n = int(np.prod(x.shape))
    if x.rank >= 2 and p.coin():
        k = p.integers(0, x.rank - 2)  # merge two neighbouring axes
        shape = [*x.shape[:k], x.shape[k] * x.shape[k + 1], *x.shape[k + 2:]]
    elif p.coin():
        shape = [-1]
    else:
        f = next((f for f in (2, 3, 5) if n % f == 0), 1)
        shape = [f, -1]
    return Draw([x.name], {"shape": shape, "method": p.choice(("reshape", "view"))})


# view fails on a non-contiguous argument (type inference on meta tensors rejects the draw); reshape copies there
op("reshape", _reshape, lambda a, at: f"{a[0]}.{at['method']}({', '.join(map(str, at['shape']))})", view=True)


def _select(p: Pool, x: Value, d: int) -> Draw:
    return Draw([x.name], {"dim": d, "index": p.integers(-x.shape[d], x.shape[d] - 1)})


op("select", along_axis(_select), lambda a, at: f"{a[0]}.select({at['dim']}, {at['index']})", view=True)


# ---- in-place ------------------------------------------------------------------------------------
def _inplace_binary(name: str, dtypes: tuple[str, ...]) -> None:
    def sample(p: Pool) -> Draw | None:
        x = p.pick(dtypes, writable=True)
        if x is None:
            return None
        return Draw([x.name, _other(p, x, dtypes, 0.4, same=True)])

    op(name, sample, lambda a, at: f"{a[0]}.{name}({a[1]})", inplace=True, overflows=True, weight=1.5)


_inplace_binary("add_", NUMERIC)
_inplace_binary("mul_", NUMERIC)
_inplace_binary("sub_", NUMERIC)


def _copy(p: Pool) -> Draw | None:
    x = p.pick(writable=True)
    if x is None:
        return None
    y = p.partner(x)
    return Draw([x.name, y.name]) if y is not None and y.name != x.name else None


op("copy_", _copy, lambda a, at: f"{a[0]}.copy_({a[1]})", inplace=True, undefined=_copy_check, weight=1.5)


def _relu_(p: Pool) -> Draw | None:
    x = p.pick(NUMERIC, writable=True)
    return Draw([x.name]) if x else None


op("relu_", _relu_, lambda a, at: f"{a[0]}.relu_()", inplace=True)


# Dynamo features: a Python branch on a computed value and `.item()`. Dynamo cannot keep either in one graph
# (a data-dependent branch, a scalar out of a tensor), so a program holding one compiles with fullgraph=False:
# Dynamo splits it into graphs around the decision (a configuration fact, counted in the run's
# "graph_breaks", never a finding), and the oracle is the same. Both arms of a branch add the same Python
# scalar (the same result type either way; the type inference runs the statement on zeros: a meta tensor
# has no value to decide on).
def _branch(p: Pool) -> Draw | None:
    x = p.pick(NUMERIC)
    if x is None:
        return None
    return Draw([x.name, _scalar(p, x.dtype, True)], {"threshold": p.integers(-2, 2), "arms": p.choice(
        (("+", "*"), ("-", "+"), ("*", "-")))})


op("branch", _branch, lambda a, at: f"(({a[0]} {at['arms'][0]} {a[1]}) if bool({a[0]}.sum() > {at['threshold']}) "
   f"else ({a[0]} {at['arms'][1]} {a[1]}))", breaks_graph=True, overflows=True, weight=0.7)


def _item(p: Pool) -> Draw | None:
    x = p.pick(NUMERIC)
    if x is None:
        return None
    y = p.pick(NUMERIC + ("bool",))
    return Draw([x.name, y.name], {"reduce": p.choice(("amax", "amin"))}) if y is not None else None


op("item", _item, lambda a, at: f"({a[0]} * {a[1]}.{at['reduce']}().item())", breaks_graph=True, overflows=True,
   weight=0.7)


# Inductor's own replacement patterns spliced into programs (issue 38, OATest applied to Inductor): one statement
# calls torch's search function by name (pattern_seeds.splice_statement draws it; never drawn here: weight 0,
# so the op table's other draws are what they were) on program values bridged to the shapes, dimension order and
# dtype the pattern was registered with. The bridges are inside the statement: a bridged value of the pattern's
# own dtype (bfloat16) must not reach the rest of the program, whose dtypes the op table bounds.
def _bridged(x: str, bridge: list[Any]) -> str:
    """Value `x` (of `n_src` elements) as a tensor of `shape`, stored in dimension `order`, of `dtype`."""
    shape, order, dtype, n_src = bridge
    n = int(np.prod(shape))
    expr = f"{x}.reshape(-1)"
    if n_src < n:
        expr += f".repeat({-(-n // n_src)})"
    if n_src != n:
        expr += f"[:{n}]"
    expr += f".reshape({tuple(shape[d] for d in order)!r})"
    if order != sorted(order):
        expr += f".permute({', '.join(str(order.index(d)) for d in range(len(order)))})"
    if dtype == "bool":
        return f"({expr} > 0)"
    expr += f".to({_dt(dtype)})"
    return f"({expr}.abs() * {SPLICE_SCALE} + 1.0)" if not shape else f"({expr} * {SPLICE_SCALE})"


def pattern_alias(search: str) -> str:
    """The name a program calls torch's search function "module:qualname" by."""
    return search.rpartition(":")[2].replace(".", "_")


def _pattern_spelled(a: list[str], at: dict[str, Any]) -> str:
    parts = [f"{name}={_bridged(x, b) if b else x}" for name, x, b in zip(at["argnames"], a, at["bridges"], strict=True)]
    parts += [f"{k}={v!r}" for k, v in at["kwargs"].items()]
    call = f"{pattern_alias(at['search'])}({', '.join(parts)})" + ("[0]" if at["tuple"] else "")
    return f"{call}.to({_dt(at['cast'])})" if at["cast"] else call


op("pattern", lambda p: None, _pattern_spelled, weight=0.0)


def pattern_searches(program: Program) -> list[str]:
    """The search functions (module:qualname) the program's spliced patterns call, in first-call order."""
    return list(dict.fromkeys(s.attrs["search"] for s in program.stmts if s.op == "pattern"))


def widened(program: Program) -> Program:
    """The program whose spliced patterns run in float64 (their bridges' float casts widened): the float64
    reference of a float16 or bfloat16 pattern (its casts are part of its inputs' making, as the inputs are)."""
    def wide(s: Stmt) -> Stmt:
        if s.op != "pattern":
            return s
        bridges = [[*b[:2], "float64" if b[2].startswith(("float", "bfloat")) else b[2], b[3]] if b else b
                   for b in s.attrs["bridges"]]
        return Stmt(s.op, s.args, {**s.attrs, "bridges": bridges, "cast": None}, s.out)

    return dataclasses.replace(program, stmts=[wide(s) for s in program.stmts])


_pattern_function = functools.cache(inductor_pattern)


def splice_tolerance(program: Program) -> float:
    """The least float tolerance of the program's results: a spliced pattern computes in its variant's dtype
    (float16, bfloat16) whatever the dtype its results reach the oracle in (a bfloat16 result cast to float32, the
    float32 inputs its gradients reach), so eager and compiled differ by that dtype's rounding; 0 without one."""
    dtypes = {b[2] for s in program.stmts if s.op == "pattern" for b in s.attrs["bridges"] if b}
    return max([0.0] + [BFLOAT16_TOLERANCE if d == "bfloat16" else tolerance(d) for d in dtypes & {"bfloat16", "float16"}])


LAYERS = ("linear", "conv2d")


def _namespace(stmts: list[Stmt]) -> dict[str, Any]:
    """The globals a program's source runs with: torch, the search functions its spliced patterns call and its
    layers' parameters (in bodies too)."""
    ns: dict[str, Any] = {"torch": torch}
    for s in walk(stmts):
        if s.op == "pattern":
            ns[pattern_alias(s.attrs["search"])] = _pattern_function(s.attrs["search"])
        elif s.op in LAYERS:
            ns.update({name: layer_weights(shape, seed) for name, (shape, seed) in layer_parameters(s.attrs).items()})
    return ns


# ---- regions (programs/core.py's bodies, emitted as nested functions) ------------------------------
# torch.cond (a higher-order op Dynamo captures whole; branches take what they capture as operands, return
# tensors of the same metadata and alias none of their inputs: results are values a branch defines, made
# by no view op), torch._higher_order_ops.while_loop (a computed trip count, bounded; the body closes over
# what it reads), a Python `for` over a constant range (Dynamo unrolls it) and a Python `if` on a computed
# value (a graph break: `breaks_graph`, compiled with fullgraph=False). The guards run on every trip
# (`checked_run` runs regions by their Python meaning: `_run_region`). Training goes through torch.cond
# (Inductor compiles its backward); while_loop has no autograd in torch 2.13: never in a training program.
MAX_TRIPS = 4
REGIONS_SOURCE = '''
from torch._higher_order_ops.while_loop import while_loop  # noqa: E402


def for_range(n, body, *carry):
    """A Python for loop over range(n): Dynamo unrolls it."""
    for _ in range(n):
        carry = body(*carry)
    return carry
'''
_REGION_NS: dict[str, Any] = {"torch": torch}
exec(REGIONS_SOURCE, _REGION_NS)  # noqa: S102 - our own source, shared with the reproducer


def _predicate(x: str, at: dict[str, Any]) -> str:
    """A scalar bool tensor computed from a value: more than `k` of its elements are positive."""
    return f"({x} > 0).sum() > {at['k']}"


def _trips(x: str, at: dict[str, Any]) -> str:
    return f"(({x} > 0).sum() - {at['offset']}).clamp(0, {MAX_TRIPS})"


def _branches(p: Pool, outer: bool) -> tuple[list[Any], list[Value]] | None:
    """Two bodies returning values of the same types; each takes every value either captures (`outer`: the
    second may return one of them, where the construct allows an alias: a Python `if`)."""
    first = p.body([], p.integers(1, 3), n_results=p.integers(1, 2))
    if first is None:
        return None
    need = [(v.dtype, v.shape) for v in first[1]]
    second = next((b for b in (p.body([], p.integers(1, 4), need, outer=outer and k == 2) for k in range(3))
                   if b is not None), None)
    if second is None:
        return None
    bodies = [first[0], second[0]]
    pass_captured(bodies)
    return bodies, first[1]


def _conditional(outer: bool) -> Callable[[Pool], Draw | None]:
    def sample(p: Pool) -> Draw | None:
        x = p.pick(NUMERIC + ("bool",))
        made = _branches(p, outer) if x is not None else None
        if made is None:
            return None
        bodies, results = made
        views = [a for a in bodies[0].params if p.values[a].view]
        return Draw([x.name, *bodies[0].params], {"k": p.integers(0, int(np.prod(x.shape)) // 2), "clone": views},
                    bodies, len(results))

    return sample


def _operands(a: list[str], clone: Sequence[str] = ()) -> str:
    """A tuple of operands; those in `clone` (views: torch.cond takes no operands that alias) cloned."""
    return "(" + "".join(f"{o}.clone(), " if o in clone else f"{o}, " for o in a).rstrip() + ")"


op("cond", _conditional(False), lambda a, at: f"torch.cond({_predicate(a[0], at)}, {at['fns'][0]}, {at['fns'][1]}, "
   f"{_operands(a[1:], at.get('clone', ()))})", roles=("true", "false"), trip=lambda s, k: s.args[1:], weight=2.0)
op("python_if", _conditional(True), lambda a, at: f"({at['fns'][0]} if bool({_predicate(a[0], at)}) else "
   f"{at['fns'][1]})({', '.join(a[1:])})", roles=("true", "false"), trip=lambda s, k: s.args[1:],
   breaks_graph=True, weight=0.8)


def _carry(p: Pool) -> list[Value]:
    first = p.pick(NUMERIC + ("bool",))
    if first is None:
        return []
    second = p.pick(NUMERIC + ("bool",)) if p.coin(0.4) else None
    return [first, *([second] if second is not None and second.name != first.name else [])]


def _loop(p: Pool, counted: bool) -> Draw | None:
    carry = _carry(p)
    x = p.pick(NUMERIC + ("bool",))
    if not carry or x is None:
        return None
    params = [Value(p.fresh(), v.dtype, v.shape) for v in carry]
    need = [(v.dtype, v.shape) for v in carry]
    made = next((b for b in (p.body(params, p.integers(1, 3), need) for _ in range(3)) if b is not None), None)
    if made is None:
        return None
    reads = {v.name for v in carry} | {x.name, *made[0].captured()}
    if not counted and ({v.name for v in carry} & {x.name, *made[0].captured()} or any(p.values[a].view for a in reads)):
        return None  # while_loop refuses values that alias each other ("might be aliasing the input")
    at = {"n": p.integers(0, MAX_TRIPS)} if counted else {"offset": p.integers(0, 2)}
    return Draw([*([] if counted else [x.name]), *(v.name for v in carry)], at, [made[0]], len(carry))


op("while_loop", lambda p: _loop(p, False), lambda a, at: f"while_loop(lambda i, *c: i < {_trips(a[0], at)}, "
   f"lambda i, *c: (i + 1, *{at['fns'][0]}(*c)), (torch.zeros((), dtype=torch.int64), {', '.join(a[1:])}))[1:]",
   roles=("body",), trip=lambda s, k: s.args[1:], differentiable=False, weight=1.2)
op("for_range", lambda p: _loop(p, True), lambda a, at: f"for_range({at['n']}, {at['fns'][0]}, {', '.join(a)})",
   roles=("body",), trip=lambda s, k: s.args, weight=1.2)


def _run_region(stmt: Stmt, env: dict[str, Any], call: Callable[[Any, list[Any]], list[Any]],
                decide: bool) -> list[Any]:
    """A region by its Python meaning, each body run by `call(body, args)`: the branch the predicate picks,
    the loop's trips; without `decide` (meta tensors: no value to decide on) every branch once (their
    types must agree) and a loop's body once."""
    at, args = stmt.attrs, [env[a] if isinstance(a, str) else a for a in stmt.args]
    ns = {"torch": torch, **env}
    if stmt.op in ("cond", "python_if"):
        if not decide:
            results = [call(b, args[1:]) for b in stmt.bodies]
            if [[(r.dtype, r.shape) for r in rs] for rs in results].count(
                    [(r.dtype, r.shape) for r in results[0]]) != len(results):
                raise TypeError("branches of different types")
            if stmt.op == "cond":
                _refused_by_higher_order_op(env, results, results[0])
            return results[0]
        taken = bool(eval(_predicate(stmt.args[0], at), ns))  # noqa: S307 - our own generated source
        return call(stmt.bodies[0 if taken else 1], args[1:])
    carry = args if stmt.op == "for_range" else args[1:]
    if not decide:
        once = call(stmt.bodies[0], carry)
        if stmt.op == "while_loop":
            _refused_by_higher_order_op(env, [once], carry)
        return once
    trips = at["n"] if stmt.op == "for_range" else int(eval(_trips(stmt.args[0], at), ns))  # noqa: S307
    for _ in range(trips):
        carry = call(stmt.bodies[0], carry)
    return carry


def _refused_by_higher_order_op(env: dict[str, Any], results: list[list[torch.Tensor]],
                                like: list[torch.Tensor]) -> None:
    """Raises where torch refuses a torch.cond's branches or a while_loop's body, typed on meta tensors
    (`results`: each body's results; `like`: what their strides must be, a loop's carried values). torch traces
    the bodies on fake tensors and wants every branch's results with the same strides (a loop's body, its
    carried values'): torch 2.13's cond refuses a different order of strides and trips on a stride that differs
    along a size-1 dimension alone (a `.to` keeping a transposed input's strides beside an op's contiguous
    result); and no result may be a value the body was given or closes over (a `.to` of a value's own dtype
    returns the value itself)."""
    strides = [t.stride() for t in like]
    if any([r.stride() for r in rs] != strides for rs in results):
        raise TypeError("results of other strides than the construct's (torch's higher-order ops refuse them)")
    if any(r is v for rs in results for r in rs for v in env.values()):
        raise TypeError("a result that is one of the values given (torch's higher-order ops refuse aliases)")


# ---- the dialect ---------------------------------------------------------------------------------
def _layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "transposed":
        return t.transpose(-1, -2)
    if layout == "channels_last":
        return t.contiguous(memory_format=torch.channels_last)
    return t


def _meta(i: Input) -> torch.Tensor:
    shape = i.shape[:-2] + (i.shape[-1], i.shape[-2]) if i.layout == "transposed" else i.shape
    return _layout(torch.empty(shape, dtype=getattr(torch, i.dtype), device="meta"), i.layout)


def _spell(stmt: Stmt) -> str:
    from dlcfuzz.lower.pysource.codegen import literal

    return OPS[stmt.op].spell([a if isinstance(a, str) else literal(a) for a in stmt.args], stmt.attrs)


def _eval(stmt: Stmt, env: dict[str, Any]) -> Any:
    return eval(_spell(stmt), _namespace([stmt]), env)  # noqa: S307 - our own generated source


class TorchDialect:
    """PyTorch programs (`programs/core.Dialect`) for TorchInductor."""

    name = "torch"
    ops = OPS
    dtypes = INPUT_DTYPES
    train_share = TRAIN_SHARE
    splice_share = SPLICE_SHARE
    splice_ops = ("pattern",)  # the ops of spliced statements

    def start(self, inputs: list[Input]) -> dict[str, torch.Tensor]:
        return {i.name: _meta(i) for i in inputs}

    def enter(self, state: dict[str, torch.Tensor], params: list[Value]) -> dict[str, torch.Tensor]:
        return {**state, **{p.name: _meta(Input(p.name, p.dtype, p.shape)) for p in params}}

    def apply(self, state: dict[str, torch.Tensor], stmt: Stmt) -> Any:
        if stmt.bodies:
            return self._apply_region(state, stmt)
        with torch.no_grad():
            if OPS[stmt.op].breaks_graph:  # a decision on a value: zeros of the same types decide it
                zeros = {a: torch.zeros(state[a].shape, dtype=state[a].dtype) for a in stmt.uses()}
                r = _eval(stmt, zeros).to("meta")
            else:
                r = _eval(stmt, state)
        if stmt.out is None:
            return None
        if not isinstance(r, torch.Tensor) or r.dtype == torch.bfloat16 or r.is_complex():
            raise TypeError("not a real tensor")
        # keep programs small (compiles stay fast): a result past 4096 elements only where an argument (a spliced
        # pattern's) is as large already
        limit = SPLICE_ELEMENTS if stmt.op == "pattern" else max([4096] + [state[a].numel() for a in stmt.uses()])
        if r.numel() > limit or r.dim() > 5:
            raise ValueError("too large")
        state[stmt.out] = r
        return str(r.dtype).removeprefix("torch."), tuple(r.shape)

    def splice(self, rng: np.random.Generator, fired: set[str]) -> tuple[Callable[[Pool], list[Stmt]], bool]:
        """A program's first statement, one of Inductor's replacement patterns called on bridged program values
        (`generate(first=...)`; pattern_seeds.choose_splice: rewrites not in `fired` preferred), and whether the
        chosen variant is a training one (its rewrite matches in a training compile: the program should train)."""
        from dlcfuzz.backends.inductor.pattern_seeds import choose_splice, splice_statement

        seed = choose_splice(rng, fired)
        return (lambda pool: [splice_statement(seed, pool, "v0")]), seed.training

    def _apply_region(self, state: dict[str, torch.Tensor], stmt: Stmt) -> list[tuple[str, tuple[int, ...]]]:
        """A region's types: its bodies typed statement by statement on meta tensors (every branch, a loop's
        body once; `_run_region`)."""
        def call(body: Any, args: list[Any]) -> list[Any]:
            inner = {**state, **dict(zip(body.params, args))}
            for t in body.stmts:
                self.apply(inner, t)
            return [inner[r] for r in body.results]

        results = _run_region(stmt, state, call, decide=False)
        for name, r in zip(stmt.defines(), results, strict=True):
            if r.numel() > 4096 or r.dim() > 5:
                raise ValueError("too large")
            state[name] = r
        return [(str(r.dtype).removeprefix("torch."), tuple(r.shape)) for r in results]

    def per_test_configs(self, rng: np.random.Generator, configs: list[tuple[str, dict[str, Any]]]
                         ) -> list[tuple[str, dict[str, Any]]]:
        """A share of the tests compile their plain Inductor configuration with dynamic shapes (symbolic
        sizes: other kernels and guards than the static compile's, on the same inputs), a share of the others
        with `freezing=True` (knobs.FREEZING; Inductor's freezing passes run in an inference compile: the layers'
        parameters folded as constants, the freezing pattern passes, e.g. mkldnn's weight packing of a linear or
        convolution; a training program's compile runs with gradients on, where freezing does nothing), a share
        with Inductor's split/cat pattern passes on (`fusions`: knobs.SPLIT_CAT_FUSIONS, the pre- and post-grad
        passes that normalize and merge cat, split, stack, unbind, clamp, reshape and squeeze calls)."""
        if rng.random() < DYNAMIC_SHARE:
            suffix, knobs = "dynamic", {"dynamic": True}
        else:
            # from a child stream (spawning leaves the test's own as it was): a test's other draws are what they were
            u = rng.spawn(1)[0].random()
            if u < FREEZING_SHARE:
                suffix, knobs = "freezing", dict(FREEZING)
            elif u < FREEZING_SHARE + FUSIONS_SHARE:
                suffix, knobs = "fusions", dict(SPLIT_CAT_FUSIONS)
            else:
                return configs
        return [(f"{n}+{suffix}", {**o, "knobs": knobs})
                if o.get("backend") == "inductor" and not o.get("knobs") and not o.get("fault") else (n, o)
                for n, o in configs]

    def run(self, program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]],
            note: Callable[[str], None] = lambda s: None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return run_program(program, seed, configs, note)

    def reproducer(self, program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]], title: str,
                   detail: str, version: str) -> str:
        return reproducer(program, seed, configs, title, detail, version)


DIALECT = TorchDialect()


# ---- the run -------------------------------------------------------------------------------------
def _clones(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Copies with the same strides (a transposed or channels_last input stays one)."""
    return {k: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype).copy_(t) for k, t in inputs.items()}


def _overflow(stmt: Stmt, env: dict[str, Any], result: torch.Tensor) -> tuple[str, str] | None:
    """The statement again on float64 copies of its integer arguments: does the exact result leave the
    result dtype's range? (Exact below 2^53; the inputs are small.)"""
    if result.dtype not in (torch.int8, torch.int16, torch.int32, torch.int64):
        return None
    wide = {k: (v.double() if isinstance(v, torch.Tensor) and not v.is_floating_point() else v.clone()
                if isinstance(v, torch.Tensor) else v) for k, v in env.items() if k in stmt.uses()}
    attrs = {**stmt.attrs, "dtype": None} if "dtype" in stmt.attrs else stmt.attrs
    try:
        with torch.no_grad():
            r = _eval(Stmt(stmt.op, stmt.args, attrs, stmt.out), wide)
            if stmt.out is None:
                r = wide[stmt.args[0]]
    except Exception:  # noqa: BLE001 - no float reading of this statement: judge by its integer result
        return None
    info = torch.iinfo(result.dtype)
    r = r.double()
    if bool((r > info.max).any()) or bool((r < info.min).any()):
        return C.INTEGER_OVERFLOW, f"{stmt.op}: a {str(result.dtype)[6:]} result past the type's range"
    return None


class _Undefined(Exception):
    """Undefined behaviour met (its (category, reason) in args[0])."""


def checked_run(program: Program, inputs: dict[str, torch.Tensor]) -> tuple[str, str] | None:
    """Run the program eagerly a statement at a time with each op's guards (a region's bodies on every trip
    they run); (category, reason) of the first undefined behaviour, or None. Raises what eager raises (an
    invalid program)."""
    env: dict[str, Any] = dict(inputs)
    with torch.no_grad():
        try:
            _checked_stmts(program.stmts, env)
        except _Undefined as ub:
            return ub.args[0]
    return None


def _checked_stmts(stmts: list[Stmt], env: dict[str, Any]) -> None:
    def call(body: Any, args: list[Any]) -> list[Any]:
        inner = {**env, **dict(zip(body.params, args))}
        _checked_stmts(body.stmts, inner)
        return [inner[r] for r in body.results]

    for stmt in stmts:
        if stmt.bodies:
            env.update(zip(stmt.defines(), _run_region(stmt, env, call, decide=True), strict=True))
            continue
        spec = OPS[stmt.op]
        args = [env[a] if isinstance(a, str) else a for a in stmt.args]
        if spec.undefined is not None and (ub := spec.undefined(args, stmt.attrs)) is not None:
            raise _Undefined(ub)
        before = {a: env[a].clone() for a in stmt.uses()} if spec.overflows and stmt.out is None else None
        r = _eval(stmt, env)
        if stmt.out is not None:
            env[stmt.out] = r
        if spec.overflows:
            res = r if stmt.out is not None else env[stmt.args[0]]
            wide_env = before if before is not None else env
            if (ub := _overflow(stmt, wide_env, res)) is not None:
                raise _Undefined(ub)


def _arrays(tag: str, result: dict[str, list[torch.Tensor]]) -> dict[str, np.ndarray]:
    """`execute`'s tensors as the reply's arrays "TAG/KIND/K"."""
    return {f"{tag}/{kind}/{k}": t.detach().contiguous().numpy().copy()
            for kind, ts in result.items() for k, t in enumerate(ts)}


def source_function(program: Program, ops: dict[str, OpSpec] = OPS) -> Callable[..., tuple]:
    ns = {**_REGION_NS, **_namespace(program.stmts)}
    exec(emit(program, ops), ns)  # noqa: S102 - our own generated source
    return ns["program"]


def planted_ops(fault: str | None) -> dict[str, OpSpec]:
    """The op table a compiled configuration's program is written with: with the planted fault `cond`
    (tests only), torch.cond's branches swapped (a fault that shows only inside a region)."""
    if fault != COND_FAULT:
        return OPS
    spec = OPS["cond"]
    return {**OPS, "cond": replace(spec, spell=lambda a, at: spec.spell(a, {**at, "fns": at["fns"][::-1]}))}


def run_program(program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]],
                note: Callable[[str], None] = lambda s: None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Eager (the guards first), a float64 eager reference, then every compiled configuration, each on
    its own copies of the inputs (`execute`: a call, or a training program's steps). Arrays "RUN/out/K"
    (outputs), "RUN/in/K" (inputs after the call) and, for a training program, "RUN/grad/K" (the first
    step's gradients of the float inputs) and "RUN/param/K" (the float inputs after the steps)."""
    from dlcfuzz.backends.inductor.compiling import (
        compile_callable,
        first_failing_stage,
        inductor_patch,
        scrub,
        summarize_cpp_compile_error,
    )
    from dlcfuzz.backends.inductor.patterns import recording_fired
    from dlcfuzz.lower.torch import static_eager_conds

    inputs = make_inputs(input_specs(program), seed)
    names = [i.name for i in program.inputs]
    fn = source_function(program)
    train, fullgraph = program.steps > 0, one_graph(program, OPS)
    note("eager:run")
    try:
        ub = checked_run(program, _clones(inputs))
        if ub is not None:
            return {"undefined": list(ub)}, {}
        with static_eager_conds():  # eager torch.cond compiles: its shapes kept concrete
            arrays = _arrays("eager", execute(fn, _clones(inputs), names, program.steps))
    except Exception as e:  # noqa: BLE001 - eager rejects the program (or its backward): invalid, not a bug
        return {"invalid": f"{type(e).__name__}: {str(e)[:600]}"}, {}
    runs: dict[str, dict[str, Any]] = {"eager": {"status": "ok"}}
    fired: set[str] = set()  # the pattern-matcher rewrites the compiles applied (patterns.recording_fired)
    note("fp64:run")
    try:  # the float64 reference: float inputs widened, the same program
        wide = {k: t.double() if t.is_floating_point() else t for k, t in _clones(inputs).items()}
        fn64 = source_function(widened(program)) if pattern_searches(program) else fn
        with static_eager_conds():
            arrays.update(_arrays("fp64", execute(fn64, wide, names, program.steps)))
        runs["fp64"] = {"status": "ok"}
    except Exception as e:  # noqa: BLE001 - e.g. an index_put whose values keep float32: no fp64 reading
        runs["fp64"] = {"status": "error", "error": f"{type(e).__name__}: {str(e)[:300]}"}
    for name, options in configs:
        backend = options.get("backend", "inductor")
        if backend == "eager":
            continue
        knobs, fault = dict(options.get("knobs") or {}), options.get("fault")
        inductor_fault = None if fault in PROGRAM_FAULTS else fault

        def example() -> list[Any]:
            return [t.requires_grad_().clone() if train and t.is_floating_point() else t
                    for t in _clones(inputs).values()]

        t0 = time.perf_counter()
        note(f"{name}:compile")
        try:
            # the rewrites Inductor's pattern matcher applies are recorded (feedback: the campaign prefers seeds
            # of rewrites not fired yet); the FX graph caches are off meanwhile (a hit skips the passes)
            with recording_fired() as applied:
                torch._dynamo.utils.counters.clear()
                compiled = compile_callable(source_function(program, planted_ops(fault)), example, backend, knobs,
                                            inductor_fault, train, fullgraph)
                breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
                if fault == GRADIENT_FAULT:
                    compiled = _perturbed_gradients(compiled)
                note(f"{name}:run")
                # the whole step under the compile's config: AOTAutograd may compile the backward lazily, at its
                # first call
                with torch._inductor.config.patch(inductor_patch(knobs, inductor_fault)):
                    arrays.update(_arrays(name, execute(compiled, _clones(inputs), names, program.steps)))
            fired.update(applied)
            runs[name] = {"status": "ok", "compile_s": round(time.perf_counter() - t0, 4), "graph_breaks": breaks}
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - eager ran it: any failure here is the compiler's
            stage = first_failing_stage(fn, example, {**options, "fault": inductor_fault}, train, fullgraph)
            summary = summarize_cpp_compile_error(str(e))
            runs[name] = {"status": "error", "error": f"[stage {stage}] {type(e).__name__}: {scrub(summary)}"[:6000],
                          "traceback": traceback.format_exc(limit=8)[-3000:],
                          "compile_s": round(time.perf_counter() - t0, 4)}
    n_params = sum(t.is_floating_point() for t in inputs.values()) if train else 0
    meta = {"runs": runs, "n_out": len(program.outputs), "n_in": len(program.inputs), "n_grad": n_params,
            "fired": sorted(fired)}
    if floor := splice_tolerance(program):
        meta["tolerance"] = floor
    return meta, arrays


class _PerturbGradient(torch.autograd.Function):
    """Identity forward; a backward that scales the gradient: the planted fault of a wrong compiled gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 1.5


def _perturbed_gradients(compiled: Callable[..., tuple]) -> Callable[..., tuple]:
    """`compiled` whose float outputs pass their gradient on scaled (configuration fault "gradient", tests only:
    Inductor's own planted faults are in its forward kernels)."""

    def call(*args: Any) -> tuple:
        return tuple(_PerturbGradient.apply(o) if o.requires_grad else o for o in compiled(*args))

    return call


# ---- the reproducer ------------------------------------------------------------------------------
_REPRO_MAIN = '''

def compiled_fn(opts):
    torch.compiler.reset()
    kwargs = {"mode": opts["mode"]} if opts["mode"] != "default" else {}
    return torch.compile(program_compiled, backend=opts["backend"], fullgraph=FULLGRAPH, dynamic=opts["dynamic"],
                         **kwargs)


def run(fn, wide=False, opts=None):
    """Outputs and inputs after the call (and a training program's gradients and parameters after STEPS
    steps), each run on its own copies of the inputs, the whole run under the compile's Inductor config."""
    ins = make_inputs(SPECS, SEED)
    if wide:
        ins = {k: t.double() if t.is_floating_point() else t for k, t in ins.items()}
    with torch._inductor.config.patch(opts["inductor_config"] if opts else {}):
        result = execute(fn, ins, INPUT_ORDER, STEPS)
    return [t.detach().contiguous().numpy() for kind in ("out", "in", "grad", "param") for t in result.get(kind, [])]

''' + JUDGE_SOURCE + '''
eager = run(program)
try:
    fp64 = run(program64, wide=True)
except Exception:
    fp64 = None
try:
    got = run(compiled_fn(OPTIONS), opts=OPTIONS)
except Exception as e:
    print(f"BUG REPRODUCED: eager runs the program, torch.compile raises {type(e).__name__}: {e}")
    sys.exit(1)
SLOT_NAMES = [f"output {k}" for k in range(N_OUT)] + [f"input {n} after the call" for n in INPUT_ORDER]
SLOT_NAMES += [f"the gradient of {n}" for n in PARAMS] + [f"{n} after {STEPS} training steps" for n in PARAMS]
''' + VERDICT_SOURCE + '''print("not reproduced: torch.compile agrees with eager")
'''


def _patterns_source(program: Program) -> str:
    """The reproducer's lines that take torch's search functions the program calls from the installed torch by
    name (pattern_seeds.PATTERN_SOURCE: the runner's own way)."""
    from dlcfuzz.backends.inductor.pattern_seeds import PATTERN_SOURCE

    searches = pattern_searches(program)
    if not searches:
        return ""
    calls = "".join(f"{pattern_alias(s)} = inductor_pattern({s!r})\n" for s in searches)
    return (f"\nimport importlib\nimport types\n\n# Inductor's own replacement patterns: the search functions of the "
            f"installed torch, by name\n{PATTERN_SOURCE}\n{calls}")


def _weights_source(program: Program) -> str:
    """The reproducer's lines that make the program's layer parameters (`layer_weights`: the runner's own way)."""
    params = {name: spec for s in walk(program.stmts) if s.op in LAYERS
              for name, spec in layer_parameters(s.attrs).items()}
    if not params:
        return ""
    made = "".join(f"{name} = layer_weights({list(shape)!r}, {seed})\n" for name, (shape, seed) in params.items())
    return (f"\n# the layers' weights: parameters (a compile with freezing=True folds them as constants)\n"
            f"{WEIGHTS_SOURCE}\n{made}")


def _wide_source(program: Program) -> str:
    """`program64`, the float64 reference's program: the program whose spliced patterns run in float64."""
    return f"\n{emit(widened(program), OPS, 'program64')}" if pattern_searches(program) else "\nprogram64 = program\n"


def reproducer(program: Program, seed: int, configs: list[tuple[str, dict[str, Any]]], title: str, detail: str,
               version: str) -> str:
    """A standalone script (torch and numpy alone): the program as a function, its inputs rebuilt from
    the seed, torch.compile with the exact options, eager vs compiled vs float64; exits 1 with
    "BUG REPRODUCED" while the finding shows."""
    from dlcfuzz.backends.inductor.reproducer import compile_options
    from dlcfuzz.oracle.numeric import TOLERANCE

    compiled = [(n, o) for n, o in configs if o.get("backend", "inductor") != "eager"]
    name, options = compiled[0] if compiled else ("inductor", {"backend": "inductor"})
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    floor = (f"\nTOL_FLOOR = {splice_tolerance(program)!r}  # a spliced pattern computes in float16 or bfloat16"
             if splice_tolerance(program) else "")
    ops = planted_ops(options.get("fault"))
    faulty = emit(program, ops, "program_compiled") if ops is not OPS else "program_compiled = program\n"
    if ops is not OPS:
        det += "\n# PLANTED FAULT (dlcfuzz's own, not PyTorch's): the compiled program has torch.cond's branches swapped"
    training = (f"; as {program.steps} training step{'s' * (program.steps > 1)} (execute below), the gradients of "
                "the float inputs and their values after the steps too") if program.steps else ""
    return f'''"""{title}

Found by dlcfuzz (programs strategy) against {version}. The program runs eagerly and compiled by
torch.compile (configuration {name!r}, fullgraph={one_graph(program, OPS)}, fallback_random=True), each on its own copies
of the inputs; outputs and the inputs after the call (mutations) are compared{training}.
Exits 1 with "BUG REPRODUCED" while the bug is present.
"""
{det}
import sys

import numpy as np
import torch

torch.set_num_threads(1)
SEED = {seed}
SPECS = {json.dumps(input_specs(program))}  # (name, dtype, shape, layout)
INPUT_ORDER = {[i.name for i in program.inputs]!r}
N_OUT = {len(program.outputs)}
STEPS = {program.steps}  # training steps (0: one call without autograd)
FULLGRAPH = {one_graph(program, OPS)}  # False: the program breaks the graph on purpose (a branch on a value, .item())
PARAMS = {[i.name for i in program.inputs if i.dtype in FLOAT] if program.steps else []!r}
OPTIONS = {compile_options(options)!r}
TOL = {TOLERANCE!r}{floor}
{INPUTS_SOURCE}{RUN_SOURCE}{REGIONS_SOURCE if program.has_region() else ""}{_patterns_source(program)}\
{_weights_source(program)}

{emit(program, OPS)}{faulty}{_wide_source(program)}{_REPRO_MAIN}'''


__all__ = ["DIALECT", "GRADIENT_FAULT", "INPUTS_SOURCE", "OPS", "RUN_SOURCE", "SPLICE_SHARE", "TRAIN_SHARE", "UNDEFINED",
           "TorchDialect", "checked_run", "execute", "make_inputs", "pattern_alias", "pattern_searches", "reproducer",
           "run_program", "source_function", "widened"]
