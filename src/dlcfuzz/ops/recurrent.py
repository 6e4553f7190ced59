"""Recurrent operators: RNN, GRU, LSTM (ONNX semantics, every attribute).

Inputs in our IR: X, W, R, then the optional B, initial_h, initial_c (LSTM), P (LSTM) present as
the boolean attributes has_bias, has_initial_h, has_initial_c, has_peepholes say (in that order).
sequence_lens is an attribute (a list of batch lengths, or None: every sequence is full length).
Activation alpha/beta are stored resolved per activation ([alpha, beta] pairs, 0.0 where the
function takes none); ONNX's activation_alpha/activation_beta lists are consumed in order by the
functions that take them. Every output (Y, Y_h and for LSTM Y_c) is always produced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.types import FLOATS, TensorType
from dlcfuzz.ops.base import ANY, Attrs, Domain, OpSpec, check_size, register, require_dtype, require_rank

PARAM = Domain(-1.0, 1.0)
DIRECTIONS = ("forward", "reverse", "bidirectional")
# ONNX's activation functions of the recurrent operators -> (uses alpha, uses beta, default alpha, default beta).
# ThresholdedRelu is left out: it is discontinuous at alpha, a near tie on every pre-activation near it.
ACTIVATIONS: dict[str, tuple[bool, bool, float, float]] = {
    "Relu": (False, False, 0.0, 0.0),
    "Tanh": (False, False, 0.0, 0.0),
    "Sigmoid": (False, False, 0.0, 0.0),
    "Softsign": (False, False, 0.0, 0.0),
    "Softplus": (False, False, 0.0, 0.0),
    "Affine": (True, True, 1.0, 0.0),
    "LeakyRelu": (True, False, 0.01, 0.0),
    "ScaledTanh": (True, True, 1.0, 1.0),
    "HardSigmoid": (True, True, 0.2, 0.5),
    "Elu": (True, False, 1.0, 0.0),
}
# per kind: gates in W/R/B, default activations (per direction), how many activations a direction uses
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
# One time step of the NumPy reference costs ~80-260 us of Python (RNN to GRU), what ~20k-70k element operations
# cost; a step is counted as STEP_WORK, so that a long-axis test's sequence stays drawable up to about 300 steps
# (gen/sizes.MAX_WORK) while the reference, run once per test and up to 13 times by input repair, stays around a
# second (a 4,098-step GRU made the README's campaign wait 6-12 s on one test).
STEP_WORK = 10_000
DEFAULT_ACTIVATIONS = {"rnn": ["Tanh"], "gru": ["Sigmoid", "Tanh"], "lstm": ["Sigmoid", "Tanh", "Tanh"]}


def activate(name: str, x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """ONNX's definition of a recurrent activation function (float64 arithmetic)."""
    if name == "Relu":
        return np.maximum(x, 0.0)
    if name == "Tanh":
        return np.tanh(x)
    if name == "Sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if name == "Softsign":
        return x / (1.0 + np.abs(x))
    if name == "Softplus":
        return np.logaddexp(0.0, x)
    if name == "Affine":
        return alpha * x + beta
    if name == "LeakyRelu":
        return np.where(x >= 0, x, alpha * x)
    if name == "ScaledTanh":
        return alpha * np.tanh(beta * x)
    if name == "HardSigmoid":
        return np.clip(alpha * x + beta, 0.0, 1.0)
    if name == "Elu":
        return np.where(x >= 0, x, alpha * (np.exp(x) - 1.0))
    raise ShapeError(f"unknown recurrent activation {name!r}")


def resolve_activation_params(names: Sequence[str], alphas: Sequence[float] | None,
                              betas: Sequence[float] | None) -> list[list[float]]:
    """[alpha, beta] per activation from ONNX's lists, consumed in order by the functions that use
    them; a function past the end of a list gets its default. Values are float32-exact (ONNX stores
    float attributes as float32: a round trip must not change them)."""
    ai, bi, out = 0, 0, []
    alphas, betas = list(alphas or []), list(betas or [])
    for n in names:
        if n not in ACTIVATIONS:
            raise ShapeError(f"unknown recurrent activation {n!r}")
        ua, ub, da, db = ACTIVATIONS[n]
        a, b = 0.0, 0.0
        if ua:
            a = float(alphas[ai]) if ai < len(alphas) else da
            ai += 1
        if ub:
            b = float(betas[bi]) if bi < len(betas) else db
            bi += 1
        out.append([float(np.float32(a)), float(np.float32(b))])
    return out


