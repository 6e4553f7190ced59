"""A planted HLO-pass fault in XLA, to prove the oracles and the pass minimization on it.

`planted-xla:PASS@OP` is the real XLA whose every compile in which HLO pass PASS runs (it is neither
named in `xla_disable_hlo_passes` nor switched off by `xla_disable_all_hlo_passes`) gets a program in
which OP's result is off by one, as if PASS miscompiled OP. OP may also be an op of the JAX program
dialect alone: `cond` or `switch` then get their branches in reverse order (a fault only inside a region). Disabling PASS removes the fault, which
is exactly what `XlaBackend.minimize_config` must discover. The eager configuration never runs a pass
and stays correct. Real compiler, deliberately broken.
"""

from __future__ import annotations

from typing import Any

from dlcfuzz.backends import register_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.backends.xla.backend import XlaBackend, XlaCompiled, pass_enabled
from dlcfuzz.errors import UsageError
from dlcfuzz.ir.graph import Graph
from dlcfuzz.programs.core import Dialect

PREFIX = "planted-xla:"


class PlantedXla(XlaBackend):
    """XLA whose compiles with HLO pass `pass_name` enabled mis-evaluate every `op` node."""

    def __init__(self, pass_name: str = "algsimp", op: str = "add") -> None:
        from dlcfuzz.backends.xla.passes import optional_passes
        from dlcfuzz.ops import get_op

        super().__init__()
        if pass_name not in optional_passes():
            raise UsageError(f"planted-xla: {pass_name!r} is not an optional HLO pass of this XLA")
        from dlcfuzz.backends.xla.programs import OPS

        try:
            get_op(op)
            self.graph_op = True
        except KeyError:
            if op not in OPS:
                raise UsageError(f"planted-xla: unknown operator {op!r}") from None
            self.graph_op = False  # an op of JAX programs alone (e.g. a region, cond): graphs compile unchanged
        self.pass_name, self.op = pass_name, op
        self.name = f"{PREFIX}{pass_name}@{op}"

    def version(self) -> str:
        return f"{super().version()} + planted off-by-one in {self.op} while {self.pass_name} runs"

    def program_dialect(self) -> Dialect | None:
        """The JAX dialect with the same fault: the `programs` strategy's compiles in which the pass runs get
        the dialect's op of that name off by one."""
        from dlcfuzz.backends.xla.programs import JaxDialect

        return JaxDialect(fault=(self.pass_name, self.op))

    def build(self, lowered: Any, g: Graph, config: Config) -> XlaCompiled:
        if self.graph_op and pass_enabled(config.options, self.pass_name):
            from dlcfuzz.lower.jax import TARGET, to_jax_program

            right = TARGET.rule(self.op)

            def broken(spec, e, ins, outs, attrs, in_types, out_types):  # type: ignore[no-untyped-def]
                return [f"({x}) + 1" for x in right(spec, e, ins, outs, attrs, in_types, out_types)]

            lowered = to_jax_program(g, overrides={self.op: broken})
        return super().build(lowered, g, config)

    def reproducer(self, g: Graph, inputs: Any, expected: Any, configs: list[Config], category: str, title: str,
                   detail: str, untyped_outputs: tuple[str, ...] = ()) -> str:
        from dlcfuzz.backends.script import dlcfuzz_script
        from dlcfuzz.ir import dumps

        # the fault exists only inside dlcfuzz: no public API to write the script against; the script imports
        # this module, whose registration makes the planted compiler's name known
        return dlcfuzz_script(self.name, dumps(g), inputs, expected, configs, category, title, detail, self.version(),
                              plugins=(__name__,))


def register_planted(pass_name: str, op: str) -> str:
    """Register `planted-xla:PASS@OP` as a compiler (campaign workers import this module and see it
    too); returns the name."""
    name = f"{PREFIX}{pass_name}@{op}"
    register_backend(name, lambda: PlantedXla(pass_name, op))
    return name


DEFAULT = register_planted("algsimp", "add")  # `--plugin dlcfuzz.backends.xla.planted --compiler planted-xla:algsimp@add`
REGION = register_planted("algsimp", "cond")  # the programs strategy's fault inside a region: lax.cond's branches swapped
