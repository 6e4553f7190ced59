"""JAX lowering rules of the spectral operators (ops/spectral.py).

DFT and MelWeightMatrix, and STFT's complex reading and transform, are written alike for every Python
target (pysource/rules_spectral.py). STFT frames are a gather with a constant index matrix. jnp's
windows are NumPy's (symmetric only, Hamming 0.54/0.46), so ONNX's formula is written with jnp.cos."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.jax.codegen import TARGET, jnp_dtype, literal
from dlcfuzz.lower.pysource.codegen import Emitter, Types
from dlcfuzz.lower.pysource.rules_spectral import complex_of, frames_spectrum


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
    return [frames_spectrum(e, frames, ins, t, attrs)]


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
