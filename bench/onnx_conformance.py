"""Conformance of dlcfuzz's importer + reference interpreter against ONNX's own node tests.

For every case in onnx.backend.test.case.node.collect_testcases() whose model imports
completely (every operator and attribute supported), run the reference interpreter on
the case's inputs and compare with its expected outputs (the case's rtol/atol).
Prints failures, then, last: `conformance: P/S supported cases pass (T total)`.

  python bench/onnx_conformance.py [--ops relu,add] [--verbose]
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np


def as_array(x: object) -> np.ndarray:
    """Some cases store their data as TensorProto (e.g. float16/float8 casts)."""
    import onnx

    return onnx.numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


def run(ops: set[str] | None = None, verbose: bool = False) -> tuple[int, int, int, list[str]]:
    warnings.filterwarnings("ignore")
    from onnx.backend.test.case.node import collect_testcases

    from dlcfuzz import reference
    from dlcfuzz.lower.onnx_import import import_model

    cases = collect_testcases()
    supported = passed = 0
    failures: list[str] = []
    for case in cases:
        model = case.model
        if ops is not None and not ({n.op_type.lower() for n in model.graph.node} & ops):
            continue
        res = import_model(model)
        if not res.complete:
            if verbose:
                print(f"unsupported {case.name}: {res.skipped[0].op_type}: {res.skipped[0].reason}")
            continue
        g = res.graph
        supported += 1
        ok = True
        why = ""
        for inputs, expected in case.data_sets:
            feed_arrays = [as_array(x) for x in inputs]
            expected = [as_array(x) for x in expected]
            if len(feed_arrays) != len(g.inputs):
                ok, why = False, f"{len(feed_arrays)} inputs given, graph has {len(g.inputs)}"
                break
            try:
                outs = reference.outputs(g, {v.name: a for v, a in zip(g.inputs, feed_arrays)})
            except Exception as e:  # a reference crash is a failure to report, not to hide
                ok, why = False, f"reference raised {type(e).__name__}: {e}"
                break
            for k, (got, exp) in enumerate(zip(outs, expected)):
                exp = np.asarray(exp)
                if got.shape != exp.shape or got.dtype != exp.dtype:
                    ok, why = False, f"output {k}: {got.dtype}{got.shape} vs expected {exp.dtype}{exp.shape}"
                    break
                if exp.dtype.kind in "fc":
                    if not np.allclose(got, exp, rtol=max(case.rtol, 1e-3 if exp.dtype == np.float16 else 0),
                                       atol=max(case.atol, 1e-3 if exp.dtype == np.float16 else 0), equal_nan=True):
                        ok, why = False, f"output {k}: max abs diff {np.nanmax(np.abs(got.astype(float) - exp)):.3g}"
                        break
                elif not np.array_equal(got, exp):
                    ok, why = False, f"output {k}: values differ"
                    break
            if not ok:
                break
        if ok:
            passed += 1
        else:
            failures.append(f"{case.name}: {why}")
    return passed, supported, len(cases), failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--ops", help="comma-separated ONNX op types (lower case) to restrict to")
    ap.add_argument("--verbose", action="store_true", help="also list unsupported cases")
    a = ap.parse_args()
    ops = {o.strip().lower() for o in a.ops.split(",")} if a.ops else None
    passed, supported, total, failures = run(ops, a.verbose)
    for f in failures:
        print("FAIL", f)
    print(f"conformance: {passed}/{supported} supported cases pass ({total} total)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
