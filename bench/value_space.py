"""Value space: how far generated tests leave the small corner (ints in [-5, 5], floats in [-2, 2], short axes).

For each strategy that samples inputs (`--strategy`: random by default; hirgen, disruptive (hirgen --mode
disruptive), oatest, metamorphic, or all), its own tests (the strategy's make_test, as a campaign makes them, with
its default --sizes) for each compiler, over the operators and dtypes its capability probe admits (the probe's cache,
as a campaign reads it, where one exists; known gaps and form gaps avoided), with `--values edge` (the default) or
`--values small`. Metamorphic tests mutate a zoo model, whatever the compiler: they are made once, for the first
compiler. Per dtype, over the tests that hold an input or constant of it: the share with a
value beyond the int32 range (integer dtypes) or the float16 range (float32/float64), with a boundary value
(gen/inputs.boundary_values, beyond 0 and +-1), and with an axis longer than 1,000 (any value's type: the
graph's shapes; not counted for metamorphic, which draws no size profile). Then, for the strategies whose tests the reference judges (random, hirgen, oatest), the share of
tests whose reference is unusable (not judged: integer overflow, a
non-finite value) among edge and other tests, the share of tests with an edge attribute kept after repair (a value
attribute drawn from its legal range: OpSpec.value_attrs, gen/inputs.edge_attrs) and the operators' attributes
that got one most often, the share of tests holding an inf or NaN input or constant (gen/inputs' non-finite
profile, kept after repair; issue 37 bounds it at 2%) and of those the share the reference judges, and
`edge tests: X%` (tests with an edge value kept after repair, or an axis over
1,000; the target is 25-50%, see gen/inputs.EDGE_TEST_SHARE). With several strategies, a block each, then one
line per strategy and, last, `edge tests: X%` over all of them.

  python bench/value_space.py [--tests 300] [--compiler onnxruntime,tvm,inductor,xla,openvino] [--values edge]
                              [--strategy random|hirgen|disruptive|oatest|metamorphic|all (or several, with commas)]
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

COMPILERS = "onnxruntime,tvm,inductor,xla,openvino"
STRATEGIES = ("random", "hirgen", "disruptive", "oatest", "metamorphic")  # the strategies that sample inputs
JUDGED = ("random", "hirgen", "oatest")  # those whose tests the reference judges (a broken graph, a mutant: no)
LONG_AXIS = 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=300, help="tests per compiler")
    ap.add_argument("--compiler", default=COMPILERS, help="compilers, separated by commas")
    ap.add_argument("--values", default="edge", choices=("edge", "small"))
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--strategy", default="random",
                    help=f"strategies, separated by commas ({', '.join(STRATEGIES)}), or all")
    a = ap.parse_args()
    strategies = list(STRATEGIES) if a.strategy == "all" else a.strategy.split(",")
    unknown = [x for x in strategies if x not in STRATEGIES]
    if unknown:
        ap.error(f"unknown strategies {unknown}: choose from {', '.join(STRATEGIES)}")
    compilers = a.compiler.split(",")
    shares: dict[str, tuple[int, int]] = {}
    for strategy in strategies:
        totals = Counter()
        attrs = Counter()  # "operator.attribute" -> edge attributes kept
        per_dtype: dict[str, Counter] = {}
        if len(strategies) > 1:
            print(f"== {strategy}")
        for compiler in compilers[:1] if strategy == "metamorphic" else compilers:
            made = strategy_of(strategy, compiler, a.values, a.ops)
            if made is not None:
                measure(made, a.tests, strategy in JUDGED, totals, per_dtype, attrs)
        report(totals, per_dtype, attrs)
        shares[strategy] = totals["edge tests"], totals["tests"]
    if len(strategies) > 1:
        for strategy, (edge, n) in shares.items():
            print(f"edge tests, {strategy}: {100 * edge / max(n, 1):.1f}% of {n}")
        edge, n = sum(e for e, _ in shares.values()), sum(n for _, n in shares.values())
        print(f"edge tests: {100 * edge / max(n, 1):.1f}%")


def report(totals: Counter, per_dtype: dict[str, Counter], attrs: Counter) -> None:
    print(f"{'dtype':<10} {'tests':>6} {'beyond int32/float16':>21} {'boundary':>9} {'axis > 1,000':>13}")
    for dt in sorted(per_dtype):
        c = per_dtype[dt]
        n = c["tests"]
        beyond = f"{100 * c['beyond'] / n:.1f}%" if dt not in ("int8", "uint8", "int16", "uint16", "int32", "float16",
                                                                "bfloat16") else "-"
        print(f"{dt:<10} {n:>6} {beyond:>21} {100 * c['boundary'] / n:>8.1f}% {100 * c['long'] / n:>12.1f}%")
    n = totals["tests"]
    for kind in ("edge", "other"):
        m = totals[f"{kind} judged"]
        if m:
            print(f"unusable reference, {kind} tests: {100 * totals[f'{kind} unusable'] / m:.1f}% of {m}")
    print(f"repair: {totals['repaired']} tests shrank an edge tensor or attribute, {totals['reverted']} lost every edge tensor")
    top = ", ".join(f"{k} {v}" for k, v in attrs.most_common(8))
    print(f"edge attributes: {100 * totals['attr tests'] / max(n, 1):.1f}% of tests ({top})")
    print(f"non-finite tests: {100 * totals['nonfinite tests'] / max(n, 1):.2f}% "
          f"(an inf or NaN input or constant; {totals['nonfinite judged']} of {totals['nonfinite tests']} with a reference)")
    if totals["internal errors"]:
        print(f"internal errors (making a test raised): {totals['internal errors']}")
    print(f"edge tests: {100 * totals['edge tests'] / max(n, 1):.1f}%")


class NoStore:
    """A campaign store with no tests yet (what a strategy's first make_test reads)."""

    def blobs_before(self, seq: int) -> list:
        return []

    def blobs_from(self, seq: int) -> list:
        return []


def strategy_of(name: str, compiler: str, values: str = "edge", ops: int = 10, sizes: str | None = None, **options):
    """Strategy `name` (disruptive: hirgen --mode disruptive) of a campaign of seed 0 on `compiler`, ready to make tests
    without a worker pool: its capability predicate from the probe's cache (compiler_choices), `--values`, `--ops` and
    `--sizes` (None: its default) where it has them, and `options`; None (with a line) where the compiler is not
    installed or has no such tests."""
    from pathlib import Path

    from dlcfuzz.backends import get_backend
    from dlcfuzz.gen.coverage import Coverage
    from dlcfuzz.strategies import get_strategy
    from dlcfuzz.strategies.base import Context
    from dlcfuzz.strategies.graph import GraphStrategy

    supported = compiler_choices(compiler)
    if supported is None:
        return None
    backend = get_backend(compiler)
    if name == "disruptive" and backend.disruptive_rules() == ():
        print(f"{compiler}: no disruptive tests (no type or shape rule binds its front door)")
        return None
    cls = get_strategy("hirgen" if name == "disruptive" else name)
    given = {"values": values, "ops": ops, "sizes": sizes}
    params = {**{o.name: o.default for o in cls.options}, **options}
    params.update({k: v for k, v in given.items() if k in params and v is not None})
    if name == "disruptive":
        params["mode"] = "disruptive"
    ctx = Context(compiler, 0, params, list(backend.default_pair()), False, backend, backend.version(), NoStore(),
                  Coverage(), Path("."), False, 0.0, None, lambda: None)
    made = cls(ctx)
    if isinstance(made, GraphStrategy):
        made.supported = made.capable = supported
    if name == "oatest":
        made.restore(0)  # its synthesizer
    return made


def compiler_choices(compiler: str):
    """What a campaign on `compiler` generates: (operator, dtype) -> whether its probe admits the pair and it is no known
    gap; None (with a line) when the compiler is not installed."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.strategies.probe import cache_path, forms_fingerprint, load_or_probe

    try:
        backend = get_backend(compiler)
        configs = list(backend.default_pair())[:1]
        probed = cache_path(backend.name, backend.version(), [c.name for c in configs], False,
                            forms_fingerprint(backend)).exists()
        # generation only: a probe (minutes of compiles) is not worth it here; without its cache, known gaps only
        caps = load_or_probe(None, backend, configs) if probed else {}
    except Exception as e:  # noqa: BLE001 - a compiler that is not installed here
        print(f"{compiler}: skipped ({type(e).__name__}: {e})")
        return None
    if not probed:
        print(f"{compiler}: no probe cache for this release and operator set: its known gaps only")

    def supported(op: str, dt: str) -> bool:
        return caps.get((op, dt), (True, ""))[0] and dt not in backend.known_gaps(op)

    return supported


def measure(strategy, tests: int, judged: bool, totals: Counter, per_dtype: dict[str, Counter], attrs: Counter) -> None:
    """`tests` tests of `strategy` (its make_test, seeds as a campaign of seed 0 draws them) added to the counts; with
    `judged`, the reference's verdict on each too."""
    from dlcfuzz.gen.inputs import EdgeValues, boundary_values
    from dlcfuzz.ops import ANY
    from dlcfuzz.oracle.policy import reference_of, test_seed
    from dlcfuzz.oracle.testcase import TestCase

    for i in range(tests):
        seed = test_seed(0, i)
        strategy.edges = None
        try:
            test = strategy.make_test(i, seed)
        except Exception:  # noqa: BLE001 - a campaign's internal error of this test (stored, counted): counted here
            totals["internal errors"] += 1
            continue
        strategy.ctx.coverage.add(test.coverage)  # as a campaign adds it when it stores the test
        g, inputs, edges = test.payload.graph, test.payload.inputs, strategy.edges or EdgeValues()
        # a mutant's long axes are its zoo model's own (a flattened feature map): metamorphic draws no size profile
        long_axis = "sizes" in strategy.params and any(d > LONG_AXIS for t in g.types().values() for d in t.shape)
        seen: dict[str, Counter] = {}
        for x in [*inputs.values(), *g.constants.values()]:
            x = np.asarray(x)
            if x.dtype.kind not in "iuf" or not x.size:
                continue
            c = seen.setdefault(str(x.dtype), Counter())
            wide = x.astype(np.float64)
            if x.dtype.kind in "iu":
                c["beyond"] |= bool(((wide > 2 ** 31 - 1) | (wide < -2 ** 31)).any())
            else:
                c["beyond"] |= bool((np.abs(wide) > 65504.0).any())
            b = boundary_values(x.dtype, ANY).astype(np.float64)
            c["boundary"] |= bool(np.isin(wide, b[np.abs(b) > 1]).any())
        for dt, c in seen.items():
            t = per_dtype.setdefault(dt, Counter())
            t["tests"] += 1
            t["beyond"] += c["beyond"]
            t["boundary"] += c["boundary"]
            t["long"] += long_axis
        edge = bool(edges.profiles) or long_axis
        kind = "edge" if edge else "other"
        totals["tests"] += 1
        totals[f"{kind} tests"] += 1
        nonfinite = any(np.asarray(x).dtype.kind == "f" and not np.isfinite(x).all()
                        for x in [*inputs.values(), *g.constants.values()])
        totals["nonfinite tests"] += nonfinite
        if judged:
            ref = reference_of(TestCase(g, dict(inputs), [], seed=seed), tries=1, stability=False)
            totals[f"{kind} judged"] += 1
            totals[f"{kind} unusable"] += ref.outputs is None
            totals["nonfinite judged"] += nonfinite and ref.outputs is not None
        totals["repaired"] += bool(edges.shrunk)
        totals["attr tests"] += bool(edges.attrs)
        ops_of = {n.name: n.op for body in [g, *g.functions.values()] for n in body.nodes}  # hirgen outlines
        attrs.update(f"{ops_of[k.rsplit('.', 1)[0]]}.{k.rsplit('.', 1)[1]}" for k in edges.attrs)
        totals["reverted"] += bool(edges.drawn) and not edges.profiles


if __name__ == "__main__":
    main()
