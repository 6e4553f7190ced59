"""Rules of the Python targets that are the same up to spelling, registered on both (`target("torch")`
and `target("jax")`); each reads its target's spelling from the emitter (`e.sp`). Each returns source
expressions whose semantics equal the operator's NumPy reference (ONNX semantics). A shared formula
may let a target's own function precede it where that function has ONNX's semantics
(`shared_unless_native`, `native`). What really differs per target stays in `lower/torch/` and
`lower/jax/`, which also use the helpers here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS, INTS, TensorType
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


# a rule that may decline: None where the target's native function is not ONNX's operator (`native`)
NativeRule = Callable[[Any, Emitter, list[str], list[str], dict, Types, Types], list[str] | None]
# target -> operator -> the target's native rule of a shared operator that allows one (`native`)
NATIVE: dict[str, dict[str, NativeRule]] = {name: {} for name in PY_TARGETS}
_ALLOW_NATIVE: set[str] = set()  # the operators of `shared_unless_native`


def shared_unless_native(*ops: str) -> Callable[[Rule], Rule]:
    """Decorator: the function is the rule of `ops` in every Python target (written with the module's
    functions: a formula), unless the target's `native` rule of the operator gives its own function."""

    def deco(fn: Rule) -> Rule:
        def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
            own = NATIVE[e.sp.target].get(spec.name)
            exprs = own(spec, e, ins, outs, attrs, in_types, out_types) if own is not None else None
            return exprs if exprs is not None else fn(spec, e, ins, outs, attrs, in_types, out_types)

        _ALLOW_NATIVE.update(ops)
        return shared(*ops)(rule)

    return deco


def native(tgt: str, *ops: str) -> Callable[[NativeRule], NativeRule]:
    """Decorator: the function is target `tgt`'s native rule of `ops` (operators of `shared_unless_native`):
    its own function where that has ONNX's semantics (what its compiler's lowerings are written for),
    None otherwise, decided before it emits anything; the shared formula applies then."""

    def deco(fn: NativeRule) -> NativeRule:
        for op in ops:
            if op not in _ALLOW_NATIVE:
                raise ValueError(f"{tgt}: {op!r} has no shared rule that allows a native one")
            NATIVE[tgt][op] = fn
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


def templated(template: str) -> Rule:
    """The rule of a one-output operator that is `template` (a target's own spelling) of its input `{x}`,
    its output's static shape `{out_shape}` and its attributes by name, each as a Python literal
    (`{alpha}`)."""

    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        named = {k: literal(v) for k, v in attrs.items()}
        return [template.format(x=ins[0], out_shape=e.sp.shape(out_types[0].shape), **named)]

    return rule


def register_templates(sp: Spelling) -> None:
    """Register on the target of `sp` the `templated` rule of each operator of its `templates`."""
    for op, template in sp.templates.items():
        target(sp.target).register(op)(templated(template))


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


