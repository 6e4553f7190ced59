"""A planted HLO-pass fault in XLA, to prove the oracles and the pass minimization on it.

`planted-xla:PASS@OP` is the real XLA whose every compile in which HLO pass PASS runs (it is neither
named in `xla_disable_hlo_passes` nor switched off by `xla_disable_all_hlo_passes`) gets a program in
which OP's result is off by one, as if PASS miscompiled OP. OP may also be an op of the JAX program
dialect alone: `cond` or `switch` then get their branches in reverse order (a fault only inside a region). Disabling PASS removes the fault, which
is exactly what `XlaBackend.minimize_config` must discover. The eager configuration never runs a pass
and stays correct. Real compiler, deliberately broken.

`planted-xla-poison:PASS@OP` is a fault of the programs strategy's JAX programs alone (graphs compile unchanged; the
graph strategies' damaging fault is `planted:poison@OP`): a compile of a program holding OP in which PASS runs
raises, and from then on so does every compile in the same process, where PASS runs, of a program with the same
input seed, whatever its ops (`programs.planted_poison`: a compiler whose state an error it survived left damaged,
which a reduction checked in one worker must not be misled by).
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
POISON_PREFIX = "planted-xla-poison:"


class PlantedXla(XlaBackend):
    """XLA whose compiles with HLO pass `pass_name` enabled mis-evaluate every `op` node."""

    def __init__(self, pass_name: str = "algsimp", op: str = "add", poison: bool = False) -> None:
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
        self.pass_name, self.op, self.poison = pass_name, op, poison
        self.name = f"{POISON_PREFIX if poison else PREFIX}{pass_name}@{op}"

    def version(self) -> str:
        if self.poison:
            return f"{super().version()} + planted error in {self.op} that damages the process while {self.pass_name} runs"
        return f"{super().version()} + planted off-by-one in {self.op} while {self.pass_name} runs"

    def program_dialect(self) -> Dialect | None:
        """The JAX dialect with the same fault: the `programs` strategy's compiles in which the pass runs get
        the dialect's op of that name off by one."""
        from dlcfuzz.backends.xla.programs import JaxDialect

        return JaxDialect(fault=(self.pass_name, self.op), poison=self.poison)

    def build(self, lowered: Any, g: Graph, config: Config) -> XlaCompiled:
        if self.graph_op and not self.poison and pass_enabled(config.options, self.pass_name):
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


def register_planted(pass_name: str, op: str, poison: bool = False) -> str:
    """Register `planted-xla:PASS@OP` (`planted-xla-poison:PASS@OP`) as a compiler (campaign workers import this
    module and see it too); returns the name."""
    name = f"{POISON_PREFIX if poison else PREFIX}{pass_name}@{op}"
    register_backend(name, lambda: PlantedXla(pass_name, op, poison))
    return name


DEFAULT = register_planted("algsimp", "add")  # `--plugin dlcfuzz.backends.xla.planted --compiler planted-xla:algsimp@add`
POISON = register_planted("algsimp", "add", poison=True)  # raises, and damages the process (reductions' tests)
REGION = register_planted("algsimp", "cond")  # the programs strategy's fault inside a region: lax.cond's branches swapped
