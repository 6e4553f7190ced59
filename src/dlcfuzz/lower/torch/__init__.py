"""Graph -> plain PyTorch (the `torch` lowering target): `to_torch_program`, `to_torch`, `run_eager`."""

from dlcfuzz.lower.pysource import rules as _shared  # noqa: F401 - fills the rules shared by the Python targets
from dlcfuzz.lower.torch import rules as _rules  # noqa: F401 - fills target("torch")
from dlcfuzz.lower.torch import (  # noqa: F401 - each fills target("torch") for one family
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
from dlcfuzz.lower.torch.codegen import (
    ENTRY,
    PRELUDE,
    TARGET,
    TorchProgram,
    run_eager,
    to_numpy,
    to_torch,
    to_torch_program,
    torch_dtype,
)

__all__ = ["ENTRY", "PRELUDE", "TARGET", "TorchProgram", "run_eager", "to_numpy", "to_torch", "to_torch_program",
           "torch_dtype"]
