"""False positives: a correct configuration pair over many random tests must give zero findings.

ONNXRuntime without optimizations vs with basic optimizations (constant folding and
redundancy elimination, which must not change results), both also judged against the NumPy
reference; another compiler with its default configurations. Every finding of any category counts
(the pair must agree and every configuration must match the reference), except one that the
compiler's known-bugs register matches: a real bug, reproduced with the compiler's API alone and
listed with its evidence (printed apart, with its register id, so that a too-broad entry shows).
Unjudged tests (unknowns) stay out of the judged count. Prints the counts, the non-finite share,
then, last: `false positives: N in T judged tests`.

  python bench/false_positives.py [--tests 2000] [--compiler onnxruntime] [--configs A,B] [--strategy random]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

QUIET_PAIR = {"onnxruntime": "ort-disable,ort-basic"}  # basic optimizations must not change results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=2000)
    ap.add_argument("--configs", default=None, help="configurations to compare (default: a pair that must agree)")
    ap.add_argument("--compiler", default="onnxruntime")
    ap.add_argument("--strategy", default="random")
    a = ap.parse_args()
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store

    configs = a.configs or QUIET_PAIR.get(a.compiler, "")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        Campaign(campaign_options(compiler=a.compiler, strategy=a.strategy, seconds=36000, jobs=2, seed=3, out=out,
                                  max_tests=a.tests, quiet=True, configs=[c for c in configs.split(",") if c])).run()
        store = Store(out / "store.sqlite", create=False)
        totals = store.totals()
        tests, verdicts, unknowns = totals["tests"], totals["verdicts"], totals["unknowns"]
        judged = verdicts.get("pass", 0) + verdicts.get("bug", 0)  # unknowns and internal errors are not judged
        findings = store.findings(distinct_only=False)
        from dlcfuzz.engine.clusters import facts_of, finding_folder
        from dlcfuzz.engine.known import Register

        register, real = Register(), {}
        for f in list(findings):
            hit = register.match(facts_of(f, finding_folder(out, f)), f["detail"] or "")
            if hit is not None:
                real[hit.id] = real.get(hit.id, 0) + 1
                findings.remove(f)
        for bug, n in sorted(real.items()):
            print(f"known real bug {bug}: {n} findings (not counted)")
        by_category: dict[str, int] = {}
        for f in findings:
            by_category[f["category"]] = by_category.get(f["category"], 0) + 1
        for cat, n in sorted(by_category.items()):
            print(f"findings {cat}: {n}")
        for cat, n in sorted(unknowns.items()):
            print(f"unknown {cat}: {n}")
        for f in [f for f in findings if f["duplicate_of"] is None][:5]:  # the counted ones
            print("  e.g.", f["category"], (f["detail"] or "").splitlines()[0][:200])
        print(f"judged {judged} of {tests} tests; internal errors {len(store.internal_errors())}")
        print(f"non-finite share: {100.0 * unknowns.get('nonfinite-reference', 0) / max(tests, 1):.1f}%")
    print(f"false positives: {len(findings)} in {judged} judged tests")


if __name__ == "__main__":
    main()
