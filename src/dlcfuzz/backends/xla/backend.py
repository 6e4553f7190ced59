"""XLA on the CPU, reached through JAX: `jax.jit(f).lower(*args).compile(compiler_options=...)`.

Configurations (options):
- mode "eager": op by op under `jax.disable_jit()`, every primitive dispatched alone (no whole-program
  compile: the compiler-free baseline);
- mode "jit" with `compiler_options`, XLA's DebugOptions for this one compile (no process restart):
  `xla` (defaults), `xla-nopasses` (`xla_disable_all_hlo_passes`: the unoptimized build), `xla-O0..3`
  (`xla_backend_optimization_level`: LLVM's level), and, per test, `xla_disable_hlo_passes` with a set
  sampled from the pass table of the installed XLA (`passes.py`, read from the compiler).
Fast-math options (`xla_cpu_enable_fast_math`, `xla_cpu_fast_math_honor_*`) change results by design
(reassociation, no NaN/Inf semantics): they are not configurations, never sampled, and never compared
for equality.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax  # a missing jax makes `--compiler xla` a clear usage error
import numpy as np

from dlcfuzz.backends.base import BackendBase, Config, Knob
from dlcfuzz.backends.opinions import DEFAULT_EVALUATORS, JAX_EAGER
from dlcfuzz.backends.xla.passes import (
    FAST_MATH,
    PIPELINE_PRECONDITION,
    disabled_passes,
    dumped_changes,
    pass_enabled,
)
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.numeric import has_subnormal
from dlcfuzz.oracle.opinions import Evaluator
from dlcfuzz.programs.core import Dialect

OPT_LEVELS = (0, 1, 2, 3)
SELECTIVE = "xla-disable"  # name prefix of the per-test configurations with sampled disabled passes

# Documented rejections: XLA or JAX refusing a program it does not implement (never a miscompile).
EXPECTED = [
    ("unsupported", re.compile(r"UNIMPLEMENTED|NotImplementedError|not implemented|Unimplemented")),
    # XLA's CPU code generator relies on HLO passes to rewrite legal HLO first (negative pads into
    # slices, copies of outputs that alias parameters): with passes disabled, a debug option, it
    # refuses with a precondition error. `build` marks those (only when passes are disabled, so the
    # same message from a default compile stays a finding).
    ("unsupported", re.compile(r"\[passes disabled\] ")),
]


class PassesDisabledError(RuntimeError):
    """XLA refused to compile because passes it relies on were disabled (not a miscompile)."""


def with_disabled(config: Config, passes: list[str], name: str | None = None) -> Config:
    """`config` with exactly `passes` disabled (in addition to its other compiler options)."""
    opts = {k: v for k, v in (config.options.get("compiler_options") or {}).items() if k != "xla_disable_hlo_passes"}
    if passes:
        opts["xla_disable_hlo_passes"] = ",".join(sorted(passes))
    return Config(name or config.name, {**config.options, "compiler_options": opts})


class XlaCompiled:
    def __init__(self, fn: Callable[..., Any], input_names: list[str], info: dict[str, Any],
                 eager: bool = False) -> None:
        self.fn = fn
        self.input_names = input_names
        self._info = info
        self.eager = eager

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        args = [np.array(inputs[n]) for n in self.input_names]
        if self.eager:
            with jax.disable_jit():
                outs = self.fn(*args)
        else:
            outs = self.fn(*args)
        return [np.array(o, copy=True) for o in outs]

    def info(self) -> dict[str, Any]:
        return dict(self._info)


class XlaBackend(BackendBase):
    name = "xla"
    packages = ("jax", "jaxlib")
    distributions = ("jax", "jaxlib")
    # XLA's fatal log line names the failed CHECK's source file ("F1128 18:48:05.848428 8577
    # parse_flags_from_env.cc:234] ..."); a symbolized abseil stack trace names functions ("@ 0x7f.. xla::...")
    frame_patterns = (r"^[FE]\d{4} [\d:.]+\s+\d+ ([\w\-+]+\.(?:cc|h)):\d+\]",
                      r"^\s*@\s+0x[0-9a-f]+\s+(?:\d+\s+)?((?:xla|tsl|mlir|llvm)::[\w:<>]+)")
    deadline_s = 30.0  # measured: compiles take 0.05-0.5 s; the first in a worker ~1 s more (import, init)
    reduction_checks = 120
    input_sets = 8  # a jit compile costs ~0.5 s, a run of the compiled program milliseconds
    sub_functions = True
    # every jit compile records the HLO passes that changed its module (passes.dumped_changes), for the report
    applied_label = "HLO passes that changed a module"

    def applied_universe(self) -> tuple[str, ...]:
        """The installed pipeline's passes (the generated pass table), as bench/xla_passes.py counts them."""
        from dlcfuzz.backends.xla.passes import pass_table

        return tuple(sorted(pass_table()["passes"]))

    def independent_evaluators(self, config: str) -> Sequence[Evaluator]:
        # the program XLA compiles, run eagerly: that is its configuration "eager" (read where the test compared it)
        return (*DEFAULT_EVALUATORS, dataclasses.replace(JAX_EAGER, config="eager"))

    def documented_limitation(self, config: Config, values: Mapping[str, np.ndarray]) -> str | None:
        """XLA:CPU flushes subnormal floats to zero in compiled code and in JAX's eager ops alike (denormals-are-zero
        and flush-to-zero: JAX's "Sharp bits" documents it, jax-ml/jax#16200 "working as intended"), so it does not
        compute a test whose reference holds a subnormal value (an input, a constant or one computed)."""
        names = sorted(name for name, x in values.items() if has_subnormal(np.asarray(x)))
        return f"XLA:CPU flushes subnormal floats to zero ({', '.join(names[:3])} hold some)" if names else None

    def __init__(self) -> None:
        from dlcfuzz.lower.jax import enable_x64

        enable_x64()  # float64 stays float64 (without it JAX silently computes in 32 bits)
        self._last_traced: tuple[Any, Graph, Any] | None = None  # (program, graph, its jax.stages.Lowered)

    def version(self) -> str:
        import jaxlib

        return f"jax {jax.__version__} (jaxlib {jaxlib.__version__}, XLA CPU)"

    def program_dialect(self) -> Dialect | None:
        """JAX programs with JAX's own semantics and transformations (backends/xla/programs.py)."""
        from dlcfuzz.backends.xla.programs import DIALECT

        return DIALECT

    def knobs(self) -> list[Knob]:
        from dlcfuzz.backends.xla.passes import optional_passes

        return [
            Knob("mode", ["eager", "jit"], "op-by-op under jax.disable_jit() or one XLA compile"),
            Knob("xla_disable_all_hlo_passes", [False, True], "XLA DebugOptions: skip every HLO pass"),
            Knob("xla_backend_optimization_level", list(OPT_LEVELS), "XLA DebugOptions: LLVM optimization level"),
            Knob("xla_disable_hlo_passes", optional_passes(), "XLA DebugOptions: HLO passes to skip (a set)"),
        ]

    def configs(self) -> dict[str, Config]:
        from dlcfuzz.backends.xla.passes import optional_passes

        c = {
            "eager": Config("eager", {"mode": "eager"}),
            # the unoptimized build: every HLO pass off except those XLA:CPU needs to compile and to be
            # correct (passes.py); `xla_disable_all_hlo_passes` itself also skips layout assignment,
            # which makes transposes wrong by design: `xla-nopasses-all`, never a default
            "xla-nopasses": Config("xla-nopasses", {"mode": "jit", "compiler_options": {
                "xla_disable_hlo_passes": ",".join(optional_passes())}}),
            "xla-nopasses-all": Config("xla-nopasses-all", {"mode": "jit",
                                                            "compiler_options": {"xla_disable_all_hlo_passes": True}}),
            "xla": Config("xla", {"mode": "jit", "compiler_options": {}}),
        }
        for lvl in OPT_LEVELS:
            c[f"xla-O{lvl}"] = Config(f"xla-O{lvl}", {"mode": "jit",
                                                      "compiler_options": {"xla_backend_optimization_level": lvl}})
        return c

    def default_pair(self) -> tuple[Config, Config]:
        c = self.configs()
        return c["xla-nopasses"], c["xla"]

    def disruptive_rules(self) -> tuple[str, ...] | None:
        # no rule binds: the lowering writes jax.numpy, whose documented dtype promotion and NumPy broadcasting
        # (https://docs.jax.dev/en/latest/type_promotion.html) turn a graph that breaks a dtype, rank or
        # shape rule into a valid program before XLA sees it, so "accepted" says nothing about XLA
        return ()

    def expected_error(self, message: str) -> str | None:
        return next((name for name, pat in EXPECTED if pat.search(message)), None)

    def per_test_configs(self, rng: np.random.Generator, g: Graph, configs: list[Config]) -> list[Config]:
        """Half of the tests add a configuration compiled with a sampled set of HLO passes disabled
        (from the installed XLA's pass table), next to the campaign's own."""
        from dlcfuzz.backends.xla.passes import sample_disabled

        out = list(configs)
        base = next((c for c in configs if c.options.get("mode", "jit") == "jit"
                     and not (c.options.get("compiler_options") or {})), None)
        if base is not None and rng.random() < 0.5:
            out.append(with_disabled(base, sample_disabled(rng), SELECTIVE))
        return out

    def lower(self, g: Graph, config: Config) -> Any:
        from dlcfuzz.lower.jax import to_jax_program

        return to_jax_program(g)

    def lower_key(self, config: Config) -> str:
        return "jax"

    def build(self, lowered: Any, g: Graph, config: Config) -> XlaCompiled:
        o = config.options
        mode = o.get("mode", "jit")
        names = [v.name for v in g.inputs]
        if mode == "eager":
            return XlaCompiled(lowered.function(), names, {"mode": "eager"}, eager=True)
        if mode != "jit":
            raise ValueError(f"unknown xla mode {mode!r} (expected 'eager' or 'jit')")
        co = dict(o.get("compiler_options") or {})
        fast = sorted(set(co) & set(FAST_MATH))
        if fast:
            raise ValueError(f"fast-math options {fast} change results by design: not compared for equality")
        traced = self._traced(lowered, g)
        t0 = time.perf_counter()
        try:
            with dumped_changes(co) as (recording, changed):
                compiled = traced.compile(compiler_options=recording)
        except Exception as e:
            if (co.get("xla_disable_all_hlo_passes") or co.get("xla_disable_hlo_passes")) \
                    and PIPELINE_PRECONDITION.search(str(e)):
                raise PassesDisabledError(f"[passes disabled] {str(e).splitlines()[0]}") from e
            raise
        return XlaCompiled(compiled, names, {"mode": "jit", "compile_s": round(time.perf_counter() - t0, 4),
                                             "applied": sorted(changed)})

    def _traced(self, lowered: Any, g: Graph) -> Any:
        """`lowered` traced and lowered to StableHLO by `jax.jit(...).lower`, once per program: a test's jit
        configurations differ only in the compiler options of `compile`, which starts from the same module
        every time (JAX caches no executable when options are given). The last program's is kept (the
        worker builds one test's configurations in a row). A tracing error is raised again each time."""
        last = self._last_traced
        if last is not None and last[0] is lowered and last[1] is g:
            return last[2]
        specs = [jax.ShapeDtypeStruct(v.type.shape, np.dtype(v.type.dtype)) for v in g.inputs]
        traced = jax.jit(lowered.function()).lower(*specs)  # tracing: JAX's own rejections come from here
        self._last_traced = (lowered, g, traced)
        return traced

    def compile(self, g: Graph, config: Config) -> XlaCompiled:
        return self.build(self.lower(g, config), g, config)

    # ---- minimization, reproducer -----------------------------------------------------------
    def minimize_config(self, config: Config, shows: Callable[[Config], bool]) -> tuple[Config, list[str]]:
        """First the smallest subset of the configuration's own disabled passes that still shows the
        finding; then the culprit: the smallest set of HLO passes whose disabling removes it (ddmin
        over the optional passes of the pass table), named `pass:NAME`. [] when disabling every
        optional pass does not remove it (a required pass, or code generation after the passes)."""
        from dlcfuzz.backends.xla.passes import optional_passes
        from dlcfuzz.reduce.ddmin import ddmin

        if config.options.get("mode", "jit") == "eager":
            return config, []
        own = disabled_passes(config.options)
        if own:
            if shows(with_disabled(config, [])):
                own = []
            else:
                own = ddmin(own, lambda ps: shows(with_disabled(config, list(ps))))
            config = with_disabled(config, own)
        if (config.options.get("compiler_options") or {}).get("xla_disable_all_hlo_passes"):
            return config, []
        candidates = [p for p in optional_passes() if p not in own]
        if shows(with_disabled(config, own + candidates)):
            return config, []
        culprits = ddmin(candidates, lambda ps: not shows(with_disabled(config, own + list(ps))))
        return config, [f"pass:{p}" for p in sorted(culprits)]

    def reproducer(self, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str,
                   untyped_outputs: tuple[str, ...] = ()) -> str:
        from dlcfuzz.backends.xla.reproducer import jax_script

        return jax_script(g, inputs, expected, configs, category, title, detail, self.version())


__all__ = ["FAST_MATH", "OPT_LEVELS", "XlaBackend", "XlaCompiled", "disabled_passes", "pass_enabled", "with_disabled"]
