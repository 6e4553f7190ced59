"""Conformance of dlcfuzz's importer + reference interpreter against ONNX's own node tests.

For every case in onnx.backend.test.case.node.collect_testcases(): a case that uses an operator,
domain or type of the exclusion table (dlcfuzz.lower.onnx_scope, each with its reason) is excluded;
every other case counts. It is supported when it imports completely (every operator, attribute and
input form modelled), each data set on its own: graph inputs that our IR holds as attributes (axes,
K, sizes) are bound to that data set's values, the rest stay inputs. A supported case passes when
the reference interpreter reproduces the expected outputs (the case's rtol/atol).
Prints failures, the excluded count, then, last:
`conformance: P/S supported cases pass (T total)`, T being the cases not excluded.

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


def check_data_set(model, inputs: list[np.ndarray], expected: list[np.ndarray], rtol: float, atol: float,
                   ) -> tuple[bool, str]:
    """(imported completely, why not / why it failed ('' when it passed))."""
    from dlcfuzz import reference
    from dlcfuzz.lower.onnx_import import import_model

    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if len(names) != len(inputs):
        return False, f"{len(inputs)} inputs given, the model has {len(names)}"
    feed = dict(zip(names, inputs))
    res = import_model(model, bind=feed)
    if not res.complete:
        s = res.skipped[0]
        return False, f"{s.op_type}: {s.reason}"
    g = res.graph
    try:
        outs = reference.outputs(g, {v.name: feed[n] for v, n in zip(g.inputs, res.input_names)})
    except Exception as e:  # a reference crash is a failure to report, not to hide
        return True, f"reference raised {type(e).__name__}: {e}"
    for k, (got, exp) in enumerate(zip(outs, expected)):
        exp = np.asarray(exp)
        if got.shape != exp.shape or got.dtype != exp.dtype:
            return True, f"output {k}: {got.dtype}{got.shape} vs expected {exp.dtype}{exp.shape}"
        if exp.dtype.kind in "fc":
            loose = 1e-3 if exp.dtype == np.float16 else 0
            # a few ulps of the output's scale: sums (DFT) whose expected values were computed in
            # float32 differ from our float64-accurate ones by that much near zero
            finite = np.abs(exp[np.isfinite(exp)]) if exp.size else np.zeros(0)
            scale = 8 * np.finfo(exp.dtype).eps * float(finite.max()) if finite.size else 0.0
            if not np.allclose(got, exp, rtol=max(rtol, loose), atol=max(atol, loose, scale), equal_nan=True):
                return True, f"output {k}: max abs diff {np.nanmax(np.abs(got.astype(float) - exp)):.3g}"
        elif not np.array_equal(got, exp):
            return True, f"output {k}: values differ"
    return True, ""


def run(ops: set[str] | None = None, verbose: bool = False) -> tuple[int, int, int, int, list[str]]:
    """(passed, supported, cases not excluded, excluded, failure lines)."""
    warnings.filterwarnings("ignore")
    from onnx.backend.test.case.node import collect_testcases

    from dlcfuzz.lower.onnx_scope import exclusion_of

    supported = passed = total = excluded = 0
    failures: list[str] = []
    for case in collect_testcases():
        model = case.model
        if ops is not None and not ({n.op_type.lower() for n in model.graph.node} & ops):
            continue
        why_excluded = exclusion_of(model)
        if why_excluded is not None:
            excluded += 1
            if verbose:
                print(f"excluded {case.name}: {why_excluded}")
            continue
        total += 1
        ok, imported, why = True, True, ""
        for inputs, expected in case.data_sets:
            imported, why = check_data_set(model, [as_array(x) for x in inputs], [as_array(x) for x in expected],
                                           case.rtol, case.atol)
            if not imported or why:
                ok = False
                break
        if not imported:
            if verbose:
                print(f"unsupported {case.name}: {why}")
            continue
        supported += 1
        if ok:
            passed += 1
        else:
            failures.append(f"{case.name}: {why}")
    return passed, supported, total, excluded, failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--ops", help="comma-separated ONNX op types (lower case) to restrict to")
    ap.add_argument("--verbose", action="store_true", help="also list unsupported cases")
    a = ap.parse_args()
    ops = {o.strip().lower() for o in a.ops.split(",")} if a.ops else None
    passed, supported, total, excluded, failures = run(ops, a.verbose)
    for f in failures:
        print("FAIL", f)
    print(f"excluded: {excluded} cases of operators, domains or types in dlcfuzz.lower.onnx_scope "
          f"({total + excluded} cases in all; supported {100 * supported / max(total, 1):.1f}% of the rest)")
    print(f"conformance: {passed}/{supported} supported cases pass ({total} total)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
