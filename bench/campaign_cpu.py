"""CPU time of the campaign process (the driver: making tests, judging results, the store), not of its workers,
for one ONNXRuntime campaign per strategy as the test suite runs them (`tests/test_fuzz_the_fuzzer.py`: jobs=2,
reduction off), then, last, `campaign process CPU per test: N ms` over all of them. With several seeds, each
strategy's campaigns run one per seed in turn in this one process, as the test runs them (what a process computes
once shows in the later ones).

  python bench/campaign_cpu.py [--tests 300] [--metamorphic-tests 40] [--seeds 1] [--strategies random,oatest]

The campaign process's own CPU (getrusage of this process, its children excluded) is measured around each
campaign's run; the capability probe is cached per compiler version, so only a first run on a machine probes.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from pathlib import Path
from typing import Any

CAMPAIGNS: dict[str, dict[str, Any]] = {  # the fuzz-the-fuzzer campaigns of ONNXRuntime
    "random": dict(strategy="random", ops=8),
    "hirgen": dict(strategy="hirgen", ops=8),
    "disruptive": dict(strategy="hirgen", mode="disruptive"),
    "oatest": dict(strategy="oatest", ops=6),
    "auto": dict(strategy="auto", ops=8, model="tiny_vgg"),
    "metamorphic": dict(strategy="metamorphic", model="tiny_vgg"),
}


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=300, help="tests per campaign")
    ap.add_argument("--metamorphic-tests", type=int, default=40, help="tests of the metamorphic campaign (a chain's "
                    "mutants grow by ~180 nodes a test, and so does the cost of making the next)")
    ap.add_argument("--seeds", default="1", help="comma-separated: a campaign per seed, in turn")
    ap.add_argument("--strategies", default=",".join(CAMPAIGNS))
    a = ap.parse_args()
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    total_cpu, total_tests = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.strategies.split(","):
            tests = a.metamorphic_tests if name == "metamorphic" else a.tests
            for seed in (int(s) for s in a.seeds.split(",")):
                camp = Campaign(campaign_options(compiler="onnxruntime", seconds=3600, jobs=2, seed=seed,
                                                 out=Path(tmp) / f"{name}-{seed}", max_tests=tests, quiet=True,
                                                 reduce=False, **CAMPAIGNS[name]))
                before = own_cpu()
                camp.run()
                cpu = own_cpu() - before
                total_cpu, total_tests = total_cpu + cpu, total_tests + tests
                print(f"{name} seed {seed}: {tests} tests, campaign process CPU {cpu:.2f} s "
                      f"({cpu / tests * 1e3:.1f} ms/test)", flush=True)
    print(f"campaign process CPU per test: {total_cpu / total_tests * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
