"""OATest synthesis: trigger rate per compiler and validity of synthesized tests.

Runs an `--strategy oatest` campaign (no reduction) per installed compiler and reads its store:
- trigger rate: share of (test, targeted optimization) pairs where the optimization fired in the
  optimized build (ONNXRuntime: the optimized model differs with the optimizer disabled; TVM: the
  pass changed the module), per optimization and overall (OATest reports 91% on TVM, 75% on
  ONNXRuntime);
- validity: share of synthesized tests that the unoptimized build compiles and runs (a failure of
  the optimized build alone is what the campaign looks for, not an invalid test);
- the ablation "insertion without repair": the pattern's holes bound to random context values and
  its outputs wired to random inputs, no re-concretization and no bridges, checked by our type
  checker (OATest measured 5% valid).
Prints, last: `synthesis validity: X%`.

  python bench/oatest_synthesis.py [--tests 300] [--tvm-tests 40] [--patterns FILE] [--seed 0]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

import numpy as np


def campaign(compiler: str, tests: int, seed: int, patterns: str | None) -> dict:
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        Campaign(campaign_options(compiler=compiler, strategy="oatest", seconds=36000, jobs=2, seed=seed, out=out,
                                 max_tests=tests, quiet=True, reduce=False, patterns=patterns)).run()
        db = sqlite3.connect(out / "store.sqlite")
        done = db.execute("SELECT COUNT(*) FROM tests WHERE status='done'").fetchone()[0]
        first = "ort-disable" if compiler == "onnxruntime" else "tvm-unopt"
        valid = db.execute("SELECT COUNT(DISTINCT test_id) FROM observations WHERE config=? AND status='ok'",
                           (first,)).fetchone()[0]
        rates = db.execute("SELECT optimization, SUM(fired), COUNT(*) FROM oatest_triggers GROUP BY optimization "
                           "ORDER BY optimization").fetchall()
        findings = db.execute("SELECT category, COUNT(*) FROM findings GROUP BY category").fetchall()
        unknown = dict(db.execute("SELECT category, count FROM unknowns").fetchall())
        db.close()
    return {"tests": done, "valid": valid, "rates": rates, "findings": findings, "unknown": unknown}


def without_repair(tests: int, seed: int) -> float:
    """Share of naive insertions (random binding, random wiring, no bridges) our checker accepts."""
    from dlcfuzz.ir.graph import Node, Value
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
            g.check()
            ok += 1
        except Exception:  # the checker's objection: an invalid insertion
            pass
    return ok / tests


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=300, help="synthesized tests against ONNXRuntime")
    ap.add_argument("--tvm-tests", type=int, default=40, dest="tvm_tests", help="synthesized tests against TVM")
    ap.add_argument("--patterns", default=None, help="pattern file (default: the built-in library)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    compilers = []
    for name, module, n in (("onnxruntime", "onnxruntime", a.tests), ("tvm", "tvm", a.tvm_tests)):
        try:
            __import__(module)
            if n > 0:
                compilers.append((name, n))
        except ImportError:
            print(f"{name}: not installed, skipped")
    total = valid = 0
    for name, n in compilers:
        r = campaign(name, n, a.seed, a.patterns)
        fired = sum(int(f) for _, f, _ in r["rates"])
        targeted = sum(int(c) for _, _, c in r["rates"])
        print(f"\n{name}: {r['tests']} synthesized tests, valid {100.0 * r['valid'] / max(r['tests'], 1):.1f}%, "
              f"findings {dict(r['findings'])}, unknown {r['unknown']}")
        for opt, f, c in r["rates"]:
            print(f"  {opt:32s} fired {int(f):4d} / {int(c):4d}  ({100.0 * int(f) / int(c):.0f}%)")
        print(f"trigger rate {name}: {100.0 * fired / max(targeted, 1):.1f}% ({fired} of {targeted} targeted)")
        total += r["tests"]
        valid += r["valid"]
    print(f"\ninsertion without repair (ablation): {100.0 * without_repair(300, a.seed):.1f}% valid")
    print(f"synthesis validity: {100.0 * valid / max(total, 1):.1f}%")


if __name__ == "__main__":
    main()
