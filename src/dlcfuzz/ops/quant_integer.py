"""Integer (quantized) arithmetic: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv and
DynamicQuantizeLinear.

Scales and zero points are attributes here (ONNX passes them as inputs; the import rules read them
as constants). Integer results are exact. The QLinear operators requantize an int32 accumulator
with a float multiplier (x_scale * w_scale / y_scale, in float32) and round half to even: a value
within rounding error of a half is a near tie (onnxruntime's float rescale, a fixed-point one, or a
different association of the three scales can flip it) and is not judged. DynamicQuantizeLinear
rounds x / scale and the zero point the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops.base import Attrs, Domain, OpSpec, broadcast_shapes, check_size, register, require_dtype, require_rank
from dlcfuzz.ops.nn import _list, _pad_spatial, _sample_window, _window_out, _windows

# ONNX's integer operators take 8-bit operands only (ops.quant's QTYPES also holds 16-bit Q/DQ types)
QTYPES = ("uint8", "int8")
REQUANT_TIE = 1e-5  # relative: far above float32 rounding of acc * multiplier (~1e-7), far below 0.5


def _full_range(dtype: str) -> Domain:
    info = np.iinfo(dtype)
    return Domain(float(info.min), float(info.max))


def _zero_point(spec: OpSpec, attrs: Attrs, name: str, dtype: str, per: int | None = None) -> None:
    """attrs[name] is an int of `dtype`, or (when `per` is given) also a list of `per` of them."""
    zp = attrs.get(name, 0)
    info = np.iinfo(dtype)
    values = zp if isinstance(zp, list) and per is not None else [zp]
    if isinstance(zp, list) and len(zp) != per:
        raise ShapeError(f"{spec.name}: {name} has {len(zp)} entries, expected {per}")
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and info.min <= v <= info.max
               for v in values):
        raise ShapeError(f"{spec.name}: {name} {zp!r} is not in {dtype}")


def _scale(spec: OpSpec, attrs: Attrs, name: str, per: int | None = None) -> None:
    s = attrs.get(name)
    values = s if isinstance(s, list) and per is not None else [s]
    if isinstance(s, list) and len(s) != per:
        raise ShapeError(f"{spec.name}: {name} has {len(s)} entries, expected {per}")
    if not all(isinstance(v, (int, float)) and np.isfinite(v) and v > 0 for v in values):
        raise ShapeError(f"{spec.name}: {name} must be positive and finite, got {s!r}")


def _sample_zp(rng: np.random.Generator, dtype: str) -> int:
    info = np.iinfo(dtype)
    if rng.random() < 0.3:
        return 0
    return int(rng.integers(int(info.min), int(info.max) + 1))


def _sample_scale(rng: np.random.Generator) -> float:
    """A float32-exact scale that is not a power of two (dyadic multipliers make exact ties common)."""
    return float(np.float32(float(f"{rng.uniform(0.002, 0.05):.4g}")))


def _sample_out_scale(rng: np.random.Generator, in_scales: float, terms: int) -> float:
    """An output scale that maps the accumulator's typical range (sqrt(terms) products of zero-point
    shifted values ~150 each) to a few tens of steps, so that outputs do not all saturate."""
    return float(np.float32(float(f"{in_scales * np.sqrt(max(terms, 1)) * rng.uniform(300.0, 1500.0):.4g}")))


def _shifted(x: np.ndarray, zp: Any, axis_shape: tuple[int, ...] | None = None) -> np.ndarray:
    z = np.asarray(zp, dtype=np.int64)
    if z.ndim and axis_shape is not None:
        z = z.reshape(axis_shape)
    return x.astype(np.int64) - z


def _matmul_shape(spec: OpSpec, a: TensorType, b: TensorType) -> tuple[int, ...]:
    if a.rank < 1 or b.rank < 1:
        raise ShapeError(f"{spec.name}: inputs must have rank >= 1")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.rank >= 2 else b.shape[0]
    if ka != kb:
        raise ShapeError(f"{spec.name}: contraction sizes differ ({ka} vs {kb})")
    batch = broadcast_shapes(spec, a.shape[:-2], b.shape[:-2])
    return batch + (a.shape[-2:-1] if a.rank >= 2 else ()) + (b.shape[-1:] if b.rank >= 2 else ())


def _sample_matmul_b(rng: np.random.Generator, first: TensorType, dtype: str) -> TensorType:
    k = first.shape[-1]
    n = int(rng.integers(1, 6))
    if first.rank >= 2 and rng.random() < 0.8:
        batch = first.shape[:-2]
        keep = len(batch) if rng.random() < 0.7 else int(rng.integers(0, len(batch) + 1))
        bb = tuple(1 if rng.random() < 0.2 else d for d in batch[len(batch) - keep:]) if keep else ()
        return TensorType(dtype, bb + (k, n))
    return TensorType(dtype, (k, n) if rng.random() < 0.7 else (k,))


def _int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """matmul of int64 arrays (numpy's integer matmul is exact)."""
    return np.matmul(a, b)


def _int_conv(x: np.ndarray, w: np.ndarray, attrs: Attrs, out_shape: tuple[int, ...]) -> np.ndarray:
    """Convolution of int64 arrays (already shifted by their zero points; pads contribute 0)."""
    g = attrs.get("group", 1)
    xp = _pad_spatial(x, attrs["pads"])
    out = np.zeros(out_shape, dtype=np.int64)
    cg, mg = x.shape[1] // g, w.shape[0] // g
    for off, view in _windows(xp, w.shape[2:], attrs["strides"], attrs["dilations"], out_shape[2:]):
        for gi in range(g):
            wk = w[(slice(gi * mg, (gi + 1) * mg), slice(None)) + off]  # [mg, cg]
            out[:, gi * mg:(gi + 1) * mg] += np.einsum("nc...,mc->nm...", view[:, gi * cg:(gi + 1) * cg], wk)
    return out


def _conv_shape(spec: OpSpec, x: TensorType, w: TensorType, attrs: Attrs) -> tuple[int, ...]:
    require_rank(spec, x, [3, 4])
    require_rank(spec, w, [x.rank])
    g = attrs.get("group", 1)
    n, c = x.shape[:2]
    m = w.shape[0]
    if not isinstance(g, int) or g < 1 or c % g or m % g:
        raise ShapeError(f"{spec.name}: group {g} must divide input channels {c} and output channels {m}")
    if w.shape[1] * g != c:
        raise ShapeError(f"{spec.name}: weight expects {w.shape[1] * g} input channels, input has {c}")
    nd = x.rank - 2
    s = _list(attrs.get("strides"), nd, "strides", spec)
    d = _list(attrs.get("dilations"), nd, "dilations", spec)
    p = _list(attrs.get("pads"), 2 * nd, "pads", spec)
    out = [_window_out(spec, x.shape[2 + i], w.shape[2 + i], s[i], d[i], p[i], p[nd + i]) for i in range(nd)]
    return (n, m, *out)


def _sample_conv(spec: OpSpec, rng: np.random.Generator, first: TensorType, w_dtype: str) -> tuple[list[TensorType], Attrs]:
    require_rank(spec, first, [3, 4])
    c = first.shape[1]
    if c < 1:
        raise ShapeError(f"{spec.name}: no input channels")
    g = int(rng.choice([d for d in (1, 2, 3, c) if c % d == 0]))
    m = g * int(rng.integers(1, 4))
    win = _sample_window(rng, first.shape[2:])
    attrs = {"strides": win["strides"], "dilations": win["dilations"], "pads": win["pads"], "group": g}
    return [first, TensorType(w_dtype, (m, c // g, *win["kernel"]))], attrs


def requantize(acc: np.ndarray, multiplier: np.ndarray, zp: int, dtype: str) -> np.ndarray:
    """round_half_even(acc * multiplier) + zp, saturated to `dtype` (ONNX's QLinear output)."""
    info = np.iinfo(dtype)
    v = np.rint(acc.astype(np.float64) * multiplier) + zp
    return np.clip(v, info.min, info.max).astype(dtype)


def near_half(v: np.ndarray, tol: float) -> bool:
    """Whether some value of v is within tol (relative, at least absolute) of a rounding tie."""
    frac = np.abs(v - np.floor(v) - 0.5)
    return bool(np.any(frac <= tol * np.maximum(1.0, np.abs(v))))


def multiplier(*scales: Any, out_scale: float) -> np.ndarray:
    """(s1 * s2) / out_scale in float32, as the QLinear kernels compute it (per channel when a scale is a list)."""
    prod = np.float32(1.0)
    for s in scales:
        prod = prod * np.asarray(s, dtype=np.float32)
    return (np.asarray(prod, dtype=np.float32) / np.float32(out_scale)).astype(np.float64)


# ---- MatMulInteger, ConvInteger ------------------------------------------------------------------


class MatMulIntegerOp(OpSpec):
    """attrs: a_zero_point (int), b_zero_point (int, or a list of N: per column of a 2-D B). Output int32."""
    contracts = True

    name = "matmul_integer"
    family = "quant_integer"
    n_inputs = 2
    dtypes = QTYPES
    onnx_ops = ("MatMulInteger",)
    ranks = (1, 2, 3)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError(f"{self.name}: expects 2 inputs")
        a, b = ins
        require_dtype(self, a)
        require_dtype(self, b, what="B")
        shape = _matmul_shape(self, a, b)
        _zero_point(self, attrs, "a_zero_point", a.dtype)
        # per column of a 2-D B only (ONNX's [D1, D2, 1, N] zero points of a batched B are not modelled)
        _zero_point(self, attrs, "b_zero_point", b.dtype, per=b.shape[-1] if b.rank == 2 else None)
        return [TensorType("int32", shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 1:
            raise ShapeError(f"{self.name}: rank 0")
        b = _sample_matmul_b(rng, first, QTYPES[int(rng.integers(2))])
        bzp: Any = _sample_zp(rng, b.dtype)
        if b.rank == 2 and rng.random() < 0.3:
            bzp = [_sample_zp(rng, b.dtype) for _ in range(b.shape[-1])]
        attrs = {"a_zero_point": _sample_zp(rng, first.dtype), "b_zero_point": bzp}
        ins = [first, b]
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return _full_range(ins[index].dtype)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        a = _shifted(xs[0], attrs["a_zero_point"])
        b = _shifted(xs[1], attrs["b_zero_point"])
        return [_int_matmul(a, b).astype(np.int32)]


class ConvIntegerOp(OpSpec):
    """attrs: x_zero_point (int), w_zero_point (int, or a list of M: per output channel), strides,
    dilations, pads, group. Output int32. 1-D and 2-D convolutions."""
    contracts = True

    name = "conv_integer"
    family = "quant_integer"
    n_inputs = 2
    dtypes = QTYPES
    onnx_ops = ("ConvInteger",)
    ranks = (3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError(f"{self.name}: expects 2 inputs")
        x, w = ins
        require_dtype(self, x)
        require_dtype(self, w, what="w")
        shape = _conv_shape(self, x, w, attrs)
        _zero_point(self, attrs, "x_zero_point", x.dtype)
        _zero_point(self, attrs, "w_zero_point", w.dtype, per=w.shape[0])
        return [TensorType("int32", shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        ins, attrs = _sample_conv(self, rng, first, QTYPES[int(rng.integers(2))])
        wzp: Any = _sample_zp(rng, ins[1].dtype)
        if rng.random() < 0.3:  # per output channel
            wzp = [_sample_zp(rng, ins[1].dtype) for _ in range(ins[1].shape[0])]
        attrs.update({"x_zero_point": _sample_zp(rng, first.dtype), "w_zero_point": wzp})
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return _full_range(ins[index].dtype)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        out = self.infer([TensorType.of(a) for a in xs], attrs)[0]
        x = _shifted(xs[0], attrs["x_zero_point"])
        w = _shifted(xs[1], attrs["w_zero_point"], (-1,) + (1,) * (xs[1].ndim - 1))
        return [_int_conv(x, w, attrs, out.shape).astype(np.int32)]


# ---- QLinearMatMul, QLinearConv ------------------------------------------------------------------


def _check_output(spec: OpSpec, attrs: Attrs) -> str:
    to = attrs.get("to")
    if to not in QTYPES:
        raise DTypeError(f"{spec.name}: output type {to!r} not in {list(QTYPES)}")
    _scale(spec, attrs, "y_scale")
    _zero_point(spec, attrs, "y_zero_point", to)
    return to


class QLinearMatMulOp(OpSpec):
    """attrs: a_scale, a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point (per tensor), to
    (the output type)."""
    contracts = True

    name = "qlinear_matmul"
    family = "quant_integer"
    n_inputs = 2
    dtypes = QTYPES
    onnx_ops = ("QLinearMatMul",)
    ranks = (1, 2, 3)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 2:
            raise ShapeError(f"{self.name}: expects 2 inputs")
        a, b = ins
        require_dtype(self, a)
        require_dtype(self, b, what="b")
        shape = _matmul_shape(self, a, b)
        _scale(self, attrs, "a_scale")
        _scale(self, attrs, "b_scale")
        _zero_point(self, attrs, "a_zero_point", a.dtype)
        _zero_point(self, attrs, "b_zero_point", b.dtype)
        return [TensorType(_check_output(self, attrs), shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 1:
            raise ShapeError(f"{self.name}: rank 0")
        b = _sample_matmul_b(rng, first, QTYPES[int(rng.integers(2))])
        to = QTYPES[int(rng.integers(2))]
        a_scale, b_scale = _sample_scale(rng), _sample_scale(rng)
        attrs = {"a_scale": a_scale, "a_zero_point": _sample_zp(rng, first.dtype),
                 "b_scale": b_scale, "b_zero_point": _sample_zp(rng, b.dtype),
                 "y_scale": _sample_out_scale(rng, a_scale * b_scale, first.shape[-1]),
                 "y_zero_point": _sample_zp(rng, to), "to": to}
        ins = [first, b]
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return _full_range(ins[index].dtype)

    def _scaled(self, xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        acc = _int_matmul(_shifted(xs[0], attrs["a_zero_point"]), _shifted(xs[1], attrs["b_zero_point"]))
        return acc.astype(np.float64) * multiplier(attrs["a_scale"], attrs["b_scale"], out_scale=attrs["y_scale"])

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        return near_half(self._scaled(xs, attrs), max(tol, REQUANT_TIE))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        acc = _int_matmul(_shifted(xs[0], attrs["a_zero_point"]), _shifted(xs[1], attrs["b_zero_point"]))
        m = multiplier(attrs["a_scale"], attrs["b_scale"], out_scale=attrs["y_scale"])
        return [requantize(acc, m, attrs["y_zero_point"], attrs["to"])]


class QLinearConvOp(OpSpec):
    """inputs x, w and an optional int32 bias [M]; attrs: x_scale, x_zero_point, w_scale (float, or a
    list of M: per output channel), w_zero_point, y_scale, y_zero_point, to, strides, dilations, pads,
    group."""
    contracts = True

    name = "qlinear_conv"
    family = "quant_integer"
    n_inputs = -1
    dtypes = QTYPES
    onnx_ops = ("QLinearConv",)
    ranks = (3, 4)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) not in (2, 3):
            raise ShapeError(f"{self.name}: expects 2 or 3 inputs, got {len(ins)}")
        x, w = ins[0], ins[1]
        require_dtype(self, x)
        require_dtype(self, w, what="w")
        shape = _conv_shape(self, x, w, attrs)
        m = w.shape[0]
        if len(ins) == 3 and (ins[2].dtype != "int32" or ins[2].shape != (m,)):
            raise ShapeError(f"{self.name}: bias must be int32[{m}], got {ins[2]}")
        _scale(self, attrs, "x_scale")
        _scale(self, attrs, "w_scale", per=m)
        _zero_point(self, attrs, "x_zero_point", x.dtype)
        _zero_point(self, attrs, "w_zero_point", w.dtype)
        return [TensorType(_check_output(self, attrs), shape)]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        w_dtype, to = QTYPES[int(rng.integers(2))], QTYPES[int(rng.integers(2))]
        ins, attrs = _sample_conv(self, rng, first, w_dtype)
        m, terms = ins[1].shape[0], int(np.prod(ins[1].shape[1:]))
        w_scale: Any = _sample_scale(rng)
        if rng.random() < 0.4:
            w_scale = [_sample_scale(rng) for _ in range(m)]
        x_scale = _sample_scale(rng)
        attrs.update({"x_scale": x_scale, "x_zero_point": _sample_zp(rng, first.dtype),
                      "w_scale": w_scale, "w_zero_point": _sample_zp(rng, w_dtype),
                      "y_scale": _sample_out_scale(rng, x_scale * float(np.mean(w_scale)), terms),
                      "y_zero_point": _sample_zp(rng, to), "to": to})
        if rng.random() < 0.5:
            ins.append(TensorType("int32", (m,)))
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return Domain(-2000.0, 2000.0) if index == 2 else _full_range(ins[index].dtype)

    def _acc(self, xs: Sequence[np.ndarray], attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
        out = self.infer([TensorType.of(a) for a in xs], attrs)[0]
        x = _shifted(xs[0], attrs["x_zero_point"])
        w = _shifted(xs[1], attrs["w_zero_point"])
        acc = _int_conv(x, w, attrs, out.shape)
        if len(xs) == 3:
            acc = acc + xs[2].astype(np.int64).reshape((1, -1) + (1,) * (xs[0].ndim - 2))
        m = multiplier(attrs["x_scale"], attrs["w_scale"], out_scale=attrs["y_scale"])
        return acc, m.reshape((-1,) + (1,) * (xs[0].ndim - 2)) if m.ndim else m

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        acc, m = self._acc(xs, attrs)
        return near_half(acc.astype(np.float64) * m, max(tol, REQUANT_TIE))

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        acc, m = self._acc(xs, attrs)
        return [requantize(acc, m, attrs["y_zero_point"], attrs["to"])]


# ---- DynamicQuantizeLinear -----------------------------------------------------------------------


def dynamic_scale(x: np.ndarray) -> tuple[np.float32, np.float32]:
    """(scale, the zero point before rounding) of DynamicQuantizeLinear, in float32 as ONNX defines them:
    the range [min(x, 0), max(x, 0)] mapped onto [0, 255]."""
    x = x.astype(np.float32)
    hi = np.float32(max(0.0, float(x.max(initial=0.0))))
    lo = np.float32(min(0.0, float(x.min(initial=0.0))))
    # an all-zero x has ONNX's scale 0 and makes its zero point and y 0/0: undefined, so the reference (run with
    # check_overflow: reference.ZERO_SCALE) judges no test on it; the guard 1 (onnxruntime's) only keeps this finite
    scale = np.float32(1.0) if hi == lo else np.float32((hi - lo) / np.float32(255.0))
    zp = np.float32(np.clip(np.float32(0.0) - lo / scale, 0.0, 255.0))
    return scale, zp


class DynamicQuantizeLinearOp(OpSpec):
    """x float32 -> y uint8, y_scale float32 scalar, y_zero_point uint8 scalar."""

    name = "dynamic_quantize_linear"
    family = "quant_integer"
    n_inputs = 1
    n_outputs = 3
    dtypes = ("float32",)
    onnx_ops = ("DynamicQuantizeLinear",)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"{self.name}: expects 1 input")
        require_dtype(self, ins[0])
        return [TensorType("uint8", ins[0].shape), TensorType("float32", ()), TensorType("uint8", ())]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        return [first], {}

    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        scale, zp = dynamic_scale(xs[0])
        q = xs[0].astype(np.float64) / float(scale)
        # the scale itself comes from the extremes: a tol change of them moves every q by tol relative
        return near_half(q, tol) or near_half(np.asarray(float(zp)), tol)

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        x = xs[0].astype(np.float32)
        scale, zp = dynamic_scale(x)
        zpi = np.rint(zp)
        y = np.clip(np.rint(x / scale) + zpi, 0, 255)
        return [y.astype(np.uint8), np.asarray(scale, dtype=np.float32), np.asarray(zpi, dtype=np.uint8)]


for _spec in (MatMulIntegerOp(), ConvIntegerOp(), QLinearMatMulOp(), QLinearConvOp(), DynamicQuantizeLinearOp()):
    register(_spec)
