"""Graph -> the source text of a JAX program (`jax.numpy` / `jax.lax`), and that program as a function.

The lowering itself is the Python-source one (`lower/pysource`); this module holds JAX's spelling,
how its program becomes a callable and how it runs op by op. Sub-functions are seen by XLA inlined
by tracing, as any JAX user's helper functions; constants become module-level arrays, which `jax.jit`
captures as HLO constants (XLA may fold them).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from dlcfuzz.lower.pysource.codegen import ENTRY, Emitter, PyProgram, Rule, Spelling, literal, wrapped
from dlcfuzz.lower.registry import target

TARGET = target("jax")


class JaxSpelling(Spelling):
    """JAX's spelling of what is not NumPy's: a constant pad of every axis is lax.pad (which crops where
    negative); a gather is jnp.take; a shift is a lax slice, padded; argsort's positions come
    in the default int."""

    def shift_in(self, x: str, axis: int, n: int, rank: int, fill: str) -> str:
        pad = [(1, 0) if i == axis else (0, 0) for i in range(rank)]
        return f"jnp.pad(lax.slice_in_dim({x}, 0, {n - 1}, axis={axis}), {literal(pad)}, constant_values={fill})"

    def pad_constant(self, x: str, before: Sequence[int], after: Sequence[int], value: str, dtype: str) -> str:
        width = literal([(int(b), int(f), 0) for b, f in zip(before, after)])
        return f"lax.pad({x}, jnp.array({value}, dtype={self.dtype(dtype)}), {width})"

    def gather(self, e: Emitter, x: str, idx: str, axis: int, n: int, out_shape: Sequence[int]) -> str:
        # the wrap made explicit rather than left to jnp.take's mode; in bounds, clip is a no-op
        return f"jnp.take({x}, {e.bind(wrapped(self, idx, n))}, axis={axis}, mode='clip')"

    def one_hot(self, idx: str, n: int, axis: int, dtype: str) -> str:
        return f"jax.nn.one_hot({idx}, {n}, axis={axis}, dtype={self.dtype(dtype)})"

    def stable_order(self, keys: str, axis: int, k: int) -> str:
        order = f"jnp.argsort({keys}, axis={axis}, stable=True)"
        return f"lax.slice_in_dim({order}, 0, {k}, axis={axis}).astype(jnp.int64)"


PRELUDE = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
SPELLING = JaxSpelling(
    target="jax", prelude=PRELUDE, reserved=frozenset({"jax", "jnp", "lax", "np", ENTRY}), mod="jnp", nn="jax.nn",
    dtype_names={"bool": "bool_"}, cast_method="astype", axis_kw="axis", keepdims_kw="keepdims", shape_type=tuple,
    copies=False, take="jnp.take({x}, {idx}, axis={axis})", take_along="jnp.take_along_axis({x}, {idx}, axis={axis})",
    swap="jnp.swapaxes({x}, {a}, {b})", diagonal_kw="k",
    renames={"sigmoid": "jax.nn.sigmoid", "softsign": "jax.nn.soft_sign", "softplus": "jax.nn.softplus",
             "erf": "lax.erf", "logsumexp": "jax.nn.logsumexp", "complex": "lax.complex"},
    clone="jnp.array({x}, copy=True)", flip="jnp.flip({x}, {axis})", trunc_div_int="lax.div({x}, jnp.int64({n}))",
    casts_indices=True, prod_one_axis=False, tensor="jnp.asarray", numel="{x}.size",
    bitcast="lax.bitcast_convert_type({x}, {dtype})",
    scan="lax.scan({step}, {init}, {xs}, reverse={reverse})", scan_init="{x}",
    templates={
        "bitwise_not": "jnp.bitwise_not({x})", "mish": "{x} * jnp.tanh(jax.nn.softplus({x}))",
        "hard_swish": "{x} * jnp.clip({x} / 6 + 0.5, 0, 1)",  # ONNX: x * max(0, min(1, x/6 + 1/2))
        "relu": "jnp.maximum({x}, 0)",  # jax.nn.relu is float-only in spirit; max(x, 0) keeps ints
        "hard_sigmoid": "jnp.clip({alpha} * {x} + {beta}, 0, 1)", "expand": "jnp.broadcast_to({x}, {out_shape})",
        "thresholded_relu": "jnp.where({x} > {alpha}, {x}, jnp.zeros_like({x}))",
    },
)

__all__ = ["ENTRY", "PRELUDE", "SPELLING", "TARGET", "JaxProgram", "Rule", "enable_x64", "jnp_dtype",
           "literal", "run_eager", "to_jax", "to_jax_program", "to_numpy"]


def enable_x64() -> None:
    """float64/int64 as themselves: without this flag JAX silently computes them in 32 bits."""
    import jax

    if not jax.config.read("jax_enable_x64"):
        jax.config.update("jax_enable_x64", True)


def jnp_dtype(dtype: str) -> str:
    """Our dtype name as JAX source (every name in DTYPES is a jnp attribute; bool is jnp.bool_)."""
    return SPELLING.dtype(dtype)


class JaxProgram(PyProgram):
    """A graph lowered to JAX source. Enables x64 before it runs: the program's float64/int64 must
    stay what they are."""

    spelling = SPELLING

    def namespace(self) -> dict[str, Any]:
        enable_x64()
        return {"__name__": "dlcfuzz_jax_program"}

    def filename(self, namespace: dict[str, Any]) -> str:
        return "<dlcfuzz-jax>"

    def constant(self, a: np.ndarray) -> Any:
        import jax

        # the array jnp.asarray makes (its dtype, weak type and placement), without its compile: outside a trace
        # jnp.asarray binds lax.stage, which jax compiles and runs as a program of its own for each new shape and
        # dtype (the lowering tests' 86 random graphs: 154 such compiles beside their 4 modules')
        return jax.device_put(a)

    def argument(self, a: np.ndarray) -> Any:
        return a

    def eager(self) -> AbstractContextManager[Any]:
        """Op by op under `jax.disable_jit()`: every jnp/lax call dispatches its own small primitive, no
        whole-program compilation (the compiler-free baseline)."""
        import jax

        return jax.disable_jit()

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        return np.array(x, copy=True)


# the module's entry points (PyProgram's, for JAX)
to_jax_program = JaxProgram.lower  # `g` lowered to JAX source
to_jax = JaxProgram.callable_of  # `g` as a JAX function of its inputs returning a tuple
run_eager = JaxProgram.eager_results  # the lowered program run op by op under `jax.disable_jit()`
to_numpy = JaxProgram.to_numpy
