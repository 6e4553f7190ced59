"""Rules of the Python targets that are the same up to spelling, registered on both (`target("torch")`
and `target("jax")`); each reads its target's spelling from the emitter (`e.sp`). Each returns source
expressions whose semantics equal the operator's NumPy reference (ONNX semantics). What really
differs per target stays in `lower/torch/` and `lower/jax/`, which also use the helpers here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS, INTS
from dlcfuzz.lower.pysource.codegen import Emitter, Rule, Spelling, Types, literal
from dlcfuzz.lower.registry import target

PY_TARGETS = ("torch", "jax")


def shared(*ops: str) -> Callable[[Rule], Rule]:
    """Decorator: the function is the rule of `ops` in every Python target."""

    def deco(fn: Rule) -> Rule:
        for name in PY_TARGETS:
            target(name).register(*ops)(fn)
        return fn

    return deco


# ---- elementwise ---------------------------------------------------------------------------------

# operator -> NumPy's name of the function that is the operator on every Python target (Spelling.fn)
UNARY = {
    "abs": "abs", "neg": "negative", "exp": "exp", "log": "log", "sqrt": "sqrt", "reciprocal": "reciprocal",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
    "sigmoid": "sigmoid", "softsign": "softsign", "erf": "erf", "floor": "floor", "ceil": "ceil",
    "round": "round",  # half to even, as ONNX Round
    "sign": "sign", "not": "logical_not", "isnan": "isnan",
    "softplus": "softplus",  # torch: beta 1, threshold 20: x itself past 20, where log1p(exp(x)) == x
}

BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "and": "logical_and", "or": "logical_or",
    "xor": "logical_xor", "equal": "equal", "less": "less", "less_equal": "less_equal", "greater": "greater",
    "greater_equal": "greater_equal", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
}


def _unary(np_name: str) -> Rule:
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        return [f"{e.sp.fn(np_name)}({ins[0]})"]

    return rule


for _op, _np_name in UNARY.items():
    shared(_op)(_unary(_np_name))


def binary(sp: Spelling, op: str, x: str, y: str) -> str:
    """The elementwise binary operator `op` (a key of BINARY) of x and y."""
    return f"{sp.fn(BINARY[op])}({x}, {y})"


@shared("leaky_relu", "elu", "celu")
def _alpha_activation(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    return [f"{e.sp.nn}.{spec.name}({ins[0]}, {literal(attrs['alpha'])})"]


@shared("selu")
def _selu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    # torch's and jax's selu fix alpha and gamma; ONNX makes them attributes
    m, x, al, ga = e.sp.mod, ins[0], literal(attrs["alpha"]), literal(attrs["gamma"])
    return [f"{ga} * {m}.where({x} > 0, {x}, {al} * {m}.exp({x}) - {al})"]


@shared("isinf")
def _isinf(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    m, x = e.sp.mod, ins[0]
    if attrs["detect_negative"] and attrs["detect_positive"]:
        return [f"{m}.isinf({x})"]
    if attrs["detect_positive"]:
        return [f"{m}.isposinf({x})"]
    if attrs["detect_negative"]:
        return [f"{m}.isneginf({x})"]
    return [f"{m}.zeros_like({x}, dtype={e.sp.dtype('bool')})"]


@shared("shrink")
def _shrink(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    m, x, dt = e.sp.mod, ins[0], in_types[0].dtype
    lam, bias = literal(attrs["lambd"]), literal(attrs["bias"])
    if dt in INTS:  # ONNX computes in float and converts back (truncating)
        x = e.bind(e.sp.cast(x, "float64"))
    y = f"{m}.where({x} < -{lam}, {x} + {bias}, {m}.where({x} > {lam}, {x} - {bias}, {m}.zeros_like({x})))"
    return [e.sp.cast(f"({y})", dt) if dt in INTS else y]


@shared("swish")
def _swish(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    return [f"{ins[0]} * {e.sp.fn('sigmoid')}({literal(attrs['alpha'])} * {ins[0]})"]


@shared("swiglu")
def _swiglu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    return [f"{ins[0]} * {e.sp.fn('sigmoid')}({literal(attrs['alpha'])} * {ins[0]}) * {ins[1]}"]


@shared("pow")
def _pow(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    sp, (x, y) = e.sp, ins
    dx, dy = in_types[0].dtype, in_types[1].dtype
    if dx in INTS and dy in FLOATS:  # computed in floating point, truncated back (ONNX reference)
        return [sp.cast(f"{sp.fn('power')}({sp.cast(x, 'float64')}, {sp.cast(y, 'float64')})", dx)]
    if dx != dy:  # the module would promote to the wider type; ONNX keeps the base's
        y = sp.cast(y, dx)
    return [f"{sp.fn('power')}({x}, {y})"]


@shared("prelu")
def _prelu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    x, s = ins  # the slope broadcasts unidirectionally to x (torch's F.prelu wants a per-channel weight)
    return [f"{e.sp.mod}.where({x} < 0, {x} * {s}, {x})"]


@shared("where")
def _where(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    return [f"{e.sp.mod}.where({ins[2]}, {ins[0]}, {ins[1]})"]


@shared("cast")
def _cast(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    return [e.sp.cast(ins[0], attrs["to"])]  # float -> int truncates, as the reference


@shared("softmax", "log_softmax")
def _softmax(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    return [f"{e.sp.nn}.{spec.name}({ins[0]}, {e.sp.axis_kw}={int(attrs['axis'])})"]


# ---- shape ---------------------------------------------------------------------------------------


@shared("reshape", "flatten")
def _reshape(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    return [f"{e.sp.mod}.reshape({ins[0]}, {e.sp.shape(out_types[0].shape)})"]


@shared("transpose")
def _transpose(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    return [f"{e.sp.fn('transpose')}({ins[0]}, {e.sp.shape(attrs['perm'])})"]


@shared("concat")
def _concat(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    return [f"{e.sp.fn('concatenate')}([{', '.join(ins)}], {e.sp.axis_kw}={int(attrs['axis'])})"]


@shared("squeeze")
def _squeeze(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    dims = tuple(sorted(int(ax) % in_types[0].rank for ax in attrs["axes"]))
    return [f"{e.sp.mod}.squeeze({ins[0]}, {literal(dims)})"]


@shared("tile")
def _tile(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    if in_types[0].rank == 0:
        return [e.sp.copy(ins[0])]
    return [f"{e.sp.mod}.tile({ins[0]}, {literal(tuple(attrs['repeats']))})"]


@shared("identity")
def _identity(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    return [e.sp.copy(ins[0])]


@shared("slice")
def _slice(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    from dlcfuzz.ops.shape import slice_bounds

    t = in_types[0]
    x = ins[0]
    index = [":"] * t.rank
    flips: list[int] = []
    for ax, s, en, st in spec.parse(t, attrs):
        d = t.shape[ax]
        start, end, n = slice_bounds(d, s, en, st)
        if st > 0:
            index[ax] = f"{start}:{start + (n - 1) * st + 1 if n else start}:{st}"
        else:  # torch has no negative steps (and jax's "end = -1" is ambiguous): flip the axis, then step
            # forward from the mirrored start
            flips.append(ax)
            m = d - 1 - start
            index[ax] = f"{m}:{m + (n - 1) * -st + 1 if n else m}:{-st}"
    if flips:
        x = e.bind(f"{e.sp.mod}.flip({x}, {e.sp.shape(flips)})")
    return [f"{x}[{', '.join(index)}]" if t.rank else e.sp.copy(x)]


def take_static(e: Emitter, x: str, axis: int, idx: np.ndarray) -> str:
    """x indexed along `axis` by a static index list (a module constant)."""
    k = e.const(np.asarray(idx, dtype=np.int64), "idx")
    return e.bind(e.sp.take.format(x=x, idx=k, axis=axis))


def pad_by_gather(e: Emitter, x: str, mode: str, shape: tuple[int, ...], before: list[int], after: list[int]) -> str:
    """Reflect / edge / wrap pads as a gather of static indices per padded axis (ONNX pads any axis of any
    dtype; torch's own pad only the last ones of float tensors)."""
    for ax, (pb, pe) in enumerate(zip(before, after)):
        if not (pb or pe):
            continue
        d = shape[ax]
        src = np.arange(-pb, d + pe)
        if mode == "reflect":
            period = 2 * (d - 1)
            src = np.abs(src) % period if period else np.zeros_like(src)
            src = np.where(src >= d, period - src, src)
        elif mode == "wrap":
            src = src % d
        else:
            src = np.clip(src, 0, d - 1)
        x = take_static(e, x, ax, src)
    return x


def reshape_permute(sp: Spelling, x: str, steps: tuple[Any, Any, Any]) -> str:
    """x reshaped, permuted and reshaped again (DepthToSpace / SpaceToDepth's `_steps`)."""
    shape, perm, out = steps
    return (f"{sp.mod}.reshape({sp.fn('transpose')}({sp.mod}.reshape({x}, {sp.shape(shape)}), {sp.shape(perm)}), "
            f"{sp.shape(out)})")


@shared("space_to_depth")
def _s2d(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    # torch's F.pixel_unshuffle orders channels (c, bh, bw); ONNX orders them (bh, bw, c)
    return [reshape_permute(e.sp, ins[0], spec._steps(in_types[0].shape, int(attrs["blocksize"]), attrs.get("mode", "DCR")))]


# ---- quantization --------------------------------------------------------------------------------


@shared("quantize_linear")
def _quantize(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    info = np.iinfo(attrs["to"])
    scale = literal(float(np.float32(attrs["scale"])))
    q = e.bind(f"{e.sp.mod}.round({ins[0]} / {scale}) + {int(attrs['zero_point'])}")  # half to even
    return [e.sp.cast(f"{e.sp.fn('clip')}({q}, {int(info.min)}, {int(info.max)})", attrs["to"])]


@shared("dequantize_linear")
def _dequantize(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                out_types: Types) -> list[str]:
    scale = literal(float(np.float32(attrs["scale"])))
    centred = f"({e.sp.cast(ins[0], 'int32')} - {int(attrs['zero_point'])})"
    return [f"{e.sp.cast(centred, 'float32')} * {scale}"]
