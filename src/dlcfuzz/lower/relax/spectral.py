"""Relax lowering rules of the spectral operators (ops/spectral.py).

Relax has no FFT operator, but TVM's TOPI has a DFT kernel (topi.signal.dft: a complex transform of
the last axis, inverse scaled by 1/n), which the rules call with emit_te: DFT moves its axis last,
truncates or zero-pads it to dft_length, and keeps the first n//2 + 1 frequencies for RFFT; IRFFT
extends the one-sided spectrum by conjugate symmetry and keeps the real part. STFT gathers frames
with a constant index matrix, weights them by the window and transforms them with the same kernel.
The windows are ONNX's formula with relax.op.arange and cos; MelWeightMatrix depends on attributes
only: it is a constant (the reference's matrix), as a frontend would fold it."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.spectral import DFT, STFT, MelWeightMatrix, Window

RELAX = target("relax")


def _const(a: np.ndarray) -> Any:
    """A Relax constant of exactly `a`'s dtype (relax.const narrows float64 arrays without one)."""
    from tvm import relax

    return relax.const(a, str(a.dtype))


def _part(x: Any, rank: int, k: int) -> Any:
    """x[..., k] of an (..., 1|2) tensor."""
    from tvm import relax

    return relax.op.squeeze(relax.op.strided_slice(x, [rank - 1], [k], [k + 1]), [rank - 1])


def _topi_dft(bb: Any, re: Any, im: Any, inverse: bool) -> tuple[Any, Any]:
    from tvm import relax, topi

    out = bb.emit_te(topi.signal.dft, re, im, bool(inverse))
    return bb.emit(relax.TupleGetItem(out, 0)), bb.emit(relax.TupleGetItem(out, 1))


def _fit_last(bb: Any, v: Any, rank: int, length: int, n: int) -> Any:
    """v (of rank `rank`) truncated or zero-padded to n along its last axis (of `length`)."""
    from tvm import relax

    if n <= length:
        return bb.emit(relax.op.strided_slice(v, [rank - 1], [0], [n]))
    return bb.emit(relax.op.nn.pad(v, [0, 0] * (rank - 1) + [0, n - length]))


@RELAX.register("dft")
def dft(spec: DFT, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> list[Any]:
    from tvm import relax

    t = in_types[0]
    axis, n, inverse, onesided = spec.resolved(t, attrs)
    r = t.rank
    x = ins[0]
    perm = [d for d in range(r - 1) if d != axis] + [axis]  # the signal dims, the transformed one last
    back = [perm.index(d) for d in range(r - 1)]
    re = bb.emit(relax.op.permute_dims(_part(x, r, 0), perm))
    im = bb.emit(relax.op.permute_dims(_part(x, r, 1), perm)) if t.shape[-1] == 2 else bb.emit(relax.op.zeros_like(re))
    length = t.shape[axis]
    if inverse and onesided:
        half = n // 2 + 1
        re, im = _fit_last(bb, re, r - 1, length, half), _fit_last(bb, im, r - 1, length, half)
        # the full spectrum: X[k] for k <= n//2, conj(X[n - k]) above
        idx = np.array([k if k <= n // 2 else n - k for k in range(n)], dtype=np.int64)
        sign = np.array([1.0 if k <= n // 2 else -1.0 for k in range(n)], dtype=t.dtype)
        re = bb.emit(relax.op.take(re, _const(idx), axis=r - 2))
        im = bb.emit(relax.op.multiply(relax.op.take(im, _const(idx), axis=r - 2), _const(sign)))
        y_re, _ = _topi_dft(bb, re, im, True)
        return [relax.op.expand_dims(relax.op.permute_dims(y_re, back), r - 1)]
    re, im = _fit_last(bb, re, r - 1, length, n), _fit_last(bb, im, r - 1, length, n)
    y_re, y_im = _topi_dft(bb, re, im, inverse)
    if onesided:
        y_re = bb.emit(relax.op.strided_slice(y_re, [r - 2], [0], [n // 2 + 1]))
        y_im = bb.emit(relax.op.strided_slice(y_im, [r - 2], [0], [n // 2 + 1]))
    return [relax.op.stack([relax.op.permute_dims(y_re, back), relax.op.permute_dims(y_im, back)], axis=r - 1)]


@RELAX.register("stft")
def stft(spec: STFT, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
         out_types: Any) -> list[Any]:
    from tvm import relax

    t = in_types[0]
    fl = spec.frame_length(in_types, attrs)
    step = attrs["frame_step"]
    n_frames = (t.shape[1] - fl) // step + 1
    idx = _const(np.arange(n_frames)[:, None] * step + np.arange(fl)[None, :])
    re = bb.emit(relax.op.take(_part(ins[0], 3, 0), idx, axis=1))  # (batch, frames, frame_length)
    im = bb.emit(relax.op.take(_part(ins[0], 3, 1), idx, axis=1)) if t.shape[2] == 2 else bb.emit(relax.op.zeros_like(re))
    if len(ins) == 2:
        re, im = bb.emit(relax.op.multiply(re, ins[1])), bb.emit(relax.op.multiply(im, ins[1]))
    y_re, y_im = _topi_dft(bb, re, im, False)
    if attrs["onesided"]:
        y_re = bb.emit(relax.op.strided_slice(y_re, [2], [0], [fl // 2 + 1]))
        y_im = bb.emit(relax.op.strided_slice(y_im, [2], [0], [fl // 2 + 1]))
    return [relax.op.stack([y_re, y_im], axis=3)]


def _window(spec: Window, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    out, size = attrs["output_datatype"], int(attrs["size"])
    if size <= 1:  # nothing to compute (and an empty arange)
        return [_const(spec.reference([], attrs)[0])]
    compute = out if out in ("float32", "float64") else "float64"
    denom = size if attrs["periodic"] else size - 1
    a0, a1, a2 = spec.coefficients
    phase = bb.emit(relax.op.multiply(relax.op.arange(0, size, 1, compute),
                                      relax.const(2.0 * np.pi / denom, compute)))
    y = relax.op.subtract(relax.const(a0, compute), relax.op.multiply(relax.const(a1, compute), relax.op.cos(phase)))
    if a2:
        y = relax.op.add(y, relax.op.multiply(relax.const(a2, compute),
                                              relax.op.cos(relax.op.multiply(phase, relax.const(2.0, compute)))))
    return [y if compute == out else relax.op.astype(y, out)]


for _name in ("hann_window", "hamming_window", "blackman_window"):
    RELAX.register(_name)(_window)


@RELAX.register("mel_weight_matrix")
def mel_weight_matrix(spec: MelWeightMatrix, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                      out_types: Any) -> list[Any]:

    return [_const(spec.reference([], attrs)[0])]
