"""Seed PrimFuncs: legalized generated graphs and zoo models, plus the empty PrimFunc."""

from __future__ import annotations

from typing import Any

import numpy as np

EMPTY_SCRIPT = '''# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32")):
    T.func_attr({"global_symbol": "main", "tirx.noalias": True})
    T.evaluate(0)
'''


def parse(script: str) -> Any:
    """TVMScript text -> PrimFunc (TVM's own parser, with its well-formedness check)."""
    import tvm

    return tvm.script.from_source(script)


def empty_func() -> Any:
    return parse(EMPTY_SCRIPT)


def lower_blocks(func: Any) -> Any:
    """A legalized PrimFunc as plain loops over its buffers (blocks lowered, still unflattened),
    named main and public: the level the mutators and pass sequences work on."""
    import tvm
    from tvm import s_tir

    func = func.with_attr("global_symbol", "main")
    mod = tvm.IRModule({"main": func})
    mod = tvm.transform.Sequential([s_tir.transform.LowerInitBlock(), s_tir.transform.ConvertBlocksToOpaque(),
                                    s_tir.transform.CompactBufferAllocation(), s_tir.transform.LowerOpaqueBlock()])(mod)
    return mod["main"]


def prim_funcs_of(relax_mod: Any) -> list[Any]:
    from tvm import relax, tirx

    legal = relax.transform.LegalizeOps()(relax_mod)
    return [f for _, f in sorted(legal.functions.items(), key=lambda kv: kv[0].name_hint)
            if isinstance(f, tirx.PrimFunc)]


def usable(func: Any) -> bool:
    """Static-shaped buffer parameters only (the runner allocates them with NumPy)."""
    from dlcfuzz.tvm_tir.tir import static_shape, well_formed

    return all(hasattr(p, "shape") and static_shape(p) is not None for p in func.params) and well_formed(func)


def seed_funcs(seed: int = 0, graphs: int = 6, zoo: bool = True, max_elems: int = 1 << 16) -> list[Any]:
    """Distinct PrimFuncs from `graphs` random graphs and the tiny zoo models, and the empty one.
    Functions with buffers larger than `max_elems` elements are left out (they run slowly)."""
    from dlcfuzz.errors import LoweringGap
    from dlcfuzz.gen.random import generate
    from dlcfuzz.lower.relax import to_relax

    sources: list[Any] = []
    for i in range(8 * graphs):  # a graph with an operator Relax lacks (a documented gap) is skipped, not a seed
        if len(sources) == graphs:
            break
        try:
            sources.append(to_relax(generate(np.random.default_rng([seed, i]), 4)))
        except LoweringGap:
            continue
    if zoo:
        from dlcfuzz.zoo import build, names

        for name in names(tiny=True):
            sources.append(to_relax(build(name, seed)))
    out, seen = [empty_func()], set()
    for mod in sources:
        try:
            funcs = prim_funcs_of(mod)
        except Exception:  # legalization gaps (e.g. integer power) are the Relax fuzzers' business
            continue
        for f in funcs:
            try:
                low = lower_blocks(f)
            except Exception:  # a seed the block lowering rejects is no seed
                continue
            if not usable(low) or any(int(np.prod([int(d) for d in p.shape])) > max_elems for p in low.params):
                continue
            text = low.script()
            if text not in seen:
                seen.add(text)
                out.append(low)
    return out
