"""The oatest strategy inside a campaign: test synthesis, trigger-rate statistics, and the dedup key
by minimal optimization set. `campaign/loop.py` calls these three hooks and judges the tests with
its ordinary oracles (reference interpreter + optimized vs unoptimized configurations, Chebyshev
distance with the per-dtype thresholds of oracle/numeric.py)."""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.oracle.testcase import TestCase
from dlcfuzz.errors import UsageError
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.ir.graph import Graph
from dlcfuzz.synth.pattern import Pattern


def load_campaign_patterns(path: str | None) -> list[Pattern]:
    from dlcfuzz.synth.library import library
    from dlcfuzz.synth.pattern import load_patterns

    return load_patterns(path) if path else library()


def tvm_config(rng: np.random.Generator, base: Config, targets: list[str]) -> Config:
    """The optimized TVM configuration of a synthesized test: the targeted passes (with what they
    require) in random order, then the rest of the default optimization pipeline."""
    from dlcfuzz.backends.relax_passes import OPTIMIZE, PASSES, sample_pass_sequence, violations

    wanted = [t for t in targets if t in PASSES]
    seq = sample_pass_sequence(rng, min_len=len(wanted), max_len=len(wanted), pool=wanted) if wanted else []
    seq += [p for p in OPTIMIZE if p not in seq]
    if violations(seq):
        seq = list(OPTIMIZE) + [t for t in wanted if t not in OPTIMIZE]
    return Config("tvm-oatest", {**base.options, "passes": seq})


def make_test(camp: Any, seq: int, seed: int, rng: np.random.Generator, supported: Any) -> TestCase:
    """The synthesized test of number `seq` (a function of the master seed: the seed pool grows at
    generation time with tests whose reference is usable, never with worker results, whose arrival
    order depends on timing). A resumed campaign first replays the generation of its earlier tests
    (milliseconds each), so that its seed pool, and every later test, is the uninterrupted run's."""
    from dlcfuzz.oracle.policy import test_seed
    from dlcfuzz.synth.synthesize import Synthesizer

    o = camp.opts
    if getattr(camp, "_oatest", None) is None:
        try:
            camp._oatest = Synthesizer(load_campaign_patterns(o.patterns), o.compiler, supported,
                                       seed_ops=max(2, min(o.ops, 10)), only_ops=o.only_ops or None)
        except ValueError as e:  # every pattern uses an operator/dtype this compiler lacks
            raise UsageError(f"--strategy oatest: {e}") from None
        for earlier in range(seq):
            s_seed = test_seed(o.seed, earlier)
            _synthesize(camp, camp._oatest, s_seed, np.random.default_rng(s_seed))
    return _synthesize(camp, camp._oatest, seed, rng)


def _synthesize(camp: Any, syn: Any, seed: int, rng: np.random.Generator) -> TestCase:
    from dlcfuzz.oracle.policy import reference_of

    o = camp.opts
    s = syn.next(rng)
    by_name = {p.name: p for p in syn.patterns}
    targets = sorted({t for name in s.patterns if name in by_name for t in by_name[name].targets_for(o.compiler)})
    configs = list(camp.configs)
    if o.compiler == "tvm" and not o.configs:
        configs = [camp.backend.configs()["tvm-unopt"], tvm_config(rng, camp.backend.configs()["tvm-opt"], targets)]
    inputs = sample_inputs(s.graph, rng)
    meta = {"oatest": {"pattern": s.pattern, "patterns": s.patterns, "targets": targets, "order": s.order,
                       "reused": s.reused, "bridged": s.bridged, "fresh": s.fresh, "connected": s.connected}}
    tc = TestCase(s.graph, inputs, configs, seed=seed, compiler=o.compiler, strategy=o.strategy, meta=meta)
    if reference_of(TestCase(s.graph, dict(inputs), configs, seed=seed), tries=1, stability=False).outputs is not None:
        syn.accept(s)
    return tc


def record_triggers(store: Any, test_id: int, tc: TestCase, reply: bytes | None) -> None:
    from dlcfuzz.synth.worker import fired_from_reply

    fired = fired_from_reply(reply) if reply else None
    if not fired:
        return
    pattern = tc.meta.get("oatest", {}).get("pattern", "")
    store.db.executemany("INSERT OR REPLACE INTO oatest_triggers VALUES (?,?,?,?)",
                         [(test_id, pattern, opt, int(f)) for opt, f in fired.items()])


def trigger_rates(store: Any) -> dict[str, tuple[int, int]]:
    """optimization -> (tests where it fired, tests that targeted it)."""
    rows = store.db.execute("SELECT optimization, SUM(fired), COUNT(*) FROM oatest_triggers "
                            "GROUP BY optimization ORDER BY optimization").fetchall()
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}


def trigger_table_html(store: Any) -> str:
    rates = trigger_rates(store)
    if not rates:
        return ""
    fired = sum(f for f, _ in rates.values())
    total = sum(n for _, n in rates.values())
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{f}</td><td>{n}</td><td>{100.0 * f / n:.0f}%</td></tr>"
                   for k, (f, n) in rates.items())
    return ("<h2>Trigger rate per optimization (oatest)</h2><table><tr><th>optimization</th><th>fired</th>"
            f"<th>targeted</th><th>rate</th></tr>{rows}<tr><th>all</th><th>{fired}</th><th>{total}</th>"
            f"<th>{100.0 * fired / max(total, 1):.0f}%</th></tr></table>")


def minimal_set_key(camp: Any, tc: TestCase, g: Graph, inputs: dict[str, np.ndarray], v: Any, key: str) -> str:
    """The dedup key of an inconsistency (or an optimized build's rejection) of a synthesized test:
    its category, compiler and configurations with the minimal optimization set that still shows
    it (`|opts=A,B`), whatever the operators, the kind of mismatch or the message; `key` (by
    operators) with `|opts=none` when no listed optimization is needed, and unchanged when the
    reduction cannot run."""
    from dlcfuzz.campaign.loop import NUMERIC
    from dlcfuzz.oracle.testcase import reply_from_bytes
    from dlcfuzz.oracle.verdict import judge
    from dlcfuzz.synth.dedup import minimal_optimizations

    configs = [c for c in tc.configs if c.name in v.configs]
    if len(configs) != 2:
        return key
    reference, optimized = configs  # in the test's order: the unoptimized build first

    def shows(cand: Graph, cand_inputs: dict[str, np.ndarray], pair: list[Config]) -> bool:
        t = TestCase(cand, dict(cand_inputs), pair, seed=tc.seed, compiler=tc.compiler)
        res = camp.reducer_pool().run(t.to_bytes())
        if res.status != "ok":
            return False
        obs, _, r, _ = reply_from_bytes(res.payload)
        got = judge(tc.compiler, camp.backend.expected_error, r["outputs"] if r else None, obs, r["unstable"] if r else ())
        same = NUMERIC if v.category in NUMERIC else (v.category,)
        return any(x.kind == "bug" and x.category in same and optimized.name in x.configs for x in got)

    try:
        opts = minimal_optimizations(tc.compiler if tc.compiler == "tvm" else "onnxruntime", g, inputs,
                                     reference, optimized, shows)
    except Exception as e:  # a failed reduction must not lose the finding
        camp.log(f"minimal optimization set: {type(e).__name__}: {e}")
        return key
    if not opts:
        return f"{key}|opts=none"
    # whatever the mismatch kind (value, nan, ...) or the rejection's message
    return f"{v.category}|{tc.compiler}|{','.join(sorted(v.configs))}|opts={','.join(opts)}"
