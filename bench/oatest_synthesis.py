"""OATest synthesis: trigger rate per compiler and validity of synthesized tests.

Synthesizes tests as `--strategy oatest` does (same patterns, same Synthesizer, the backend's
configurations for the targeted optimizations) and runs them in the sandboxed oatest workers:
- validity: synthesized tests the unoptimized build compiles and runs, over every splice attempt,
  the discarded ones included (an attempt the validity check refused, or a call that fell back to
  a plain seed graph, is a synthesis that did not give a valid test);
- trigger rate: share of (test, targeted optimization) pairs where the optimization fired because
  of the pattern: it fired on the synthesized graph (ONNXRuntime: the optimized model differs with
  the optimizer disabled; TVM: the pass changed the module) and not on the context the pattern was
  spliced into (the same seed graph without it). "Any change" (fired on the synthesized graph, the
  context's own firing included) is printed beside it;
- the ablation "insertion without repair": the pattern's holes bound to random context values and
  its outputs wired to random inputs, no re-concretization and no bridges, checked by our type
  checker (OATest measured 5% valid).
Prints, last: `synthesis validity: X%`.

  python bench/oatest_synthesis.py [--tests 300] [--tvm-tests 40] [--patterns FILE] [--seed 0] [--jobs 2]
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np


def measure(compiler: str, tests: int, seed: int, patterns: str | None, jobs: int) -> dict:
    from dlcfuzz.backends import get_backend, plugin_modules
    from dlcfuzz.exec.pool import WorkerPool
    from dlcfuzz.ir.blob import unpack
    from dlcfuzz.oracle.testcase import reply_from_bytes
    from dlcfuzz.strategies.oatest import HANDLER, campaign_patterns
    from dlcfuzz.strategies.probe import load_or_probe
    from dlcfuzz.synth.synthesize import Synthesizer

    backend = get_backend(compiler)
    pair = list(backend.default_pair())
    pool = WorkerPool(HANDLER, {"compiler": compiler, "plugins": plugin_modules()}, jobs=jobs,
                      timeout_s=backend.deadline_s)
    try:
        caps = load_or_probe(pool, backend, pair)  # as the strategy: operators and dtypes the compiler supports
        syn = Synthesizer(campaign_patterns(patterns, compiler), compiler,
                          lambda op, dt: caps.get((op, dt), (True, ""))[0] and dt not in backend.known_gaps(op))
        made = synthesize(syn, backend, pair, compiler, tests, seed)
        results = pool.map([b for _, t, c in made for b in (t, c)])
    finally:
        pool.close()

    def fired(res) -> dict[str, bool]:
        return ((unpack(res.payload)[0].get("oatest") or {}).get("fired") or {}) if res.status == "ok" else {}

    valid = 0
    rates: dict[str, Counter] = {}
    for k, (targets, _, _) in enumerate(made):
        res, ctx = results[2 * k], results[2 * k + 1]
        if res.status != "ok" or reply_from_bytes(res.payload)[0][0].status != "ok":
            continue  # the unoptimized build did not run it: not a valid test
        valid += 1
        on_test, on_context = fired(res), fired(ctx)
        for t in targets:
            c = rates.setdefault(t, Counter())
            c["targeted"] += 1
            c["any"] += bool(on_test.get(t))
            c["pattern"] += bool(on_test.get(t)) and not on_context.get(t)
    return {"tests": len(made), "attempts": syn.attempts, "discarded": syn.failures, "unspliced": syn.unspliced,
            "valid": valid, "rates": rates, "rejected": syn.rejected, "dropped": syn.dropped}


def synthesize(syn, backend, pair: list, compiler: str, tests: int, seed: int) -> list[tuple[list[str], bytes, bytes]]:
    """`tests` syntheses as the strategy makes them: (targets, the synthesized test, its context)."""
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import TestCase

    by_name = {p.name: p for p in syn.patterns}
    made = []
    for i in range(tests):
        rng = np.random.default_rng([seed, i])
        s = syn.next(rng)
        if not s.pattern:  # every attempt discarded: a plain seed graph, no synthesized test
            continue
        targets = by_name[s.pattern].targets_for(compiler)
        configs = backend.oatest_configs(rng, targets, pair)
        meta = {"oatest": {"pattern": s.pattern, "targets": targets}}
        inputs = sample_inputs(s.graph, rng)
        tc = TestCase(s.graph, inputs, configs, seed=i, compiler=compiler, strategy="oatest", meta=meta)
        ctx = TestCase(s.context, sample_inputs(s.context, rng), configs, seed=i, compiler=compiler,
                       strategy="oatest", meta=meta)
        made.append((targets, tc.to_bytes(), ctx.to_bytes()))
        if reference_of(TestCase(s.graph, dict(inputs), configs, seed=i), tries=1, stability=False).outputs is not None:
            syn.accept(s)  # as the strategy grows its seed pool
    return made


def without_repair(tests: int, seed: int) -> float:
    """Share of naive insertions (random binding, random wiring, no bridges) our checker accepts."""
    from dlcfuzz.ir.graph import Node, Value
    from dlcfuzz.ops import check_graph
    from dlcfuzz.synth.library import library
    from dlcfuzz.synth.synthesize import Synthesizer

    rng = np.random.default_rng(seed)
    syn = Synthesizer(library(), "onnxruntime")
    ok = 0
    for t in range(tests):
        seed_graph, _ = syn.seed_graph(rng)
        p = syn.patterns[int(rng.integers(len(syn.patterns)))]
        g = seed_graph.copy()
        k = int(rng.integers(0, len(g.nodes) + 1))
        before = [v.name for v in g.inputs] + [v.name for n in g.nodes[:k] for v in n.outputs]
        ren = {h.name: before[int(rng.integers(len(before)))] for h in p.holes}
        ren.update({c: f"n{t}_{c}" for c in p.graph.constants})
        ren.update({v.name: f"n{t}_{v.name}" for n in p.graph.nodes for v in n.outputs})
        body = [Node(n.op, [ren[i] for i in n.inputs], [Value(ren[v.name], v.type) for v in n.outputs], n.attrs,
                     f"n{t}_{n.name}") for n in p.graph.nodes]
        g.constants.update({ren[c]: a for c, a in p.graph.constants.items()})
        after = g.nodes[k:]
        for o in p.graph.outputs:
            slots = [(n, j) for n in after for j in range(len(n.inputs))]
            if slots:
                n, j = slots[int(rng.integers(len(slots)))]
                n.inputs[j] = ren[o]
        g.nodes = g.nodes[:k] + body + after
        try:
            check_graph(g)
            ok += 1
        except Exception:  # the checker's objection: an invalid insertion
            pass
    return ok / tests


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=300, help="synthesized tests against ONNXRuntime")
    ap.add_argument("--tvm-tests", type=int, default=40, dest="tvm_tests", help="synthesized tests against TVM")
    ap.add_argument("--patterns", default=None, help="pattern file (default: the library and the shipped patterns)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    compilers = []
    for name, module, n in (("onnxruntime", "onnxruntime", a.tests), ("tvm", "tvm", a.tvm_tests)):
        try:
            __import__(module)
            if n > 0:
                compilers.append((name, n))
        except ImportError:
            print(f"{name}: not installed, skipped")
    attempts = valid = 0
    for name, n in compilers:
        r = measure(name, n, a.seed, a.patterns, a.jobs)
        fired = sum(c["pattern"] for c in r["rates"].values())
        anywhere = sum(c["any"] for c in r["rates"].values())
        targeted = sum(c["targeted"] for c in r["rates"].values())
        print(f"\n{name}: {r['attempts']} splice attempts, {r['discarded']} discarded "
              f"({dict(r['rejected'].most_common(4))}), {r['unspliced']} calls without a splice, "
              f"{r['tests']} synthesized tests, {r['valid']} run by the unoptimized build; patterns dropped: "
              f"{sum(r['dropped'].values())}")
        for opt, c in sorted(r["rates"].items()):
            print(f"  {opt:32s} fired on the pattern {c['pattern']:4d} / {c['targeted']:4d} "
                  f"({100.0 * c['pattern'] / c['targeted']:.0f}%), anywhere {c['any']:4d}")
        print(f"trigger rate {name}: {100.0 * fired / max(targeted, 1):.1f}% ({fired} of {targeted} targeted; "
              f"fired anywhere, the context's own firing included: {100.0 * anywhere / max(targeted, 1):.1f}%)")
        attempts += r["attempts"]
        valid += r["valid"]
    print(f"\ninsertion without repair (ablation): {100.0 * without_repair(300, a.seed):.1f}% valid")
    print(f"synthesis validity: {100.0 * valid / max(attempts, 1):.1f}% ({valid} valid tests of {attempts} splice attempts)")


if __name__ == "__main__":
    main()
