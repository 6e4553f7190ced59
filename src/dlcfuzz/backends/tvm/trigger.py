"""Which Relax passes of a sequence changed a module (OATest's trigger rates): a PassInstrument
records the module before and after each pass (structural_equal). Runs inside the workers."""

from __future__ import annotations

from typing import Any

from dlcfuzz.backends.base import Backend
from dlcfuzz.backends.tvm.passes import make_pass
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.testcase import Config


def tvm_changed_passes(mod: Any, passes: list[str], opt_level: int = 3, target: str = "llvm") -> list[str]:
    """The passes of `passes` (applied in order to `mod`) that changed the module."""
    import tvm
    import tvm_ffi

    changed: list[str] = []

    @tvm.instrument.pass_instrument
    class Recorder:
        def __init__(self) -> None:
            self.before: list[Any] = []

        def run_before_pass(self, m: Any, info: Any) -> None:
            self.before.append(m)

        def run_after_pass(self, m: Any, info: Any) -> None:
            prev = self.before.pop()
            if info.name in passes and not tvm_ffi.structural_equal(prev, m):
                changed.append(info.name)

    seq = [make_pass(p) for p in passes]
    with tvm.transform.PassContext(opt_level=opt_level, instruments=[Recorder()]), tvm.target.Target(target):
        for p in seq:
            mod = p(mod)
    return sorted(set(changed))


def tvm_fired(backend: Backend, g: Graph, config: Config, targets: list[str]) -> dict[str, bool]:
    o = config.options
    mod = backend.lower(g, config)
    changed = set(tvm_changed_passes(mod, list(o.get("passes", [])), int(o.get("opt_level", 3)),
                                     o.get("target", "llvm")))
    return {t: t in changed for t in targets}
