"""The pieces of the spectral operators (ops/spectral.py) that every Python target writes alike up to
spelling: ONNX's (..., 1|2) real/complex pairs read as the module's real or complex tensors, in the
dtype the FFTs compute in (float16 transforms compute in float32 and round once: neither PyTorch's CPU
FFT nor XLA's has float16)."""

from __future__ import annotations

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter


def compute_dtype(dtype: str) -> str:
    """The dtype an FFT of `dtype` data computes in."""
    return "float32" if dtype == "float16" else dtype


def complex_of(e: Emitter, x: str, t: TensorType) -> str:
    """x (..., 1|2) as a real or complex tensor without the last dimension, in the compute dtype."""
    w = e.bind(e.sp.cast(x, compute_dtype(t.dtype)))
    if t.shape[-1] == 1:
        return e.bind(f"{w}[..., 0]")
    return e.bind(f"{e.sp.fn('complex')}({w}[..., 0], {w}[..., 1])")
