"""JAX lowering rules of the spectral operators (ops/spectral.py).

ONNX's (..., 2) pairs become complex arrays and back. XLA's FFT has no float16: float16 transforms
compute in float32 and round once. STFT frames are a gather with a constant index matrix. jnp's
windows are NumPy's (symmetric only, Hamming 0.54/0.46), so ONNX's formula is written with jnp.cos.
MelWeightMatrix depends on attributes only and JAX has no such operator: it is a constant (the
reference's matrix)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_spectral import complex_of, compute_dtype


def _pairs(z: str, dtype: str) -> str:
    return f"jnp.stack([jnp.real({z}), jnp.imag({z})], axis=-1).astype({jnp_dtype(dtype)})"


@TARGET.register("dft")
def dft(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
        out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t = in_types[0]
    axis, n, inverse, onesided = get_op("dft").resolved(t, attrs)  # type: ignore[attr-defined]
    z = complex_of(e, ins[0], t)
    if inverse and onesided:
        return [f"jnp.expand_dims(jnp.fft.irfft({z}, n={n}, axis={axis}), -1).astype({jnp_dtype(t.dtype)})"]
    fn = "ifft" if inverse else "rfft" if onesided else "fft"
    return [_pairs(e.bind(f"jnp.fft.{fn}({z}, n={n}, axis={axis})"), t.dtype)]


@TARGET.register("stft")
def stft(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
         out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    t = in_types[0]
    fl = get_op("stft").frame_length(in_types, attrs)  # type: ignore[attr-defined]
    step = attrs["frame_step"]
    n_frames = (t.shape[1] - fl) // step + 1
    idx = e.const(np.arange(n_frames)[:, None] * step + np.arange(fl)[None, :], "frame_idx")
    z = complex_of(e, ins[0], t)
    frames = e.bind(f"{z}[:, {idx}]", "frames")
    if len(ins) == 2:
        frames = e.bind(f"{frames} * {e.sp.cast(ins[1], compute_dtype(t.dtype))}", "frames")
    fn = "rfft" if attrs["onesided"] else "fft"
    return [_pairs(e.bind(f"jnp.fft.{fn}({frames}, axis=-1)"), t.dtype)]


def _window(name: str):
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        from dlcfuzz.ops import get_op

        a0, a1, a2 = get_op(name).coefficients  # type: ignore[attr-defined]
        out = attrs["output_datatype"]
        compute = jnp_dtype(out) if out in ("float32", "float64") else "jnp.float64"
        denom = attrs["size"] if attrs["periodic"] else attrs["size"] - 1
        phase = e.bind(f"jnp.arange({attrs['size']}, dtype={compute}) * ({literal(2.0 * np.pi)} / {literal(float(denom))})",
                       "phase")
        w = f"{literal(a0)} - {literal(a1)} * jnp.cos({phase})"
        if a2:
            w += f" + {literal(a2)} * jnp.cos(2.0 * {phase})"
        return [f"({w}).astype({jnp_dtype(out)})"]

    return rule


for _name in ("hann_window", "hamming_window", "blackman_window"):
    TARGET.register(_name)(_window(_name))


@TARGET.register("mel_weight_matrix")
def mel_weight_matrix(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
                      out_types: Types) -> list[str]:
    from dlcfuzz.ops import get_op

    return [e.const(get_op("mel_weight_matrix").reference([], attrs)[0], "mel")]
