"""Per-operator PyTorch lowerings, registered on `target("torch")`.

Each rule returns torch source expressions whose eager semantics equal the operator's NumPy
reference (`OpSpec.reference`, ONNX semantics); `tests/test_inductor_lowering.py` checks that
over random graphs. Where torch has a native operator with the same semantics we use it (that
is what Inductor's lowerings and decompositions are written for); where ONNX and torch differ
(asymmetric pads, negative slice steps, ONNX's nearest modes, DCR depth_to_space) the rule
composes torch ops, with the static index arithmetic done here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.ir.types import FLOATS, INTS, SIGNED_INTS, WIDE_UNSIGNED, TensorType
from dlcfuzz.lower.pysource import rules as pyrules
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.torch.codegen import TARGET, f_pad_widths, literal, torch_dtype
from dlcfuzz.lower.torch.wide import wide_binary

R = TARGET.register


# ---- elementwise, unary ------------------------------------------------------------------

@R("bitwise_not")
def _bitwise_not(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                 out_types: Types) -> list[str]:
    if in_types[0].dtype in WIDE_UNSIGNED:  # computed on int64 bits (torch has no uint16/32/64 kernel)
        return [f"torch.bitwise_not({ins[0]}.to(torch.int64)).to({torch_dtype(in_types[0].dtype)})"]
    return [f"torch.bitwise_not({ins[0]})"]


# ---- elementwise, binary -----------------------------------------------------------------

@R("div")
def _div(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    if in_types[0].dtype in WIDE_UNSIGNED:
        return [wide_binary(e, "div", ins, attrs, in_types[0].dtype)]
    if in_types[0].dtype in INTS:  # ONNX integer Div truncates toward zero
        return [f"torch.div({ins[0]}, {ins[1]}, rounding_mode='trunc')"]
    return [f"torch.div({ins[0]}, {ins[1]})"]


@R("mod")
def _mod(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    if in_types[0].dtype in WIDE_UNSIGNED:  # both modes agree on unsigned values
        return [wide_binary(e, "mod", ins, attrs, in_types[0].dtype)]
    # fmod=1: C fmod (sign of the dividend); fmod=0: the divisor's sign (Python's %)
    fn = "torch.fmod" if attrs["fmod"] else "torch.remainder"
    return [f"{fn}({ins[0]}, {ins[1]})"]


@R("bit_shift")
def _shift(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
           out_types: Types) -> list[str]:
    dt = in_types[0].dtype
    if dt in WIDE_UNSIGNED:
        return [wide_binary(e, "bit_shift", ins, attrs, dt)]
    fn = "torch.bitwise_left_shift" if attrs["direction"] == "LEFT" else "torch.bitwise_right_shift"
    x, y = ins
    if dt not in SIGNED_INTS:
        return [f"{fn}({x}, {y})"]
    # signed (opset 28): an amount outside [0, bits) gives the sign fill alone (arithmetic right shift)
    bits = np.dtype(dt).itemsize * 8
    inside = e.bind(f"({y} >= 0) & ({y} < {bits})")
    shifted = f"{fn}({x}, torch.where({inside}, {y}, torch.zeros_like({y})))"
    fill = "torch.zeros_like(" + x + ")" if attrs["direction"] == "LEFT" else f"torch.where({x} < 0, -1, 0).to({torch_dtype(in_types[0].dtype)})"
    return [f"torch.where({inside}, {shifted}, {fill})"]


# ---- reductions ------------------------------------------------------------------------------


# ---- nn ------------------------------------------------------------------------------------------


def _pad_spatial(e: Emitter, x: str, pads: Sequence[int], value: str = "0.0") -> tuple[str, list[int]]:
    """Symmetric pads stay with the operator; asymmetric ones become an F.pad before it.
    Returns (input expression, per-dim symmetric padding for the operator)."""
    nd = len(pads) // 2
    lo, hi = list(pads[:nd]), list(pads[nd:])
    if lo == hi:
        return x, lo
    return e.bind(f"F.pad({x}, {literal(f_pad_widths(lo, hi))}, value={value})"), [0] * nd


@R("conv1d", "conv2d")
def _conv(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    nd = in_types[0].rank - 2
    x, pad = _pad_spatial(e, ins[0], attrs["pads"])
    bias = ins[2] if len(ins) == 3 else "None"
    fn = "F.conv1d" if nd == 1 else "F.conv2d"
    return [f"{fn}({x}, {ins[1]}, {bias}, stride={literal(attrs['strides'])}, padding={literal(pad)}, "
            f"dilation={literal(attrs['dilations'])}, groups={int(attrs['group'])})"]


@R("conv_transpose2d")
def _conv_t(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    p, op = list(attrs["pads"]), list(attrs.get("output_padding", [0, 0]))
    s, d = list(attrs["strides"]), list(attrs["dilations"])
    # torch's padding is symmetric and output_padding < stride or dilation: otherwise compute the
    # full transposed convolution and crop / zero-extend it as ONNX does (bias after the crop)
    native = p[:2] == p[2:] and all(o < max(si, di) for o, si, di in zip(op, s, d))
    if native:
        bias = ins[2] if len(ins) == 3 else "None"
        return [f"F.conv_transpose2d({ins[0]}, {ins[1]}, {bias}, stride={literal(s)}, padding={literal(p[:2])}, "
                f"output_padding={literal(op)}, groups={int(attrs['group'])}, dilation={literal(d)})"]
    y = e.bind(f"F.conv_transpose2d({ins[0]}, {ins[1]}, None, stride={literal(s)}, groups={int(attrs['group'])}, "
               f"dilation={literal(d)})")
    if any(op):
        y = e.bind(f"F.pad({y}, [0, {op[1]}, 0, {op[0]}])")
    h, w = out_types[0].shape[2], out_types[0].shape[3]
    y = e.bind(f"{y}[:, :, {p[0]}:{p[0] + h}, {p[1]}:{p[1] + w}]")
    if len(ins) == 3:
        return [f"{y} + {ins[2]}.reshape(1, -1, 1, 1)"]
    return [f"{y}.contiguous()"]


@R("max_pool2d")
@pyrules.any_pool_unless_legacy
def _max_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    t = in_types[0]
    low = pyrules.lowest(t.dtype)
    k, s, d = list(attrs["kernel"]), list(attrs["strides"]), list(attrs.get("dilations", [1, 1]))
    pads = list(attrs["pads"])
    # torch's own padding must be symmetric and at most half the kernel: other pads go before it
    if t.dtype in FLOATS and pads[:2] == pads[2:] and all(2 * pp <= kk for pp, kk in zip(pads[:2], k)):
        return [f"F.max_pool2d({ins[0]}, {literal(k)}, stride={literal(s)}, padding={literal(pads[:2])}, "
                f"dilation={literal(d)})"]
    x = ins[0]
    if any(pads):
        x = e.bind(f"F.pad({x}, {literal([pads[1], pads[3], pads[0], pads[2]])}, value={low})")
    if t.dtype in FLOATS:
        return [f"F.max_pool2d({x}, {literal(k)}, stride={literal(s)}, dilation={literal(d)})"]
    # torch's CPU max_pool2d is float-only: the windows as strided slices, combined by maximum
    return [_window_reduce(e, x, k, s, d, out_types[0].shape[2:], "torch.maximum")]


def _window_reduce(e: Emitter, x: str, k: Sequence[int], s: Sequence[int], d: Sequence[int],
                   out: Sequence[int], combine: str) -> str:
    acc = ""
    for i in range(k[0]):
        for j in range(k[1]):
            h0, w0 = i * d[0], j * d[1]
            view = f"{x}[:, :, {h0}:{h0 + s[0] * (out[0] - 1) + 1}:{s[0]}, {w0}:{w0 + s[1] * (out[1] - 1) + 1}:{s[1]}]"
            acc = view if not acc else e.bind(f"{combine}({acc}, {view})")
    return acc


@R("avg_pool2d")
@pyrules.any_pool_unless_legacy
def _avg_pool(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
              out_types: Types) -> list[str]:
    k, s, pads = attrs["kernel"], attrs["strides"], list(attrs["pads"])
    include = bool(attrs["count_include_pad"])
    if pads[:2] == pads[2:] and all(pp <= kk // 2 for pp, kk in zip(pads[:2], k)):
        return [f"F.avg_pool2d({ins[0]}, {literal(k)}, stride={literal(s)}, padding={literal(pads[:2])}, "
                f"count_include_pad={include})"]
    flat = [pads[1], pads[3], pads[0], pads[2]]
    xp = e.bind(f"F.pad({ins[0]}, {literal(flat)})")
    total = e.bind(f"F.avg_pool2d({xp}, {literal(k)}, stride={literal(s)})")
    if include:
        return [total]
    # the mean over the window's real elements: divide by the pooled mask of them
    mask = e.bind(f"F.pad(torch.ones_like({ins[0]}[:1, :1]), {literal(flat)})")
    return [f"{total} / F.avg_pool2d({mask}, {literal(k)}, stride={literal(s)})"]


@pyrules.native(TARGET.name, "global_avg_pool")
def _gap(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str] | None:
    return [f"F.adaptive_avg_pool2d({ins[0]}, 1)"] if in_types[0].rank == 4 else None


@R("gemm")
def _gemm(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
          out_types: Types) -> list[str]:
    x = f"{ins[0]}.t()" if attrs["transA"] else ins[0]
    w = f"{ins[1]}.t()" if attrs["transB"] else ins[1]
    if len(ins) == 3:
        return [f"torch.addmm({ins[2]}, {x}, {w}, beta={literal(attrs['beta'])}, alpha={literal(attrs['alpha'])})"]
    return [f"{literal(attrs['alpha'])} * torch.mm({x}, {w})"]


@R("batch_norm")
def _bn(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    x, scale, bias, mean, var = ins
    if not attrs.get("training_mode", 0):
        return [f"F.batch_norm({x}, {mean}, {var}, {scale}, {bias}, training=False, eps={literal(attrs['epsilon'])})"]
    # training: the batch's statistics (population variance; torch's running_var would be unbiased
    # and its momentum the complement of ONNX's, so the running statistics are written out)
    dims = literal([0, *range(2, in_types[0].rank)])
    bm = e.bind(f"torch.mean({x}, dim={dims})")
    bv = e.bind(f"torch.var({x}, dim={dims}, correction=0)")
    y = f"F.batch_norm({x}, {bm}, {bv}, {scale}, {bias}, training=False, eps={literal(attrs['epsilon'])})"
    return [y, *pyrules.running_statistics(mean, var, bm, bv, attrs)]


@R("layer_norm")
def _ln(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    t = in_types[0]
    axis = attrs["axis"] % t.rank
    norm = list(t.shape[axis:])
    eps = literal(attrs["epsilon"])
    if all(u.shape == tuple(norm) for u in in_types[1:]):
        bias = ins[2] if len(ins) == 3 else "None"
        ys = [f"F.layer_norm({ins[0]}, {literal(norm)}, {ins[1]}, {bias}, eps={eps})"]
    else:
        y = f"F.layer_norm({ins[0]}, {literal(norm)}, eps={eps}) * {ins[1]}"  # scale broadcasts to the suffix
        ys = [f"{y} + {ins[2]}" if len(ins) == 3 else y]
    if len(out_types) > 1:  # Mean and InvStdDev, in the float32 stash type
        dims = literal(list(range(axis, t.rank)))
        x32 = e.bind(f"{ins[0]}.to(torch.float32)")
        ys.append(f"torch.mean({x32}, dim={dims}, keepdim=True)")
        if len(out_types) > 2:
            ys.append(f"torch.rsqrt(torch.var({x32}, dim={dims}, correction=0, keepdim=True) + {eps})")
    return ys


@pyrules.native(TARGET.name, "instance_norm")
def _in(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str] | None:
    if int(np.prod(in_types[0].shape[2:])) <= 1 or 0 in in_types[0].shape[:2]:
        return None  # F.instance_norm refuses one spatial element, and an empty batch or channel (IndexError, eager too)
    return [f"F.instance_norm({ins[0]}, weight={ins[1]}, bias={ins[2]}, eps={literal(attrs['epsilon'])})"]


@pyrules.native(TARGET.name, "lrn")
def _lrn(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str] | None:
    size = int(attrs["size"])
    alpha, beta, bias = literal(attrs["alpha"]), literal(attrs["beta"]), literal(attrs["bias"])
    # torch's window is centred like ONNX's only for odd sizes, and its CPU kernel (avg_pool3d) has
    # no float16 version: otherwise ONNX's window, the formula's banded sum
    if size % 2 == 1 and in_types[0].dtype != "float16":
        return [f"F.local_response_norm({ins[0]}, {size}, alpha={alpha}, beta={beta}, k={bias})"]
    return None


@R("dropout")
def _dropout(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
    y = f"F.dropout({ins[0]}, p={literal(attrs['ratio'])}, training=False)"  # inference: identity
    if len(out_types) > 1:  # the mask: nothing dropped
        return [y, f"torch.ones({literal(list(in_types[0].shape))}, dtype=torch.bool)"]
    return [y]


# ---- shape -----------------------------------------------------------------------------------------


@R("unsqueeze")
def _unsqueeze(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
               out_types: Types) -> list[str]:
    r = in_types[0].rank + len(attrs["axes"])
    y = ins[0]
    for ax in sorted(int(v) % r for v in attrs["axes"]):
        y = f"torch.unsqueeze({y}, {ax})"
    return [y]


def _interpolate_mode(in_n: int, out_n: int, idx: np.ndarray) -> str | None:
    """The F.interpolate nearest mode that picks exactly `idx` along an axis of in_n -> out_n, if any."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    src = torch.arange(in_n, dtype=torch.float32).reshape(1, 1, in_n)
    for mode in ("nearest", "nearest-exact"):
        got = F.interpolate(src, size=out_n, mode=mode).reshape(-1).to(torch.int64).numpy()
        if np.array_equal(got, idx):
            return mode
    return None


