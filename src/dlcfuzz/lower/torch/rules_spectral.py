"""PyTorch lowering rules of the spectral operators (ops/spectral.py).

ONNX's (..., 2) pairs become complex tensors and back. PyTorch's FFTs have no
float16 (complex32) CPU kernel: float16 transforms compute in float32 and round once. Frames of STFT
are Tensor.unfold views (torch.stft centers and pads, ONNX does not). The windows are torch's own, with
ONNX's Hamming coefficients 25/46 and 21/46; torch gives a window of size 1 the value 1, ONNX's formula
does not, so that size is written as its value. MelWeightMatrix depends on attributes only and PyTorch
has no such operator: it is a constant (the reference's matrix)."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_spectral import complex_of, compute_dtype
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype


def _pairs(z: str, dtype: str) -> str:
    """A complex tensor as ONNX's (..., 2) pairs (view_as_real refuses lazily conjugated tensors)."""
    return f"torch.stack([{z}.real, {z}.imag], dim=-1).to({torch_dtype(dtype)})"


@TARGET.register("dft")
def dft(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t = in_types[0]
    axis, n, inverse, onesided = get_op("dft").resolved(t, attrs)  # type: ignore[attr-defined]
    z = complex_of(e, ins[0], t)
    dt = torch_dtype(t.dtype)
    if inverse and onesided:
        return [f"torch.fft.irfft({z}, n={n}, dim={axis}).unsqueeze(-1).to({dt})"]
    fn = "ifft" if inverse else "rfft" if onesided else "fft"
    return [_pairs(e.bind(f"torch.fft.{fn}({z}, n={n}, dim={axis})"), t.dtype)]


@TARGET.register("stft")
def stft(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t = in_types[0]
    fl = get_op("stft").frame_length(in_types, attrs)  # type: ignore[attr-defined]
    z = complex_of(e, ins[0], t)
    frames = e.bind(f"{z}.unfold(1, {fl}, {attrs['frame_step']})", "frames")
    if len(ins) == 2:
        frames = e.bind(f"{frames} * {e.sp.cast(ins[1], compute_dtype(t.dtype))}", "frames")
    fn = "rfft" if attrs["onesided"] else "fft"
    return [_pairs(e.bind(f"torch.fft.{fn}({frames}, dim=-1)"), t.dtype)]


_WINDOWS = {"hann_window": ("hann_window", ""), "blackman_window": ("blackman_window", ""),
            "hamming_window": ("hamming_window", ", alpha=25.0 / 46.0, beta=21.0 / 46.0")}


def _window(name: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        from dlcfuzz.ops import get_op

        out = attrs["output_datatype"]
        if attrs["size"] == 1:  # torch's windows of size 1 are [1]; ONNX's formula gives a0 - a1 + a2
            value = get_op(name).reference([], attrs)[0]
            return [f"torch.tensor({literal(value.tolist())}, dtype={torch_dtype(out)})"]
        fn, extra = _WINDOWS[name]
        compute = torch_dtype(out) if out in ("float32", "float64") else "torch.float64"
        w = f"torch.{fn}({attrs['size']}, periodic={bool(attrs['periodic'])}{extra}, dtype={compute})"
        return [w if compute == torch_dtype(out) else f"{w}.to({torch_dtype(out)})"]

    return rule


for _name in _WINDOWS:
    TARGET.register(_name)(_window(_name))


@TARGET.register("mel_weight_matrix")
def mel_weight_matrix(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    return [e.const(get_op("mel_weight_matrix").reference([], attrs)[0], "mel")]
