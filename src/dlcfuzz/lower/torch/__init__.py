"""Graph -> plain PyTorch (the `torch` lowering target): `to_torch_program`, `to_torch`, `run_eager`."""

from dlcfuzz.lower.pysource import load_rules
from dlcfuzz.lower.torch.codegen import (
    ENTRY,
    PRELUDE,
    SPELLING,
    TARGET,
    TorchProgram,
    eager_torch,
    run_eager,
    static_eager_conds,
    to_numpy,
    to_torch,
    to_torch_program,
    torch_dtype,
)

load_rules(__name__, SPELLING)

__all__ = ["ENTRY", "PRELUDE", "TARGET", "TorchProgram", "eager_torch", "run_eager", "static_eager_conds", "to_numpy",
           "to_torch", "to_torch_program", "torch_dtype"]
