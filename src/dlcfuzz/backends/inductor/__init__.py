"""TorchInductor (`torch.compile`) on the CPU: eager baseline, Inductor default, sampled Inductor knobs.

Configurations (options):
- backend: "eager" (no compiler: the baseline), "aot_eager", "aot_eager_decomp_partition" or
  "inductor" (torch.compile's backends: each adds one stage of the compiler);
- knobs: {"mode": ..., "dynamic": ..., "<torch._inductor.config key>": value}: see knobs.py;
- fault: one of `cpp.inject_relu_bug_TESTING_ONLY`'s planted faults (configurations
  `inductor-planted-<fault>`, to prove the oracles), or `cond` (`inductor-planted-cond`: the programs
  strategy's torch.cond with its branches swapped when compiled; graphs compile unchanged).
Every compile runs with `fallback_random=True` and `fullgraph=True` (PyTorch's guidance for fuzzer
reports; a graph break in plain torch code would be a Dynamo failure, not a fallback).

A failing compile is attributed to a stage by the ladder eager -> aot_eager ->
aot_eager_decomp_partition -> inductor: the first backend that fails too is named in the error
(`[stage aot_eager] ...`) and in the observation's info. A failure already in eager is torch
rejecting the program itself (a documented rejection, never a compiler bug).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch  # a missing torch makes `--compiler inductor` a clear usage error

from dlcfuzz.backends.base import BackendBase, Config, IssueChecklist, Knob
from dlcfuzz.backends.inductor.compiling import (
    LADDER,
    before_fork,
    compile_callable,
    first_failing_stage,
    scrub,
    summarize_cpp_compile_error,
    worker_setup,
)
from dlcfuzz.backends.inductor.knobs import FAULTS, INDUCTOR_KNOBS, MODES, sample_knobs
from dlcfuzz.backends.opinions import DEFAULT_EVALUATORS, TORCH_EAGER
from dlcfuzz.backends.torch_compile import TORCH_COMPILE_CHECKLIST, TORCH_FRAMES
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.opinions import Evaluator
from dlcfuzz.programs.core import Dialect

STAGE_RE = re.compile(r"^\[stage (\w+)\] ")

# Documented rejections: torch itself refusing the program (the eager stage fails too), or an
# operator/dtype torch does not implement on the CPU.
EXPECTED = [
    ("unsupported", re.compile(r"\[stage eager\] |not implemented for '|NotImplementedError")),
]

class StageError(RuntimeError):
    """A compile or run failure with the ladder stage that first shows it."""


def _example_inputs(g: Graph) -> list[Any]:
    """Inputs of the right types for the compile-triggering first call: ones (values do not matter
    to the compile; ones divide, index and take logarithms safely)."""

    return [torch.ones(v.type.shape, dtype=getattr(torch, v.type.dtype)) for v in g.inputs]


class InductorCompiled:
    def __init__(self, fn: Callable[..., tuple], input_names: list[str], info: dict[str, Any]) -> None:
        self.fn = fn
        self.input_names = input_names
        self._info = info

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:

        from dlcfuzz.lower.torch import to_numpy

        args = [torch.from_numpy(np.array(inputs[n])) for n in self.input_names]
        with torch.no_grad():
            outs = self.fn(*args)
        return [to_numpy(o) for o in outs]

    def info(self) -> dict[str, Any]:
        return dict(self._info)


class InductorBackend(BackendBase):
    name = "inductor"
    packages = ("torch",)
    distributions = ("torch",)
    frame_patterns = TORCH_FRAMES

    def issue_checklist(self, config: str) -> IssueChecklist | None:
        return TORCH_COMPILE_CHECKLIST  # Inductor's bugs are filed with PyTorch

    def independent_evaluators(self, config: str) -> Sequence[Evaluator]:
        # the program Inductor compiles, run eagerly: that is its configuration "eager" (read where the test compared it)
        return (*DEFAULT_EVALUATORS, dataclasses.replace(TORCH_EAGER, config="eager"))
    # measured: a fresh worker's first compile takes 14 s on an idle 2-core machine, 37 s at load 8 and
    # over 60 s at load 13 (then every later one 0.5-3 s; a cpp_wrapper compile 10-40 s)
    deadline_s = 120.0
    reduction_checks = 60  # each check compiles (~1 s)
    reduction_s = 300.0
    input_sets = 8  # a torch.compile costs 0.5-7 s, a run of the compiled function milliseconds
    sub_functions = True
    collects_coverage = True  # torch/_inductor, _dynamo and fx, with coverage.py's C tracer
    # the programs strategy's compiles record the rewrites they applied (programs.run_program's meta "fired")
    applied_label = "pattern-matcher rewrites applied"

    def __init__(self) -> None:
        worker_setup()
        self._coverage: Any = None

    def version(self) -> str:

        return f"torch {torch.__version__}"

    def program_dialect(self) -> Dialect | None:
        """PyTorch programs with PyTorch's own semantics (backends/inductor/programs.py)."""
        from dlcfuzz.backends.inductor.programs import DIALECT

        return DIALECT

    def disruptive_rules(self) -> tuple[str, ...] | None:
        # no rule binds: the lowering writes torch functions, whose documented type promotion and
        # broadcasting (https://docs.pytorch.org/docs/stable/tensor_attributes.html#type-promotion-doc)
        # turn a graph that breaks a dtype or shape rule into a valid program, and whatever they reject,
        # eager PyTorch rejects the same way before Inductor compiles anything: "accepted" or "rejected"
        # says nothing about Inductor (auto runs no disruptive arm here)
        return ()

    def knobs(self) -> list[Knob]:
        out = [
            Knob("backend", list(LADDER), "torch.compile backend: each adds one stage of the compiler"),
            Knob("mode", list(MODES), "torch.compile mode"),
            Knob("dynamic", [None, True, False], "torch.compile dynamic shapes"),
        ]
        out += [Knob(k, list(v), f"torch._inductor.config.{k}") for k, v in INDUCTOR_KNOBS.items()]
        return out

    def configs(self) -> dict[str, Config]:
        c = {name: Config(name, {"backend": name}) for name in LADDER}
        for fault in FAULTS:
            name = f"inductor-planted-{fault.replace('_', '-')}"
            c[name] = Config(name, {"backend": "inductor", "fault": fault})
        # the programs strategy's planted fault inside a region: torch.cond's branches swapped when compiled
        # (backends/inductor/programs.py); a graph has no torch.cond, so graphs compile as with `inductor`
        c["inductor-planted-cond"] = Config("inductor-planted-cond", {"backend": "inductor", "fault": "cond"})
        return c

    def default_pair(self) -> tuple[Config, Config]:
        c = self.configs()
        return c["eager"], c["inductor"]

    def expected_error(self, message: str) -> str | None:
        return next((name for name, pat in EXPECTED if pat.search(message)), None)

    def per_test_configs(self, rng: np.random.Generator, g: Graph, configs: list[Config]) -> list[Config]:
        """Half of the tests compile their Inductor configurations with a sampled knob set instead
        of the defaults (PyTorch's ConfigFuzzer idea, on generated graphs)."""
        out = []
        for c in configs:
            o = c.options
            if o.get("backend") == "inductor" and not o.get("knobs") and not o.get("fault") and rng.random() < 0.5:
                out.append(Config(f"{c.name}+knobs", {**o, "knobs": sample_knobs(rng)}))
            else:
                out.append(c)
        return out

    def lower(self, g: Graph, config: Config) -> Any:
        from dlcfuzz.lower.torch import to_torch_program

        return to_torch_program(g)

    def lower_key(self, config: Config) -> str:
        return "torch"

    # ---- compile ------------------------------------------------------------------------
    def _compile_with(self, program: Any, g: Graph, backend: str, knobs: dict[str, Any],
                      fault: str | None) -> Callable[..., tuple]:
        """The program compiled by `backend` (compilation forced by a first call)."""
        return compile_callable(program.function(), lambda: _example_inputs(g), backend, knobs, fault)

    def compile_function(self, fn: Callable[..., Any], example_inputs: Sequence[Any], backend: str = "inductor",
                         knobs: dict[str, Any] | None = None, fault: str | None = None,
                         grad: bool = False) -> Callable[..., Any]:
        """A torch function compiled by `backend` as every test compiles (`compiling.compile_callable`:
        fallback_random, fullgraph, no state of earlier compiles), the compile forced by a first call on
        `example_inputs`; under no_grad unless `grad` (then AOTAutograd traces the forward and backward of
        inputs that require grad)."""
        return compile_callable(fn, lambda: list(example_inputs), backend, dict(knobs or {}), fault, grad=grad)

    def stage_of(self, program: Any, g: Graph, options: dict[str, Any]) -> str:
        """The first ladder stage whose compile (and example run) fails with these options."""
        return first_failing_stage(program.function(), lambda: _example_inputs(g), options)

    def build(self, lowered: Any, g: Graph, config: Config) -> InductorCompiled:
        o = config.options
        backend = o.get("backend", "inductor")
        if backend not in LADDER:
            raise ValueError(f"unknown torch.compile backend {backend!r} (expected one of {LADDER})")
        t0 = time.perf_counter()
        try:
            fn = self._compile_with(lowered, g, backend, dict(o.get("knobs") or {}), o.get("fault"))
        except Exception as e:
            stage = self.stage_of(lowered, g, o) if backend != "eager" else "eager"
            raw = str(e)
            summary = summarize_cpp_compile_error(raw)
            error = StageError(f"[stage {stage}] {type(e).__name__}: {scrub(summary)}")
            # a C++ compile error's traceback is codecache's, and would repeat the whole output
            raise error from (e if summary is raw else None)
        return InductorCompiled(fn, [v.name for v in g.inputs],
                                {"backend": backend, "compile_s": round(time.perf_counter() - t0, 4)})

    def compile(self, g: Graph, config: Config) -> InductorCompiled:
        return self.build(self.lower(g, config), g, config)

    # ---- optimizations (OATest's trigger rates) ------------------------------------------------
    def optimizations(self) -> tuple[str, ...]:
        """The pattern-matcher rewrites the installed torch registers, read from its passes (patterns.py)."""
        from dlcfuzz.backends.inductor.patterns import pattern_inventory

        return tuple(pattern_inventory())

    def applied_universe(self) -> tuple[str, ...]:
        return self.optimizations()

    def fired(self, g: Graph, config: Config, targets: list[str]) -> dict[str, bool] | None:
        """Which of `targets` (pattern names) the configuration's compile of `g` applied (patterns.py)."""
        return {t: t in self.fired_patterns(g, config) for t in targets}

    def fired_patterns(self, g: Graph, config: Config) -> dict[str, int]:
        """Pattern name -> times Inductor applied it while `config` compiled `g` (one extra compile, caches off)."""
        from dlcfuzz.backends.inductor.patterns import recording_fired

        o = config.options
        with recording_fired() as fired:
            self._compile_with(self.lower(g, config), g, o.get("backend", "inductor"), dict(o.get("knobs") or {}),
                               o.get("fault"))
        return dict(fired)

    # ---- minimization, reproducer, coverage -------------------------------------------------
    def minimize_config(self, config: Config, shows: Callable[[Config], bool]) -> tuple[Config, list[str]]:
        """The smallest set of non-default knobs that still shows the finding (ddmin over the knob
        set, as OATest minimizes optimization sets); [] when the defaults show it already."""
        from dlcfuzz.reduce.ddmin import ddmin

        knobs = dict(config.options.get("knobs") or {})
        if not knobs:
            return config, []

        def with_knobs(keys: list[str]) -> Config:
            kept = {k: knobs[k] for k in sorted(keys)}
            opts = {k: v for k, v in config.options.items() if k != "knobs"}
            return Config(config.name, {**opts, "knobs": kept} if kept else opts)

        if shows(with_knobs([])):
            return with_knobs([]), []
        keys = ddmin(sorted(knobs), lambda ks: shows(with_knobs(list(ks))))
        return with_knobs(list(keys)), [f"{k}={knobs[k]!r}" for k in sorted(keys)]

    def reproducer(self, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str,
                   untyped_outputs: tuple[str, ...] = ()) -> str:
        from dlcfuzz.backends.inductor.reproducer import inductor_script

        return inductor_script(g, inputs, expected, configs, category, title, detail, self.version())

    def start_coverage(self) -> None:
        from dlcfuzz.backends.inductor.coverage import CompilerCoverage

        if self._coverage is None:
            self._coverage = CompilerCoverage()
        self._coverage.start()

    def stop_coverage(self) -> list[str]:
        return self._coverage.stop() if self._coverage is not None else []


__all__ = ["LADDER", "InductorBackend", "InductorCompiled", "StageError", "before_fork", "compile_callable",
           "first_failing_stage", "scrub", "summarize_cpp_compile_error"]
