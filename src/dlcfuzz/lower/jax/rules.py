"""Per-operator JAX lowerings, registered on `target("jax")`.

Each rule returns `jax.numpy` / `jax.lax` source expressions whose semantics equal the operator's
NumPy reference (`OpSpec.reference`, ONNX semantics); `tests/test_xla_lowering.py` checks that over
random graphs, op by op under `jax.disable_jit()`. Where ONNX and NumPy-style jnp differ (integer
division truncates, asymmetric or negative pads, negative slice steps, transposed convolution with
pads and output padding) the rule uses the `lax` primitive that has ONNX's meaning, or composes
them with the static index arithmetic done here. Python scalars in expressions are weakly typed in
JAX, so they never widen a float16 or int8 tensor.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS, INTS, SIGNED_INTS, TensorType
from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource.codegen import Emitter
from dlcfuzz.lower.pysource.rules import BINARY, binary, pad_by_gather, reshape_permute, take_static

Types = Sequence[TensorType]
R = TARGET.register


def _dt(t: TensorType) -> str:
    return jnp_dtype(t.dtype)


# ---- elementwise, unary ------------------------------------------------------------------

# the unary operators jax spells otherwise than the other Python targets (the rest: pysource/rules.py)
_UNARY = {
    "bitwise_not": "jnp.bitwise_not({x})",
    "mish": "{x} * jnp.tanh(jax.nn.softplus({x}))",
    "hard_swish": "{x} * jnp.clip({x} / 6 + 0.5, 0, 1)",  # ONNX: x * max(0, min(1, x/6 + 1/2))
}


def _unary(template: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        return [template.format(x=ins[0])]

    return rule


for _name, _tpl in _UNARY.items():
    R(_name)(_unary(_tpl))


@R("relu")
def _relu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    return [f"jnp.maximum({ins[0]}, 0)"]  # jax.nn.relu is float-only in spirit; max(x, 0) keeps ints


@R("gelu")
def _gelu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    return [f"jax.nn.gelu({ins[0]}, approximate={attrs['approximate'] == 'tanh'})"]


@R("hard_sigmoid")
def _hard_sigmoid(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                  out_types: Types) -> list[str]:
    return [f"jnp.clip({literal(attrs['alpha'])} * {ins[0]} + {literal(attrs['beta'])}, 0, 1)"]


@R("thresholded_relu")
def _thresholded(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
    x = ins[0]
    return [f"jnp.where({x} > {literal(attrs['alpha'])}, {x}, jnp.zeros_like({x}))"]


# ---- elementwise, binary -----------------------------------------------------------------

def _binary(name: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        return [binary(e.sp, name, ins[0], ins[1])]

    return rule


for _name in BINARY:
    R(_name)(_binary(_name))


def _broadcast_pair(e: Emitter, ins: list[str], out_types: Types) -> tuple[str, str]:
    """lax's binary primitives want equal shapes: broadcast both operands to the output's."""
    shape = literal(tuple(out_types[0].shape))
    return (f"jnp.broadcast_to({ins[0]}, {shape})", f"jnp.broadcast_to({ins[1]}, {shape})")


def _variadic(fn: str, mean: bool = False):
    """Max/Min/Sum/Mean of one or more operands: a chain of the binary function."""

    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        y = ins[0]
        for x in ins[1:]:
            y = e.bind(f"{fn}({y}, {x})")
        if mean:
            return [f"{y} / {len(ins)}"]  # a weak Python scalar: the dtype stays
        return [y if len(ins) > 1 else f"jnp.array({y}, copy=True)"]

    return rule


R("max")(_variadic("jnp.maximum"))
R("min")(_variadic("jnp.minimum"))
R("sum")(_variadic("jnp.add"))
R("mean")(_variadic("jnp.add", mean=True))


@R("div")
def _div(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    if in_types[0].dtype not in FLOATS:  # ONNX integer Div truncates toward zero: lax.div (jnp's // floors)
        x, y = _broadcast_pair(e, ins, out_types)
        return [f"lax.div({x}, {y})"]
    return [f"jnp.divide({ins[0]}, {ins[1]})"]


@R("mod")
def _mod(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    # fmod=1: C fmod (sign of the dividend, lax.rem); fmod=0: the divisor's sign (Python's %)
    if attrs["fmod"]:
        x, y = _broadcast_pair(e, ins, out_types)
        return [f"lax.rem({x}, {y})"]
    return [f"jnp.remainder({ins[0]}, {ins[1]})"]


@R("bit_shift")
def _shift(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    fn = "jnp.left_shift" if attrs["direction"] == "LEFT" else "jnp.right_shift"
    x, y = ins
    if in_types[0].dtype not in SIGNED_INTS:
        return [f"{fn}({x}, {y})"]
    # signed (opset 28): an amount outside [0, bits) gives the sign fill alone (arithmetic right shift)
    bits = np.dtype(in_types[0].dtype).itemsize * 8
    inside = e.bind(f"({y} >= 0) & ({y} < {bits})")
    shifted = f"{fn}({x}, jnp.where({inside}, {y}, 0).astype({_dt(in_types[1])}))"
    fill = "0" if attrs["direction"] == "LEFT" else f"jnp.where({x} < 0, -1, 0).astype({_dt(in_types[0])})"
    return [f"jnp.where({inside}, {shifted}, {fill}).astype({_dt(in_types[0])})"]


@R("clip")
def _clip(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    # Min(max, Max(x, min)) in this order: min > max gives max everywhere (ONNX)
    x = ins[0]
    if attrs["min"] is not None:
        x = e.bind(f"jnp.maximum({x}, {_scalar(attrs['min'], in_types[0])})")
    if attrs["max"] is not None:
        x = f"jnp.minimum({x}, {_scalar(attrs['max'], in_types[0])})"
    return [x]


def _scalar(v: float | int, t: TensorType) -> str:
    """A scalar attribute as a literal of the tensor's kind (an int literal for an integer tensor)."""
    return literal(int(v)) if t.dtype in INTS else literal(float(v))


