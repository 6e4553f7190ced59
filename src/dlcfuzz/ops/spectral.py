"""Spectral operators: DFT, STFT, window functions, mel weight matrix.

Complex values are ONNX's: a last dimension of 2 (real, imaginary); a last dimension of 1 is a real
signal. Shape-like operands that ONNX passes as inputs (DFT's dft_length and axis, STFT's frame_step
and frame_length, a window's size, MelWeightMatrix's five scalars) are attributes here. The windows and
MelWeightMatrix have no tensor input (like ConstantOfShape): `sample` takes the output dtype (and a
window's size) from the type it is offered. References compute in float64 and round once; DFT and STFT
are sums of many terms, whose legal error is the sum of the terms' magnitudes (error_scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import ALL_DTYPES, FLOATS, TensorType
from dlcfuzz.ops.base import Attrs, OpSpec, check_size, register, require_dtype

F16_MAX_TERMS = 8  # float16 DFTs accumulate in float16 in some kernels: keep the sums short
WINDOW_DTYPES = tuple(d for d in ALL_DTYPES if d != "bool")  # output_datatype accepts any numeric type


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _flag(spec: OpSpec, attrs: Attrs, key: str) -> int:
    v = attrs.get(key)
    if not _is_int(v) or v not in (0, 1):
        raise ShapeError(f"{spec.name}: attribute {key!r} must be 0 or 1, got {v!r}")
    return int(v)


def _as_complex(x: np.ndarray) -> np.ndarray:
    """ONNX's real (last dim 1) or complex (last dim 2) layout as a complex128 array without that dim."""
    x = np.asarray(x, dtype=np.float64)
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(np.complex128)


def _as_pairs(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1)


def _fit(z: np.ndarray, n: int, axis: int) -> np.ndarray:
    """`z` truncated or zero-padded to length n along axis (DFT's dft_length)."""
    length = z.shape[axis]
    if length >= n:
        return np.take(z, np.arange(n), axis=axis)
    pad = [(0, 0)] * z.ndim
    pad[axis] = (0, n - length)
    return np.pad(z, pad)


# ---- DFT -----------------------------------------------------------------


