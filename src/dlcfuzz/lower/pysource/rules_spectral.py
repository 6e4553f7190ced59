"""The spectral operators (ops/spectral.py) that every Python target writes alike up to spelling (DFT,
MelWeightMatrix), and the pieces the targets' own rules share: ONNX's (..., 1|2) real/complex pairs read
as the module's real or complex tensors, in the dtype the FFTs compute in (float16 transforms compute in
float32 and round once: neither PyTorch's CPU FFT nor XLA's has float16), and complex results written
back as pairs. MelWeightMatrix depends on attributes only and neither module has such an operator: it
is a constant (the reference's matrix)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter, Spelling, Types
from dlcfuzz.lower.pysource.rules import shared


def compute_dtype(dtype: str) -> str:
    """The dtype an FFT of `dtype` data computes in."""
    return "float32" if dtype == "float16" else dtype


def complex_of(e: Emitter, x: str, t: TensorType) -> str:
    """x (..., 1|2) as a real or complex tensor without the last dimension, in the compute dtype."""
    w = e.bind(e.sp.cast(x, compute_dtype(t.dtype)))
    if t.shape[-1] == 1:
        return e.bind(f"{w}[..., 0]")
    return e.bind(f"{e.sp.fn('complex')}({w}[..., 0], {w}[..., 1])")


def pairs(sp: Spelling, z: str, dtype: str) -> str:
    """A complex tensor as ONNX's (..., 2) pairs of our dtype `dtype` (torch's view_as_real refuses
    lazily conjugated tensors: real and imaginary parts are stacked)."""
    return sp.cast(f"{sp.mod}.stack([{sp.mod}.real({z}), {sp.mod}.imag({z})], {sp.axis_kw}=-1)", dtype)


def frames_spectrum(e: Emitter, frames: str, ins: list[str], t: TensorType, attrs: dict) -> str:
    """STFT's result from its (complex or real) frames: windowed by the optional input, transformed."""
    sp = e.sp
    if len(ins) == 2:
        frames = e.bind(f"{frames} * {sp.cast(ins[1], compute_dtype(t.dtype))}", "frames")
    fn = "rfft" if attrs["onesided"] else "fft"
    return pairs(sp, e.bind(f"{sp.mod}.fft.{fn}({frames}, {sp.axis_kw}=-1)"), t.dtype)


@shared("dft")
def _dft(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t, sp = in_types[0], e.sp
    axis, n, inverse, onesided = get_op("dft").resolved(t, attrs)  # type: ignore[attr-defined]
    z = complex_of(e, ins[0], t)
    if inverse and onesided:
        return [sp.cast(f"{sp.fn('expand_dims')}({sp.mod}.fft.irfft({z}, n={n}, {sp.axis_kw}={axis}), -1)", t.dtype)]
    fn = "ifft" if inverse else "rfft" if onesided else "fft"
    return [pairs(sp, e.bind(f"{sp.mod}.fft.{fn}({z}, n={n}, {sp.axis_kw}={axis})"), t.dtype)]


@shared("mel_weight_matrix")
def _mel_weight_matrix(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                       out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    return [e.const(get_op("mel_weight_matrix").reference([], attrs)[0], "mel")]
