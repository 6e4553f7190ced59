"""The second-opinion worker: runs a configuration's independent evaluators (`Backend.independent_evaluators`)
on a finding's reduced graph and inputs, in a sandboxed process of its own (an evaluator may crash, hang or
take the memory: the campaign does not). Its reply holds one observation per evaluator, named after it."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dlcfuzz.backends import get_backend, load_plugins
from dlcfuzz.oracle.testcase import Config, Observation, TestCase, observations_to_bytes


def opinion_request(tc: TestCase, config: str, evaluators: list[str]) -> bytes:
    """The payload asking for `evaluators` (names) of configuration `config` on test `tc`."""
    return TestCase(tc.graph, tc.inputs, [Config(config, {"evaluators": evaluators})], seed=tc.seed,
                    compiler=tc.compiler).to_bytes()


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Pool factory: init = {"compiler": NAME, "plugins": [...]}."""
    load_plugins(init.get("plugins", []))
    backend = get_backend(init["compiler"])

    def handle(payload: bytes) -> bytes:
        tc = TestCase.from_bytes(payload)
        config = tc.configs[0]
        wanted = config.options["evaluators"]
        obs = []
        for ev in backend.independent_evaluators(config.name):
            if ev.name not in wanted:
                continue
            t0 = time.monotonic()
            try:
                with np.errstate(all="ignore"):
                    outs = [np.asarray(o) for o in ev.run(tc.graph, {k: v.copy() for k, v in tc.inputs.items()})]
                obs.append(Observation(ev.name, "ok", outs, run_s=time.monotonic() - t0))
            except Exception as e:  # no opinion from this evaluator: the reason is what it raised
                obs.append(Observation(ev.name, "error", None, f"{type(e).__name__}: {str(e)[:300]}",
                                       run_s=time.monotonic() - t0))
        return observations_to_bytes(obs, "")

    return handle
