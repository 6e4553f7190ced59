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

from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS, SIGNED_INTS
from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource import rules as pyrules
from dlcfuzz.lower.pysource.codegen import Emitter, Types

R = TARGET.register


# ---- elementwise, unary ------------------------------------------------------------------

@R("gelu")
def _gelu(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    return [f"jax.nn.gelu({ins[0]}, approximate={attrs['approximate'] == 'tanh'})"]


# ---- elementwise, binary -----------------------------------------------------------------

def _broadcast_pair(e: Emitter, ins: list[str], out_types: Types) -> tuple[str, str]:
    """lax's binary primitives want equal shapes: broadcast both operands to the output's."""
    shape = literal(tuple(out_types[0].shape))
    return (f"jnp.broadcast_to({ins[0]}, {shape})", f"jnp.broadcast_to({ins[1]}, {shape})")


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
    shifted = f"{fn}({x}, jnp.where({inside}, {y}, 0).astype({jnp_dtype(in_types[1].dtype)}))"
    fill = "0" if attrs["direction"] == "LEFT" else f"jnp.where({x} < 0, -1, 0).astype({jnp_dtype(in_types[0].dtype)})"
    return [f"jnp.where({inside}, {shifted}, {fill}).astype({jnp_dtype(in_types[0].dtype)})"]


# ---- reductions ------------------------------------------------------------------------------


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


@R("max_pool2d")
@pyrules.any_pool_unless_legacy
def _max_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    t = in_types[0]
    k, s, d = list(attrs["kernel"]), list(attrs["strides"]), list(attrs.get("dilations", [1, 1]))
    init = f"jnp.array({pyrules.lowest(t.dtype)}, dtype={jnp_dtype(t.dtype)})"
    return [f"lax.reduce_window({ins[0]}, {init}, lax.max, {literal((1, 1, *k))}, {literal((1, 1, *s))}, "
            f"{_window_padding(in_types, out_types, attrs)}, window_dilation={literal((1, 1, *d))})"]


@R("avg_pool2d")
@pyrules.any_pool_unless_legacy
def _avg_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    t = in_types[0]
    k, s = list(attrs["kernel"]), list(attrs["strides"])
    pad = _window_padding(in_types, out_types, attrs)
    zero = f"jnp.array(0, dtype={jnp_dtype(t.dtype)})"
    total = e.bind(f"lax.reduce_window({ins[0]}, {zero}, lax.add, {literal((1, 1, *k))}, {literal((1, 1, *s))}, "
                   f"{pad})")
    if attrs["count_include_pad"]:
        return [f"{total} / {int(np.prod(k))}"]
    # the mean over the window's real elements: divide by the pooled count of them
    ones = f"jnp.ones({literal((1, 1, *t.shape[2:]))}, dtype={jnp_dtype(t.dtype)})"
    count = e.bind(f"lax.reduce_window({ones}, {zero}, lax.add, {literal((1, 1, *k))}, {literal((1, 1, *s))}, {pad})")
    return [f"{total} / {count}"]


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
    return [y, *pyrules.running_statistics(mean_in, var_in, mean, var, attrs)]


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


@R("dropout")
def _dropout(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    if len(out_types) > 1:  # the mask: nothing dropped
        return [ins[0], f"jnp.ones({literal(tuple(in_types[0].shape))}, dtype=jnp.bool_)"]
    return [ins[0]]  # inference: the identity


# ---- shape -----------------------------------------------------------------------------------------


@R("unsqueeze")
def _unsqueeze(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    r = in_types[0].rank + len(attrs["axes"])
    dims = tuple(sorted(int(v) % r for v in attrs["axes"]))
    return [f"jnp.expand_dims({ins[0]}, {literal(dims)})"]


@R("resize")
def _resize(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    t = in_types[0]
    if attrs.get("mode", "nearest") != "nearest":  # linear/cubic: the static matrix of each resized axis
        acc = "float32" if t.dtype == "float16" else t.dtype
        y = pyrules.interpolate_axes(e, spec, e.bind(f"{ins[0]}.astype(jnp.{acc})"), attrs, t, acc)
        return [f"{y}.astype({jnp_dtype(t.dtype)})"]
    indices = spec.indices(t, attrs)  # type: ignore[attr-defined]
    return [pyrules.nearest_by_gather(e, ins[0], indices, pyrules.resized_axes(t, indices))]


@R("depth_to_space")
def _d2s(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops.shape import DepthToSpace

    return [pyrules.reshape_permute(e.sp, ins[0], DepthToSpace._steps(in_types[0].shape, int(attrs["blocksize"]), attrs["mode"]))]


# ---- quantization ------------------------------------------------------------------------------------

