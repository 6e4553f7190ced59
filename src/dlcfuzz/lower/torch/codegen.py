"""Graph -> the source text of a plain PyTorch program, and that program as a Python function.

The lowering itself is the Python-source one (`lower/pysource`); this module holds torch's spelling,
how its program becomes a callable and how it runs eagerly. Constants become module-level tensors
(so Inductor sees them as constants it may fold or freeze).
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from dlcfuzz.ir.types import WIDE_UNSIGNED
from dlcfuzz.lower.pysource.codegen import ENTRY, Emitter, PyProgram, Rule, Spelling, literal, wrapped
from dlcfuzz.lower.registry import target
from dlcfuzz.lower.torch.wide import wide_binary

TARGET = target("torch")


def f_pad_widths(before: Sequence[int], after: Sequence[int]) -> list[int]:
    """Pads per axis as F.pad lists them: (before, after) of the last axis first."""
    flat: list[int] = []
    for i in reversed(range(len(before))):
        flat += [before[i], after[i]]
    return flat


class TorchSpelling(Spelling):
    """torch's spelling of what is not NumPy's: F.pad lists the pads per axis, the last axis first; a
    scalar bound is clamp_min / clamp_max; a split takes the sizes; a gather is index_select of a flat
    int64 index; the variance is torch.var; a shift is a narrow and a concatenation; one-hot vectors come last and in int64; an empty arange is
    zeros."""

    def pad(self, x: str, before: Sequence[int], after: Sequence[int], value: str | None = None) -> str:
        return f"F.pad({x}, {literal(f_pad_widths(before, after))}" + (f", value={value})" if value is not None else ")")

    def pad_constant(self, x: str, before: Sequence[int], after: Sequence[int], value: str, dtype: str) -> str:
        return f"F.pad({x}, {literal(f_pad_widths(before, after))}, mode='constant', value={value})"

    def split(self, x: str, sizes: Sequence[int], axis: int) -> str:
        return f"torch.split({x}, {literal(list(sizes))}, dim={axis})"

    def gather(self, e: Emitter, x: str, idx: str, axis: int, n: int, out_shape: Sequence[int]) -> str:
        # index_select wants one int64 index vector, without negative entries
        i64 = e.bind(f"{idx}.to(torch.int64)")
        fixed = e.bind(f"{wrapped(self, i64, n)}.reshape(-1)")
        return f"torch.index_select({x}, {axis}, {fixed}).reshape({literal(list(out_shape))})"

    def variance(self, x: str, mean: str, over: str) -> str:
        return f"torch.var({x}, {over}, correction=0)"

    def additive_mask(self, allowed: str, dtype: str) -> str:
        return f"torch.where({allowed}, 0.0, -float('inf')).to({self.dtype(dtype)})"

    def extend_mask(self, mask: str, width: int, rank: int, boolean: bool) -> str:
        fill = "False" if boolean else "-float('inf')"
        return f"F.pad({mask}, (0, {width}), value={fill})"

    def bound(self, x: str, v: float, dtype: str, upper: bool) -> str:
        return f"torch.clamp_{'max' if upper else 'min'}({x}, {literal(v)})"  # torch.maximum wants a tensor

    def shift_in(self, x: str, axis: int, n: int, rank: int, fill: str) -> str:
        first = f"torch.full_like({x}.narrow({axis}, 0, 1), {fill})"
        return f"torch.cat([{first}, {x}.narrow({axis}, 0, {n - 1})], dim={axis})"

    def arange(self, start: str, limit: str, delta: str, dtype: str, n: int) -> str:
        if n == 0:  # torch.arange refuses a limit on the wrong side of start; ONNX gives []
            return f"torch.zeros(0, dtype={self.dtype(dtype)})"
        return super().arange(start, limit, delta, dtype, n)

    def one_hot(self, idx: str, n: int, axis: int, dtype: str) -> str:
        return f"F.one_hot({idx}, {n}).movedim(-1, {axis}).to({self.dtype(dtype)})"

    def stable_order(self, keys: str, axis: int, k: int) -> str:
        return f"torch.sort({keys}, dim={axis}, stable=True).indices.narrow({axis}, 0, {k})"


PRELUDE = "import torch\nimport torch.nn.functional as F\n"
SPELLING = TorchSpelling(
    target="torch", prelude=PRELUDE, reserved=frozenset({"torch", "F", ENTRY}), mod="torch", nn="F",
    dtype_names={}, cast_method="to", axis_kw="dim", keepdims_kw="keepdim", shape_type=list, copies=True,
    take="torch.index_select({x}, {axis}, {idx})", take_along="torch.gather({x}, {axis}, {idx})",
    swap="{x}.transpose({a}, {b})", diagonal_kw="diagonal",
    renames={
        "negative": "torch.neg", "arcsin": "torch.asin", "arccos": "torch.acos", "arctan": "torch.atan",
        "arcsinh": "torch.asinh", "arccosh": "torch.acosh", "arctanh": "torch.atanh", "softsign": "F.softsign",
        "softplus": "F.softplus", "subtract": "torch.sub", "multiply": "torch.mul", "equal": "torch.eq",
        "less": "torch.lt", "less_equal": "torch.le", "greater": "torch.gt", "greater_equal": "torch.ge",
        "power": "torch.pow", "moveaxis": "torch.movedim", "concatenate": "torch.cat", "transpose": "torch.permute",
        "clip": "torch.clamp", "max": "torch.amax", "min": "torch.amin", "repeat": "torch.repeat_interleave",
        "expand_dims": "torch.unsqueeze",
    },
    clone="{x}.clone()", flip="torch.flip({x}, [{axis}])", trunc_div_int="torch.div({x}, {n}, rounding_mode='trunc')",
    casts_indices=False, prod_one_axis=True, tensor="torch.tensor", numel="{x}.numel()",
    bitcast="{x}.view({dtype})", wide_binary=wide_binary, wide_dtypes=WIDE_UNSIGNED,
    # torch's scan operator (a prototype in the pinned release, no public alias): Dynamo traces the step once, so a
    # long recurrence is not unrolled into the graph Inductor compiles; eagerly too it runs under Dynamo
    scan="torch._higher_order_ops.scan({step}, {init}, {xs}, reverse={reverse})",
    scan_init="{x}.contiguous()",  # the step's new carry is contiguous, and the scan wants init's strides to match it
    templates={
        "relu": "torch.relu({x})", "mish": "F.mish({x})", "hard_swish": "F.hardswish({x})",
        "gelu": "F.gelu({x}, approximate={approximate})", "expand": "{x}.expand({out_shape})",
        "hard_sigmoid": "torch.clamp({alpha} * {x} + {beta}, 0.0, 1.0)", "thresholded_relu": "F.threshold({x}, {alpha}, 0.0)",
    },
)

__all__ = ["ENTRY", "PRELUDE", "SPELLING", "TARGET", "Rule", "TorchProgram", "eager_torch", "literal", "run_eager",
           "static_eager_conds", "to_numpy", "to_torch", "to_torch_program", "torch_dtype"]


def torch_dtype(dtype: str) -> str:
    """Our dtype name as torch source (every name in DTYPES is also a torch dtype attribute)."""
    return SPELLING.dtype(dtype)


class TorchProgram(PyProgram):
    """A graph lowered to PyTorch source."""

    spelling = SPELLING

    def namespace(self) -> dict[str, Any]:
        return _new_module().__dict__

    def filename(self, namespace: dict[str, Any]) -> str:
        return f"<{namespace['__name__']}>"

    def constant(self, a: np.ndarray) -> Any:
        import torch

        return torch.from_numpy(a.copy())

    def argument(self, a: np.ndarray) -> Any:
        import torch

        return torch.from_numpy(a)

    def eager(self) -> AbstractContextManager[Any]:
        return eager_torch()

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        return x.detach().cpu().contiguous().numpy().copy()


@contextlib.contextmanager
def static_eager_conds() -> Iterator[None]:
    """Eager `torch.cond` calls in the block traced with their concrete shapes. Eagerly, torch.cond runs
    `torch.compile(fullgraph=True)` of torch's own `_cond_op_wrapper`, one code object for every cond in the
    process, so Dynamo's automatic dynamic shapes make a cond that follows one of other shapes (in the same
    program or an earlier test in the worker) trace with symbolic sizes, and torch 2.13 then refuses valid
    programs (pytorch/pytorch#188151: a branch output's `Max(1, s)` strides). An eager run must depend on its
    own inputs only. It costs nothing measurable: a test's branches are new functions, so each of its eager
    conds compiles anyway (~0.1 s a cond, static or not, measured on torch 2.13 CPU)."""
    import torch

    with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        yield


@contextlib.contextmanager
def eager_torch() -> Iterator[None]:
    """How a lowered program runs eagerly: no autograd, eager conds static (`static_eager_conds`)."""
    import torch

    with torch.no_grad(), static_eager_conds():
        yield


_LIVE_MODULES: list[str] = []
MAX_LIVE_MODULES = 16


def _new_module() -> types.ModuleType:
    """A fresh module, registered in sys.modules: Dynamo imports a function's module by name when
    it inlines a call (our sub-functions), so the name must resolve to these globals. The oldest
    programs' modules are dropped (a campaign makes one per test)."""
    global _MODULE_COUNT
    _MODULE_COUNT += 1
    name = f"dlcfuzz_torch_program_{_MODULE_COUNT}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    _LIVE_MODULES.append(name)
    while len(_LIVE_MODULES) > MAX_LIVE_MODULES:
        sys.modules.pop(_LIVE_MODULES.pop(0), None)
    return module


_MODULE_COUNT = 0


# the module's entry points (PyProgram's, for torch)
to_torch_program = TorchProgram.lower  # `g` lowered to PyTorch source
to_torch = TorchProgram.callable_of  # `g` as a plain PyTorch function of its inputs returning a tuple
run_eager = TorchProgram.eager_results  # the lowered program run eagerly: the torch-side counterpart of the reference
to_numpy = TorchProgram.to_numpy
