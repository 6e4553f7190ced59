"""Value space: how far generated tests leave the small corner (ints in [-5, 5], floats in [-2, 2], short axes).

For each compiler, the random strategy's tests over the operators and dtypes its capability probe admits
(the probe's cache, as a campaign reads it, where one exists; known gaps and form gaps avoided), with `--values edge` (the
default) or `--values small`. Per dtype, over the tests that hold an input or constant of it: the share with a
value beyond the int32 range (integer dtypes) or the float16 range (float32/float64), with a boundary value
(gen/inputs.boundary_values, beyond 0 and +-1), and with an axis longer than 1,000 (any value's type: the
graph's shapes). Then the share of tests whose reference is unusable (not judged: integer overflow, a
non-finite value) among edge and other tests, the share of tests with an edge attribute kept after repair (a value
attribute drawn from its legal range: OpSpec.value_attrs, gen/inputs.edge_attrs) and the operators' attributes
that got one most often, the share of tests holding an inf or NaN input or constant (gen/inputs' non-finite
profile, kept after repair; issue 37 bounds it at 2%) and of those the share the reference judges, and, last,
`edge tests: X%` (tests with an edge value kept after repair, or an axis over
1,000; the target is 25-50%, see gen/inputs.EDGE_TEST_SHARE).

  python bench/value_space.py [--tests 300] [--compiler onnxruntime,tvm,inductor,xla,openvino] [--values edge]
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

COMPILERS = "onnxruntime,tvm,inductor,xla,openvino"
LONG_AXIS = 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=300, help="tests per compiler")
    ap.add_argument("--compiler", default=COMPILERS, help="compilers, separated by commas")
    ap.add_argument("--values", default="edge", choices=("edge", "small"))
    ap.add_argument("--ops", type=int, default=10)
    a = ap.parse_args()
    totals = Counter()
    attrs = Counter()  # "operator.attribute" -> edge attributes kept
    per_dtype: dict[str, Counter] = {}
    for compiler in a.compiler.split(","):
        choices = compiler_choices(compiler)
        if choices is None:
            continue
        measure(choices, a.tests, a.ops, a.values, totals, per_dtype, attrs)
    print(f"{'dtype':<10} {'tests':>6} {'beyond int32/float16':>21} {'boundary':>9} {'axis > 1,000':>13}")
    for dt in sorted(per_dtype):
        c = per_dtype[dt]
        n = c["tests"]
        beyond = f"{100 * c['beyond'] / n:.1f}%" if dt not in ("int8", "uint8", "int16", "uint16", "int32", "float16",
                                                                "bfloat16") else "-"
        print(f"{dt:<10} {n:>6} {beyond:>21} {100 * c['boundary'] / n:>8.1f}% {100 * c['long'] / n:>12.1f}%")
    n = totals["tests"]
    for kind in ("edge", "other"):
        m = totals[f"{kind} tests"]
        if m:
            print(f"unusable reference, {kind} tests: {100 * totals[f'{kind} unusable'] / m:.1f}% of {m}")
    print(f"repair: {totals['repaired']} tests shrank an edge tensor or attribute, {totals['reverted']} lost every edge tensor")
    top = ", ".join(f"{k} {v}" for k, v in attrs.most_common(8))
    print(f"edge attributes: {100 * totals['attr tests'] / max(n, 1):.1f}% of tests ({top})")
    print(f"non-finite tests: {100 * totals['nonfinite tests'] / max(n, 1):.2f}% "
          f"(an inf or NaN input or constant; {totals['nonfinite judged']} of {totals['nonfinite tests']} with a reference)")
    print(f"edge tests: {100 * totals['edge tests'] / max(n, 1):.1f}%")


def compiler_choices(compiler: str):
    """The (operator, dtypes) choices of a campaign on `compiler`; None (with a line) when it is not installed."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.gen.random import allowed_choices, avoiding_choices
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

    return avoiding_choices(allowed_choices(None, None, supported), backend.known_form_gaps)


def measure(choices, tests: int, ops: int, values: str, totals: Counter, per_dtype: dict[str, Counter],
            attrs: Counter) -> None:
    from dlcfuzz.gen.inputs import boundary_values
    from dlcfuzz.gen.random import generate
    from dlcfuzz.gen.repair import sample_values
    from dlcfuzz.ops import ANY
    from dlcfuzz.oracle.policy import reference_of, test_seed
    from dlcfuzz.oracle.testcase import TestCase

    for i in range(tests):
        seed = test_seed(0, i)
        rng = np.random.default_rng(seed)
        g = generate(rng, ops, choices=choices)
        g, inputs, edges = sample_values(g, rng, values)
        long_axis = any(d > LONG_AXIS for t in g.types().values() for d in t.shape)
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
        ref = reference_of(TestCase(g, dict(inputs), [], seed=seed), tries=1, stability=False)
        totals[f"{kind} unusable"] += ref.outputs is None
        nonfinite = any(np.asarray(x).dtype.kind == "f" and not np.isfinite(x).all()
                        for x in [*inputs.values(), *g.constants.values()])
        totals["nonfinite tests"] += nonfinite
        totals["nonfinite judged"] += nonfinite and ref.outputs is not None
        totals["repaired"] += bool(edges.shrunk)
        totals["attr tests"] += bool(edges.attrs)
        ops_of = {n.name: n.op for n in g.nodes}
        attrs.update(f"{ops_of[k.rsplit('.', 1)[0]]}.{k.rsplit('.', 1)[1]}" for k in edges.attrs)
        totals["reverted"] += bool(edges.drawn) and not edges.profiles


if __name__ == "__main__":
    main()
