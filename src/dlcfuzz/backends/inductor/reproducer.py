"""Standalone reproducers in PyTorch's bug-template form: the model as plain torch code (the very
source the campaign compiled), its inputs, `torch.compile` with the exact options, the comparison
printing expected vs actual. Only torch and numpy are imported; exit 1 with "BUG REPRODUCED".

Small tensors are written inline as Python lists; larger ones as their exact bytes (base64 of the
zlib-compressed buffer, decoded with the standard library and numpy): a finding can hinge on the
exact values, so they are not regenerated from a seed.
"""

from __future__ import annotations

import base64
import pprint
import textwrap
import zlib
from typing import Any

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.ir.graph import Graph

INLINE_MAX = 64  # elements: up to this many, a tensor is written as a literal


def array_source(a: np.ndarray) -> str:
    """A numpy expression that rebuilds `a` exactly."""
    a = np.asarray(a)
    dt = str(a.dtype)
    if a.size <= INLINE_MAX:
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            body = repr([float(v) for v in a.reshape(-1)]).replace("nan", 'float("nan")').replace("inf", 'float("inf")')
            return f"np.array({body}, dtype={dt!r}).reshape({tuple(a.shape)!r})"
        return f"np.array({a.tolist()!r}, dtype={dt!r})"
    blob = base64.b64encode(zlib.compress(np.ascontiguousarray(a).tobytes(), 9)).decode()
    wrapped = "\n".join(textwrap.wrap(blob, 100))
    return f'unpack("""\n{wrapped}\n""", {dt!r}, {tuple(a.shape)!r})'


def compile_options(options: dict[str, Any]) -> dict[str, Any]:
    """A configuration's options as the reproducer's run() reads them: backend, mode, dynamic and
    the exact torch._inductor.config patch (fallback_random included, as dlcfuzz compiled it)."""
    from dlcfuzz.backends.inductor.knobs import split_knobs

    mode, dynamic, patch = split_knobs(dict(options.get("knobs") or {}))
    patch = {"fallback_random": True, **patch}
    if options.get("fault"):
        patch["cpp.inject_relu_bug_TESTING_ONLY"] = options["fault"]
    return {"backend": options.get("backend", "inductor"), "mode": mode, "dynamic": dynamic, "inductor_config": patch}


_RUN = '''

def run(name):
    opts = CONFIGS[name]
    args = [torch.from_numpy(INPUTS[n].copy()) for n in INPUT_ORDER]
    fn = model
    if opts["backend"] != "eager":
        torch.compiler.reset()
        kwargs = {"mode": opts["mode"]} if opts["mode"] != "default" else {}
        fn = torch.compile(model, backend=opts["backend"], fullgraph=True, dynamic=opts["dynamic"], **kwargs)
    with torch._inductor.config.patch(opts["inductor_config"]), torch.no_grad():
        return [t.detach().contiguous().numpy() for t in fn(*args)]


# dlcfuzz's numeric policy: NaN/Inf positions must match; relative Chebyshev distance <= per-dtype tolerance
TOL = {"float16": 1e-2, "float32": 1e-3, "float64": 1e-6}


def mismatch(got, ref):
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"shape/dtype {got.dtype}{got.shape} vs {ref.dtype}{ref.shape}"
    if ref.dtype.kind == "f":
        if (np.isnan(got) != np.isnan(ref)).any():
            return "NaN at different positions"
        if (np.isinf(got) != np.isinf(ref)).any() or (got[np.isinf(got)] != ref[np.isinf(ref)]).any():
            return "Inf at different positions"
    g, r = got.astype(np.float64), ref.astype(np.float64)
    fin = np.isfinite(g) & np.isfinite(r)
    d = float((np.abs(g[fin] - r[fin]) / np.maximum(1.0, np.abs(r[fin]))).max()) if fin.any() else 0.0
    return f"max relative difference {d:.4g}" if d > TOL.get(str(ref.dtype), 0.0) else None


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
        base = EXPECTED if EXPECTED is not None else next(iter(ok.values()), None)
        for name, outs in ok.items():
            for i, (got, ref) in enumerate(zip(outs, base)):
                why = mismatch(got, ref)
                if why:
                    print(f"{name} output {i}: {why}")
                    print("expected:", np.asarray(ref).reshape(-1)[:16])
                    print("actual:  ", np.asarray(got).reshape(-1)[:16])
                    print("BUG REPRODUCED:", CATEGORY)
                    return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def inductor_script(g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                    configs: list[Config], category: str, title: str, detail: str, version: str) -> str:
    from dlcfuzz.lower.torch import to_torch_program

    prog = to_torch_program(g)
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    consts = "\n".join(f"{k} = torch.from_numpy({array_source(a)})" for k, a in prog.consts.items())
    ins = ",\n".join(f"    {n!r}: {array_source(np.asarray(inputs[n]))}" for n in prog.input_names)
    exp = "None" if expected is None else "[\n" + ",\n".join(f"    {array_source(np.asarray(e))}" for e in expected) + ",\n]"
    opts = pprint.pformat({c.name: compile_options(c.options) for c in configs}, sort_dicts=False)
    return f'''#!/usr/bin/env python3
"""{title}

Found by dlcfuzz against {version}.
Exit 1 and "BUG REPRODUCED" when the bug shows.
"""
{det}
import base64
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)  # as dlcfuzz ran it


def unpack(text, dtype, shape):
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype).reshape(shape).copy()


{consts + chr(10) * 3 if consts else ""}{prog.source}

INPUT_ORDER = {prog.input_names!r}
INPUTS = {{
{ins}
}}
EXPECTED = {exp}  # dlcfuzz's NumPy reference (None: compare the configurations with each other)
CATEGORY = {category!r}
CONFIGS = {opts}
{_RUN}'''
