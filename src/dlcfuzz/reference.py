"""NumPy interpreter of a Graph: the ground truth, and the profiler PIOC needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dlcfuzz.errors import IRError
from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ops import get_op
from dlcfuzz.ops.base import INFINITIES, SUM_POWER, UNDEFINED
from dlcfuzz.ops.regions import MAX_TRIPS, REGION_OPS

_WIDEN = (np.dtype("float16"), np.dtype("float32"))
# Integer arithmetic that can leave its dtype's range: signed overflow is undefined behaviour in
# the compilers' C++ kernels, so such a result has no single right answer.
_ARITH = frozenset({"add", "sub", "mul", "neg", "abs", "pow", "reduce_sum", "reduce_prod", "reduce_mean",
                    "matmul", "gemm", "conv1d", "conv2d", "conv_transpose2d", "avg_pool2d",
                    "global_avg_pool", "reduce_l1", "reduce_l2", "reduce_sum_square", "cumsum", "cumprod",
                    "einsum", "sum", "mean", "shrink", "cast", "cast_like",
                    # their reductions add or multiply into the data (an int16 product of 32767, -3 and -2)
                    "scatter_elements", "scatter_nd"})
# of those, the operators whose integer result is a float converted back (pow's float exponent, Shrink, which ONNX
# computes in float): a float at or past 2^63 is out of int64's range although it compares equal to its maximum
_FLOAT_TO_INT = frozenset({"pow", "shrink", "cast", "cast_like"})
# a float converted to an integer type: NaN or a value out of the target's range is undefined behaviour (C++
# conversion; LLVM's fptosi gives poison), whether the value was an input or computed
_CASTS = frozenset({"cast", "cast_like"})


class IntegerOverflow(IRError):
    """An integer operator's exact result does not fit its dtype (the reference is not defined)."""


class IntegerDivisionByZero(IntegerOverflow):
    """An integer division or remainder by zero: undefined behaviour in the kernels (NumPy says 0)."""


class IntegerDivisionOverflow(IntegerOverflow):
    """A signed integer's minimum divided by (or modulo) -1: the quotient does not fit, undefined
    behaviour in the kernels (x86's idiv traps with SIGFPE, as for a zero divisor)."""


class IntermediateOverflow(IRError):
    """A float operator's kernels form powers or sums of its input (OpSpec.magnitude) that overflow the input's
    dtype, or underflow it entirely, where the reference, computing wider, stays finite: no single right answer."""


class NonfiniteInBody(IRError):
    """A region's body or a called function makes or meets an inf or NaN where an operator there does not define it
    (nonfinite_undefined on one run of that body): the check over the enclosing graph sees only the region's or the
    call's own inputs and outputs, where an argmin or a cast may have hidden it."""


def _check_magnitudes(spec: Any, attrs: dict, xs: list[np.ndarray], where: str) -> None:
    types = None
    for k, x in enumerate(xs):
        if x.dtype.kind != "f" or not x.size:
            continue
        if types is None:
            from dlcfuzz.ir.types import TensorType

            types = [TensorType(str(a.dtype), a.shape) for a in xs]
        power, terms = spec.magnitude(k, types, attrs)
        if (power, terms) == (1.0, 1):
            continue
        fi = np.finfo(x.dtype)
        with np.errstate(all="ignore"):
            top = float(np.abs(x).max())
            if top > (float(fi.max) / terms) ** (1.0 / power):
                raise IntermediateOverflow(f"{spec.name}'s kernels overflow {x.dtype} on input {k}", where)
            if power > 1 and 0 < top < float(fi.tiny) ** (1.0 / power):
                raise IntermediateOverflow(f"{spec.name}'s kernels underflow {x.dtype} on input {k}", where)


