"""The worker-side handler: imports its compiler once, then compiles and runs test cases."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Backend
from dlcfuzz.errors import LoweringGap
from dlcfuzz.oracle.testcase import Observation, TestCase, observations_to_bytes


class NonTensorOutput(RuntimeError):
    """The compiler returned something other than a tensor for an output."""


def raised_inside(e: BaseException, packages: tuple[str, ...]) -> bool:
    """The exception came out of the compiler's own code: below dlcfuzz's innermost frame there is
    a frame of one of `packages` (e.g. the Relax BlockBuilder rejecting an ill-typed binding while
    we lower; its C++ frames follow the FFI frame)."""
    files = []
    tb = e.__traceback__
    while tb is not None:
        files.append(Path(tb.tb_frame.f_code.co_filename).parts)
        tb = tb.tb_next
    ours = [i for i, parts in enumerate(files) if "dlcfuzz" in parts]
    below = files[ours[-1] + 1:] if ours else files
    return any(p in parts for parts in below for p in packages)


def run_configs(backend: Backend, tc: TestCase, note: Callable[[str], None] = lambda s: None,
                invalid: bool = False, input_sets: list[dict[str, np.ndarray]] | None = None) -> list[Observation]:
    """Compile every configuration once and run it on each input set (`input_sets`, default the test's
    own inputs): an observation per configuration and set, compile_s on set 0's; compile_s/run_s time only
    the compiler's own calls. A configuration that fails before it runs has one observation, of set 0.
    `invalid`: the graph breaks a type rule on purpose, so an exception the compiler's own code
    raises while we lower (e.g. the Relax BlockBuilder) is its rejection."""
    sets = input_sets if input_sets is not None else [tc.inputs]
    obs: list[Observation] = []
    lowered: dict[str, Any] = {}
    for config in tc.configs:
        stage = "lower"
        t0 = time.perf_counter()
        try:
            key = backend.lower_key(config)
            if key not in lowered:
                note(f"{config.name}:lower")
                lowered[key] = backend.lower(tc.graph, config)
            note(f"{config.name}:compile")
            stage = "compile"
            t0 = time.perf_counter()
            compiled = backend.build(lowered[key], tc.graph, config)
            t1 = time.perf_counter()
            stage = "run"
            note(f"{config.name}:run")
            obs.extend(run_sets(compiled, config.name, sets, t1 - t0))
        except MemoryError:
            raise  # the pool classifies it as out-of-memory
        except Exception as e:  # the oracle decides expected vs unexpected
            t2 = time.perf_counter()
            if stage == "lower" and isinstance(e, LoweringGap):
                # our lowering documents that it cannot write this form for this configuration (often a
                # gap of the installed release): the configuration is not tested, nothing failed
                obs.append(Observation(config.name, "skipped", error=f"{type(e).__name__}: {e}"))
                continue
            if stage == "lower" and not (invalid and raised_inside(e, backend.packages)):
                if invalid:
                    # our lowering cannot express this broken graph for this front door: not tested
                    obs.append(Observation(config.name, "skipped", error=f"{type(e).__name__}: {e}"))
                    continue
                raise  # our lowering failing is dlcfuzz's bug, never the compiler's
            obs.append(Observation(
                config.name, "error", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc(limit=12),
                compile_s=(t2 - t0) if stage == "compile" else 0.0,
            ))
    return obs


def run_sets(compiled: Any, config: str, sets: list[dict[str, np.ndarray]], compile_s: float) -> list[Observation]:
    """One compiled configuration run on each input set: an observation per set (an exception while
    running one set is that set's error; the next set still runs)."""
    obs = []
    for index, inputs in enumerate(sets):
        t1 = time.perf_counter()
        try:
            # each run gets its own copy: a compiler may write into a fed buffer (ORT's training-mode
            # BatchNormalization updates the running mean in place of its mean input), and the next
            # configuration must not see the changed values
            outs = compiled.run({name: value.copy() for name, value in inputs.items()})
            t2 = time.perf_counter()
            for k, o in enumerate(outs):  # e.g. onnxruntime 1.20.1 returned None for an empty folded Div
                if np.asarray(o).dtype == object:
                    raise NonTensorOutput(f"output {k} is {np.asarray(o).ravel()[:1].tolist()} (dtype object), "
                                          "not a tensor")
            info = compiled.info() if hasattr(compiled, "info") else {}  # e.g. the kernels that ran
            obs.append(Observation(config, "ok", outputs=outs, compile_s=compile_s if index == 0 else 0.0,
                                   run_s=t2 - t1, info=info, input_set=index))
        except MemoryError:
            raise  # the pool classifies it as out-of-memory
        except Exception as e:  # the oracle decides expected vs unexpected
            obs.append(Observation(config, "error", error=f"{type(e).__name__}: {e}",
                                   traceback=traceback.format_exc(limit=12), input_set=index))
    return obs


def preload_modules(handler: str, init: dict) -> list[str]:
    """What a zygote imports once for the workers of a campaign's pool (exec/pool.py): the handler's module,
    the campaign's plug-ins, the compiler's backend module (the compiler itself: seconds to import) and the
    reference policy's modules. Nothing here makes a backend or touches its state."""
    from dlcfuzz.backends import BACKENDS, registry_name

    modules = [handler.partition(":")[0], *init.get("plugins", [])]
    compiler = registry_name(str(init.get("compiler", "")))
    if compiler in BACKENDS:
        modules.append(BACKENDS[compiler][0])
    return [*modules, "dlcfuzz.oracle.policy"]


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Pool factory: init = {"compiler": NAME, "invalid": bool}. Imports the compiler here, once per
    worker. Valid graphs get the reference policy here (in parallel with the other workers);
    invalid ones (disruptive mode) have no semantics, so no reference."""
    from dlcfuzz.backends import load_plugins
    from dlcfuzz.exec.pool import progress

    load_plugins(init.get("plugins", []))
    backend = get_backend(init["compiler"])
    version = backend.version()
    invalid = bool(init.get("invalid"))
    # the compiler's own code coverage while it compiles and runs (where the backend can measure it)
    measure = bool(init.get("compiler_coverage")) and backend.collects_coverage

    def run(tc: TestCase, sets: list[dict[str, np.ndarray]] | None = None) -> tuple[list[Observation], list[str]]:
        if not measure:
            return run_configs(backend, tc, progress, invalid=invalid, input_sets=sets), []
        backend.start_coverage()
        try:
            obs = run_configs(backend, tc, progress, invalid=invalid, input_sets=sets)
        finally:
            items = backend.stop_coverage()
        return obs, items

    def handle(payload: bytes) -> bytes:
        from dlcfuzz.exec.pool import retire_after_task
        from dlcfuzz.oracle.policy import drawn_input_set, reference_of

        tc = TestCase.from_bytes(payload)
        damage = backend.damages_process(tc.graph)
        if damage is not None:  # before it runs: a crash of this test's own also ends the worker
            retire_after_task(damage)
        if invalid:  # no semantics, so nothing to judge on more inputs
            obs, items = run(tc)
            return observations_to_bytes(obs, version, coverage=items)
        sampled = tc.inputs
        ref = reference_of(tc, stability=False)  # may re-sample inputs; stability is checked on demand
        more = []
        for index in range(1, tc.input_sets):
            one = TestCase(tc.graph, drawn_input_set(tc, index), tc.configs, seed=tc.seed, compiler=tc.compiler)
            more.append((reference_of(one, stability=False), one.inputs))  # each set's own re-sampling
        obs, items = run(tc, [tc.inputs, *(inputs for _, inputs in more)])
        return observations_to_bytes(obs, version, ref, tc.inputs if tc.inputs is not sampled else None, items, more)

    return handle
