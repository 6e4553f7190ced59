"""Graph -> the source text of a JAX program (`jax.numpy` / `jax.lax`), and that program as a function.

The lowering writes Python source, one statement per node, so the very text a campaign compiles with
XLA is what a reproducer shows upstream (JAX's issue template asks for a self-contained script).
Sub-functions become Python functions that the main function calls (XLA sees them inlined by tracing,
as any JAX user's helper functions); constants become module-level arrays, which `jax.jit` captures
as HLO constants (XLA may fold them).

Rules (`lower/jax/rules.py`) are registered on `target("jax")`: each gets a `JaxEmitter`, the argument
expressions and the node's types, and returns one expression per output.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.registry import target

TARGET = target("jax")
ENTRY = "model"  # the name of the lowered main function
PRELUDE = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
_RESERVED = {"jax", "jnp", "lax", "np", ENTRY}


def enable_x64() -> None:
    """float64/int64 as themselves: without this flag JAX silently computes them in 32 bits."""
    import jax

    if not jax.config.read("jax_enable_x64"):
        jax.config.update("jax_enable_x64", True)


def jnp_dtype(dtype: str) -> str:
    """Our dtype name as JAX source (every name in DTYPES is a jnp attribute; bool is jnp.bool_)."""
    return "jnp.bool_" if dtype == "bool" else f"jnp.{dtype}"


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
class JaxEmitter:
    """Where a rule writes: statements of the current function, fresh names, module constants."""

    lines: list[str] = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)

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
        """A module-level constant array holding `array` (exactly); returns its name."""
        name = self.fresh(hint)
        self.consts[name] = np.array(array, copy=True, order="C")  # keeps 0-d arrays 0-d
        return name


Rule = Callable[[JaxEmitter, list[str], dict, Sequence[TensorType], Sequence[TensorType]], list[str]]


def _ident(name: str, used: set[str]) -> str:
    """A Python identifier for an IR value name (IR names are free-form strings)."""
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED:
        base = f"v_{base}"
    out, i = base, 1
    while out in used:
        out, i = f"{base}_{i}", i + 1
    used.add(out)
    return out


@dataclass
class JaxProgram:
    """A lowered graph: module source (without constants' data), the constants, the entry point."""

    source: str  # defines the sub-functions and ENTRY; reads constants from module globals
    consts: dict[str, np.ndarray]  # module global name -> data
    input_names: list[str]  # IR input names, in ENTRY's parameter order
    n_outputs: int

    def function(self) -> Callable[..., tuple]:
        """The program as a callable of jax/numpy arrays (exec of the source, constants bound as
        jax arrays). Enables x64 first: the program's float64/int64 must stay what they are."""
        import jax.numpy as jnp

        enable_x64()
        namespace: dict[str, Any] = {"__name__": "dlcfuzz_jax_program"}
        exec(PRELUDE, namespace)  # noqa: S102 - our own generated source
        for k, a in self.consts.items():
            namespace[k] = jnp.asarray(a)
        exec(compile(self.source, "<dlcfuzz-jax>", "exec"), namespace)  # noqa: S102
        return namespace[ENTRY]


def _lower_function(g: Graph, fname: str, emit: JaxEmitter, fnames: dict[str, str],
                    overrides: dict[str, Rule]) -> list[str]:
    used: set[str] = set(emit.taken)
    env: dict[str, str] = {}
    params = [_ident(v.name, used) for v in g.inputs]
    env.update({v.name: p for v, p in zip(g.inputs, params)})
    body = JaxEmitter(consts=emit.consts, taken=used)
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
            body.lines.append(f"{outs[0]}, = {call}" if len(outs) == 1 else f"{', '.join(outs)} = {call}")
        else:
            rule = overrides.get(n.op) or TARGET.rule(n.op)
            exprs = rule(body, args, n.attrs, [types[i] for i in n.inputs], [v.type for v in n.outputs])
            if len(exprs) != len(outs):
                raise AssertionError(f"jax rule of {n.op} returned {len(exprs)} values for {len(outs)} outputs")
            for o, e in zip(outs, exprs):
                body.lines.append(f"{o} = {e}")
        env.update({v.name: o for v, o in zip(n.outputs, outs)})
    ret = ", ".join(env[o] for o in g.outputs)
    body.lines.append(f"return ({ret},)" if len(g.outputs) == 1 else f"return ({ret})")
    emit.taken |= used
    head = f"def {fname}({', '.join(params)}):"
    return [head] + ["    " + ln for ln in body.lines]



def to_jax_program(g: Graph, overrides: dict[str, Rule] | None = None) -> JaxProgram:
    """Lower `g` (and its sub-functions) to JAX source; raises Unsupported for a documented gap.
    `overrides` replace the registered rule of some operators (planted faults)."""
    overrides = overrides or {}
    emit = JaxEmitter(taken=set(_RESERVED))
    fnames: dict[str, str] = {}
    chunks: list[str] = []
    for f in g.call_order():
        fnames[f] = _ident(f"fn_{f}", emit.taken)
        chunks.append("\n".join(_lower_function(g.functions[f], fnames[f], emit, fnames, overrides)))
    chunks.append("\n".join(_lower_function(g, ENTRY, emit, fnames, overrides)))
    return JaxProgram("\n\n\n".join(chunks) + "\n", emit.consts, [v.name for v in g.inputs], len(g.outputs))


def to_jax(g: Graph) -> Callable[..., tuple]:
    """`g` as a JAX function of its inputs (in `g.inputs` order) returning a tuple."""
    return to_jax_program(g).function()


def run_eager(g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run the lowered program op by op under `jax.disable_jit()`: every jnp/lax call dispatches
    its own small primitive, no whole-program compilation (the compiler-free baseline)."""
    import jax

    prog = to_jax_program(g)
    fn = prog.function()
    with jax.disable_jit():
        outs = fn(*[np.array(inputs[n]) for n in prog.input_names])
    return [to_numpy(o) for o in outs]


def to_numpy(a: Any) -> np.ndarray:
    return np.array(a, copy=True)