# ---- reductions ------------------------------------------------------------------------------


def _reduced_axes(t: TensorType, attrs: dict) -> tuple[int, ...] | None:
    from dlcfuzz.ops import get_op

    return get_op("reduce_sum").reduced(t, attrs)  # type: ignore[attr-defined]


def _reduce(kind: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        t, x = in_types[0], ins[0]
        axes = _reduced_axes(t, attrs)
        if axes is None:  # noop_with_empty_axes with no axes: identity
            return [x]
        keep = bool(attrs["keepdims"])
        dims, dt, out = literal(tuple(axes)), _dt(t), out_types[0]
        n = int(np.prod([t.shape[i] for i in axes], dtype=np.int64))
        if n == 0 and kind in ("max", "min"):  # the identity of an empty max/min (jnp refuses)
            if t.dtype in FLOATS:
                fill = '-float("inf")' if kind == "max" else 'float("inf")'
            elif t.dtype == "bool":
                fill = literal(kind == "min")
            else:
                info = np.iinfo(t.dtype)
                fill = literal(int(info.min if kind == "max" else info.max))
            return [f"jnp.full({literal(tuple(out.shape))}, {fill}, dtype={dt})"]
        if kind == "sum":
            return [f"jnp.sum({x}, axis={dims}, keepdims={keep}, dtype={dt})"]
        if kind == "mean":
            if t.dtype in INTS:  # integer mean truncates toward zero (as ONNXRuntime)
                s = e.bind(f"jnp.sum({x}, axis={dims}, keepdims={keep}, dtype=jnp.int64)")
                return [f"lax.div({s}, jnp.int64({max(n, 1)})).astype({dt})"]
            return [f"jnp.mean({x}, axis={dims}, keepdims={keep})"]
        if kind in ("max", "min"):
            return [f"jnp.{kind}({x}, axis={dims}, keepdims={keep})"]
        return [f"jnp.prod({x}, axis={dims}, keepdims={keep}, dtype={dt})"]

    return rule


for _name, _kind in (("reduce_sum", "sum"), ("reduce_mean", "mean"), ("reduce_max", "max"),
                     ("reduce_min", "min"), ("reduce_prod", "prod")):
    R(_name)(_reduce(_kind))


def _arg(fn: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        axis, keep = int(attrs["axis"]), bool(attrs["keepdims"])
        if not attrs.get("select_last_index", 0):  # jnp returns the first index on ties, like ONNX's default
            return [f"{fn}({ins[0]}, axis={axis}, keepdims={keep}).astype(jnp.int64)"]
        # the last index on ties: the first of the reversed axis, mirrored
        n = in_types[0].shape[axis]
        return [f"({n - 1} - {fn}(jnp.flip({ins[0]}, {axis}), axis={axis}, keepdims={keep})).astype(jnp.int64)"]

    return rule


R("argmax")(_arg("jnp.argmax"))
R("argmin")(_arg("jnp.argmin"))


# ---- nn ------------------------------------------------------------------------------------------

_DIMS = {3: "('NCH', 'OIH', 'NCH')", 4: "('NCHW', 'OIHW', 'NCHW')"}


def _channel(b: str, rank: int) -> str:
    """A per-channel vector shaped to broadcast over N, C, spatial..."""
    return f"{b}.reshape({literal((1, -1) + (1,) * (rank - 2))})"


@R("conv1d", "conv2d")
def _conv(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    nd = in_types[0].rank - 2
    pads = list(attrs["pads"])
    padding = literal([(pads[i], pads[nd + i]) for i in range(nd)])
    y = (f"lax.conv_general_dilated({ins[0]}, {ins[1]}, {literal(tuple(attrs['strides']))}, {padding}, "
         f"rhs_dilation={literal(tuple(attrs['dilations']))}, dimension_numbers={_DIMS[nd + 2]}, "
         f"feature_group_count={int(attrs['group'])})")
    if len(ins) == 3:
        return [f"{e.bind(y)} + {_channel(ins[2], nd + 2)}"]
    return [y]


@R("conv_transpose2d")
def _conv_t(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    # The gradient form: the input dilated by the stride, convolved with the flipped kernel whose
    # in/out channels are swapped per group; padded by d*(k-1) on both sides (plus output_padding at
    # the high end) gives the full transposed convolution, which ONNX's pads then crop.
    x, w = ins[0], ins[1]
    c, mg, kh, kw = in_types[1].shape
    g = int(attrs["group"])
    s, d, p = list(attrs["strides"]), list(attrs["dilations"]), list(attrs["pads"])
    op = list(attrs.get("output_padding", [0, 0]))
    k = (kh, kw)
    wt = e.bind(f"jnp.flip({w}, (2, 3)).reshape({literal((g, c // g, mg, kh, kw))}).transpose((0, 2, 1, 3, 4))"
                f".reshape({literal((g * mg, c // g, kh, kw))})")
    padding = literal([(d[i] * (k[i] - 1) - p[i], d[i] * (k[i] - 1) - p[2 + i] + op[i]) for i in range(2)])
    y = (f"lax.conv_general_dilated({x}, {wt}, (1, 1), {padding}, lhs_dilation={literal(tuple(s))}, "
         f"rhs_dilation={literal(tuple(d))}, dimension_numbers={_DIMS[4]}, feature_group_count={g})")
    if len(ins) == 3:
        return [f"{e.bind(y)} + {_channel(ins[2], 4)}"]
    return [y]


def _window_padding(in_types: Types, out_types: Types, attrs: dict) -> str:
    pads = list(attrs["pads"])
    return literal([(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])


def _pool_any(e: Emitter, spec: object, x: str, attrs: dict, t: TensorType) -> list[str]:
    """Any MaxPool/AveragePool (1-3 spatial dims, ceil_mode, auto_pad, dilations, Indices): the input
    padded explicitly (ceil_mode's extra included), one strided view per kernel offset, combined; the
    average divides by the static count of what each window reads, the Indices come from a constant
    grid of ONNX's flat offsets (the first maximum in window order wins, as in ORT)."""
    k, s, d, before, after, out = spec.geometry(t, attrs)  # type: ignore[attr-defined]
    width = literal([(0, 0), (0, 0)] + [(b, f) for b, f in zip(before, after)])

    def views(src: str) -> list[str]:
        return [f"{src}[:, :, " + ", ".join(f"{o * dd}:{o * dd + ss * (n - 1) + 1}:{ss}"
                                           for o, dd, ss, n in zip(off, d, s, out)) + "]"
                for off in itertools.product(*[range(kk) for kk in k])]

    if spec.kind == "avg":  # type: ignore[attr-defined]
        acc = "float32" if t.dtype == "float16" else t.dtype
        xp = e.bind(f"jnp.pad({x}.astype(jnp.{acc}), {width})")
        total = e.bind(" + ".join(views(xp)))
        count = e.const(spec.window_count(t, attrs).astype(acc), "count")  # type: ignore[attr-defined]
        return [f"({total} / {count}).astype({_dt(t)})"]
    low = '-float("inf")' if t.dtype in FLOATS else literal(int(np.iinfo(t.dtype).min))
    xp = e.bind(f"jnp.pad({x}, {width}, constant_values={low})")
    vs = views(xp)
    y = vs[0]
    for v in vs[1:]:
        y = e.bind(f"jnp.maximum({y}, {v})")
    if not attrs.get("indices", 0):
        return [y]
    grid = np.pad(spec.flat_index(t, attrs), [(0, 0), (0, 0)] + list(zip(before, after)), constant_values=-1)  # type: ignore[attr-defined]
    ip = e.const(grid, "flat")
    best, idx = vs[0], views(ip)[0]
    for v, iv in zip(vs[1:], views(ip)[1:]):
        better = e.bind(f"{v} > {best}")
        best = e.bind(f"jnp.where({better}, {v}, {best})")
        idx = e.bind(f"jnp.where({better}, {iv}, {idx})")
    return [y, idx]


@R("max_pool1d", "max_pool3d", "avg_pool1d", "avg_pool3d")
def _pool_nd(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    name = ("avg" if "count_include_pad" in attrs else "max") + f"_pool{in_types[0].rank - 2}d"
    return _pool_any(e, get_op(name), ins[0], attrs, in_types[0])


@R("max_pool2d")
def _max_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    if not get_op("max_pool2d").legacy(attrs):  # type: ignore[attr-defined]
        return _pool_any(e, get_op("max_pool2d"), ins[0], attrs, in_types[0])
    t = in_types[0]
    low = '-float("inf")' if t.dtype in FLOATS else literal(int(np.iinfo(t.dtype).min))
    k, s, d = list(attrs["kernel"]), list(attrs["strides"]), list(attrs.get("dilations", [1, 1]))
    init = f"jnp.array({low}, dtype={_dt(t)})"
    return [f"lax.reduce_window({ins[0]}, {init}, lax.max, {literal((1, 1, *k))}, {literal((1, 1, *s))}, "
            f"{_window_padding(in_types, out_types, attrs)}, window_dilation={literal((1, 1, *d))})"]


@R("avg_pool2d")
def _avg_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    if not get_op("avg_pool2d").legacy(attrs):  # type: ignore[attr-defined]
        return _pool_any(e, get_op("avg_pool2d"), ins[0], attrs, in_types[0])
    t = in_types[0]
    k, s = list(attrs["kernel"]), list(attrs["strides"])
    pad = _window_padding(in_types, out_types, attrs)
    zero = f"jnp.array(0, dtype={_dt(t)})"
    total = e.bind(f"lax.reduce_window({ins[0]}, {zero}, lax.add, {literal((1, 1, *k))}, {literal((1, 1, *s))}, "
                   f"{pad})")
    if attrs["count_include_pad"]:
        return [f"{total} / {int(np.prod(k))}"]
    # the mean over the window's real elements: divide by the pooled count of them
    ones = f"jnp.ones({literal((1, 1, *t.shape[2:]))}, dtype={_dt(t)})"
    count = e.bind(f"lax.reduce_window({ones}, {zero}, lax.add, {literal((1, 1, *k))}, {literal((1, 1, *s))}, {pad})")
    return [f"{total} / {count}"]


@R("global_avg_pool")
def _gap(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    return [f"jnp.mean({ins[0]}, axis={literal(tuple(range(2, in_types[0].rank)))}, keepdims=True)"]


@R("global_max_pool")
def _gmp(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    return [f"jnp.max({ins[0]}, axis={literal(tuple(range(2, in_types[0].rank)))}, keepdims=True)"]


@R("matmul")
def _matmul(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    return [f"jnp.matmul({ins[0]}, {ins[1]})"]


@R("gemm")
def _gemm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    x = f"{ins[0]}.T" if attrs["transA"] else ins[0]
    w = f"{ins[1]}.T" if attrs["transB"] else ins[1]
    y = f"{literal(attrs['alpha'])} * jnp.matmul({x}, {w})"
    if len(ins) == 3:
        return [f"{e.bind(y)} + {literal(attrs['beta'])} * {ins[2]}"]
    return [y]


@R("batch_norm")
def _bn(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    x, scale, bias, mean_in, var_in = ins
    r = in_types[0].rank
    mean, var = mean_in, var_in
    if attrs.get("training_mode", 0):  # the batch's statistics (population variance)
        axes = literal((0, *range(2, r)))
        mean = e.bind(f"jnp.mean({x}, axis={axes})")
        var = e.bind(f"jnp.mean(jnp.square({x} - {_channel(mean, r)}), axis={axes})")
    inv = e.bind(f"lax.rsqrt({_channel(var, r)} + {literal(attrs['epsilon'])})")
    y = f"({x} - {_channel(mean, r)}) * {inv} * {_channel(scale, r)} + {_channel(bias, r)}"
    if not attrs.get("training_mode", 0):
        return [y]
    m = literal(float(attrs.get("momentum", 0.9)))
    return [y, f"{mean_in} * {m} + {mean} * (1 - {m})", f"{var_in} * {m} + {var} * (1 - {m})"]


@R("layer_norm")
def _ln(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    t = in_types[0]
    axes = literal(tuple(range(attrs["axis"] % t.rank, t.rank)))
    x = ins[0]
    mean = e.bind(f"jnp.mean({x}, axis={axes}, keepdims=True)")
    var = e.bind(f"jnp.mean(jnp.square({x} - {mean}), axis={axes}, keepdims=True)")
    y = f"({x} - {mean}) / jnp.sqrt({var} + {literal(attrs['epsilon'])}) * {ins[1]}"  # scale broadcasts to the suffix
    ys = [f"{y} + {ins[2]}" if len(ins) == 3 else y]
    if len(out_types) > 1:  # Mean and InvStdDev, in the float32 stash type
        x32 = e.bind(f"{x}.astype(jnp.float32)")
        m32 = e.bind(f"jnp.mean({x32}, axis={axes}, keepdims=True)")
        ys.append(m32)
        if len(out_types) > 2:
            ys.append(f"lax.rsqrt(jnp.mean(jnp.square({x32} - {m32}), axis={axes}, keepdims=True) + {literal(attrs['epsilon'])})")
    return ys


@R("instance_norm")
def _in(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    t = in_types[0]
    axes = literal(tuple(range(2, t.rank)))
    x = ins[0]
    mean = e.bind(f"jnp.mean({x}, axis={axes}, keepdims=True)")
    var = e.bind(f"jnp.mean(jnp.square({x} - {mean}), axis={axes}, keepdims=True)")
    return [f"({x} - {mean}) / jnp.sqrt({var} + {literal(attrs['epsilon'])}) * {_channel(ins[1], t.rank)} "
            f"+ {_channel(ins[2], t.rank)}"]


@R("lrn")
def _lrn(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    # ONNX's window is channels [c - (size-1)//2, c + ceil((size-1)/2)]: a banded sum of squares
    from dlcfuzz.ops import get_op

    t = in_types[0]
    size = int(attrs["size"])
    alpha, beta, bias = literal(attrs["alpha"]), literal(attrs["beta"]), literal(attrs["bias"])
    band = e.const(get_op("lrn")._band(t.shape[1], size).astype(t.dtype), "band")  # type: ignore[attr-defined]
    sq = e.bind(f"jnp.moveaxis(jnp.moveaxis({ins[0]} * {ins[0]}, 1, -1) @ {band}, -1, 1)")
    return [f"{ins[0]} / ({bias} + {alpha} / {size} * {sq}) ** {beta}"]


@R("dropout")
def _dropout(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    if len(out_types) > 1:  # the mask: nothing dropped
        return [ins[0], f"jnp.ones({literal(tuple(in_types[0].shape))}, dtype=jnp.bool_)"]
    return [ins[0]]  # inference: the identity


# ---- shape -----------------------------------------------------------------------------------------


@R("split")
def _split(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    cuts = [int(v) for v in np.cumsum(attrs["split"])[:-1]]
    parts = e.bind(f"jnp.split({ins[0]}, {literal(cuts)}, axis={int(attrs['axis'])})")
    return [f"{parts}[{i}]" for i in range(len(attrs["split"]))]


@R("pad")
def _pad(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t = in_types[0]
    before, after, mode, value = get_op("pad").parse(t, attrs)  # type: ignore[attr-defined]
    x = ins[0]
    if mode == "constant":  # lax.pad: negative pads crop, as in ONNX
        v = literal(bool(value)) if t.dtype == "bool" else literal(value if t.dtype in FLOATS else int(value))
        cfg = literal([(int(b), int(f), 0) for b, f in zip(before, after)])
        return [f"lax.pad({x}, jnp.array({v}, dtype={_dt(t)}), {cfg})"]
    return [pad_by_gather(e, x, mode, t.shape, before, after)]


@R("unsqueeze")
def _unsqueeze(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    r = in_types[0].rank + len(attrs["axes"])
    dims = tuple(sorted(int(v) % r for v in attrs["axes"]))
    return [f"jnp.expand_dims({ins[0]}, {literal(dims)})"]


@R("expand")
def _expand(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    return [f"jnp.broadcast_to({ins[0]}, {literal(tuple(out_types[0].shape))})"]


@R("gather")
def _gather(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    data, idx = ins
    t = in_types[0]
    ax = int(attrs["axis"]) % t.rank
    n = t.shape[ax]
    # ONNX allows negative indices in [-n, -1]; made explicit rather than left to jnp.take's mode
    fixed = e.bind(f"jnp.where({idx} < 0, {idx} + {n}, {idx})")
    return [f"jnp.take({data}, {fixed}, axis={ax}, mode='clip')"]  # in bounds: clip is a no-op


@R("resize")
def _resize(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t = in_types[0]
    if attrs.get("mode", "nearest") != "nearest":  # linear/cubic: the static matrix of each resized axis
        spec = get_op("resize")
        acc = "float32" if t.dtype == "float16" else t.dtype
        y = e.bind(f"{ins[0]}.astype(jnp.{acc})")
        for ax, m in enumerate(spec.interp(t, attrs)):  # type: ignore[attr-defined]
            if m is not None:
                w = e.const(m[0].T.astype(acc), "interp")
                y = e.bind(f"jnp.moveaxis(jnp.moveaxis({y}, {ax}, -1) @ {w}, -1, {ax})")
        mask = spec.extrapolated(t, attrs)  # type: ignore[attr-defined]
        if mask is not None:
            y = e.bind(f"jnp.where({e.const(mask, 'outside')}, {literal(float(attrs.get('extrapolation_value', 0.0)))}, {y})")
        return [f"{y}.astype({_dt(t)})"]
    indices = get_op("resize").indices(t, attrs)  # type: ignore[attr-defined]
    x = ins[0]
    for ax in range(t.rank):  # nearest: one static gather per resized axis
        if not (len(indices[ax]) == t.shape[ax] and np.array_equal(indices[ax], np.arange(t.shape[ax]))):
            x = take_static(e, x, ax, indices[ax])
    return [x]


@R("depth_to_space")
def _d2s(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops.shape import DepthToSpace

    return [reshape_permute(e.sp, ins[0], DepthToSpace._steps(in_types[0].shape, int(attrs["blocksize"]), attrs["mode"]))]


# ---- quantization ------------------------------------------------------------------------------------

