"""The recurrent operators (ops/recurrent.py), one rule for every Python target.

The recurrence is unrolled over the static sequence with ONNX's gate equations (ops.recurrent.unrolled),
not torch.nn.RNN/GRU/LSTM: torch's GRU computes the candidate as r * (W_hn h + b_hn) always (ONNX's
linear_before_reset=1), has no peepholes, clip, input_forget or activation choice, and orders gates
differently. `SourceOps` writes the array operations as source text. A sequence longer than SCAN_FROM steps runs
the same cell under the target's scan (`lax.scan`, torch's scan operator), each step's sequence_lens mask a scanned
input: an unrolled recurrence grows the program by ~70 HLO instructions a step, and XLA:CPU's compile time grows
faster than that (the reduced LSTM of issue 37's XLA acceptance finding, batch 15, hidden 1: 6 s at 8 steps, 34 s at
30, 163 s at 60 with default options on the loaded campaign machine; 239 steps ran past the 120 s compile deadline, a
"hang"); Dynamo unrolls a Python loop as well, and Inductor's compile grows with it (a 128-step LinearAttention:
73 CPU s; the size profiles draw sequences of up to 16,383 steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.pysource.codegen import Emitter, Rule, Types, literal
from dlcfuzz.lower.pysource.rules import shared
from dlcfuzz.ops.recurrent import GATES, _split_inputs, cell, directions, stacked, unrolled

SCAN_FROM = 16  # longer sequences run under the target's scan (short ones stay unrolled: the compiler fuses across steps)

# ONNX's activation functions of the gates, in each target's words (alpha a, beta b)
ACTIVATIONS = {
    "torch": {
        "Relu": "torch.relu({x})", "Tanh": "torch.tanh({x})", "Sigmoid": "torch.sigmoid({x})",
        "Softsign": "{x} / (1 + torch.abs({x}))", "Softplus": "F.softplus({x})",
        "Affine": "{a} * {x} + {b}", "LeakyRelu": "F.leaky_relu({x}, {a})",
        "ScaledTanh": "{a} * torch.tanh({b} * {x})", "HardSigmoid": "torch.clamp({a} * {x} + {b}, 0.0, 1.0)",
        "Elu": "F.elu({x}, {a})",
    },
    "jax": {
        "Relu": "jnp.maximum({x}, 0)", "Tanh": "jnp.tanh({x})", "Sigmoid": "jax.nn.sigmoid({x})",
        "Softsign": "{x} / (1 + jnp.abs({x}))", "Softplus": "jax.nn.softplus({x})",
        "Affine": "{a} * {x} + {b}", "LeakyRelu": "jnp.where({x} >= 0, {x}, {a} * {x})",
        "ScaledTanh": "{a} * jnp.tanh({b} * {x})", "HardSigmoid": "jnp.clip({a} * {x} + {b}, 0.0, 1.0)",
        "Elu": "jnp.where({x} >= 0, {x}, {a} * jnp.expm1({x}))",
    },
}


@dataclass
class SourceOps:
    """ops.recurrent.ArrayOps as source text of a Python target (its spelling: the emitter's)."""

    e: Emitter
    dtype: str  # the computation's dtype (ours)

    def index(self, x: str, i: int) -> str:
        return self.e.bind(f"{x}[{i}]")

    def axis1(self, x: str, i: int) -> str:
        return self.e.bind(f"{x}[:, {i}]")

    def cols(self, x: str, lo: int, hi: int) -> str:
        return self.e.bind(f"{x}[..., {lo}:{hi}]")

    def swap01(self, x: str) -> str:
        return self.e.bind(f"{x}.swapaxes(0, 1)")

    def matmul_bt(self, a: str, b: str) -> str:
        return self.e.bind(f"{self.e.sp.mod}.matmul({a}, {b}.swapaxes(0, 1))")

    def add(self, a: str, b: str) -> str:
        return self.e.bind(f"{a} + {b}")

    def mul(self, a: str, b: str) -> str:
        return self.e.bind(f"{a} * {b}")

    def one_minus(self, a: str) -> str:
        return self.e.bind(f"1 - {a}")

    def clip(self, x: str, c: float) -> str:
        return self.e.bind(f"{self.e.sp.fn('clip')}({x}, {literal(-float(c))}, {literal(float(c))})")

    def act(self, name: str, x: str, alpha: float, beta: float) -> str:
        return self.e.bind(ACTIVATIONS[self.e.sp.target][name].format(x=x, a=literal(float(alpha)), b=literal(float(beta))))

    def zeros(self, shape: tuple[int, ...]) -> str:
        return self.e.bind(f"{self.e.sp.mod}.zeros({literal(tuple(shape))}, dtype={self.e.sp.dtype(self.dtype)})")

    def where(self, mask: np.ndarray, a: str, b: str | None) -> str:
        m = self.e.const(np.asarray(mask, dtype=bool), hint="live")
        return self.e.bind(f"{self.e.sp.mod}.where({m}, {a}, {b if b is not None else '0.0'})")

    def stack(self, xs: list[str], axis: int) -> str:
        return self.e.bind(f"{self.e.sp.mod}.stack([{', '.join(xs)}], {axis})")


def scanned(kind: str, e: Emitter, ins: list[str], attrs: dict, x_type: TensorType) -> list[str]:
    """The recurrence as the target's scan over the sequence (`reverse=True` backwards): a nested step function
    of (H, C) and (X_t W^T, the step's live mask) runs `cell`, the equations `unrolled` writes out per step."""
    ops = SourceOps(e, x_type.dtype)
    named = _split_inputs(kind, ins, attrs)
    layout = attrs.get("layout", 0)
    seq, batch = (x_type.shape[0], x_type.shape[1]) if layout == 0 else (x_type.shape[1], x_type.shape[0])
    lens = np.asarray(attrs["sequence_lens"] if attrs.get("sequence_lens") is not None else [seq] * batch)
    live = e.const(np.arange(seq)[:, None, None] < lens[None, :, None], hint="live")  # [seq, batch, 1]
    ys, hs, cs = [], [], []
    for d, reverse, xw, h0, c0, weights in directions(kind, ops, named, attrs, x_type):
        body = Emitter(e.sp, consts=e.consts, taken=e.taken, fnames=e.fnames, overrides=e.overrides)
        carry, step_in = body.fresh("carry"), body.fresh("step_in")
        h, c = body.bind(f"{carry}[0]", "h"), body.bind(f"{carry}[1]", "c")
        xt, m = body.bind(f"{step_in}[0]", "xt"), body.bind(f"{step_in}[1]", "m")
        h_new, c_new = cell(kind, SourceOps(body, x_type.dtype), attrs, d, weights, xt, h, c)
        where = e.sp.fn("where")
        y = body.bind(f"{where}({m}, {h_new}, 0.0)", "y")
        h_next = body.bind(f"{where}({m}, {h_new}, {h})", "h")
        # a carry passed through unchanged is copied: torch's scan refuses a step output aliasing its input
        c_next = body.bind(f"{where}({m}, {c_new}, {c})", "c") if kind == "lstm" else \
            body.bind(e.sp.copy(c), "c") if e.sp.copies else c
        body.lines.append(f"return ({h_next}, {c_next}), {y}")
        step = e.fresh("cell_")
        e.lines.extend([f"def {step}({carry}, {step_in}):"] + ["    " + ln for ln in body.lines])
        init = ", ".join(e.sp.scan_init.format(x=x) for x in (h0, c0))
        res = e.bind(e.sp.scan.format(step=step, init=f"({init})", xs=f"({xw}, {live})", reverse=reverse), "s")
        y_seq = e.bind(f"{res}[1]")  # [seq, batch, hsz]
        ys.append(ops.swap01(y_seq) if layout == 1 else y_seq)
        hs.append(e.bind(f"{res}[0][0]"))
        cs.append(e.bind(f"{res}[0][1]"))
    return stacked(kind, ops, attrs, ys, hs, cs)


def _rule(kind: str) -> Rule:
    def rule(spec: Any, e: Emitter, ins: list[str], outs: list[str], attrs: dict, in_types: Types,
             out_types: Types) -> list[str]:
        x_type = in_types[0]
        if x_type.shape[attrs.get("layout", 0)] > SCAN_FROM:
            return scanned(kind, e, ins, attrs, x_type)
        return unrolled(kind, SourceOps(e, x_type.dtype), ins, attrs, x_type)

    return rule


for _kind in GATES:
    shared(_kind)(_rule(_kind))
