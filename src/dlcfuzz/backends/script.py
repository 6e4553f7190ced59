"""Shared parts of the standalone reproducer scripts every compiler's template uses: the header, the
embedded inputs and configurations, dlcfuzz's comparison (its tolerances are `oracle/numeric.py`'s,
written into the script), and `main`, which decides whether the finding shows.

A script exits 1 and prints "BUG REPRODUCED" when the finding shows, 0 when it does not.
Crashes show as the process dying (signal), hangs as the script not returning.
"""

from __future__ import annotations

import base64
import io
import pprint
import textwrap
import zlib

import numpy as np

from dlcfuzz.oracle.numeric import TOLERANCE
from dlcfuzz.oracle.testcase import Config

COMPARE = f'''
TOL = {TOLERANCE!r}


def mismatch(got, ref):
    """dlcfuzz's numeric policy: NaN/Inf positions must match; relative Chebyshev distance <= per-dtype tolerance."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"shape/dtype {{got.dtype}}{{got.shape}} vs {{ref.dtype}}{{ref.shape}}"
    if ref.dtype.kind == "f":
        if (np.isnan(got) != np.isnan(ref)).any():
            return "NaN at different positions"
        if (np.isinf(got) != np.isinf(ref)).any() or (got[np.isinf(got)] != ref[np.isinf(ref)]).any():
            return "Inf at different positions"
    g, r = got.astype(np.float64), ref.astype(np.float64)
    fin = np.isfinite(g) & np.isfinite(r)
    d = float((np.abs(g[fin] - r[fin]) / np.maximum(1.0, np.abs(r[fin]))).max()) if fin.any() else 0.0
    return f"max relative difference {{d:.4g}}" if d > TOL.get(str(ref.dtype), 0.0) else None
'''

MAIN = '''

def main():
    category = CATEGORY
    results = {}
    for name in CONFIGS:
        try:
            results[name] = [np.asarray(x) for x in run(name)]
        except Exception as e:  # the error itself may be the finding
            results[name] = e
            print(f"{name}: raised {type(e).__name__}: {e}")
    if category == "accepted-invalid":
        accepted = [name for name, r in results.items() if not isinstance(r, Exception)]
        if accepted:
            print(f"{', '.join(accepted)} compiled and ran a model that ONNX's own inference rejects")
            print("BUG REPRODUCED:", category)
            return 1
        print("not reproduced")
        return 0
    if category == "oom" and any(isinstance(r, MemoryError) for r in results.values()):
        print("BUG REPRODUCED:", category)
        return 1
    if category in ("unexpected-error", "inconsistent-rejection"):
        if any(isinstance(r, Exception) for r in results.values()):
            print("BUG REPRODUCED:", category)
            return 1
    else:
        base = EXPECTED if EXPECTED is not None else None
        for name, r in results.items():
            if isinstance(r, Exception):
                continue
            ref = base if base is not None else next(v for v in results.values() if not isinstance(v, Exception))
            for i, (g, e) in enumerate(zip(r, ref)):
                why = mismatch(g, e)
                if why:
                    print(f"{name} output {i}: {why}")
                    print("BUG REPRODUCED:", category)
                    return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def b64(data: bytes) -> str:
    """Base64 wrapped at 100 columns, for a triple-quoted literal in a script."""
    return "\n".join(textwrap.wrap(base64.b64encode(data).decode(), 100))


def npz_b64(arrays: dict[str, np.ndarray]) -> str:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return b64(buf.getvalue())


def header(title: str, detail: str, version: str) -> str:
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    return (f'#!/usr/bin/env python3\n"""{title}\n\nFound by dlcfuzz against {version}.\n'
            f'Exit 1 and "BUG REPRODUCED" when the bug shows.\n"""\n{det}\n')


def common(inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None, category: str,
           configs: list[Config]) -> str:
    """INPUTS, EXPECTED (dlcfuzz's reference or None), CATEGORY and CONFIGS of a script."""
    exp = "None" if expected is None else '[EXP[k] for k in sorted(EXP, key=int)]'
    exp_def = "" if expected is None else \
        f'EXP = dict(np.load(io.BytesIO(base64.b64decode("""\n{npz_b64({str(i): a for i, a in enumerate(expected)})}\n"""))))\n'
    return (
        f'INPUTS = dict(np.load(io.BytesIO(base64.b64decode("""\n{npz_b64(inputs)}\n"""))))\n'
        f"{exp_def}EXPECTED = {exp}  # dlcfuzz's NumPy reference\n"
        f"CATEGORY = {category!r}\n"
        # a Python literal, not JSON: options may hold None (TVM's rewrite knob)
        f"CONFIGS = {pprint.pformat({c.name: c.options for c in configs}, sort_dicts=False)}\n"
    )


def dlcfuzz_script(compiler: str, graph_blob: bytes, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str, version: str) -> str:
    """For compilers that exist only inside dlcfuzz (the planted-fault backends): the script imports
    dlcfuzz, since there is no public API to write it against."""
    return header(title, detail, version) + f'''import base64