def _resize_interp(e: Emitter, spec: object, x: str, attrs: dict, t: TensorType) -> str:
    """Linear/cubic Resize (in float32 for float16)."""
    acc = "float32" if t.dtype == "float16" else t.dtype
    y = e.bind(f"{x}.to(torch.{acc})") if acc != t.dtype else x
    y = pyrules.interpolate_axes(e, spec, y, attrs, t, acc)
    return f"{y}.to({torch_dtype(t.dtype)})" if acc != t.dtype else (y if y != x else f"{y}.clone()")


@R("resize")
def _resize(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
            out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    spec = get_op("resize")
    t, out = in_types[0], out_types[0].shape
    if attrs.get("mode", "nearest") != "nearest":
        return [_resize_interp(e, spec, ins[0], attrs, t)]
    indices = spec.indices(t, attrs)  # type: ignore[attr-defined]
    changed = pyrules.resized_axes(t, indices)
    if t.rank in (3, 4) and changed and min(changed) >= 2 and t.dtype in FLOATS:
        modes = {_interpolate_mode(t.shape[ax], out[ax], indices[ax]) for ax in range(2, t.rank)}
        if len(modes) == 1 and None not in modes:  # ONNX's coordinates equal torch's mode here: use it
            return [f"F.interpolate({ins[0]}, size={literal(list(out[2:]))}, mode={modes.pop()!r})"]
    return [pyrules.nearest_by_gather(e, ins[0], indices, changed)]


@R("depth_to_space")
def _d2s(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops.shape import DepthToSpace

    b = int(attrs["blocksize"])
    if attrs["mode"] == "CRD":
        return [f"F.pixel_shuffle({ins[0]}, {b})"]
    return [pyrules.reshape_permute(e.sp, ins[0], DepthToSpace._steps(in_types[0].shape, b, attrs["mode"]))]


# ---- quantization ------------------------------------------------------------------------------------

