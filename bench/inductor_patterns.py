"""Inductor pattern rewrites fired: how many of the pattern-matcher rewrites the installed torch registers
a source of tests reaches.

Y is the inventory read from torch (`Backend.optimizations()`: every rewrite its PatternMatcherPass objects
hold once the lazy initializers ran; backends/inductor/patterns.py), with how many sit in passes that run by
default on the CPU and how many need a config knob (freezing, pre/post-grad fusion options, ...). Each
source runs for `--time` seconds of compiling (setup apart), every compile recording the rewrites applied:

- `graphs`: today's random graphs (`gen.random.generate`, `--ops` operators), compiled by the Inductor
  backend's default configuration (eager vs inductor, fallback_random);
- `programs`: generated PyTorch programs that each start with one of those patterns spliced in (the programs
  strategy's spliced tests: backends/inductor/programs.py's "pattern" statement; search functions whose rewrites
  have not fired yet preferred), run and judged as the strategy runs them (eager, float64, Inductor);
- `seeds`: torch's own replacement patterns as programs (backends/inductor/pattern_seeds.py: each search
  function in every float dtype and its registered mixed dtypes, registered and doubled sizes, a Python scale,
  inference and training): each registered trace's own seed first, then rounds over the functions (`seed_order`);
  `--batch` seeds of one kind compiled as one function as the backend compiles (`pattern_seeds.run_batch`), each
  seed's outputs (and gradients) judged against eager with a float64 reference. With them, the seeds written for the
  split/cat graph patterns (backends/inductor/split_cat_seeds.py: each compiled with the fusion passes it targets).
  Findings (mismatch, error) are listed by seed.

Last, how many of the rewrites a CPU can reach at all (`patterns.CPU_REFUSED`: their own checks want CUDA).

Prints per source each rewrite fired, by name, with the compiles that fired it and its applications, then
`Inductor pattern rewrites fired (<source>): X of Y`, and last the union over the sources:
`Inductor pattern rewrites fired: X of Y`.

  python bench/inductor_patterns.py [--time 600] [--source both|all|graphs|seeds|programs] [--seed 0] [--ops 10]
                                    [--stmts 8] [--batch 8]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from dlcfuzz.backends.inductor.pattern_seeds import BATCH_SEEDS


def graph_source(backend: Any, seconds: float, seed: int, ops: int) -> tuple[int, Counter[str], Counter[str], int]:
    """Compiles of random graphs: (tests, compiles that fired each rewrite, applications, failed compiles)."""
    from dlcfuzz.gen.random import generate
    from dlcfuzz.oracle.policy import test_seed

    config = backend.configs()["inductor"]
    compiles, applications, failed, tests = Counter(), Counter(), 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        g = generate(np.random.default_rng(test_seed(seed, tests)), ops)
        tests += 1
        try:
            fired = backend.fired_patterns(g, config)
        except Exception:  # noqa: BLE001 - a rejected graph fires nothing; the campaigns judge rejections
            failed += 1
            continue
        compiles.update(fired.keys())
        applications.update(fired)
    return tests, compiles, applications, failed


def seed_order(seeds: list[Any]) -> list[Any]:
    """First, for each register_replacement call torch made (a rewrite name), the seed of its own inputs: the
    registered dtypes and sizes, a Python scale where it traced a 0-d one (several fusions refuse a tensor scale),
    inference or training as traced, and each written split/cat seed, round-robin over the modules; then rounds over the search functions (each function's first remaining
    variant, then each one's second, ...), so a short budget reaches every rewrite, then every function; within
    one, registered sizes first, float32 before the other dtypes. Last, the seeds whose rewrites' own checks refuse
    the CPU (patterns.CPU_REFUSED). (A training seed with dropout compiles with fallback_random=False, as torch traced
    its rewrite: `PatternSeed.draws_dropout`.)"""
    from dlcfuzz.backends.inductor.pattern_seeds import pattern_names, python_scalars, registrations
    from dlcfuzz.backends.inductor.patterns import cpu_refusal

    refused = [s for s in seeds if all(map(cpu_refusal, pattern_names(s)))]  # last: their checks want CUDA
    seeds = [s for s in seeds if s not in refused]
    by_key = {(s.search, s.args, s.kwargs, s.training): s for s in seeds}
    own = [by_key[key] for key in dict.fromkeys((r.search, python_scalars(r.args) or r.args, r.kwargs, r.training)
                                                for r in registrations()) if key in by_key]
    own += [s for s in seeds if s.rewrites]  # a written seed (split_cat_seeds.py) is its rewrites' own seed
    # taken round-robin over the search functions' modules (fuse_attention's 117 traces would otherwise come
    # before the freezing, misc and post-grad patterns): a short budget reaches every module's rewrites
    by_module: dict[str, list[Any]] = defaultdict(list)
    for s in own:
        by_module[s.search.partition(":")[0]].append(s)
    first = [q[r] for r in range(max(map(len, by_module.values()), default=0)) for q in by_module.values()
             if r < len(q)]
    chosen = set(map(id, first))
    rank = {"float32": 0, "float16": 1, "bfloat16": 2, "float64": 3}
    by_fn: dict[str, list[Any]] = defaultdict(list)
    for s in seeds:
        if id(s) not in chosen:
            by_fn[s.search].append(s)
    size = {"scalar": 0, "registered": 1, "grown": 2}  # a Python scale first: several fusions refuse a tensor one
    queues = [sorted(v, key=lambda s: (size[s.variant.split()[1]], rank.get(s.dtype, 4), s.training))
              for v in by_fn.values()]
    out = first
    for r in range(max(map(len, queues), default=0)):
        out += [q[r] for q in queues if r < len(q)]
    return out + refused


def seed_source(backend: Any, seconds: float, seed: int, batch: int) -> tuple[int, int, Counter[str], Counter[str],
                                                                            list[Any], int]:
    """Seed programs compiled and judged, `batch` seeds of a kind to a compile (pattern_seeds.run_batch): (seeds
    run, batches, batches per rewrite, applications, findings, seeds in all)."""
    from dlcfuzz.backends.inductor.pattern_seeds import batches, pattern_seeds, run_batch
    from dlcfuzz.backends.inductor.split_cat_seeds import split_cat_seeds

    seeds = seed_order(list(pattern_seeds()) + list(split_cat_seeds()))
    compiles, applications, findings, tests, n_batches = Counter(), Counter(), [], 0, 0
    end = time.monotonic() + seconds
    for group in batches(seeds, batch):
        if time.monotonic() >= end:
            break
        runs = run_batch(backend, group, np.random.default_rng(seed + tests))
        tests += len(group)
        n_batches += 1
        fired: Counter[str] = Counter()
        for run in runs:  # one compile's (a batch's seeds rerun alone after a failure: each one's own)
            fired |= Counter(run.fired)
        compiles.update(fired.keys())
        applications.update(fired)
        findings += [run for run in runs if run.verdict != "ok"]
    return tests, n_batches, compiles, applications, findings, len(seeds)


def program_source(seconds: float, seed: int, stmts: int) -> tuple[int, Counter[str], Counter[str], list[str], Counter[str]]:
    """Spliced programs as the programs strategy makes them (every test spliced: `TorchDialect.splice`, search
    functions whose rewrites have not fired yet preferred; a training variant trains), each run by the dialect
    (eager, float64, the Inductor configuration the strategy draws: `TorchDialect.per_test_configs`, plain, dynamic,
    freezing or split/cat fusions; rewrites recorded) and judged by the programs oracle: (tests, compiles per
    rewrite, applications (compiles, since a program run records names only), findings, outcomes and
    configurations)."""
    from dlcfuzz.backends.inductor.programs import DIALECT, OPS, run_program
    from dlcfuzz.oracle.policy import test_seed
    from dlcfuzz.programs.core import generate, with_training
    from dlcfuzz.strategies.programs import ProgramTest, judge_program

    configs = [("eager", {"backend": "eager"}), ("inductor", {"backend": "inductor"})]
    compiles, findings, outcomes, fired, tests = Counter(), [], Counter(), set(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rng = np.random.default_rng(test_seed(seed, tests))
        first, training = DIALECT.splice(rng, fired)
        program = with_training(generate(DIALECT, rng, stmts, first=first), OPS, rng, float(training))
        input_seed = int(rng.integers(1 << 31))
        tests += 1
        # as the strategy compiles it: a share with dynamic shapes, freezing (knobs.FREEZING) or the split/cat passes
        test_configs = DIALECT.per_test_configs(rng, configs)
        meta, arrays = run_program(program, input_seed, test_configs)
        compiles.update(meta.get("fired", []))
        fired |= set(meta.get("fired", []))
        outcomes[test_configs[1][0]] += 1
        verdicts, _ = judge_program("inductor", ProgramTest(program, input_seed, test_configs), meta, arrays)
        outcomes[verdicts[0].category] += 1
        findings += [f"{v.category} [{program.stmts[0].attrs['search'].rpartition(':')[2]} "
                     f"{program.stmts[0].attrs['variant']}]: {v.detail.splitlines()[0][:300]}"
                     for v in verdicts if v.kind == "bug"]
    return tests, compiles, Counter(compiles), findings, outcomes


def fired_table(inventory: dict[str, Any], compiles: Counter[str], applications: Counter[str]) -> list[str]:
    lines = [f"  {name:72s} compiles {compiles[name]:5d}  applied {applications[name]:6d}"
             for name in sorted(compiles) if name in inventory]
    outside = sorted(set(compiles) - set(inventory))
    if outside:
        lines.append("  fired, not in the inventory (patterns of passes built per call; not counted):")
        lines += [f"    {name}: {compiles[name]} compiles" for name in outside]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", type=float, default=600.0, help="seconds of compiling per source")
    ap.add_argument("--source", choices=["both", "all", "graphs", "seeds", "programs"], default="both",
                    help="both: graphs and seeds; all: seeds and programs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ops", type=int, default=10, help="operators per random graph")
    ap.add_argument("--stmts", type=int, default=8, help="statements per spliced program (the pattern's included)")
    ap.add_argument("--batch", type=int, default=BATCH_SEEDS,
                    help="seeds compiled as one function (seeds source; 1: a compile per seed)")
    a = ap.parse_args()
    from dlcfuzz.backends import get_backend
    from dlcfuzz.backends.inductor.patterns import cpu_refusal, pattern_inventory

    backend = get_backend("inductor")
    inventory = pattern_inventory()
    gates = Counter(info.gate for info in inventory.values())
    print(f"{backend.version()}: {len(inventory)} pattern rewrites registered; by what their passes need on the CPU: "
          + ", ".join(f"{gate} {n}" for gate, n in gates.most_common()))
    union: set[str] = set()
    sources = {"both": ["graphs", "seeds"], "all": ["seeds", "programs"]}.get(a.source, [a.source])
    for source in sources:
        t0 = time.monotonic()
        if source == "graphs":
            tests, compiles, applications, failed = graph_source(backend, a.time, a.seed, a.ops)
            print(f"\n{source}: {tests} random graphs of {a.ops} operators in {time.monotonic() - t0:.0f} s "
                  f"({failed} compiles failed: torch rejects the graph or a finding; the campaigns judge them)")
        elif source == "programs":
            tests, compiles, applications, program_findings, outcomes = program_source(a.time, a.seed, a.stmts)
            print(f"\n{source}: {tests} spliced programs in {time.monotonic() - t0:.0f} s (setup included); "
                  f"verdicts and configurations {dict(outcomes)}; {len(program_findings)} findings")
            print("\n".join(f"  {f}" for f in program_findings))
        else:
            tests, n_batches, compiles, applications, findings, total = seed_source(backend, a.time, a.seed,
                                                                                      a.batch)
            print(f"\n{source}: {tests} of {total} seed programs in {n_batches} batches (up to {a.batch} seeds "
                  f"compiled as one function; a failing batch's seeds rerun alone) in {time.monotonic() - t0:.0f} s "
                  f"(setup included); {len(findings)} findings")
            for run in findings:
                print(f"  {run.verdict:8s} {run.seed.name} [{run.seed.variant}] fired "
                      f"{sorted(run.fired) or 'nothing'}: {run.detail.splitlines()[0][:300] if run.detail else ''}")
        print("\n".join(fired_table(inventory, compiles, applications)))
        hit = {name for name in compiles if name in inventory}
        union |= hit
        by_gate = Counter(inventory[name].gate for name in hit)
        print(f"Inductor pattern rewrites fired ({source}): {len(hit)} of {len(inventory)} "
              f"(default passes: {by_gate['default']} of {gates['default']})", flush=True)
    refused = {name: why for name in inventory if (why := cpu_refusal(name))}
    print(f"\nrefused on the CPU by their own checks (in Y; out of reach here): {len(refused)}")
    for why, n in Counter(refused.values()).most_common():
        print(f"  {n:4d}  {why}")
    print("\nnot fired, by class (what their passes need; the attention fusions by traced variant):")
    for cls, n in sorted(Counter(rewrite_class(info) for name, info in inventory.items()
                                 if name not in union).items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:4d}  {cls}")
    print(f"Inductor pattern rewrites fired: {len(union)} of {len(inventory)} "
          f"(of the {len(inventory) - len(refused)} a CPU can reach: {len(union - set(refused))})")


def rewrite_class(info: Any) -> str:
    """A rewrite's class for the unfired count: its gate and module, and for a replacement pattern torch traced in
    variants (fuse_attention's `_sfdp_pattern_N_half_bs1_training`) the variant's kind."""
    family = info.name.split(".")[0]
    if info.kind != "replacement" or "_pattern_" not in info.name:
        return f"{info.gate}: {family} ({info.kind})"
    suffix = info.name.rsplit("_pattern_", 1)[1].split("_", 1)[-1]  # e.g. "half_bs1_training"
    variant = " ".join(part for part in ("half", "mask_fp32", "bs1") if part in suffix) or "float32"
    return f"{info.gate}: {family} {variant} {'training' if suffix.endswith('training') else 'inference'}"


if __name__ == "__main__":
    main()
