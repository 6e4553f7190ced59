"""PyTorch lowering rules of the spectral operators (ops/spectral.py).

DFT and MelWeightMatrix, and STFT's complex reading and transform, are written alike for every Python
target (pysource/rules_spectral.py). Frames of STFT are Tensor.unfold views (torch.stft centers and
pads, ONNX does not). The windows are torch's own, with ONNX's Hamming coefficients 25/46 and 21/46;
torch gives a window of size 1 the value 1, ONNX's formula does not, so that size is written as its
value."""

from __future__ import annotations

from typing import Any

from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_spectral import complex_of, frames_spectrum
from dlcfuzz.lower.torch.codegen import TARGET, literal, torch_dtype


@TARGET.register("stft")
def stft(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t = in_types[0]
    fl = get_op("stft").frame_length(in_types, attrs)  # type: ignore[attr-defined]
    z = complex_of(e, ins[0], t)
    frames = e.bind(f"{z}.unfold(1, {fl}, {attrs['frame_step']})", "frames")
    return [frames_spectrum(e, frames, ins, t, attrs)]


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
