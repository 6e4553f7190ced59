"""The backend protocol: compile a program under a configuration, run it on inputs.

A backend never decides what a bug is: it returns outputs or raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dlcfuzz.backends.opinions import DEFAULT_EVALUATORS
from dlcfuzz.gen.random import FormGap
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.opinions import Evaluator
from dlcfuzz.oracle.testcase import Config  # the test case record carries its configurations
from dlcfuzz.programs.core import Dialect


class Compiled(Protocol):
    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]: ...


@dataclass
class Knob:
    """A knob the compiler really has, so strategies can mutate and reducers minimize it."""

    name: str
    values: list[Any]
    doc: str


@dataclass(frozen=True)
class IssueChecklist:
    """A section an upstream bug template asks fuzzer-found issues to fill in (its heading, why, the
    items to confirm, and where the template wants versions from)."""

    heading: str
    intro: str
    checks: tuple[str, ...]
    versions: str


class Backend(Protocol):
    """What one compiler is, to the rest of dlcfuzz. `BackendBase` gives the defaults. Its facts are read-only
    properties here, so that a class attribute of a narrower type (`frame_patterns = (r"...",)`) satisfies them."""

    @property
    def name(self) -> str: ...

    @property
    def packages(self) -> tuple[str, ...]:
        """Python packages of the compiler: an exception raised there is its rejection."""

    @property
    def deadline_s(self) -> float:
        """Seconds for compile + run of one test case in a worker; a timeout is re-run longer, then a hang."""

    @property
    def reduction_checks(self) -> int:
        """Compile+run checks of one stage of a finding's reduction."""

    @property
    def reduction_s(self) -> float:
        """Wall-clock seconds one finding's reduction may spend."""

    @property
    def input_sets(self) -> int:
        """Input sets a campaign runs each compiled program on, each judged against the reference: its
        compile/run ratio (1 where compiling is as cheap as running)."""

    @property
    def sub_functions(self) -> bool:
        """Whether graphs with sub-functions mean something to it."""

    @property
    def lowers_through_onnx(self) -> bool:
        """Whether every test reaches it as an ONNX model."""

    @property
    def collects_coverage(self) -> bool:
        """Whether start_coverage/stop_coverage measure the compiler's own code."""

    @property
    def applied_label(self) -> str | None:
        """What its compiles record of the passes or rewrites that acted on a test (`Compiled.info()["applied"]`, a
        program dialect's run meta "applied"), in the campaign report's words; None where it records none."""

    def applied_universe(self) -> tuple[str, ...]:
        """Every pass or rewrite of the installed release that those records can name: the report's "X of Y"."""
        ...

    @property
    def frame_patterns(self) -> tuple[str, ...]:
        """Its native stack frames (one group: the name), for signatures."""

    @property
    def distributions(self) -> tuple[str, ...]:
        """Its reproducers' distributions."""

    @property
    def own_strategies(self) -> tuple[str, ...]:
        """Strategies made for it alone."""

    def front_door(self, config: str) -> str:
        """"onnx" or "code": how a model reaches configuration `config`."""
        ...

    def program_dialect(self) -> Dialect | None:
        """Its framework's program language (a `programs.core.Dialect`), or None."""
        ...

    def issue_packages(self, config: str) -> tuple[str, ...]: ...

    def issue_checklist(self, config: str) -> IssueChecklist | None: ...

    def pattern_targets(self) -> str: ...

    def minimize_config(self, config: Config, shows: Callable[[Config], bool]) -> tuple[Config, list[str]]: ...

    def pair_reproducer(self, seed: Graph, mutant: Graph, inputs: dict[str, np.ndarray], configs: list[Config],
                        delta: float, title: str, detail: str) -> dict[str, bytes | str] | None: ...

    def oatest_configs(self, rng: np.random.Generator, targets: list[str], configs: list[Config]) -> list[Config]: ...

    def fired(self, g: Graph, config: Config, targets: list[str]) -> dict[str, bool] | None: ...

    def probe_identity(self, config: Config) -> tuple[str, str]:
        """(compiler, version) whose capabilities a probe of `config` measures: the probe cache's key, so
        that a wrapper that leaves `config` as the wrapped compiler has it shares that compiler's answer."""
        ...

    def optimizations(self) -> tuple[str, ...]:
        """Every optimization (graph transformer, pass) of the installed release that `fired` can tell,
        read from the compiler, not listed by hand: the denominator of `bench/optimization_triggers.py`."""
        ...

    def optimizations_out_of_reach(self) -> dict[str, str]:
        """Optimizations of `optimizations()` that the configurations dlcfuzz runs cannot fire (registered for
        another device, gated by a setting no configuration makes), each with why: left out of the bench's
        denominator and printed there."""
        ...

    def start_coverage(self) -> None: ...

    def stop_coverage(self) -> list[str]: ...

    def version(self) -> str: ...

    def knobs(self) -> list[Knob]: ...

    def configs(self) -> dict[str, Config]:
        """Named configurations; `default_pair()` names the two a campaign compares by default."""
        ...

    def default_pair(self) -> tuple[Config, Config]: ...

    def lower(self, g: Graph, config: Config) -> Any:
        """Graph -> what the compiler takes (ONNX bytes, an IRModule): dlcfuzz's work, timed apart."""
        ...

    def lower_key(self, config: Config) -> str:
        """Configs with equal keys share one lowering."""
        ...

    def build(self, lowered: Any, g: Graph, config: Config) -> Compiled:
        """The compiler's own work."""
        ...

    def compile(self, g: Graph, config: Config) -> Compiled: ...

    def expected_error(self, message: str) -> str | None:
        """If an exception message is documented rejection ("not supported", validation), its class name."""
        ...

    def known_gaps(self, op: str) -> dict[str, str]:
        """Input-0 dtype -> the documented upstream reason this compiler fails on `op` with it
        (an allow-list with references, never a silent skip): campaigns leave these out."""
        ...

    def known_form_gaps(self, op: str) -> Sequence[FormGap]:
        """Forms of `op` (a dtype combination, an attribute form) this compiler lacks where it runs the
        operator with that input-0 dtype otherwise, each with its documented upstream reason: generation
        and the capability probe sample around them for this compiler only (`gen.random.avoiding`)."""
        ...

    def per_test_configs(self, rng: np.random.Generator, g: Graph, configs: list[Config]) -> list[Config]:
        """The configurations one generated test compares, varied per test from the campaign's
        (HirGen's cross-method oracle, sampled pass sequences or knobs). `configs` holds the door
        configuration the test was drawn for (`door_configs`), if any: the test compares it."""
        ...

    def door_configs(self) -> Mapping[str, float]:
        """Configurations whose front door imports on terms of its own (an importer that takes fewer operators
        or forms than the baseline configuration's lowering), each with the share of a campaign's generated
        tests drawn for it: each door is capability-probed apart, a test drawn for one draws only what the
        door and the baseline both take and compares that configuration, and no other test compares it."""
        ...

    def door_form_gaps(self, door: str, op: str) -> Sequence[FormGap]:
        """Forms of `op` that door configuration `door`'s importer lacks (or imports wrongly: a known bug) where
        the door takes the (operator, input-0 dtype) pair otherwise, each with its reason: a test drawn for the
        door samples around them besides `known_form_gaps` (the probe sees one instance per pair, not its forms)."""
        ...

    def disruptive_configs(self) -> list[str]:
        """Configurations with the most distinct front doors, for disruptive (invalid) graphs."""
        ...

    def disruptive_rules(self) -> tuple[str, ...] | None:
        """The type/shape rules whose violation this compiler must reject (None: all of them; (): none, so no
        disruptive tests)."""
        ...

    def per_op_rules(self, config: Config) -> bool:
        """Whether this configuration's front door checks each operator's rules in its own code
        (rather than one importer that validates the whole model)."""
        ...

    def documented_leniency(self, config: Config, op: str, rule: str) -> str | None:
        """Why this configuration's front door accepts `op` with `rule` broken by design (its documented
        semantics are wider), or None: an accepted graph is then not a bug but an unknown."""
        ...

    def documented_limitation(self, config: Config, values: Mapping[str, np.ndarray]) -> str | None:
        """Why this configuration documents that it does not compute a test whose reference values (inputs,
        constants, intermediates, outputs by name) are `values` exactly (e.g. a narrower integer precision),
        or None: a numeric difference it shows is then not a bug but an unknown, counted apart."""
        ...

    def damages_process(self, g: Graph) -> str | None:
        """Why a process that compiled and ran `g` must not run another test (a known bug of the compiler's that
        corrupts its memory, so that a later, unrelated test crashes there), or None. The worker is then replaced
        after the test: the bug stays this test's finding and does not become another test's crash."""
        ...

    def independent_evaluators(self, config: str) -> Sequence[Evaluator]:
        """The evaluators that give a numeric finding of configuration `config` a second opinion."""
        ...

    def reproducer(self, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str,
                   untyped_outputs: tuple[str, ...] = ()) -> str:
        """A standalone script (the compiler's public API, NumPy, onnx) that exits 1 printing
        "BUG REPRODUCED" when the finding shows, 0 when it does not."""
        ...


