"""Builder forms that more than one pattern library spells out (library.py and library_ort.py share
them; a module of their own, so that neither library imports the other at load)."""

from __future__ import annotations

from dlcfuzz.ir.graph import Graph
from dlcfuzz.zoo.builder import Builder


def spelled_layer_norm(b: Builder, x: str, out: str = "shifted", rank0: bool = False) -> str:
    """(x - mean) / sqrt(var + eps) * gamma + beta over x's last axis, its 2 and epsilon of shape [1] (or 0-d, as
    torch exports them, with `rank0`); the result is named `out`."""
    constant = b.scalar_rank0 if rank0 else b.scalar
    hidden = b.type_of(x).shape[-1]
    mean = b.op("reduce_mean", [x], "mean", axes=[-1], keepdims=1, noop_with_empty_axes=0)
    d = b.op("sub", [x, mean], "centered")
    var = b.op("reduce_mean", [b.op("pow", [d, constant("two", 2.0)], "sq")], "var", axes=[-1], keepdims=1,
               noop_with_empty_axes=0)
    std = b.op("sqrt", [b.op("add", [var, constant("eps", 1e-5)], "var_eps")], "std")
    n = b.op("div", [d, std], "normed")
    g = b.op("mul", [n, b.param("gamma", b.rng.uniform(0.5, 1.5, (hidden,)))], "scaled")
    return b.op("add", [g, b.param("beta", b.rng.normal(0, 0.1, (hidden,)))], out)


def layer_norm_decomposed(seed: int) -> Graph:
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis, as exporters emit it."""
    b = Builder("layer_norm_decomposed", seed)
    return b.outputs(spelled_layer_norm(b, b.input("x", (2, 3, 8))))
