"""Graph -> plain PyTorch (the `torch` lowering target): `to_torch_program`, `to_torch`, `run_eager`."""

from dlcfuzz.lower.torch import rules as _rules  # noqa: F401 - fills target("torch")
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