def onnx_activation_lists(names: Sequence[str], params: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """The inverse of resolve_activation_params: ONNX's activation_alpha and activation_beta lists."""
    alphas = [float(p[0]) for n, p in zip(names, params) if ACTIVATIONS[n][0]]
    betas = [float(p[1]) for n, p in zip(names, params) if ACTIVATIONS[n][1]]
    return alphas, betas


def _f32(v: float) -> float:
    return float(np.float32(float(f"{v:.3g}")))


class RecurrentOp(OpSpec):
    """attrs: hidden_size, direction, layout (0: [seq, batch, ...], 1: [batch, seq, ...]), activations,
    activation_params, clip (None or a positive float), sequence_lens (None or a list), has_bias,
    has_initial_h, and per kind linear_before_reset (GRU), has_initial_c, has_peepholes, input_forget
    (LSTM)."""
    contracts = True

    family = "recurrent"
    n_inputs = -1
    dtypes = FLOATS
    ranks = (3,)

    def __init__(self, name: str, onnx_op: str, kind: str) -> None:
        self.name = name
        self.kind = kind
        self.onnx_ops = (onnx_op,)
        self.n_outputs = 3 if kind == "lstm" else 2

    def work(self, ins: Sequence[TensorType], outs: Sequence[TensorType]) -> int:
        """OpSpec's bound plus STEP_WORK per time step of each direction (Y holds seq times Y_h's elements; W's
        first axis counts the directions)."""
        steps = ins[1].shape[0] * (outs[0].size // max(outs[1].size, 1))
        return super().work(ins, outs) + steps * STEP_WORK

    # ---- typing ----------------------------------------------------------------------------
    def optional_inputs(self, attrs: Attrs) -> list[str]:
        """The optional inputs present, in ONNX's order (after X, W, R)."""
        names = ["bias", "initial_h"] + (["initial_c", "peepholes"] if self.kind == "lstm" else [])
        return [n for n in names if attrs.get(f"has_{n}", False)]

    def _dims(self, x: TensorType, attrs: Attrs) -> tuple[int, int, int, int]:
        layout = attrs.get("layout", 0)
        if layout not in (0, 1):
            raise ShapeError(f"{self.name}: layout {layout!r} not 0 or 1")
        seq, batch = (x.shape[0], x.shape[1]) if layout == 0 else (x.shape[1], x.shape[0])
        hidden = attrs.get("hidden_size")
        if not isinstance(hidden, int) or hidden < 1:
            raise ShapeError(f"{self.name}: hidden_size must be a positive int, got {hidden!r}")
        return seq, batch, x.shape[2], hidden

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        opt = self.optional_inputs(attrs)
        if len(ins) != 3 + len(opt):
            raise ShapeError(f"{self.name}: expects {3 + len(opt)} inputs (X, W, R, {opt}), got {len(ins)}")
        x = ins[0]
        require_dtype(self, x)
        if any(t.dtype != x.dtype for t in ins):
            raise DTypeError(f"{self.name}: inputs must share a dtype, got {[t.dtype for t in ins]}")
        require_rank(self, x, [3])
        seq, batch, inp, hidden = self._dims(x, attrs)
        direction = attrs.get("direction", "forward")
        if direction not in DIRECTIONS:
            raise ShapeError(f"{self.name}: direction {direction!r} not in {list(DIRECTIONS)}")
        nd = 2 if direction == "bidirectional" else 1
        g = GATES[self.kind]
        want = {"W": (nd, g * hidden, inp), "R": (nd, g * hidden, hidden), "bias": (nd, 2 * g * hidden),
                "initial_h": (nd, batch, hidden) if attrs.get("layout", 0) == 0 else (batch, nd, hidden),
                "peepholes": (nd, 3 * hidden)}
        want["initial_c"] = want["initial_h"]
        for name, t in zip(["W", "R", *opt], ins[1:]):
            if t.shape != want[name]:
                raise ShapeError(f"{self.name}: {name} shape {t.shape} != {want[name]}")
        acts = attrs.get("activations")
        per_dir = len(DEFAULT_ACTIVATIONS[self.kind])
        if not isinstance(acts, list) or len(acts) != per_dir * nd or any(a not in ACTIVATIONS for a in acts):
            raise ShapeError(f"{self.name}: activations must be {per_dir * nd} of {sorted(ACTIVATIONS)}, got {acts!r}")
        params = attrs.get("activation_params")
        if not isinstance(params, list) or len(params) != len(acts) or any(len(p) != 2 for p in params):
            raise ShapeError(f"{self.name}: activation_params must be one [alpha, beta] per activation")
        clip = attrs.get("clip")
        if clip is not None and not (isinstance(clip, (int, float)) and clip > 0):
            raise ShapeError(f"{self.name}: clip must be positive, got {clip!r}")
        lens = attrs.get("sequence_lens")
        if lens is not None and (len(lens) != batch or any(not 0 <= int(v) <= seq for v in lens)):
            raise ShapeError(f"{self.name}: sequence_lens {lens!r} must be {batch} lengths in [0, {seq}]")
        if self.kind == "gru" and attrs.get("linear_before_reset", 0) not in (0, 1):
            raise ShapeError(f"{self.name}: linear_before_reset must be 0 or 1")
        if self.kind == "lstm" and attrs.get("input_forget", 0) not in (0, 1):
            raise ShapeError(f"{self.name}: input_forget must be 0 or 1")
        y = (seq, nd, batch, hidden) if attrs.get("layout", 0) == 0 else (batch, seq, nd, hidden)
        state = want["initial_h"]
        return [TensorType(x.dtype, y)] + [TensorType(x.dtype, state)] * (self.n_outputs - 1)

    def sample(self, rng: np.random.Generator, first: TensorType) -> tuple[list[TensorType], Attrs]:
        require_dtype(self, first)
        require_rank(self, first, [3])
        layout = int(rng.random() < 0.3)  # 1: batch first
        seq, batch = (first.shape[0], first.shape[1]) if layout == 0 else (first.shape[1], first.shape[0])
        if seq < 1 or batch < 1 or first.shape[2] < 1:
            raise ShapeError(f"{self.name}: empty sequence, batch or input")
        direction = DIRECTIONS[int(rng.integers(3))]
        nd = 2 if direction == "bidirectional" else 1
        acts: list[str] = []
        for _ in range(nd):
            if rng.random() < 0.6:
                acts += DEFAULT_ACTIVATIONS[self.kind]
            else:
                names = sorted(ACTIVATIONS)
                acts += [names[int(rng.integers(len(names)))] for _ in DEFAULT_ACTIVATIONS[self.kind]]
        params = resolve_activation_params(acts, None, None)
        for p, n in zip(params, acts):
            if ACTIVATIONS[n][0] and rng.random() < 0.5:
                p[0] = _f32(rng.uniform(0.1, 1.0))
            if ACTIVATIONS[n][1] and rng.random() < 0.5:
                p[1] = _f32(rng.uniform(-0.5, 0.5) if n != "ScaledTanh" else rng.uniform(0.5, 1.5))
        attrs: Attrs = {
            "hidden_size": int(rng.integers(1, 5)), "direction": direction, "layout": layout,
            "activations": acts, "activation_params": params,
            "clip": _f32(rng.uniform(0.5, 3.0)) if rng.random() < 0.25 else None,
            "sequence_lens": None, "has_bias": bool(rng.random() < 0.7), "has_initial_h": bool(rng.random() < 0.5),
        }
        if rng.random() < 0.35:
            lens = [int(rng.integers(0, seq + 1)) for _ in range(batch)]  # a zero length: see other_reading
            attrs["sequence_lens"] = lens if rng.random() < 0.8 else [seq] * batch
        if self.kind == "gru":
            attrs["linear_before_reset"] = int(rng.integers(2))
        if self.kind == "lstm":
            attrs["has_initial_c"] = bool(rng.random() < 0.5)
            attrs["has_peepholes"] = bool(rng.random() < 0.5)
            attrs["input_forget"] = int(rng.random() < 0.3)
        h, g = attrs["hidden_size"], GATES[self.kind]
        shapes = {"bias": (nd, 2 * g * h), "initial_h": (nd, batch, h) if layout == 0 else (batch, nd, h),
                  "peepholes": (nd, 3 * h)}
        shapes["initial_c"] = shapes["initial_h"]
        ins = [first, TensorType(first.dtype, (nd, g * h, first.shape[2])), TensorType(first.dtype, (nd, g * h, h))]
        ins += [TensorType(first.dtype, shapes[n]) for n in self.optional_inputs(attrs)]
        for t in self.infer(ins, attrs):
            check_size(self, t.shape)
        return ins, attrs

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        return PARAM if index >= 1 else ANY

    # ---- semantics --------------------------------------------------------------------------
    def near_tie(self, xs: Sequence[np.ndarray], attrs: Attrs, tol: float) -> bool:
        # ONNX's clip bounds "the input of activations"; whether that includes h's input C_t in LSTM
        # is read differently (onnxruntime: no; the reference follows it). Where some |C_t| reaches
        # the clip the readings differ, so the result is not judged there.
        if self.kind != "lstm" or attrs.get("clip") is None:
            return False
        peaks: list[float] = []
        recurrence(self.kind, [np.asarray(x, np.float64) for x in xs], attrs, peaks)
        return max(peaks, default=0.0) >= attrs["clip"] * (1.0 - tol)

    def error_scale(self, xs: Sequence[np.ndarray], attrs: Attrs, y: np.ndarray) -> np.ndarray:
        # every step's gate pre-activations sum input * W and state * R terms (the states are bounded by
        # the outputs); their rounding carries through the steps that follow
        x, w, r = (float(np.abs(a).max(initial=0.0)) for a in xs[:3])
        state = max(1.0, float(np.abs(y).max(initial=0.0)))
        terms = x * w * xs[0].shape[2] + state * r * attrs["hidden_size"] + 1.0
        return np.abs(y) + terms * max(xs[0].shape[0], xs[0].shape[1])

    def reference(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray]:
        return [o.astype(xs[0].dtype) for o in recurrence(self.kind, [np.asarray(x, np.float64) for x in xs], attrs)]

    def other_reading(self, xs: Sequence[np.ndarray], attrs: Attrs) -> list[np.ndarray] | None:
        """A sequence of length 0 (legal: ONNX bounds sequence_lens by nothing but the sequence) runs no step: its Y
        is all zero, as the padding of any shorter sequence, but ONNX does not say what Y_h (and Y_c), "the last
        output value", are without an output. The reference keeps the initial state (no step changed it), as the
        unrolled lowerings do; onnxruntime returns zeros there (onnx.reference ignores sequence_lens). Where the
        initial state is absent (zero) both readings agree."""
        lens = attrs.get("sequence_lens")
        if lens is None or 0 not in lens:
            return None
        outs = self.reference(xs, attrs)
        empty = np.asarray(lens) == 0
        batch_axis = 1 if attrs.get("layout", 0) == 0 else 0  # Y_h, Y_c: (nd, batch, h) or (batch, nd, h)
        mask = empty.reshape([-1 if a == batch_axis else 1 for a in range(3)])
        return [outs[0]] + [np.where(mask, 0, state).astype(state.dtype) for state in outs[1:]]


def _split_inputs(kind: str, xs: Sequence[Any], attrs: Attrs) -> dict[str, Any]:
    names = ["X", "W", "R", "bias", "initial_h"] + (["initial_c", "peepholes"] if kind == "lstm" else [])
    present = ["X", "W", "R"] + [n for n in names[3:] if attrs.get(f"has_{n}", False)]
    return dict(zip(present, xs))


def recurrence(kind: str, xs: Sequence[np.ndarray], attrs: Attrs,
               cell_peaks: list[float] | None = None) -> list[np.ndarray]:
    """Y, Y_h (and Y_c) of the recurrence in float64, ONNX's equations step by step. LSTM: the largest
    |C_t| of each step is appended to `cell_peaks` when given."""
    named = _split_inputs(kind, xs, attrs)
    x = named["X"]
    layout = attrs.get("layout", 0)
    if layout == 1:
        x = x.transpose(1, 0, 2)  # [seq, batch, input]
    seq, batch, _ = x.shape
    hsz = attrs["hidden_size"]
    g = GATES[kind]
    nd = 2 if attrs["direction"] == "bidirectional" else 1
    per_dir = len(DEFAULT_ACTIVATIONS[kind])
    clip = attrs.get("clip")
    lens = np.asarray(attrs["sequence_lens"] if attrs.get("sequence_lens") is not None else [seq] * batch)
    h0 = named.get("initial_h")
    c0 = named.get("initial_c")
    if layout == 1:
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    y = np.zeros((seq, nd, batch, hsz))
    y_h = np.zeros((nd, batch, hsz))
    y_c = np.zeros((nd, batch, hsz))
    for d in range(nd):
        reverse = attrs["direction"] == "reverse" or d == 1
        acts = attrs["activations"][d * per_dir:(d + 1) * per_dir]
        params = attrs["activation_params"][d * per_dir:(d + 1) * per_dir]

        def act(k: int, v: np.ndarray, acts: list[str] = acts, params: list = params) -> np.ndarray:
            if clip is not None:
                v = np.clip(v, -clip, clip)
            return activate(acts[k], v, params[k][0], params[k][1])

        w, r = named["W"][d], named["R"][d]
        bias = named["bias"][d] if "bias" in named else np.zeros(2 * g * hsz)
        wb, rb = bias[:g * hsz], bias[g * hsz:]
        p = named["peepholes"][d] if "peepholes" in named else np.zeros(3 * hsz)
        h = h0[d] if h0 is not None else np.zeros((batch, hsz))
        c = c0[d] if c0 is not None else np.zeros((batch, hsz))
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            live = (t < lens)[:, None]
            xw = x[t] @ w.T + wb
            if kind == "rnn":
                h_new = act(0, xw + h @ r.T + rb)
                c_new = c
            elif kind == "gru":
                hr = h @ r.T
                z = act(0, xw[:, :hsz] + hr[:, :hsz] + rb[:hsz])
                rr = act(0, xw[:, hsz:2 * hsz] + hr[:, hsz:2 * hsz] + rb[hsz:2 * hsz])
                rh = r[2 * hsz:]
                if attrs.get("linear_before_reset", 0):
                    cand = act(1, xw[:, 2 * hsz:] + rr * (h @ rh.T + rb[2 * hsz:]))
                else:
                    cand = act(1, xw[:, 2 * hsz:] + (rr * h) @ rh.T + rb[2 * hsz:])
                h_new = (1.0 - z) * cand + z * h
                c_new = c
            else:
                pre = xw + h @ r.T + rb  # gates i, o, f, c
                i = act(0, pre[:, :hsz] + p[:hsz] * c)
                f = 1.0 - i if attrs.get("input_forget", 0) else act(0, pre[:, 2 * hsz:3 * hsz] + p[2 * hsz:] * c)
                cand = act(1, pre[:, 3 * hsz:])
                c_new = f * c + i * cand
                o = act(0, pre[:, hsz:2 * hsz] + p[hsz:2 * hsz] * c_new)
                # h's input C_t is not clipped: onnxruntime clips the gates' pre-activations only
                h_new = o * activate(acts[2], c_new, params[2][0], params[2][1])
                if cell_peaks is not None:
                    cell_peaks.append(float(np.abs(np.where(live, c_new, 0.0)).max(initial=0.0)))
            y[t, d] = np.where(live, h_new, 0.0)
            h = np.where(live, h_new, h)
            c = np.where(live, c_new, c)
        y_h[d], y_c[d] = h, c
    if layout == 1:
        return [y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)][:3 if kind == "lstm" else 2]
    return [y, y_h, y_c][:3 if kind == "lstm" else 2]


class ArrayOps(Protocol):
    """The array operations a target offers `unrolled` (values are the target's expressions)."""

    def index(self, x: Any, i: int) -> Any: ...  # x[i] along axis 0
    def axis1(self, x: Any, i: int) -> Any: ...  # x[:, i]
    def cols(self, x: Any, lo: int, hi: int) -> Any: ...  # x[..., lo:hi] (last axis)
    def swap01(self, x: Any) -> Any: ...
    def matmul_bt(self, a: Any, b: Any) -> Any: ...  # a @ b^T, b of rank 2
    def add(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def one_minus(self, a: Any) -> Any: ...
    def clip(self, x: Any, c: float) -> Any: ...
    def act(self, name: str, x: Any, alpha: float, beta: float) -> Any: ...
    def zeros(self, shape: tuple[int, ...]) -> Any: ...
    def where(self, mask: np.ndarray, a: Any, b: Any | None) -> Any: ...  # constant bool mask; b None: 0
    def stack(self, xs: list[Any], axis: int) -> Any: ...


def unrolled(kind: str, ops: ArrayOps, ins: Sequence[Any], attrs: Attrs, x_type: TensorType) -> list[Any]:
    """The recurrence written with `ops`, unrolled over the (static) sequence: the lowering every
    target shares. Same equations as `recurrence`; sequence_lens become constant masks."""
    named = _split_inputs(kind, ins, attrs)
    layout = attrs.get("layout", 0)
    seq, batch = (x_type.shape[0], x_type.shape[1]) if layout == 0 else (x_type.shape[1], x_type.shape[0])
    lens = np.asarray(attrs["sequence_lens"] if attrs.get("sequence_lens") is not None else [seq] * batch)
    ys, hs, cs = [], [], []
    for d, reverse, xw, h, c, weights in directions(kind, ops, named, attrs, x_type):
        y_steps: dict[int, Any] = {}
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            live = (t < lens)[:, None]
            h_new, c_new = cell(kind, ops, attrs, d, weights, ops.index(xw, t), h, c)
            if live.all():
                y_steps[t], h, c = h_new, h_new, c_new
            else:
                y_steps[t] = ops.where(live, h_new, None)
                h = ops.where(live, h_new, h)
                c = ops.where(live, c_new, c) if kind == "lstm" else c
        ys.append(ops.stack([y_steps[t] for t in range(seq)], 0 if layout == 0 else 1))
        hs.append(h)
        cs.append(c)
    return stacked(kind, ops, attrs, ys, hs, cs)


def directions(kind: str, ops: ArrayOps, named: dict[str, Any], attrs: Attrs,
               x_type: TensorType) -> list[tuple[int, bool, Any, Any, Any, tuple[Any, Any, Any]]]:
    """Per direction: its index, whether it runs backwards, X W^T (+ Wb) over the whole sequence
    ([seq, batch, g*hsz]), the initial H and C, and what each step reads (`cell`'s weights: R, Rb or None,
    the peepholes or None)."""
    layout = attrs.get("layout", 0)
    x = ops.swap01(named["X"]) if layout == 1 else named["X"]
    batch = x_type.shape[1] if layout == 0 else x_type.shape[0]
    hsz, g = attrs["hidden_size"], GATES[kind]
    nd = 2 if attrs["direction"] == "bidirectional" else 1

    def state0(name: str, d: int) -> Any:
        if name not in named:
            return ops.zeros((batch, hsz))
        return ops.index(named[name], d) if layout == 0 else ops.axis1(named[name], d)

    out = []
    for d in range(nd):
        reverse = attrs["direction"] == "reverse" or d == 1
        w, r = ops.index(named["W"], d), ops.index(named["R"], d)
        xw = ops.matmul_bt(x, w)  # [seq, batch, g*hsz]
        rb = None
        if "bias" in named:
            bias = ops.index(named["bias"], d)
            xw, rb = ops.add(xw, ops.cols(bias, 0, g * hsz)), ops.cols(bias, g * hsz, 2 * g * hsz)
        p = ops.index(named["peepholes"], d) if "peepholes" in named else None
        out.append((d, reverse, xw, state0("initial_h", d), state0("initial_c", d), (r, rb, p)))
    return out


def cell(kind: str, ops: ArrayOps, attrs: Attrs, d: int, weights: tuple[Any, Any, Any], xt: Any, h: Any,
         c: Any) -> tuple[Any, Any]:
    """One time step of direction `d`: H_t and C_t (C unchanged but for LSTM) from X_t W^T (+ Wb) `xt` and
    the previous H and C, ONNX's equations as in `recurrence`; `weights`: R, Rb (or None), P (or None)."""
    hsz = attrs["hidden_size"]
    per_dir = len(DEFAULT_ACTIVATIONS[kind])
    clip = attrs.get("clip")
    acts = attrs["activations"][d * per_dir:(d + 1) * per_dir]
    params = attrs["activation_params"][d * per_dir:(d + 1) * per_dir]

    def act(k: int, v: Any, clipped: bool = True) -> Any:
        if clip is not None and clipped:
            v = ops.clip(v, clip)
        return ops.act(acts[k], v, params[k][0], params[k][1])

    r, rb, p = weights
    hr = ops.matmul_bt(h, r)
    hr = ops.add(hr, rb) if rb is not None else hr  # H R^T + Rb, all gates
    if kind == "rnn":
        return act(0, ops.add(xt, hr)), c
    if kind == "gru":
        z = act(0, ops.add(ops.cols(xt, 0, hsz), ops.cols(hr, 0, hsz)))
        rr = act(0, ops.add(ops.cols(xt, hsz, 2 * hsz), ops.cols(hr, hsz, 2 * hsz)))
        if attrs.get("linear_before_reset", 0):  # r * (H Rh^T + Rbh)
            cand = act(1, ops.add(ops.cols(xt, 2 * hsz, 3 * hsz), ops.mul(rr, ops.cols(hr, 2 * hsz, 3 * hsz))))
        else:  # (r * H) Rh^T + Rbh
            rh = ops.matmul_bt(ops.mul(rr, h), _rows(ops, r, 2 * hsz, 3 * hsz))
            if rb is not None:
                rh = ops.add(rh, ops.cols(rb, 2 * hsz, 3 * hsz))
            cand = act(1, ops.add(ops.cols(xt, 2 * hsz, 3 * hsz), rh))
        return ops.add(ops.mul(ops.one_minus(z), cand), ops.mul(z, h)), c
    pre = ops.add(xt, hr)  # gates i, o, f, c
    i_pre = ops.cols(pre, 0, hsz)
    if p is not None:
        i_pre = ops.add(i_pre, ops.mul(ops.cols(p, 0, hsz), c))
    i = act(0, i_pre)
    if attrs.get("input_forget", 0):
        f = ops.one_minus(i)
    else:
        f_pre = ops.cols(pre, 2 * hsz, 3 * hsz)
        if p is not None:
            f_pre = ops.add(f_pre, ops.mul(ops.cols(p, 2 * hsz, 3 * hsz), c))
        f = act(0, f_pre)
    cand = act(1, ops.cols(pre, 3 * hsz, 4 * hsz))
    c_new = ops.add(ops.mul(f, c), ops.mul(i, cand))
    o_pre = ops.cols(pre, hsz, 2 * hsz)
    if p is not None:
        o_pre = ops.add(o_pre, ops.mul(ops.cols(p, hsz, 2 * hsz), c_new))
    # h's input C_t is not clipped: onnxruntime clips the gates' pre-activations only
    return ops.mul(act(0, o_pre), act(2, c_new, clipped=False)), c_new


def stacked(kind: str, ops: ArrayOps, attrs: Attrs, ys: list[Any], hs: list[Any], cs: list[Any]) -> list[Any]:
    """Y, Y_h (and Y_c) from each direction's Y ([seq, batch, hsz], or [batch, seq, hsz] in layout 1) and
    last states."""
    layout = attrs.get("layout", 0)
    outs = [ops.stack(ys, 1 if layout == 0 else 2), ops.stack(hs, 0 if layout == 0 else 1)]
    if kind == "lstm":
        outs.append(ops.stack(cs, 0 if layout == 0 else 1))
    return outs


def _rows(ops: ArrayOps, r: Any, lo: int, hi: int) -> Any:
    """r[lo:hi] of a rank-2 r."""
    return ops.swap01(ops.cols(ops.swap01(r), lo, hi))


for _spec in (RecurrentOp("rnn", "RNN", "rnn"), RecurrentOp("gru", "GRU", "gru"), RecurrentOp("lstm", "LSTM", "lstm")):
    register(_spec)
