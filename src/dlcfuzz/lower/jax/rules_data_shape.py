"""Operators whose output extent depends on their input values (ops/data_shape.py) in JAX: documented gaps. Under jit
every shape is static: jnp.nonzero, jnp.unique and jnp.compress need `size=` (a fixed length, padded with
`fill_value`), whose output is not ONNX's (its extent is the bound, not the count), and the XLA backend compiles
with jit."""

from __future__ import annotations

from dlcfuzz.lower.registry import target

JAX = target("jax")

_STATIC = ("XLA compiles static shapes only: jnp.nonzero/unique/compress under jit need size= (a padded fixed-length "
           "form, another output than ONNX's data-dependent one)")
for _op in ("non_zero", "unique", "compress_computed", "non_max_suppression"):
    JAX.gap(_op, _STATIC)
