"""Inductor's own line coverage with and without compiler-coverage feedback, on equal time budgets.

Two `hirgen` campaigns against Inductor with the same seed and the same testing time: one with
`--feedback on` (a test that reaches new compiler code is kept, and later tests grow from its
prefixes), one with `--feedback measure` (the same coverage collected, never used: the ablation).
Coverage is what the worker measured with coverage.py's C tracer in torch/_inductor, torch/_dynamo
and torch/fx; a line counts when an arc starts or ends on it. A one-test campaign runs first, so
that the capability probe (cached per compiler release) is paid by neither clock. Prints tests and lines per run and folder,
and how many of them the first test alone reached (the code every compile runs: what no strategy can add to), then,
last, `inductor line coverage ratio: X` (lines with feedback over lines without; target >= 1.2).

  python bench/inductor_coverage.py [--time 300] [--jobs 1] [--seed 0] [--ops 10]
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path


def lines_of(items: list[str]) -> set[tuple[str, int]]:
    """(file, line) reached, from `path:from->to` arc items."""
    out: set[tuple[str, int]] = set()
    for item in items:
        path, _, arc = item.rpartition(":")
        a, _, b = arc.partition("->")
        out.update(((path, int(a)), (path, int(b))))
    return out


def run(out: Path, seconds: float, jobs: int, seed: int, ops: int,
        feedback: str) -> tuple[int, set[tuple[str, int]], set[tuple[str, int]]]:
    """Tests run, the lines reached, and the lines the first test alone reached."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store
    from dlcfuzz.gen.coverage import is_compiler_item

    Campaign(campaign_options(compiler="inductor", strategy="hirgen", seconds=seconds, jobs=jobs, seed=seed, out=out,
                              quiet=True, ops=ops, feedback=feedback)).run()
    store = Store(out / "store.sqlite", create=False)
    first = lines_of([i for i in store.coverage(before_test=2) if is_compiler_item(i)])  # test ids start at 1
    return store.totals()["tests"], lines_of([i for i in store.coverage() if is_compiler_item(i)]), first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", type=float, default=300.0, help="testing seconds per campaign")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ops", type=int, default=10)
    a = ap.parse_args()
    lines: dict[str, set[tuple[str, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        from dlcfuzz.engine.campaign import Campaign, campaign_options

        Campaign(campaign_options(compiler="inductor", strategy="hirgen", seconds=600, jobs=1, seed=a.seed,
                                  out=Path(tmp) / "probe", quiet=True, max_tests=1)).run()
        for feedback in ("measure", "on"):
            tests, lines[feedback], first = run(Path(tmp) / feedback, a.time, a.jobs, a.seed, a.ops, feedback)
            per = Counter(path.split("/")[0] for path, _ in lines[feedback])
            print(f"feedback {feedback:8s} tests {tests:5d}  lines {len(lines[feedback]):6d}  "
                  + "  ".join(f"{k} {v}" for k, v in sorted(per.items()))
                  + f"  (the first test alone: {len(first)}, {len(first) / max(len(lines[feedback]), 1):.0%})",
                  flush=True)
    only_on = len(lines["on"] - lines["measure"])
    only_off = len(lines["measure"] - lines["on"])
    print(f"lines reached only with feedback: {only_on}; only without: {only_off}")
    print(f"inductor line coverage ratio: {len(lines['on']) / max(len(lines['measure']), 1):.2f}")


if __name__ == "__main__":
    main()