class BackendBase:
    """Defaults of the optional parts of `Backend`; a compiler's class overrides what it has."""

    # ---- facts about the compiler that the engine, oracle and issue text read (they name no compiler)
    # regular expressions with one group (a frame's name) for the native stack frames of its tracebacks
    # and crash stderr: crash and error signatures keep the innermost ones
    frame_patterns: tuple[str, ...] = ()
    # the distributions of its reproducers, listed in an issue's environment table (`issue_packages`)
    distributions: tuple[str, ...] = ()
    own_strategies: tuple[str, ...] = ()  # strategies made for this compiler alone: the auto portfolio adds them

    def program_dialect(self) -> Dialect | None:
        """The program language of the framework it compiles (`programs.core.Dialect`: an op table with
        the framework's own semantics, its type inference, run and reproducer), which the `programs`
        strategy generates in; None where it has none (it compiles ONNX-operator graphs only)."""
        return None

    def front_door(self, config: str) -> str:
        """How a model reaches configuration `config`: "onnx" (an ONNX model, valid for onnx's checker)
        or "code" (a program the framework runs eagerly); an issue says why its model is valid from it."""
        return "onnx" if self.lowers_through_onnx else "code"

    def issue_packages(self, config: str) -> tuple[str, ...]:
        """The distributions an issue about configuration `config` lists with their versions."""
        return self.distributions

    def issue_checklist(self, config: str) -> IssueChecklist | None:
        """The fuzzer checklist of the bug template upstream asks of an issue about `config`, if any."""
        return None

    def probe_identity(self, config: Config) -> tuple[str, str]:
        return self.name, self.version()

    def optimizations(self) -> tuple[str, ...]:
        return ()  # a compiler whose optimizations dlcfuzz does not tell apart

    def optimizations_out_of_reach(self) -> dict[str, str]:
        return {}

    def pattern_targets(self) -> str:
        """The compiler name under which optimization patterns list what they target on this backend
        (and of its shipped pattern file `synth/data/<name>.json.gz`): a wrapper names what it wraps."""
        return self.name

    name = ""
    packages: tuple[str, ...] = ()
    deadline_s = 15.0
    # compile+run checks of one stage of a finding's reduction (graph, optimization set, mutation steps;
    # a finding's budget holds three stages' worth), fewer for slow compilers
    reduction_checks = 150
    reduction_s = 120.0  # wall-clock seconds one finding's reduction may spend (`--reduce-budget` overrides)
    # input sets each compiled program runs, each judged against the reference (`--input-sets` overrides):
    # where a compile costs seconds and a run milliseconds, K sets cost little more than one
    input_sets = 1
    sub_functions = False  # whether graphs with sub-functions (calls, closures) mean something to it
    lowers_through_onnx = False  # whether every test reaches it as an ONNX model (one opset per model)

    def knobs(self) -> list[Knob]:
        return []

    def known_gaps(self, op: str) -> dict[str, str]:
        return {}

    def known_form_gaps(self, op: str) -> Sequence[FormGap]:
        return ()

    def per_test_configs(self, rng: np.random.Generator, g: Graph, configs: list[Config]) -> list[Config]:
        return list(configs)

    def door_configs(self) -> Mapping[str, float]:
        return {}  # every configuration takes what the baseline's probe admits

    def door_form_gaps(self, door: str, op: str) -> Sequence[FormGap]:
        return ()

    def disruptive_configs(self) -> list[str]:
        return [c.name for c in self.default_pair()]  # type: ignore[attr-defined]

    def disruptive_rules(self) -> tuple[str, ...] | None:
        return None

    def per_op_rules(self, config: Config) -> bool:
        return False

    def documented_leniency(self, config: Config, op: str, rule: str) -> str | None:
        return None

    def documented_limitation(self, config: Config, values: Mapping[str, np.ndarray]) -> str | None:
        return None

    def damages_process(self, g: Graph) -> str | None:
        return None

    def independent_evaluators(self, config: str) -> Sequence[Evaluator]:
        """onnx's ReferenceEvaluator and unoptimized ONNXRuntime on the ONNX lowering (a graph that does not
        lower to ONNX gets no opinion from them); a compiler fed by a framework adds the framework run eagerly."""
        return DEFAULT_EVALUATORS

    def lower_key(self, config: Config) -> str:
        return "default"

    def compile(self, g: Graph, config: Config) -> Compiled:
        return self.build(self.lower(g, config), g, config)  # type: ignore[attr-defined]

    def minimize_config(self, config: Config, shows: Callable[[Config], bool]) -> tuple[Config, list[str]]:
        """The smallest change of `config` that still shows a finding (`shows` compiles and judges a
        candidate), and the names of what is left: the optimization set, knob set or HLO pass that
        causes it. Default: nothing to minimize."""
        return config, []

    def pair_reproducer(self, seed: Graph, mutant: Graph, inputs: dict[str, np.ndarray], configs: list[Config],
                        delta: float, title: str, detail: str) -> dict[str, bytes | str] | None:
        """Files (name -> content) of a standalone script comparing a seed model with its mutant
        (metamorphic findings, e.g. seed.onnx, mutant.onnx, repro_mutant.py); None when the compiler
        has no such script (the node-level repro.py still is one)."""
        return None

    def oatest_configs(self, rng: np.random.Generator, targets: list[str], configs: list[Config]) -> list[Config]:
        """The configurations of a synthesized test whose patterns target `targets` (e.g. those
        passes first in the optimized pipeline); default: the campaign's."""
        return list(configs)

    def fired(self, g: Graph, config: Config, targets: list[str]) -> dict[str, bool] | None:
        """Which of the optimizations `targets` fired when `config` compiled `g` (OATest's trigger
        rates); None when the compiler cannot tell."""
        return None

    collects_coverage = False  # start_coverage/stop_coverage measure the compiler's own code
    # what a compile records of the passes or rewrites that acted on a test: measured and shown (the campaign
    # report, `dlcfuzz list`), never fed back; None: nothing recorded
    applied_label: str | None = None

    def applied_universe(self) -> tuple[str, ...]:
        """Every pass or rewrite of the installed release that `applied` records can name (the denominator)."""
        return ()

    def start_coverage(self) -> None:
        """Begin collecting the compiler's own code coverage in this worker (if the backend can)."""

    def stop_coverage(self) -> list[str]:
        """Coverage items (e.g. `file:line->line` arcs of the compiler's Python code) reached since
        `start_coverage`; [] when the backend collects none."""
        return []