@shared("swish", "swiglu")
def _swish(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    gated = f"{ins[0]} * {e.sp.fn('sigmoid')}({literal(attrs['alpha'])} * {ins[0]})"
    return [f"{gated} * {ins[1]}" if spec.name == "swiglu" else gated]  # SwiGLU: Swish(x) gating y


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


@shared("clip")
def _clip(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    # Min(max, Max(x, min)) in this order: min > max gives max everywhere (ONNX), as torch.clamp does
    x, dt = ins[0], in_types[0].dtype
    if attrs["min"] is not None:
        x = e.bind(e.sp.bound(x, attrs["min"], dt, upper=False))
    if attrs["max"] is not None:
        x = e.sp.bound(x, attrs["max"], dt, upper=True)
    return [x if x != ins[0] else e.sp.copy(x)]


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


@shared("pad")
def _pad(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    t = in_types[0]
    before, after, mode, value = spec.parse(t, attrs)
    if mode == "constant":
        v = literal(bool(value)) if t.dtype == "bool" else literal(value if t.dtype in FLOATS else int(value))
        return [e.sp.pad_constant(ins[0], before, after, v, t.dtype)]
    y = pad_by_gather(e, ins[0], mode, t.shape, before, after)
    return [y if y != ins[0] else e.sp.copy(y)]


def reshape_permute(sp: Spelling, x: str, steps: tuple[Any, Any, Any]) -> str:
    """x reshaped, permuted and reshaped again (DepthToSpace / SpaceToDepth's `_steps`)."""
    shape, perm, out = steps
    return (f"{sp.mod}.reshape({sp.fn('transpose')}({sp.mod}.reshape({x}, {sp.shape(shape)}), {sp.shape(perm)}), "
            f"{sp.shape(out)})")


@shared("split")
def _split(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    parts = e.bind(e.sp.split(ins[0], attrs["split"], int(attrs["axis"])))
    return [f"{parts}[{i}]" for i in range(len(attrs["split"]))]


@shared("gather")
def _gather(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    t = in_types[0]
    ax = int(attrs["axis"]) % t.rank
    return [e.sp.gather(e, ins[0], ins[1], ax, t.shape[ax], out_types[0].shape)]


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


# ---- elementwise binary, variadic ----------------------------------------------------------------


def _wide(e: Emitter, name: str, ins: list[str], attrs: dict, dtype: str) -> str | None:
    """The target's own computation of `name` on a dtype its module has no kernels for, if this is one."""
    wide = e.sp.wide_binary
    return wide(e, name, ins, attrs, dtype) if wide is not None and dtype in e.sp.wide_dtypes else None


def _binary(name: str) -> Rule:
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        return [_wide(e, name, ins, attrs, in_types[0].dtype) or binary(e.sp, name, ins[0], ins[1])]

    return rule


for _op in BINARY:
    shared(_op)(_binary(_op))


def _variadic(name: str, np_name: str) -> Rule:
    """Max/Min/Sum/Mean of one or more operands: a chain of the binary function."""

    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        y = ins[0]
        for x in ins[1:]:
            y = e.bind(_wide(e, name, [y, x], attrs, in_types[0].dtype) or f"{e.sp.fn(np_name)}({y}, {x})")
        if name == "mean":
            return [f"{y} / {len(ins)}"]  # a (weakly typed) Python scalar: the tensor's dtype stays
        return [y if len(ins) > 1 else e.sp.clone.format(x=y)]

    return rule


for _op, _np_name in (("max", "maximum"), ("min", "minimum"), ("sum", "add"), ("mean", "add")):
    shared(_op)(_variadic(_op, _np_name))


# ---- reductions ----------------------------------------------------------------------------------


def _reduce(kind: str) -> Rule:
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        from dlcfuzz.ops import get_op

        sp, t, x = e.sp, in_types[0], ins[0]
        axes = get_op("reduce_sum").reduced(t, attrs)  # type: ignore[attr-defined]
        if axes is None:  # noop_with_empty_axes with no axes: identity
            return [sp.copy(x)]
        keep, dt, over = bool(attrs["keepdims"]), sp.dtype(t.dtype), sp.axes(axes, bool(attrs["keepdims"]))
        n = int(np.prod([t.shape[i] for i in axes], dtype=np.int64))
        if n == 0 and kind in ("max", "min"):  # the identity of an empty max/min (torch and jnp refuse)
            if t.dtype in FLOATS:
                fill = '-float("inf")' if kind == "max" else 'float("inf")'
            elif t.dtype == "bool":
                fill = literal(kind == "min")
            else:
                info = np.iinfo(t.dtype)
                fill = literal(int(info.min if kind == "max" else info.max))
            return [f"{sp.mod}.full({sp.shape(out_types[0].shape)}, {fill}, dtype={dt})"]
        if kind == "sum":
            return [f"{sp.mod}.sum({x}, {over}, dtype={dt})"]
        if kind == "mean":
            if t.dtype in INTS:  # integer mean truncates toward zero (as ONNXRuntime)
                s = e.bind(f"{sp.mod}.sum({x}, {over}, dtype={sp.dtype('int64')})")
                return [sp.cast(sp.trunc_div_int.format(x=s, n=max(n, 1)), t.dtype)]
            return [f"{sp.mod}.mean({x}, {over})"]
        if kind in ("max", "min"):
            return [f"{sp.fn(kind)}({x}, {over})"]
        if not sp.prod_one_axis:
            return [f"{sp.mod}.prod({x}, {over}, dtype={dt})"]
        y = x  # one axis at a time, highest first, so lower indices stay valid
        for ax in sorted(axes, reverse=True):
            y = e.bind(f"{sp.mod}.prod({y}, {sp.axis_kw}={ax}, {sp.keepdims_kw}={keep}, dtype={dt})")
        return [y if y != x else sp.copy(x)]

    return rule


for _op, _kind in (("reduce_sum", "sum"), ("reduce_mean", "mean"), ("reduce_max", "max"),
                   ("reduce_min", "min"), ("reduce_prod", "prod")):
    shared(_op)(_reduce(_kind))


@shared("argmax", "argmin")
def _arg(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    sp, axis, keep = e.sp, int(attrs["axis"]), bool(attrs["keepdims"])
    fn, over = f"{sp.mod}.{spec.name}", f"{sp.axis_kw}={axis}, {sp.keepdims_kw}={keep}"
    if not attrs.get("select_last_index", 0):  # the first index on ties, like ONNX's default
        y = f"{fn}({ins[0]}, {over})"
        return [sp.cast(y, "int64") if sp.casts_indices else y]
    # the last index on ties: the first of the reversed axis, mirrored
    y = f"{in_types[0].shape[axis] - 1} - {fn}({sp.flip.format(x=ins[0], axis=axis)}, {over})"
    return [sp.cast(f"({y})", "int64") if sp.casts_indices else y]


# ---- nn ------------------------------------------------------------------------------------------


def lowest(dtype: str) -> str:
    """The lowest value of `dtype` as a literal (the identity of max)."""
    return '-float("inf")' if dtype in FLOATS else literal(int(np.iinfo(dtype).min))


def pool_any(e: Emitter, spec: Any, x: str, attrs: dict, t: TensorType) -> list[str]:
    """Any MaxPool/AveragePool (1-3 spatial dims, ceil_mode, auto_pad, dilations, Indices): the input
    padded explicitly (ceil_mode's extra included), one strided view per kernel offset, combined; the
    average divides by the static count of what each window reads, the Indices come from a constant
    grid of ONNX's flat offsets (the first maximum in window order wins, as in ORT)."""
    sp = e.sp
    k, s, d, before, after, out = spec.geometry(t, attrs)

    def views(src: str) -> list[str]:
        return [f"{src}[:, :, " + ", ".join(f"{o * dd}:{o * dd + ss * (n - 1) + 1}:{ss}"
                                           for o, dd, ss, n in zip(off, d, s, out)) + "]"
                for off in itertools.product(*[range(kk) for kk in k])]

    if spec.kind == "avg":
        acc = "float32" if t.dtype == "float16" else t.dtype
        xp = e.bind(sp.pad(sp.cast(x, acc), before, after))
        total = e.bind(" + ".join(views(xp)))
        count = e.const(spec.window_count(t, attrs).astype(acc), "count")
        return [sp.cast(f"({total} / {count})", t.dtype)]
    xp = e.bind(sp.pad(x, before, after, lowest(t.dtype)))
    vs = views(xp)
    y = vs[0]
    for v in vs[1:]:
        y = e.bind(f"{sp.fn('maximum')}({y}, {v})")
    if len(vs) == 1:
        y = sp.copy(y)
    if not attrs.get("indices", 0):
        return [y]
    grid = np.pad(spec.flat_index(t, attrs), [(0, 0), (0, 0)] + list(zip(before, after)), constant_values=-1)
    ip = e.const(grid, "flat")
    best, idx = vs[0], views(ip)[0]
    for v, iv in zip(vs[1:], views(ip)[1:]):
        better = e.bind(f"{v} > {best}")
        best = e.bind(f"{sp.mod}.where({better}, {v}, {best})")
        idx = e.bind(f"{sp.mod}.where({better}, {iv}, {idx})")
    return [y, sp.copy(idx)]


def any_pool_unless_legacy(fn: Rule) -> Rule:
    """A target's rule of MaxPool/AveragePool 2-D written for the legacy form (`spec.legacy`: no ceil_mode,
    auto_pad or Indices); every other form is `pool_any`'s."""

    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        if not spec.legacy(attrs):
            return pool_any(e, spec, ins[0], attrs, in_types[0])
        return fn(spec, e, ins, outs, attrs, in_types, out_types)

    return rule


@shared("max_pool1d", "max_pool3d", "avg_pool1d", "avg_pool3d")
def _pool_nd(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    return pool_any(e, spec, ins[0], attrs, in_types[0])


@shared_unless_native("global_avg_pool")
def _global_avg_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                     out_types: Types) -> list[str]:
    return [f"{e.sp.mod}.mean({ins[0]}, {e.sp.axes(range(2, in_types[0].rank), True)})"]


@shared("global_max_pool")
def _global_max_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                     out_types: Types) -> list[str]:
    return [f"{e.sp.fn('max')}({ins[0]}, {e.sp.axes(range(2, in_types[0].rank), True)})"]


@shared("matmul")
def _matmul(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    return [f"{e.sp.fn('matmul')}({ins[0]}, {ins[1]})"]


@shared_unless_native("lrn")
def _lrn(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    # ONNX's window, channels [c - (size-1)//2, c + ceil((size-1)/2)]: a banded sum of squares
    x, t, size = ins[0], in_types[0], int(attrs["size"])
    alpha, beta, bias = literal(attrs["alpha"]), literal(attrs["beta"]), literal(attrs["bias"])
    band = e.const(spec._band(t.shape[1], size).astype(t.dtype), "band")
    moveaxis = e.sp.fn("moveaxis")
    sq = e.bind(f"{moveaxis}({moveaxis}({x} * {x}, 1, -1) @ {band}, -1, 1)")
    return [f"{x} / ({bias} + {alpha} / {size} * {sq}) ** {beta}"]


@shared_unless_native("instance_norm")
def _instance_norm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                   out_types: Types) -> list[str]:
    sp, x, t = e.sp, ins[0], in_types[0]
    over = sp.axes(range(2, t.rank), True)
    mean = e.bind(f"{sp.mod}.mean({x}, {over})")
    var = e.bind(sp.variance(x, mean, over))
    channel = sp.shape([1, -1] + [1] * (t.rank - 2))
    return [f"({x} - {mean}) / {sp.mod}.sqrt({var} + {literal(attrs['epsilon'])}) * {ins[1]}.reshape({channel}) "
            f"+ {ins[2]}.reshape({channel})"]


def running_statistics(mean: str, var: str, batch_mean: str, batch_var: str, attrs: dict) -> list[str]:
    """BatchNormalization's training outputs: its running mean and variance updated by the batch's (ONNX's
    momentum weighs the old value)."""
    m = literal(float(attrs.get("momentum", 0.9)))
    return [f"{mean} * {m} + {batch_mean} * (1 - {m})", f"{var} * {m} + {batch_var} * (1 - {m})"]


# ---- resize --------------------------------------------------------------------------------------


def resized_axes(t: TensorType, indices: list[np.ndarray]) -> list[int]:
    """The axes a nearest Resize changes (its static source indices there are not the identity)."""
    return [ax for ax in range(t.rank)
            if not (len(indices[ax]) == t.shape[ax] and np.array_equal(indices[ax], np.arange(t.shape[ax])))]


def nearest_by_gather(e: Emitter, x: str, indices: list[np.ndarray], axes: list[int]) -> str:
    """A nearest Resize as one static gather per resized axis."""
    for ax in axes:
        x = take_static(e, x, ax, indices[ax])
    return x if axes else e.sp.copy(x)


def interpolate_axes(e: Emitter, spec: Any, y: str, attrs: dict, t: TensorType, acc: str) -> str:
    """Linear/cubic Resize of y (in dtype acc): the static interpolation matrix of each resized axis,
    then the extrapolation value outside."""
    for ax, m in enumerate(spec.interp(t, attrs)):
        if m is not None:
            w = e.const(m[0].T.astype(acc), "interp")
            y = e.bind(f"{e.sp.fn('moveaxis')}({e.sp.fn('moveaxis')}({y}, {ax}, -1) @ {w}, -1, {ax})")
    mask = spec.extrapolated(t, attrs)
    if mask is not None:
        outside = literal(float(attrs.get("extrapolation_value", 0.0)))
        y = e.bind(f"{e.sp.mod}.where({e.const(mask, 'outside')}, {outside}, {y})")
    return y
