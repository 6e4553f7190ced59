"""Graph -> JAX (the `jax` lowering target): `to_jax_program`, `to_jax`, `run_eager`."""

from dlcfuzz.lower.jax.codegen import (
    ENTRY,
    PRELUDE,
    SPELLING,
    TARGET,
    JaxProgram,
    enable_x64,
    jnp_dtype,
    run_eager,
    to_jax,
    to_jax_program,
    to_numpy,
)
from dlcfuzz.lower.pysource import load_rules

load_rules(__name__, SPELLING)

__all__ = ["ENTRY", "PRELUDE", "TARGET", "JaxProgram", "enable_x64", "jnp_dtype", "run_eager", "to_jax",
           "to_jax_program", "to_numpy"]