# operators whose integer form is undefined for a zero divisor and for the signed minimum over -1
DIVISIONS = frozenset({"div", "mod"})
# operators whose float arithmetic divides by a value of their own that is zero for some inputs, giving NaN that
# ONNX then converts to an integer output: DynamicQuantizeLinear of an all-zero input has the scale 0, and its zero
# point and y are 0/0 (onnxruntime guards with the scale 1, onnx.reference with 1/255, OpenVINO keeps 0 and returns
# zeros, TVM's importer saturates the NaN to 255): the result is undefined, as a cast of NaN is
ZERO_SCALE = frozenset({"dynamic_quantize_linear"})

# operators whose kernels accumulate an integer intermediate that can overflow while the result fits
# (ReduceL2 sums squares before the root, a mean sums before dividing): the intermediate's operator
_INTERMEDIATE = {"reduce_l2": "reduce_sum_square", "reduce_mean": "reduce_sum", "mean": "sum"}


def finite(a: np.ndarray) -> bool:
    """No NaN or Inf in `a` (dtype.kind "f" is np.issubdtype(dtype, np.floating), for less: every
    value of every test is asked)."""
    return a.dtype.kind != "f" or bool(np.isfinite(a).all())


def _nonfinite(a: np.ndarray) -> np.ndarray:
    return ~np.isfinite(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)


