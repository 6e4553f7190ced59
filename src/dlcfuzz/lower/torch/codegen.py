"""Graph -> the source text of a plain PyTorch program, and that program as a Python function.

The lowering writes Python source, one statement per node, so that the very text a campaign
compiles is what a reproducer shows upstream (PyTorch's bug template asks for the model as
readable torch code). Sub-functions become Python functions the main function calls; constants
become module-level tensors (so Inductor sees them as constants it may fold or freeze).

Rules (`lower/torch/rules.py`) are registered on `target("torch")`: each gets a `TorchEmitter`,
the argument expressions and the node's types, and returns one expression per output.
"""

from __future__ import annotations

import keyword
import re
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.registry import target

TARGET = target("torch")
ENTRY = "model"  # the name of the lowered main function
PRELUDE = "import torch\nimport torch.nn.functional as F\n"


def torch_dtype(dtype: str) -> str:
    """Our dtype name as torch source (every name in DTYPES is also a torch dtype attribute)."""
    return f"torch.{dtype}"


def literal(v: Any) -> str:
    """A Python literal of an attribute value (ints, floats including inf/nan, lists, strings)."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f != f:
            return 'float("nan")'
        if f in (float("inf"), float("-inf")):
            return 'float("inf")' if f > 0 else '-float("inf")'
        return repr(f)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(literal(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


@dataclass
class TorchEmitter:
    """Where a rule writes: statements of the current function, fresh names, module constants."""

    lines: list[str] = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    prefix: str = "t"

    def fresh(self, hint: str = "t") -> str:
        i = len(self.taken)
        while f"{hint}{i}" in self.taken:
            i += 1
        name = f"{hint}{i}"
        self.taken.add(name)
        return name

    def bind(self, expr: str, hint: str = "t") -> str:
        """Emit `name = expr` and return the name (a rule's intermediate value)."""
        name = self.fresh(hint)
        self.lines.append(f"{name} = {expr}")
        return name

    def const(self, array: np.ndarray, hint: str = "k") -> str:
        """A module-level constant tensor holding `array` (exactly); returns its name."""
        name = self.fresh(hint)
        self.consts[name] = np.array(array, copy=True, order="C")  # keeps 0-d arrays 0-d
        return name


Rule = Callable[[TorchEmitter, list[str], dict, Sequence[TensorType], Sequence[TensorType]], list[str]]


def _ident(name: str, used: set[str]) -> str:
    """A Python identifier for an IR value name (IR names are free-form strings)."""
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in ("torch", "F", ENTRY):
        base = f"v_{base}"
    out, i = base, 1
    while out in used:
        out, i = f"{base}_{i}", i + 1
    used.add(out)
    return out


@dataclass
class TorchProgram:
    """A lowered graph: module source (without constants' data), the constants, the entry point."""

    source: str  # defines the sub-functions and ENTRY; reads constants from module globals
    consts: dict[str, np.ndarray]  # module global name -> data
    input_names: list[str]  # IR input names, in ENTRY's parameter order
    n_outputs: int

    def function(self) -> Callable[..., tuple]:
        """The program as a callable (exec of the source, constants bound as torch tensors)."""
        import torch

        module = _new_module()
        namespace = module.__dict__
        exec(PRELUDE, namespace)  # noqa: S102 - our own generated source
        for k, a in self.consts.items():
            namespace[k] = torch.from_numpy(a.copy())
        exec(compile(self.source, f"<{module.__name__}>", "exec"), namespace)  # noqa: S102
        return namespace[ENTRY]


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


def _lower_function(g: Graph, fname: str, emit: TorchEmitter, fnames: dict[str, str]) -> list[str]:

    used: set[str] = set(emit.taken)
    env: dict[str, str] = {}
    params = [_ident(v.name, used) for v in g.inputs]
    env.update({v.name: p for v, p in zip(g.inputs, params)})
    body = TorchEmitter(consts=emit.consts, taken=used)
    for k, a in g.constants.items():
        cname = emit.const(a, hint="c_")
        used.add(cname)
        env[k] = cname
    types = g.types()
    for n in g.nodes:
        args = [env[i] for i in n.inputs]
        outs = [_ident(v.name, used) for v in n.outputs]
        if n.op == CALL_OP:
            call = f"{fnames[n.attrs['callee']]}({', '.join(args)})"
            body.lines.append(f"{', '.join(outs)}, = {call}" if len(outs) == 1 else f"{', '.join(outs)} = {call}")
        else:
            exprs = TARGET.rule(n.op)(body, args, n.attrs, [types[i] for i in n.inputs], [v.type for v in n.outputs])
            if len(exprs) != len(outs):
                raise AssertionError(f"torch rule of {n.op} returned {len(exprs)} values for {len(outs)} outputs")
            for o, e in zip(outs, exprs):
                body.lines.append(f"{o} = {e}")
        env.update({v.name: o for v, o in zip(n.outputs, outs)})
    ret = ", ".join(env[o] for o in g.outputs)
    body.lines.append(f"return ({ret},)" if len(g.outputs) == 1 else f"return ({ret})")
    emit.taken |= used
    head = f"def {fname}({', '.join(params)}):"
    return [head] + ["    " + ln for ln in body.lines]



def to_torch_program(g: Graph) -> TorchProgram:
    """Lower `g` (and its sub-functions) to PyTorch source; raises Unsupported for a documented gap."""
    emit = TorchEmitter(taken={"torch", "F", ENTRY})
    fnames: dict[str, str] = {}
    chunks: list[str] = []
    for f in g.call_order():
        fnames[f] = _ident(f"fn_{f}", emit.taken)
        chunks.append("\n".join(_lower_function(g.functions[f], fnames[f], emit, fnames)))
    chunks.append("\n".join(_lower_function(g, ENTRY, emit, fnames)))
    return TorchProgram("\n\n\n".join(chunks) + "\n", emit.consts, [v.name for v in g.inputs], len(g.outputs))


def to_torch(g: Graph) -> Callable[..., tuple]:
    """`g` as a plain PyTorch function of its inputs (in `g.inputs` order) returning a tuple."""
    return to_torch_program(g).function()


def run_eager(g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run the lowered program eagerly (no compiler): the torch-side counterpart of the reference."""
    import torch

    prog = to_torch_program(g)
    fn = prog.function()
    with torch.no_grad():
        outs = fn(*[torch.from_numpy(np.array(inputs[n])) for n in prog.input_names])
    return [to_numpy(o) for o in outs]


def to_numpy(t: Any) -> np.ndarray:
    return t.detach().cpu().contiguous().numpy().copy()
