"""Which Relax passes changed a module (OATest's trigger rates): a PassInstrument records the module
before and after each pass (structural_equal). Runs inside the workers."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from dlcfuzz.backends.base import Backend
from dlcfuzz.backends.tvm.passes import make_pass, relax_passes
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.testcase import Config


def tvm_changed_passes(mod: Any, passes: list[str], opt_level: int = 3, target: str = "llvm",
                       watch: Iterable[str] | None = None, build: bool = False) -> list[str]:
    """The passes named in `watch` (default: `passes`) that changed the module while `passes` ran in order on
    `mod`; with `build`, followed by what compiling runs after them (closures lifted, then relax.build's Relax
    pipeline for `target`, whose nested passes count too). Relax only: no TIR pass, no code generation."""
    import tvm
    import tvm_ffi
    from tvm import relax


    # a pass object may record under another name than the relax.transform function that makes it
    watched = {instrument_name(p): p for p in (passes if watch is None else watch)}
    changed: list[str] = []

    @tvm.instrument.pass_instrument
    class Recorder:
        def __init__(self) -> None:
            self.before: list[Any] = []

        def run_before_pass(self, m: Any, info: Any) -> None:
            self.before.append(m)

        def run_after_pass(self, m: Any, info: Any) -> None:
            prev = self.before.pop()
            if info.name in watched and not tvm_ffi.structural_equal(prev, m):
                changed.append(watched[info.name])

    with tvm.transform.PassContext(opt_level=opt_level, instruments=[Recorder()]), tvm.target.Target(target):
        if build:
            # relax.build on a CPU target runs the "default" pipeline (vm_build.py), under the target
            relax.get_pipeline("default")(relax_passes(mod, {"passes": passes, "target": target}))
        else:
            for p in [make_pass(p) for p in passes]:
                mod = p(mod)
    return sorted(set(changed))


@functools.cache
def instrument_name(name: str) -> str:
    """The name a pass instrument sees for the Relax pass `name`: the pass object's own (DecomposeOpsForInference
    makes a pass named DecomposeOps, DataflowUseInplaceCalls one named DataflowInsertInPlaceCalls: watched by their
    function names, they never fired), or `name` where the object is a Sequential whose inner pass carries it
    (ConvertToDataflow) or where it is not in the pass table (a pipeline pass, watched by the name it runs under)."""
    from dlcfuzz.backends.tvm.passes import PASSES

    if name not in PASSES:
        return name
    own = str(make_pass(name).info.name)
    return name if own == "sequential" else own


@functools.cache
def pipeline_passes(target: str = "llvm") -> tuple[str, ...]:
    """The passes of TVM's default Relax pipeline for `target`, in order, read from the installed release: the
    pipeline runs on an empty module while an instrument records the passes its Sequential runs directly
    (not the passes those run inside, such as FuseTIR's DeadCodeElimination)."""
    import tvm
    from tvm import relax

    runs: list[tuple[str, int]] = []
    depth = 0

    @tvm.instrument.pass_instrument
    class Recorder:
        def run_before_pass(self, m: Any, info: Any) -> None:
            nonlocal depth
            runs.append((info.name, depth))
            depth += 1

        def run_after_pass(self, m: Any, info: Any) -> None:
            nonlocal depth
            depth -= 1

    t = tvm.target.Target(target)
    with tvm.transform.PassContext(opt_level=3, instruments=[Recorder()]):
        relax.get_default_pipeline(t)(tvm.IRModule())
    top = next(d for name, d in runs if name == "sequential") + 1
    return tuple(dict.fromkeys(name for name, d in runs if d == top))


def tvm_fired(backend: Backend, g: Graph, config: Config, targets: list[str]) -> dict[str, bool]:
    o = config.options
    mod = backend.relax_module(backend.lower(g, config), config)  # type: ignore[attr-defined]
    changed = set(tvm_changed_passes(mod, list(o.get("passes", [])), int(o.get("opt_level", 3)),
                                     o.get("target", "llvm"), watch=targets, build=True))
    return {t: t in changed for t in targets}
