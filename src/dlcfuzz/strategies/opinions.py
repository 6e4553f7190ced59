"""The second opinion of a graph strategy's numeric finding, on its reduced graph and inputs (what the
reproducer shows): which configuration departs from our reference there, then what the configuration's
independent evaluators (`Backend.independent_evaluators`) say, each run in a sandboxed worker of its own
(`exec/opinions.py`) or, where an evaluator is one of the compared configurations, read from that
configuration's outputs. Called once per distinct finding, when it is recorded; never per test."""

from __future__ import annotations

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.numeric import compare
from dlcfuzz.oracle.opinions import (
    NO_OPINION,
    OPINION_MAX_ELEMENTS,
    OPINION_TIMEOUT_S,
    REFERENCE_JUDGED,
    Opinion,
    SecondOpinion,
    classify,
)
from dlcfuzz.oracle.testcase import Config, TestCase, reply_from_bytes
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.strategies.base import Context


def second_opinion(ctx: Context, tc: TestCase, v: Verdict, g: Graph, inputs: dict[str, np.ndarray],
                   configs: list[Config]) -> SecondOpinion | None:
    """The opinions on finding `v` (of test `tc`) reduced to `g` and `inputs`; None where no configuration
    departs from the reference there (not a finding the reference is involved in: a metamorphic one, an
    inconsistency between configurations that both match it, or a reference that is unknown)."""
    from dlcfuzz.backends import plugin_modules
    from dlcfuzz.exec.cluster import make_pool
    from dlcfuzz.exec.opinions import opinion_request

    if v.category not in REFERENCE_JUDGED or ctx.backend is None:
        return None
    cand = TestCase(g, dict(inputs), configs, seed=tc.seed, compiler=tc.compiler)
    res = ctx.reducer_pool().run(cand.to_bytes())  # the compiler's outputs on the reduced test, sandboxed
    if res.status != "ok":
        return None
    obs, _, r, new_inputs = reply_from_bytes(res.payload)
    if r is None or r["outputs"] is None:
        return None
    reference, cand.inputs = r["outputs"], new_inputs or cand.inputs
    ran = {o.config: o.outputs for o in obs if o.status == "ok" and o.outputs is not None}
    off = [name for name, outs in ran.items() if compare(outs, reference)]
    if not off:
        return None
    # judged: a configuration of the finding, rather one that is no evaluator itself (where every compared
    # configuration departs, ONNXRuntime's optimized one); an evaluator that is the compiler's own other build
    # (`same_kernels`) and departs too gives no opinion (a kernel bug both builds share made an ORT finding a
    # suspected reference error)
    own = {ev.config for name in off for ev in ctx.backend.independent_evaluators(name)}
    departing = min(off, key=lambda n: (n not in v.configs, n in own))
    compiler = ran[departing]
    evaluators = list(ctx.backend.independent_evaluators(departing))
    said: dict[str, Opinion] = {}
    for ev in evaluators:
        if ev.config == departing:
            said[ev.name] = Opinion(ev.name, NO_OPINION, f"it is {departing}, the configuration under judgement")
        elif ev.same_kernels and ev.config in off:  # the compiler's own other build departing too: a shared kernel
            said[ev.name] = Opinion(ev.name, NO_OPINION, f"its configuration {ev.config} departs from the reference "
                                                         "too: part of the finding, not an independent opinion")
        elif ev.config in ran:
            o = classify(ev.name, ran[ev.config], reference, compiler)
            read = f"its configuration {ev.config}, compared in the test: not run again"
            said[ev.name] = Opinion(o.evaluator, o.verdict, f"{read}; {o.reason}" if o.reason else read)
    to_run = [ev.name for ev in evaluators if ev.name not in said]
    size = sum(int(np.asarray(a).size) for a in cand.inputs.values())
    if to_run and size > OPINION_MAX_ELEMENTS:
        said.update({n: Opinion(n, NO_OPINION, f"inputs of {size} elements, over the bound of "
                                               f"{OPINION_MAX_ELEMENTS}") for n in to_run})
    elif to_run:
        with make_pool(None, "dlcfuzz.exec.opinions:make_handler", {"compiler": tc.compiler, "plugins": plugin_modules()},
                       jobs=1, timeout_s=OPINION_TIMEOUT_S) as pool:
            got = pool.run(opinion_request(cand, departing, to_run))
        if got.status == "ok":
            for o in reply_from_bytes(got.payload)[0]:
                said[o.config] = (classify(o.config, o.outputs, reference, compiler) if o.outputs is not None
                                  else Opinion(o.config, NO_OPINION, o.error or o.status))
        said.update({n: Opinion(n, NO_OPINION, f"its worker ended with {got.status}: {(got.error or '')[:200]}".rstrip(": "))
                     for n in to_run if n not in said})
    return SecondOpinion(departing, [said[ev.name] for ev in evaluators])
