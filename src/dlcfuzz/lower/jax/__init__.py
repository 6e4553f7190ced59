"""Graph -> JAX (the `jax` lowering target): `to_jax_program`, `to_jax`, `run_eager`."""

from dlcfuzz.lower.jax import rules as _rules  # noqa: F401 - fills target("jax")
from dlcfuzz.lower.jax import (  # noqa: F401 - each fills target("jax") for one family
    rules_attention,
    rules_indexing,
    rules_linalg,
    rules_loss,
    rules_meta,
    rules_normalization,
    rules_ordering,
    rules_quant_integer,
    rules_recurrent,
    rules_reduce_lp,
    rules_spatial,
    rules_spectral,
)
from dlcfuzz.lower.jax.codegen import (
    ENTRY,
    PRELUDE,
    TARGET,
    JaxProgram,
    enable_x64,
    jnp_dtype,
    run_eager,
    to_jax,
    to_jax_program,
    to_numpy,
)
from dlcfuzz.lower.pysource import rules as _shared  # noqa: F401 - fills the rules shared by the Python targets

__all__ = ["ENTRY", "PRELUDE", "TARGET", "JaxProgram", "enable_x64", "jnp_dtype", "run_eager", "to_jax",
           "to_jax_program", "to_numpy"]