import io
import sys

import numpy as np

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.ir import loads

GRAPH = loads(base64.b64decode("""
{b64(graph_blob)}
"""))
{common(inputs, expected, category, configs)}
BACKEND = get_backend({compiler!r})


def run(name):
    return BACKEND.compile(GRAPH, Config(name, CONFIGS[name])).run(INPUTS)
{COMPARE}{MAIN}'''


INLINE_MAX = 64  # elements: up to this many, a tensor is written as a literal


def array_source(a: np.ndarray) -> str:
    """A numpy expression that rebuilds `a` exactly: a literal when small, else its exact bytes
    (base64 of the zlib-compressed buffer, read back by the script's `unpack`, see UNPACK): a finding
    can hinge on the exact values, so they are not regenerated from a seed."""
    a = np.asarray(a)
    dt = str(a.dtype)
    if a.size <= INLINE_MAX:
        if a.dtype.kind == "f":  # repr of a Python float round-trips float16/32/64 values exactly
            body = repr([float(v) for v in a.reshape(-1)]).replace("nan", 'float("nan")').replace("inf", 'float("inf")')
            return f"np.array({body}, dtype={dt!r}).reshape({tuple(a.shape)!r})"
        return f"np.array({a.tolist()!r}, dtype={dt!r}).reshape({tuple(a.shape)!r})"
    blob = base64.b64encode(zlib.compress(np.ascontiguousarray(a).tobytes(), 9)).decode()
    wrapped = "\n".join(textwrap.wrap(blob, 100))
    return f'unpack("""\n{wrapped}\n""", {dt!r}, {tuple(a.shape)!r})'


UNPACK = '''
def unpack(text, dtype, shape):
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype).reshape(shape).copy()
'''

# `main` of the code-generating templates (torch, JAX): every configuration against the reference (or
# the first configuration that ran), printing expected vs actual; COMPARE's `mismatch` judges.
EXPECTED_ACTUAL_MAIN = '''

def main():
    results = {}
    for name in CONFIGS:
        try:
            results[name] = run(name)
        except Exception as e:  # the error itself may be the finding
            results[name] = e
            print(f"{name}: raised {type(e).__name__}: {str(e)[:2000]}")
    if CATEGORY in ("unexpected-error", "inconsistent-rejection"):
        if any(isinstance(r, Exception) for r in results.values()):
            print("BUG REPRODUCED:", CATEGORY)
            return 1
    else:
        ok = {k: v for k, v in results.items() if not isinstance(v, Exception)}
        base_name = "the reference" if EXPECTED is not None else next(iter(ok), None)
        base = EXPECTED if EXPECTED is not None else ok.get(base_name)
        for name, outs in ok.items():
            for i, (got, ref) in enumerate(zip(outs, base or [])):
                why = mismatch(got, ref)
                if why:
                    print(f"{name} output {i} vs {base_name}: {why}")
                    print("expected:", np.asarray(ref).reshape(-1)[:16])
                    print("actual:  ", np.asarray(got).reshape(-1)[:16])
                    print("BUG REPRODUCED:", CATEGORY)
                    return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
