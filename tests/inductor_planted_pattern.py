"""A plug-in compiler for tests: TorchInductor with a planted fault in its replacement patterns. Every
replacement rewrite Inductor applies (a `ReplacementPatternEntry`: the attention fusions, pad_mm, the softmax
pattern) inserts its replacement with the first result scaled by 1.5, so a program that fires one computes a
wrong value and a program that fires none is compiled correctly. Only the program dialect carries it (the
`programs` strategy's tests); the FX graph caches are off meanwhile, so no faulty graph is cached for a correct
compile. Importing the module registers the compiler `inductor-planted-pattern` (workers import it too)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch._inductor import pattern_matcher as pm

from dlcfuzz.backends import inductor, register_backend
from dlcfuzz.backends.inductor import InductorBackend
from dlcfuzz.backends.inductor.programs import TorchDialect

FAULT_SCALE = 1.5


@contextlib.contextmanager
def planted_replacement_fault() -> Iterator[None]:
    original = pm.ReplacementPatternEntry.apply

    def apply(self: Any, match: Any, graph: Any, node: Any) -> None:
        replacement = match.replacement_graph.graph
        out = next(n for n in replacement.nodes if n.op == "output")
        first = out.args[0][0] if isinstance(out.args[0], (tuple, list)) else out.args[0]
        with replacement.inserting_before(out):
            scaled = replacement.call_function(torch.ops.aten.mul.Tensor, (first, FAULT_SCALE))
        first.replace_all_uses_with(scaled, delete_user_cb=lambda user: user is out)
        return original(self, match, graph, node)

    pm.ReplacementPatternEntry.apply = apply
    try:
        with torch._inductor.config.patch({"fx_graph_cache": False}), \
                torch._functorch.config.patch({"enable_autograd_cache": False}):
            yield
    finally:
        pm.ReplacementPatternEntry.apply = original


class PlantedPatternDialect(TorchDialect):
    def run(self, *args: Any, **kwargs: Any) -> Any:
        with planted_replacement_fault():  # eager and the float64 run match no pattern: only compiles see it
            return super().run(*args, **kwargs)


PLANTED_DIALECT = PlantedPatternDialect()


class PlantedPatternBackend(InductorBackend):
    name = "inductor-planted-pattern"

    def program_dialect(self) -> Any:
        return PLANTED_DIALECT


register_backend("inductor-planted-pattern", PlantedPatternBackend)
before_fork = inductor.before_fork  # the zygote runs a preloaded module's: this plug-in's workers start warm too