def _inherited(xs: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Where an elementwise (broadcasting) operator's output of `shape` reads an inf or NaN of its inputs `xs`."""
    out = np.zeros(shape, dtype=bool)
    for x in xs:
        out |= np.broadcast_to(_nonfinite(np.asarray(x)), shape)
    return out


def nonfinite_undefined(g: Graph, env: Mapping[str, np.ndarray]) -> str | None:
    """The first node of `g` (its name, or its op) at which the non-finite values of `env` (reference.run's, keep_all)
    leave what its operator defines (OpSpec.nonfinite): an inf or NaN reaches an operator that does not define it,
    or one that defines it makes an inf or NaN at a position where none of its inputs has one (an overflow of finite
    values, a division by zero: rounding decides it). None where every non-finite value comes from the graph's
    inputs and constants through operators that define it, as where every value is finite."""
    for n in g.nodes:
        xs = [env[i] for i in n.inputs]
        ys = [env[v.name] for v in n.outputs]
        if all(map(finite, xs)) and all(map(finite, ys)):
            continue
        kind = UNDEFINED if n.op == CALL_OP else get_op(n.op).nonfinite
        if kind == UNDEFINED or (kind == INFINITIES and any(x.dtype.kind == "f" and np.isnan(x).any() for x in xs)):
            return n.name or n.op
        # the operators that define non-finite inputs broadcast elementwise
        if any((_nonfinite(y) & ~_inherited(xs, y.shape)).any() for y in ys):
            return n.name or n.op
    return None


def _check_overflow(op: str, attrs: dict, xs: list[np.ndarray], ys: list[np.ndarray], where: str) -> None:
    y = np.asarray(ys[0])
    if y.dtype.kind not in "iu":  # np.issubdtype(y.dtype, np.integer), for less
        return
    if op in _CASTS:
        if xs[0].dtype.kind != "f":
            return  # an integer narrowed wraps, as ONNX's reference and the kernels do
        exact = np.trunc(xs[0].astype(np.float64))
    elif not all(x.dtype.kind in "iu" for x in xs) and op not in _FLOAT_TO_INT:
        return  # a float computed into an integer result only inside pow (int base, float exponent)
    else:
        with np.errstate(all="ignore"):
            exact = np.asarray(get_op(op).reference([x.astype(np.float64) for x in xs], attrs)[0], dtype=np.float64)
    if op in _INTERMEDIATE:
        with np.errstate(all="ignore"):
            inner = get_op(_INTERMEDIATE[op]).reference([x.astype(np.float64) for x in xs], attrs)[0]
        exact = np.concatenate([exact.ravel(), np.asarray(inner, dtype=np.float64).ravel()])
    info = np.iinfo(y.dtype)
    # NaN/Inf (a negative base to a fractional power, 0 to a negative one) or out of range: converting
    # it to the integer dtype is undefined, so the reference is too
    if not exact.size:
        return
    too_large = exact.max() >= float(info.max) + 1 if op in _FLOAT_TO_INT else exact.max() > info.max
    if not np.isfinite(exact).all() or too_large or exact.min() < info.min:
        raise IntegerOverflow(f"{op} overflows {y.dtype}", where)


PERTURB_EPS = 1.0  # error of a correct compiler, in epsilons of the operator's error scale


ZERO = "zero"  # perturb=ZERO: every float result within its legal error of zero becomes exactly zero
# perturb=AWAY_FROM_ZERO / TOWARD_ZERO: every float result's magnitude grows / shrinks by its legal error. An error
# of one sign relative to the value (a normalization's deviation a few ulps off scales all its outputs alike) is
# what a product or a power of many of them multiplies; moving every value up or down by the same amount cancels
# there between positive and negative values.
AWAY_FROM_ZERO = "away"
TOWARD_ZERO = "toward"


def _perturbed(how: np.random.Generator | float | str, n: Any, xs: list[np.ndarray], y: np.ndarray,
               dtype: np.dtype) -> np.ndarray:
    if dtype.kind != "f":
        return y
    y = np.asarray(y, dtype=np.float64)
    scale = np.broadcast_to(get_op(n.op).error_scale(xs, n.attrs, y), y.shape)
    if how == ZERO:  # a legal error that reaches zero may give exactly zero (ORT's sigmoid(-20) is 0)
        near = np.abs(y) <= PERTURB_EPS * float(np.finfo(dtype).eps) * scale
        if not all(map(finite, xs)):
            # not a result of an inf or NaN input (sigmoid(inf) = 1, an infinite scale): no rounding moves it; an
            # operator that does not define them (elementwise or not) makes the test unjudged anyway
            near &= ~_inherited(xs, y.shape) if get_op(n.op).nonfinite else np.zeros(y.shape, dtype=bool)
        return np.where(near, 0.0, y)
    if isinstance(how, np.random.Generator):
        direction = how.uniform(-1.0, 1.0, y.shape)
    elif how in (AWAY_FROM_ZERO, TOWARD_ZERO):
        direction = np.sign(y) if how == AWAY_FROM_ZERO else -np.sign(y)
    else:
        direction = float(how)
    noise = direction * PERTURB_EPS * float(np.finfo(dtype).eps) * scale
    return y + np.where(np.isfinite(noise), noise, 0.0)


def _store(y: np.ndarray, dtype: np.dtype, exact: bool) -> np.ndarray:
    if exact and dtype in _WIDEN:
        return np.asarray(y).astype(np.float64, copy=False)
    return np.asarray(y).astype(dtype, copy=False)


def run(
    g: Graph, inputs: Mapping[str, np.ndarray], *, keep_all: bool = False, exact: bool = False,
    check_overflow: bool = False, perturb: np.random.Generator | float | str | None = None,
    other_readings: bool = False, check_nonfinite: bool = False, _functions: Mapping[str, Graph] | None = None,
) -> dict[str, np.ndarray]:
    """Evaluate `g`. Returns its outputs by name, or every value when keep_all.

    exact=True evaluates float16/float32 values in float64 without rounding after each
    operator (explicit casts still round): comparing it with the normal run tells whether an
    output is ill-conditioned, i.e. whether legal rounding differences can move it past the
    tolerance (then no compiler can be judged on it).
    check_overflow=True raises IntegerOverflow where integer arithmetic leaves its dtype's range (or where an
    operator's zero scale makes the NaN it converts to an integer: ZERO_SCALE), IntermediateOverflow where a float
    operator's kernels would overflow its dtype inside (OpSpec.magnitude),
    IntegerDivisionByZero where an integer divisor is zero, IntegerDivisionOverflow where a signed
    minimum is divided by -1.
    perturb=rng (implies exact) moves every float result by a random error of up to
    PERTURB_EPS epsilons of its operator's error scale (OpSpec.error_scale), perturb=+1.0 or
    -1.0 by exactly that much upwards or downwards, AWAY_FROM_ZERO or TOWARD_ZERO by that much in magnitude
    (a relative error of one sign, which products compound), perturb=ZERO makes a result exactly zero where
    that error reaches zero (a divisor, a log's argument: a domain edge legal rounding can hit): the sensitivity
    analysis that finds outputs which legal rounding (another summation order, a fused
    multiply-add, a few-ulp transcendental) can move past the tolerance.
    other_readings=True evaluates each operator whose specification is ambiguous by its other reading
    (OpSpec.other_reading), the outputs a correct compiler following that reading computes.
    check_nonfinite=True raises NonfiniteInBody where a run of a region's body or a called function leaves what its
    operators define for inf and NaN (nonfinite_undefined): the caller checks the graph itself.
    """
    exact = exact or perturb is not None
    functions = g.functions if _functions is None else _functions
    env: dict[str, np.ndarray] = {}
    for v in g.inputs:
        if v.name not in inputs:
            raise IRError(f"missing input {v.name!r}")
        a = np.asarray(inputs[v.name])
        if not (exact and a.dtype == np.float64 and v.type.np_dtype in _WIDEN):
            a = a.astype(v.type.np_dtype, copy=False)
        env[v.name] = _store(a.reshape(v.type.shape), v.type.np_dtype, exact)
    env.update({k: _store(a, a.dtype, exact) for k, a in g.constants.items()})
    with np.errstate(all="ignore"):
        for n in g.nodes:
            xs = [env[i] for i in n.inputs]
            if n.op in REGION_OPS or n.op == CALL_OP:
                def body_outputs(body: Graph, args: list[np.ndarray], where: str = n.name or n.op) -> list[np.ndarray]:
                    res = run(body, {p.name: x for p, x in zip(body.inputs, args)}, exact=exact,
                              check_overflow=check_overflow, perturb=perturb, other_readings=other_readings,
                              check_nonfinite=check_nonfinite, keep_all=check_nonfinite, _functions=functions)
                    if check_nonfinite and (inner := nonfinite_undefined(body, res)) is not None:
                        raise NonfiniteInBody(f"{inner} in the body of {where} leaves what it defines for inf and NaN",
                                              where)
                    return [res[o] for o in body.outputs]

                if n.op == CALL_OP:
                    ys = body_outputs(functions[n.attrs["callee"]], xs)
                else:
                    ys = run_region(n.op, n.attrs, xs, body_outputs, n.name or n.op)
            else:
                spec = get_op(n.op)
                other = spec.other_reading(xs, n.attrs) if other_readings else None
                ys = spec.reference(xs, n.attrs) if other is None else other
                if check_overflow and n.op in SUM_POWER:
                    _check_magnitudes(spec, n.attrs, xs, n.name or n.op)
                if check_overflow and n.op in _ARITH:
                    _check_overflow(n.op, n.attrs, xs, ys, n.name or n.op)
                if check_overflow and n.op in DIVISIONS and xs[1].dtype.kind in "iu":
                    if not np.all(xs[1]):
                        raise IntegerDivisionByZero(f"{n.op} divides by zero", n.name or n.op)
                    if xs[1].dtype.kind == "i" and np.any((xs[0] == np.iinfo(xs[0].dtype).min) & (xs[1] == -1)):
                        raise IntegerDivisionOverflow(f"{n.op} divides the minimum by -1", n.name or n.op)
                if check_overflow and n.op in ZERO_SCALE and xs[0].size and not np.any(xs[0]):
                    raise IntegerOverflow(f"{n.op} of an all-zero input divides 0 by its scale 0 into a uint8", n.name or n.op)
                if perturb is not None:
                    ys = [_perturbed(perturb, n, xs, y, v.type.np_dtype) for v, y in zip(n.outputs, ys)]
            for v, y in zip(n.outputs, ys, strict=True):
                # References may compute in a wider type; the IR's declared type is authoritative.
                y = _store(y, v.type.np_dtype, exact)
                if not v.type.unknown:
                    y = y.reshape(v.type.shape)
                elif not v.type.admits(y.shape):  # a data-dependent extent resolves here, within its bound
                    raise IRError(f"{n.op} computed {y.shape}, outside its type {v.type}", n.name or n.op)
                env[v.name] = y
    if keep_all:
        return env
    return {o: env[o] for o in g.outputs}


def run_region(op: str, attrs: dict, xs: list[np.ndarray],
               body_outputs: Callable[[Graph, list[np.ndarray]], list[np.ndarray]], where: str) -> list[np.ndarray]:
    """A region's outputs (ops/regions.py's semantics), each body run by `body_outputs(body, arguments)`."""
    spec = REGION_OPS[op]
    captured = xs[spec.leading(attrs):]
    if op == "if":
        branch = attrs["then_branch"] if bool(np.asarray(xs[0]).reshape(-1)[0]) else attrs["else_branch"]
        return body_outputs(branch, list(captured))
    if op == "loop":
        n = int(attrs["num_carried"])
        trip_count, go = int(np.asarray(xs[0]).reshape(-1)[0]), bool(np.asarray(xs[1]).reshape(-1)[0])
        carried, slices = list(xs[2:2 + n]), []
        trip = 0
        while trip < trip_count and go:
            if trip == MAX_TRIPS:
                raise IRError(f"loop runs past {MAX_TRIPS} trips", where)
            outs = body_outputs(attrs["body"], [np.array(trip, dtype=np.int64), np.array(go), *carried, *captured])
            go, carried = bool(np.asarray(outs[0]).reshape(-1)[0]), list(outs[1:1 + n])
            slices.append(outs[1 + n:])
            trip += 1
        kinds = attrs["body"].output_types()[1 + n:]
        if kinds and "max_trips" in attrs:  # a computed trip count: the scan outputs' extent resolves here
            if trip > attrs["max_trips"]:
                raise IRError(f"loop ran {trip} trips, past its scan outputs' bound {attrs['max_trips']}", where)
        elif kinds and trip != attrs["trips"]:
            raise IRError(f"loop ran {trip} trips where its scan outputs' type says {attrs['trips']}", where)
        return carried + [np.stack([s[k] for s in slices]) if slices else np.zeros((0, *t.shape), t.np_dtype)
                          for k, t in enumerate(kinds)]
    # scan
    n, m = int(attrs["num_states"]), int(attrs["num_scan_inputs"])
    states, scanned = list(xs[:n]), xs[n:n + m]
    axes = [ax % x.ndim for ax, x in zip(attrs["scan_input_axes"], scanned)]
    trips = scanned[0].shape[axes[0]]
    steps = []
    for t in range(trips):
        picks = [np.take(x, trips - 1 - t if d else t, axis=a)
                 for x, a, d in zip(scanned, axes, attrs["scan_input_directions"])]
        outs = body_outputs(attrs["body"], [*states, *picks, *captured])
        states = list(outs[:n])
        steps.append(outs[n:])
    kinds = attrs["body"].output_types()[n:]
    result = list(states)
    for k, (t, ax, d) in enumerate(zip(kinds, attrs["scan_output_axes"], attrs["scan_output_directions"])):
        seq = [s[k] for s in steps][::-1 if d else 1]
        stacked = np.stack(seq) if seq else np.zeros((0, *t.shape), t.np_dtype)
        result.append(np.moveaxis(stacked, 0, ax % (t.rank + 1)))
    return result


def outputs(g: Graph, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    res = run(g, inputs)
    return [res[o] for o in g.outputs]
