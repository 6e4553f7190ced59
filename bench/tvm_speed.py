"""What LLVM's optimization level costs in TVM's build: tvm-unopt at LLVM -O0 (its configuration) against the same
configuration at TVM's default -O3, in one process, alternating, on the capability probe's one-operator graphs
(every operator and dtype our Relax lowering writes, built side by side in groups of --group as the probe builds
them; a group that fails to build at either level is counted as failed and timed at neither: both figures time the
same groups).

One build = relax.build plus the VirtualMachine's creation (where TVM's LLVM module is JIT-compiled), timed in
process CPU seconds; the outputs of both levels are compared bit for bit (LLVM -O3 contracts a * b + c into one
fused multiply-add where -O0 does not, so a few operators differ in the last bit: they are counted and named).

Prints per level the CPU seconds, then the groups whose outputs differ, and, last,
`tvm-unopt build speed-up at LLVM -O0: N.NNx` (O3's CPU seconds / O0's).

    python bench/tvm_speed.py [--group 8] [--limit 0] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dlcfuzz.backends.base import Backend, Config
    from dlcfuzz.ir.graph import Graph


def lowers(tvm: Backend, g: Graph, config: Config) -> bool:
    from dlcfuzz.errors import LoweringGap

    try:
        tvm.lower(g, config)
        return True
    except LoweringGap:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", type=int, default=8, help="one-operator graphs built side by side")
    ap.add_argument("--limit", type=int, default=0, help="at most this many groups (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from dlcfuzz.backends import get_backend
    from dlcfuzz.backends.base import Config
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.strategies.probe import probe_cases, side_by_side

    tvm = get_backend("tvm")
    unopt = tvm.configs()["tvm-unopt"]
    levels = {"O0": unopt, "O3": Config("tvm-unopt-O3", {**unopt.options, "llvm_opt_level": 3})}
    rng = np.random.default_rng(args.seed)
    cases = probe_cases(args.seed, tvm.known_form_gaps)
    cases = [c for c in cases if lowers(tvm, c[2], unopt)]  # not our lowering's documented gaps
    groups = [cases[k:k + args.group] for k in range(0, len(cases), args.group)]
    groups = groups[:args.limit] if args.limit else groups
    cpu = dict.fromkeys(levels, 0.0)
    built = failed = 0
    differ: list[str] = []
    for grp in groups:
        g = side_by_side([c[2] for c in grp])
        feed = {f"p{j}_{name}": a for j, c in enumerate(grp) for name, a in sample_inputs(c[2], rng).items()}
        lowered = tvm.lower(g, unopt)
        spent, outs = {}, {}
        try:
            for name, config in levels.items():
                t = time.process_time()
                compiled = tvm.build(lowered, g, config)
                spent[name] = time.process_time() - t
                outs[name] = compiled.run(feed)
        except Exception:  # noqa: BLE001 - an operator this release cannot build: the group is not timed
            failed += 1
            continue
        built += 1
        for name in levels:
            cpu[name] += spent[name]
        owner = [c for c in grp for _ in c[2].outputs]  # the one-operator graph each output comes from
        for k, (a, b) in enumerate(zip(outs["O0"], outs["O3"])):
            a, b = np.asarray(a), np.asarray(b)
            if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
                differ.append(f"{owner[k][0]} {owner[k][1]}")
    print(f"groups built at both levels: {built} of {len(groups)} ({failed} failed to build, not timed)")
    for name in levels:
        print(f"LLVM -{name}: {cpu[name]:.1f} CPU s")
    print(f"outputs differing in a bit: {len(differ)}" + (f" ({', '.join(differ)})" if differ else ""))
    print(f"tvm-unopt build speed-up at LLVM -O0: {cpu['O3'] / max(cpu['O0'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