class DFT(OpSpec):
    """ONNX DFT. attrs: axis (int, not the last dimension), inverse, onesided (0/1), dft_length
    (int >= 1, or None: the axis' length; for the inverse one-sided form (IRFFT) 2 * (length - 1)).
    onesided=1 forward takes a real signal and keeps the first n//2 + 1 frequencies (RFFT); onesided=1
    inverse takes those of a complex signal and gives the real signal of length n (IRFFT)."""
    contracts = True

    name = "dft"
    family = "spectral"
    onnx_ops = ("DFT",)
    dtypes = FLOATS
    ranks = (2, 3, 4)

    def resolved(self, x: TensorType, attrs: Attrs) -> tuple[int, int, bool, bool]:
        """(axis, n, inverse, onesided), validated."""
        if x.rank < 2 or x.shape[-1] not in (1, 2):
            raise ShapeError(f"dft: input must have rank >= 2 and a last dimension of 1 or 2, got {x.shape}")
        axis = attrs.get("axis")
        if not _is_int(axis) or not -x.rank <= axis < x.rank or axis % x.rank == x.rank - 1:
            raise ShapeError(f"dft: axis {axis!r} is not a signal axis of rank {x.rank}")
        a = int(axis) % x.rank
        inverse, onesided = bool(_flag(self, attrs, "inverse")), bool(_flag(self, attrs, "onesided"))
        if onesided and not inverse and x.shape[-1] != 1:
            raise ShapeError("dft: the one-sided forward transform (RFFT) takes a real signal")
        if onesided and inverse and x.shape[-1] != 2:
            raise ShapeError("dft: the one-sided inverse transform (IRFFT) takes a complex signal")
        n = attrs.get("dft_length")
        if n is None:
            n = 2 * (x.shape[a] - 1) if onesided and inverse else x.shape[a]
        if not _is_int(n) or n < 1:
            raise ShapeError(f"dft: dft_length must be >= 1, got {n!r}")
        return a, int(n), inverse, onesided

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) != 1:
            raise ShapeError(f"dft: expects one input, got {len(ins)}")
        x = ins[0]
        require_dtype(self, x)
        a, n, inverse, onesided = self.resolved(x, attrs)
        shape = list(x.shape)
        shape[a] = n // 2 + 1 if onesided and not inverse else n
        shape[-1] = 1 if onesided and inverse else 2
        return [x.with_shape(tuple(shape))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank < 2 or first.shape[-1] not in (1, 2):
            raise ShapeError(f"dft: input must have rank >= 2 and a last dimension of 1 or 2, got {first.shape}")
        r = first.rank
        a = int(rng.integers(0, r - 1))
        axis = a - r if rng.random() < 0.4 else a
        complex_in = first.shape[-1] == 2
        inverse = int(rng.integers(0, 2))
        onesided = int(rng.random() < 0.4 and complex_in == bool(inverse))
        length = first.shape[a]
        n: int | None = None if rng.random() < 0.5 else int(rng.integers(1, 2 * length + 3))
        if onesided and inverse:
            # IRFFT reads n//2 + 1 frequencies: generated only where that is the axis' length (dft_length
            # 2L - 2, the default, or 2L - 1), since ONNXRuntime 1.32 differs from ONNX's reference (NumPy's
            # irfft) when it must truncate or zero-pad the spectrum first (reported as a suspected bug)
            n = None if n is None or rng.random() < 0.5 else 2 * length - 1
            if length < 2:  # the default length 2 * (1 - 1) is 0
                n = 1
        attrs: Attrs = {"axis": axis, "inverse": inverse, "onesided": onesided, "dft_length": n}
        _, n_used, _, _ = self.resolved(first, attrs)
        if first.dtype == "float16" and n_used > F16_MAX_TERMS:
            if onesided and inverse:
                raise ShapeError(f"dft: a float16 IRFFT of {length} frequencies would be too long to compare")
            attrs["dft_length"] = int(rng.integers(1, F16_MAX_TERMS + 1))
        check_size(self, self.infer([first], attrs)[0].shape)
        return [first], attrs

    def _fitted(self, x: np.ndarray, attrs: Attrs) -> tuple[np.ndarray, int, int, bool, bool]:
        a, n, inverse, onesided = self.resolved(TensorType.of(x), attrs)
        z = _as_complex(x)
        # IRFFT reads the first n//2 + 1 frequencies; the others n values
        return _fit(z, n // 2 + 1 if onesided and inverse else n, a), a, n, inverse, onesided

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        z, a, n, inverse, onesided = self._fitted(xs[0], attrs)
        if inverse and onesided:
            y = np.fft.irfft(z, n=n, axis=a)[..., None]
        elif inverse:
            y = _as_pairs(np.fft.ifft(z, n=n, axis=a))
        else:
            f = np.fft.fft(z, n=n, axis=a)
            y = _as_pairs(np.take(f, np.arange(n // 2 + 1), axis=a) if onesided else f)
        return [y.astype(np.asarray(xs[0]).dtype)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        z, a, n, inverse, onesided = self._fitted(xs[0], attrs)
        terms = np.abs(z.real) + np.abs(z.imag)
        if inverse and onesided:  # the conjugate half counts twice
            terms = 2.0 * terms
        mag = np.sum(terms, axis=a, keepdims=True) / (n if inverse else 1)
        return np.abs(y) + np.broadcast_to(mag[..., None], y.shape)


# ---- STFT ----------------------------------------------------------------


class STFT(OpSpec):
    """ONNX STFT of signal (batch, length, 1|2) with an optional window (frame_length,). attrs:
    frame_step (int >= 1), frame_length (int, or None: the window's length, else the signal's),
    onesided (0/1; 1 keeps frame_length//2 + 1 frequencies and needs a real signal). Output
    (batch, frames, bins, 2) with frames = (length - frame_length) // frame_step + 1."""
    contracts = True

    name = "stft"
    family = "spectral"
    n_inputs = -1  # signal, optional window
    onnx_ops = ("STFT",)
    dtypes = FLOATS
    ranks = (3,)

    def frame_length(self, ins: Sequence[TensorType], attrs: Attrs) -> int:
        fl = attrs.get("frame_length")
        if fl is None:
            fl = ins[1].shape[0] if len(ins) == 2 else ins[0].shape[1]
        if not _is_int(fl) or fl < 1:
            raise ShapeError(f"stft: frame_length must be >= 1, got {fl!r}")
        return int(fl)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if len(ins) not in (1, 2):
            raise ShapeError(f"stft: expects a signal and an optional window, got {len(ins)} inputs")
        x = ins[0]
        require_dtype(self, x)
        if x.rank != 3 or x.shape[2] not in (1, 2):
            raise ShapeError(f"stft: signal must be (batch, length, 1 or 2), got {x.shape}")
        fl = self.frame_length(ins, attrs)
        if len(ins) == 2:
            if ins[1].dtype != x.dtype:
                raise DTypeError(f"stft: window dtype {ins[1].dtype} differs from {x.dtype}")
            if ins[1].shape != (fl,):
                raise ShapeError(f"stft: window shape {ins[1].shape} is not ({fl},)")
        step = attrs.get("frame_step")
        if not _is_int(step) or step < 1:
            raise ShapeError(f"stft: frame_step must be >= 1, got {step!r}")
        if fl > x.shape[1]:
            raise ShapeError(f"stft: frame_length {fl} exceeds the signal's length {x.shape[1]}")
        onesided = _flag(self, attrs, "onesided")
        if onesided and x.shape[2] != 1:
            raise ShapeError("stft: a one-sided transform takes a real signal")
        frames = (x.shape[1] - fl) // int(step) + 1
        return [x.with_shape((x.shape[0], frames, fl // 2 + 1 if onesided else fl, 2))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        if first.rank != 3 or first.shape[2] not in (1, 2) or first.shape[1] < 1:
            raise ShapeError(f"stft: signal must be (batch, length >= 1, 1 or 2), got {first.shape}")
        length = first.shape[1]
        fl = int(rng.integers(1, min(length, F16_MAX_TERMS if first.dtype == "float16" else length) + 1))
        window = rng.random() < 0.6
        # frame_length is written when there is no window to take it from, or half the time beside one
        explicit = not window or rng.random() < 0.5
        if not window and not explicit:
            fl = length
        attrs: Attrs = {"frame_step": int(rng.integers(1, length + 2)), "frame_length": fl if explicit else None,
                        "onesided": int(first.shape[2] == 1 and rng.random() < 0.5)}
        if first.dtype == "float16" and not window and attrs["frame_length"] is None:
            attrs["frame_length"] = fl = min(fl, F16_MAX_TERMS)
        ins = [first] + ([TensorType(first.dtype, (fl,))] if window else [])
        check_size(self, self.infer(ins, attrs)[0].shape)
        return ins, attrs

    def _frames(self, xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
        """The windowed frames (batch, frames, frame_length), complex128."""
        z = _as_complex(xs[0])
        ins = [TensorType.of(np.asarray(x)) for x in xs]
        fl = self.frame_length(ins, attrs)
        step = attrs["frame_step"]
        frames = (z.shape[1] - fl) // step + 1
        idx = np.arange(frames)[:, None] * step + np.arange(fl)[None, :]
        w = np.asarray(xs[1], dtype=np.float64) if len(xs) == 2 else np.ones(fl)
        return z[:, idx] * w

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        f = np.fft.fft(self._frames(xs, attrs), axis=-1)
        if attrs["onesided"]:
            f = f[..., : f.shape[-1] // 2 + 1]
        return [_as_pairs(f).astype(np.asarray(xs[0]).dtype)]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        fr = self._frames(xs, attrs)
        mag = np.sum(np.abs(fr.real) + np.abs(fr.imag), axis=-1)
        return np.abs(y) + mag[:, :, None, None]


# ---- windows -------------------------------------------------------------


def _window_dtype(spec: OpSpec, attrs: Attrs) -> str:
    dtype = attrs.get("output_datatype")
    if dtype not in WINDOW_DTYPES:
        raise DTypeError(f"{spec.name}: output_datatype {dtype!r} not in {list(WINDOW_DTYPES)}")
    return str(dtype)


class Window(OpSpec):
    """HannWindow, HammingWindow, BlackmanWindow: no tensor input. attrs: size (int >= 0), periodic
    (0/1: the denominator is size, else size - 1), output_datatype (our dtype name). ONNX's shape
    inference refuses size 0: disruptive mode's attribute break (broken_attrs). A symmetric window of size 1 is
    0/0 in ONNX's formula: accepted, never generated."""

    family = "spectral"
    n_inputs = 0
    dtypes = FLOATS  # generated; output_datatype accepts every numeric type (integers truncate)
    ranks = (1,)

    def __init__(self, name: str, onnx_op: str, coefficients: tuple[float, float, float]) -> None:
        self.name = name
        self.onnx_ops = (onnx_op,)
        self.coefficients = coefficients  # a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if ins:
            raise ShapeError(f"{self.name}: takes no tensor input, got {len(ins)}")
        size = attrs.get("size")
        if not _is_int(size) or size < 1:
            raise ShapeError(f"{self.name}: size must be >= 1, got {size!r}")
        _flag(self, attrs, "periodic")
        return [TensorType(_window_dtype(self, attrs), (int(size),))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        size = first.shape[0] if first.rank == 1 and rng.random() < 0.7 else int(rng.integers(1, 65))
        periodic = 1 if size == 1 else int(rng.integers(0, 2))
        attrs: Attrs = {"size": int(size), "periodic": periodic, "output_datatype": first.dtype}
        check_size(self, self.infer([], attrs)[0].shape)
        return [], attrs

    def broken_attrs(self, rng: np.random.Generator, ins: Sequence[TensorType], attrs: Attrs) -> Attrs | None:
        return {**attrs, "size": 0}

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        size = int(attrs["size"])
        denom = size if attrs["periodic"] else size - 1
        a0, a1, a2 = self.coefficients
        with np.errstate(divide="ignore", invalid="ignore"):
            phase = 2.0 * np.pi * np.arange(size, dtype=np.float64) / denom
            y = a0 - a1 * np.cos(phase) + a2 * np.cos(2.0 * phase)
        return [y.astype(attrs["output_datatype"])]

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # cosines of magnitude 1 (and a phase rounded at 2 pi) subtract to values near 0: absolute error
        return np.abs(y) + 8.0


# ---- mel weight matrix ---------------------------------------------------

MEL_TIE_MARGIN = 0.01  # a frequency bin's position this close to an integer floors differently in float32


class MelWeightMatrix(OpSpec):
    """ONNX MelWeightMatrix: (dft_length // 2 + 1, num_mel_bins) triangular filters. attrs:
    num_mel_bins, dft_length, sample_rate (ints >= 1), lower_edge_hertz, upper_edge_hertz (floats),
    output_datatype. Every band edge must fall inside the spectrogram's bins (else ONNX's formula
    writes out of bounds)."""

    name = "mel_weight_matrix"
    family = "spectral"
    n_inputs = 0
    onnx_ops = ("MelWeightMatrix",)
    dtypes = FLOATS
    ranks = (2,)

    @staticmethod
    def positions(attrs: Attrs) -> np.ndarray:
        """The band edges' positions in units of spectrogram bins, before flooring (ONNX's formula,
        which splits the mel range into num_mel_bins + 2 steps)."""
        m = int(attrs["num_mel_bins"])
        low = 2595.0 * np.log10(1.0 + float(attrs["lower_edge_hertz"]) / 700.0)
        high = 2595.0 * np.log10(1.0 + float(attrs["upper_edge_hertz"]) / 700.0)
        mel = np.arange(m + 2, dtype=np.float64) * ((high - low) / (m + 2)) + low
        hz = 700.0 * (np.power(10.0, mel / 2595.0) - 1.0)
        return (int(attrs["dft_length"]) + 1) * hz / int(attrs["sample_rate"])

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if ins:
            raise ShapeError(f"mel_weight_matrix: takes no tensor input, got {len(ins)}")
        for k in ("num_mel_bins", "dft_length", "sample_rate"):
            if not _is_int(attrs.get(k)) or attrs[k] < 1:
                raise ShapeError(f"mel_weight_matrix: {k} must be an int >= 1, got {attrs.get(k)!r}")
        for k in ("lower_edge_hertz", "upper_edge_hertz"):
            if not isinstance(attrs.get(k), (int, float)) or isinstance(attrs.get(k), bool):
                raise ShapeError(f"mel_weight_matrix: {k} must be a number, got {attrs.get(k)!r}")
        bins = int(attrs["dft_length"]) // 2 + 1
        edges = np.floor(self.positions(attrs))
        if not np.all(np.isfinite(edges)) or edges.min() < 0 or edges.max() >= bins:
            raise ShapeError(f"mel_weight_matrix: band edges {edges.tolist()} outside the {bins} spectrogram bins")
        return [TensorType(_window_dtype(self, attrs), (bins, int(attrs["num_mel_bins"])))]

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        for _ in range(20):
            rate = int(rng.choice([8000, 16000, 22050, 44100]))
            dft = int(rng.integers(4, 129))
            top = rate / 2 * dft / (dft + 1)  # the highest edge that floors inside the bins
            low = float(np.float32(rng.uniform(0, top / 2))) if rng.random() < 0.7 else 0.0
            high = float(np.float32(rng.uniform(low + 1.0, top)))
            attrs: Attrs = {"num_mel_bins": int(rng.integers(1, 9)), "dft_length": dft, "sample_rate": rate,
                            "lower_edge_hertz": low, "upper_edge_hertz": high, "output_datatype": first.dtype}
            p = self.positions(attrs)
            if np.min(np.abs(p - np.round(p))) < MEL_TIE_MARGIN:
                continue  # a bin edge float32 and float64 may floor differently
            try:
                check_size(self, self.infer([], attrs)[0].shape)
            except ShapeError:
                continue
            return [], attrs
        raise ShapeError("mel_weight_matrix: no parameters without near-integer band edges found")

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        m = int(attrs["num_mel_bins"])
        edges = np.floor(self.positions(attrs)).astype(np.int64)
        out = np.zeros((int(attrs["dft_length"]) // 2 + 1, m))
        for i in range(m):
            lo, center, hi = (int(v) for v in edges[i:i + 3])
            if center == lo:
                out[center, i] = 1.0
            else:
                for j in range(lo, center + 1):
                    out[j, i] = (j - lo) / (center - lo)
            for j in range(center, hi):
                out[j, i] = (hi - j) / (hi - center)
        return [out.astype(attrs["output_datatype"])]


for _spec in (
    DFT(),
    STFT(),
    Window("hann_window", "HannWindow", (0.5, 0.5, 0.0)),
    Window("hamming_window", "HammingWindow", (25.0 / 46.0, 21.0 / 46.0, 0.0)),
    Window("blackman_window", "BlackmanWindow", (0.42, 0.5, 0.08)),
    MelWeightMatrix(),
):
    register(_spec)
