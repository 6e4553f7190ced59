"""False positives: a correct configuration pair over many random tests must give zero findings.

ONNXRuntime without optimizations vs with basic optimizations (constant folding and
redundancy elimination, which must not change results), both also judged against the NumPy
reference; another compiler with its default configurations. Every finding of any category counts
(the pair must agree and every configuration must match the reference), except one that the
compiler's known-bugs register matches (or a duplicate of one it matches): a real bug, reproduced with the compiler's API alone and
listed with its evidence (printed apart, with its register id, so that a too-broad entry shows).
Unjudged tests (unknowns) stay out of the judged count. Per compiler, the distinct unregistered findings
are split by their second opinion (independent evaluators of the reduced graph, oracle/opinions.py):
reference confirmed (a compiler bug the register lacks), suspected reference error (dlcfuzz's bug until
shown otherwise), no opinion; and which of them replay clean with the dlcfuzz that counts (a campaign resumed
across sittings keeps the findings stored before a fix of ours: still counted, and named). Prints the counts, the non-finite share (tests unjudged for a non-finite reference:
an overflow, a NaN an operator does not define; bench/value_space.py prints the share of tests judged with inf or
NaN inputs), then, last:
`false positives: N in T judged tests` (all compilers together).

  python bench/false_positives.py [--tests 2000] [--compiler onnxruntime[,xla,...]] [--configs A,B] [--strategy random|programs]
                                  [--values edge|small] [--regions S] [--only-ops leaky_relu,range,...] [--keep DIR]
                                  [--resume]

`--regions S`: the share of graph tests wrapping node ranges in regions (If, Loop, Scan; the strategy's default
otherwise), for issue 40's runs with control flow on.

`--resume` (with `--keep`): continue each compiler's kept campaign (its store's seed, strategy and options) until it
holds `--tests` tests, then count over all of them. On a compile-bound compiler (~0.25 tests/s) 2,000 tests take
hours: one campaign can run across sittings, and the figure is still that one campaign's.
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
    ap.add_argument("--compiler", default="onnxruntime", help="a compiler, or several separated by commas")
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--values", default="edge", choices=("edge", "small"), help="the graph strategies' value profiles")
    ap.add_argument("--regions", type=float, default=None,
                    help="share of graph tests with regions (default: the strategy's own)")
    ap.add_argument("--only-ops", default="", help="operators the graph strategies use, separated by commas (default: all)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="keep each compiler's campaign in KEEP/<compiler> (its findings to triage; default: deleted)")
    ap.add_argument("--resume", action="store_true",
                    help="continue the campaigns kept in KEEP/<compiler> up to --tests tests (needs --keep)")
    a = ap.parse_args()
    if a.resume and a.keep is None:
        ap.error("--resume needs --keep (the folder that holds the campaigns to continue)")
    counted = judged = 0
    for compiler in a.compiler.split(","):
        n, j = false_positives(compiler, a.tests, a.configs or QUIET_PAIR.get(compiler, ""), a.strategy, a.values,
                               [k for k in a.only_ops.split(",") if k], a.keep, a.regions, a.resume)
        counted, judged = counted + n, judged + j
    print(f"false positives: {counted} in {judged} judged tests")


def false_positives(compiler: str, tests_wanted: int, configs: str, strategy: str, values: str = "edge",
                    only_ops: list[str] | None = None, keep: Path | None = None,
                    regions: float | None = None, resume: bool = False) -> tuple[int, int]:
    """One compiler's campaign: prints its counts; (findings counted, judged tests). `keep`: the campaign goes to
    keep/<compiler>, kept (`dlcfuzz list` shows its clusters with the register as it is then), not a temporary one;
    `resume`: the campaign kept there continues (its own identity) until it holds `tests_wanted` tests."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.clusters import facts_of, finding_folder
    from dlcfuzz.engine.known import Register
    from dlcfuzz.engine.report import second_opinion_counts
    from dlcfuzz.engine.store import Store
    from dlcfuzz.oracle.opinions import CONFIRMED, SUSPECTED, UNDECIDED
    from dlcfuzz.strategies import get_strategy

    # the graph strategies' options, where the strategy has them (programs has neither)
    takes = {o.name for o in get_strategy(strategy).options}
    params = {k: v for k, v in (("values", values), ("regions", regions)) if k in takes and v is not None}
    with tempfile.TemporaryDirectory() as tmp:
        out = keep / compiler if keep is not None else Path(tmp) / "run"
        Campaign(campaign_options(compiler=compiler, strategy=strategy, seconds=36000, jobs=2, seed=3, out=out,
                                  max_tests=tests_wanted, quiet=True, configs=[c for c in configs.split(",") if c],
                                  **params, **({"only_ops": only_ops} if only_ops else {})),
                 resume=resume).run()
        store = Store(out / "store.sqlite", create=False)
        totals = store.totals()
        tests, verdicts, unknowns = totals["tests"], totals["verdicts"], totals["unknowns"]
        judged = verdicts.get("pass", 0) + verdicts.get("bug", 0)  # unknowns and internal errors are not judged
        findings = store.findings(distinct_only=False)
        register, real, known = Register(), {}, {}
        for f in list(findings):
            # a duplicate (its test's unreduced graph: the register's facts of it may not match) is its first's bug
            hit = known.get(f["duplicate_of"]) or register.match(facts_of(f, finding_folder(out, f)), f["detail"] or "")
            if hit is not None:
                real[hit.id] = real.get(hit.id, 0) + 1
                known[f["id"]] = hit
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
        distinct = [f for f in findings if f["duplicate_of"] is None]  # the counted ones
        for f in distinct[:5]:
            print("  e.g.", f["category"], (f["detail"] or "").splitlines()[0][:200])
        # a finding stored before a fix of ours stays counted (the figure is this campaign's); replayed with this
        # dlcfuzz, the ones now judged clean show which are fixed since (or flaky: a replay runs the test once more)
        clean = [f["id"] for f in distinct if not replays_a_bug(out, f["test_id"])]
        if distinct:
            print(f"{compiler}: {len(clean)} of the {len(distinct)} distinct unregistered findings replay clean with "
                  f"this dlcfuzz (fixed since they were stored, or flaky){': ' if clean else ''}"
                  f"{', '.join(f'#{i}' for i in clean)}")
        split = second_opinion_counts(distinct)
        print(f"{compiler}: {len(distinct)} distinct unregistered findings by second opinion: {split[CONFIRMED]} "
              f"{CONFIRMED}, {split[SUSPECTED]} {SUSPECTED}, {split[UNDECIDED]} {UNDECIDED}")
        print(f"judged {judged} of {tests} tests; internal errors {len(store.internal_errors())}")
        # tests left unjudged for a non-finite value the operators do not define (an overflow, a NaN reaching a max);
        # the share of tests judged with inf or NaN inputs (gen/inputs' non-finite profile): bench/value_space.py
        print(f"non-finite share (unjudged, non-finite reference): "
              f"{100.0 * unknowns.get('nonfinite-reference', 0) / max(tests, 1):.1f}%")
        store.close()
    return len(findings), judged


def replays_a_bug(run: Path, test_id: int) -> bool:
    """Whether the stored test, re-run and judged by this dlcfuzz (`dlcfuzz replay`), still gives a bug verdict; an
    internal error of ours on the way counts as one (not clean)."""
    from dlcfuzz.engine.campaign import replay
    from dlcfuzz.errors import InternalError

    try:
        return any(v.kind == "bug" for v in replay(run, test_id))
    except InternalError:
        return True


if __name__ == "__main__":
    main()
