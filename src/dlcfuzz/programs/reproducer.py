"""Source text that program reproducers embed (standalone scripts: numpy alone, no dlcfuzz import).

`JUDGE_SOURCE` defines `distance(a, ref)` and `wrong(got, eager, fp64)`: the programs oracle's rule
(`strategies/programs.compare_to_eager`) as a script states it; the script defines `TOL` (the dtype
tolerances) before it, and may define `TOL_FLOOR` (the least float tolerance: the run's meta "tolerance"). `VERDICT_SOURCE` judges every slot with them.
"""

JUDGE_SOURCE = '''
def distance(a, ref):
    a, ref = a.astype(np.float64), ref.astype(np.float64)
    fin = np.isfinite(a) & np.isfinite(ref)
    return float((np.abs(a[fin] - ref[fin]) / np.maximum(1.0, np.abs(ref[fin]))).max()) if fin.any() else 0.0


def wrong(got, eager, fp64):
    """Integers, bools, dtypes and shapes exactly; floats: the compiled result is wrong only when it is
    further from the float64 reference than eager is, beyond the dtype's tolerance. Where the float64
    reference itself disagrees with eager on an integer result, rounding decides it: not a bug."""
    if got.shape != eager.shape or got.dtype != eager.dtype:
        return f"dtype/shape {got.dtype}{got.shape} vs eager {eager.dtype}{eager.shape}"
    if np.array_equal(got, eager, equal_nan=eager.dtype.kind == "f"):
        return None
    if eager.dtype.kind != "f":
        if fp64 is not None and not np.array_equal(fp64.astype(eager.dtype), eager):
            return None
        k = int(np.flatnonzero((got != eager).reshape(-1))[0])
        return f"differs from eager at flat index {k}: {got.reshape(-1)[k]!r} vs {eager.reshape(-1)[k]!r}"
    tol = max(TOL.get(str(eager.dtype), 1e-3), globals().get("TOL_FLOOR", 0.0))
    if fp64 is None:
        d = distance(got, eager)
        return f"distance {d:.3g} from eager" if d > tol else None
    if (np.isfinite(got) != np.isfinite(eager)).any():
        if (np.isfinite(fp64) != np.isfinite(eager)).any():
            return None
        if (np.isfinite(eager) & ~np.isfinite(got)).any():
            return "NaN/Inf where eager and fp64 have numbers"
        return "numbers where eager and fp64 have NaN/Inf"
    e, c = distance(eager, fp64), distance(got, fp64)
    return f"distance from fp64 {c:.3g} > 2 x eager's {e:.3g} + {tol}" if c > 2 * e + tol else None
'''
# The script's verdict: `got`, `eager`, `fp64` (or None) are lists of arrays, one per slot named in SLOT_NAMES;
# exits 1 with "BUG REPRODUCED" at the first wrong slot (the script says "not reproduced" after it).
VERDICT_SOURCE = '''
for k, name in enumerate(SLOT_NAMES):
    why = wrong(got[k], eager[k], fp64[k] if fp64 is not None else None)
    if why:
        print(f"BUG REPRODUCED: {name}: {why}")
        print(f"  eager    {eager[k].reshape(-1)[:16]}\\n  compiled {got[k].reshape(-1)[:16]}")
        sys.exit(1)
'''

__all__ = ["JUDGE_SOURCE", "VERDICT_SOURCE"]
