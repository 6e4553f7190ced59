"""Standalone reproducer scripts: only the compiler's public API and NumPy (what upstream accepts).

A script exits 1 and prints "BUG REPRODUCED" when the finding shows, 0 when it does not.
Crashes show as the process dying (signal), hangs as the script not returning.
"""

from __future__ import annotations

import base64
import io
import pprint
import textwrap
from collections.abc import Sequence

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.ir.graph import Graph

_COMPARE = '''
TOL = {"float16": 1e-2, "float32": 1e-3, "float64": 1e-6}


def mismatch(got, ref):
    """dlcfuzz's numeric policy: NaN/Inf positions must match; relative Chebyshev distance <= per-dtype tolerance."""
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
'''

_MAIN = '''

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


def _b64(data: bytes) -> str:
    return "\n".join(textwrap.wrap(base64.b64encode(data).decode(), 100))


def _npz_b64(arrays: dict[str, np.ndarray]) -> str:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return _b64(buf.getvalue())


def _header(title: str, detail: str, version: str) -> str:
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    return f'#!/usr/bin/env python3\n"""{title}\n\nFound by dlcfuzz against {version}.\nExit 1 and "BUG REPRODUCED" when the bug shows.\n"""\n{det}\n'


def _common(inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None, category: str, configs: list[Config]) -> str:
    exp = "None" if expected is None else '[EXP[k] for k in sorted(EXP, key=int)]'
    exp_def = "" if expected is None else f'EXP = dict(np.load(io.BytesIO(base64.b64decode("""\n{_npz_b64({str(i): a for i, a in enumerate(expected)})}\n"""))))\n'
    return (
        f'INPUTS = dict(np.load(io.BytesIO(base64.b64decode("""\n{_npz_b64(inputs)}\n"""))))\n'
        f"{exp_def}EXPECTED = {exp}  # dlcfuzz's NumPy reference\n"
        f"CATEGORY = {category!r}\n"
        # a Python literal, not JSON: options may hold None (TVM's rewrite knob)
        f"CONFIGS = {pprint.pformat({c.name: c.options for c in configs}, sort_dicts=False)}\n"
    )


def ort_script(model_bytes: bytes, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
               configs: list[Config], category: str, title: str, detail: str, version: str) -> str:
    return _header(title, detail, version) + f'''import base64
import io
import sys

import numpy as np
import onnxruntime as ort

MODEL = base64.b64decode("""
{_b64(model_bytes)}
""")
{_common(inputs, expected, category, configs)}
LEVELS = {{"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}}


def run(name):
    opts = CONFIGS[name]
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[opts.get("opt_level", "all")])
    sess = ort.InferenceSession(MODEL, so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=opts.get("disabled_optimizers") or None)
    return sess.run(None, {{i.name: INPUTS[i.name] for i in sess.get_inputs()}})
{_COMPARE}{_MAIN}'''


def tvm_script(g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
               configs: list[Config], category: str, title: str, detail: str, version: str,
               untyped_outputs: Sequence[str] = ()) -> str:
    """TVMScript of each module the configurations compile (one per lowering: function form and
    rewrite), every constant printed as R.const over an array shipped with the script (printing
    constants needs show_meta, whose JSON export crashes on TVM 0.27)."""
    from dlcfuzz.backends.tvm import TvmBackend
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.lower.relax import to_script

    backend = TvmBackend()
    sources: dict[str, str] = {}
    lowering: dict[str, str] = {}
    consts: dict[str, np.ndarray] = {}
    for c in configs:
        if c.options.get("method", "direct") == "onnx":
            continue
        key = backend.lower_key(c)
        if key not in sources:
            sources[key], arrays = to_script(backend.lower(g, c), prefix=f"m{len(sources)}_")
            consts.update(arrays)
        lowering[c.name] = key
    onnx_model = to_onnx(g, untyped_outputs=untyped_outputs).SerializeToString()
    return _header(title, detail, version) + f'''import base64
import io
import sys

import numpy as np
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

try:
    from tvm.script import tirx as T
except ImportError:  # apache-tvm <= 0.25
    from tvm.script import tir as T

SOURCES = {sources!r}
LOWERING = {lowering!r}  # configuration -> its module in SOURCES
CONSTS = dict(np.load(io.BytesIO(base64.b64decode("""
{_npz_b64(consts)}
"""))))
ONNX_MODEL = base64.b64decode("""
{_b64(onnx_model)}
""")
INPUT_ORDER = {[v.name for v in g.inputs]!r}
{_common(inputs, expected, category, configs)}

def module(name):
    if CONFIGS[name].get("method") == "onnx":
        import onnx
        from tvm.relax.frontend.onnx import from_onnx

        return from_onnx(onnx.load_from_string(ONNX_MODEL))
    return tvm.script.from_source(SOURCES[LOWERING[name]], extra_vars={{"I": I, "R": R, "T": T, "CONSTS": CONSTS}})


def has_local_functions(mod):
    found = []
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, lambda e: found.append(e) if isinstance(e, relax.Function) else None)
    return bool(found)


def flatten(res):
    if hasattr(res, "numpy"):
        return [res.numpy()]
    return [x for r in res for x in flatten(r)]


def run(name):
    opts = CONFIGS[name]
    mod = module(name)
    target = tvm.target.Target(opts.get("target", "llvm"))
    with tvm.transform.PassContext(opt_level=int(opts.get("opt_level", 3))):
        passes = [getattr(relax.transform, p)() for p in opts.get("passes", [])]
        if passes:
            with target:
                mod = tvm.transform.Sequential(passes)(mod)
        if has_local_functions(mod):  # relax.build's VMShapeLower needs closures lifted
            mod = relax.transform.LambdaLift()(mod)
        ex = relax.build(mod, target=target, relax_pipeline="default", exec_mode=opts.get("exec_mode", "bytecode"))
    vm = relax.VirtualMachine(ex, tvm.cpu())
    return flatten(vm["main"](*[tvm.runtime.tensor(INPUTS[n]) for n in INPUT_ORDER]))
{_COMPARE}{_MAIN}'''


def dlcfuzz_script(compiler: str, graph_blob: bytes, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str, version: str) -> str:
    """For dlcfuzz's own planted-fault backends, which exist only inside dlcfuzz."""
    return _header(title, detail, version) + f'''import base64
import io
import sys

import numpy as np

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.ir import loads

GRAPH = loads(base64.b64decode("""
{_b64(graph_blob)}
"""))
{_common(inputs, expected, category, configs)}
BACKEND = get_backend({compiler!r})


def run(name):
    return BACKEND.compile(GRAPH, Config(name, CONFIGS[name])).run(INPUTS)
{_COMPARE}{_MAIN}'''


def _type_of(a: np.ndarray):
    from dlcfuzz.ir.types import TensorType

    return TensorType.of(a)


def make_script(compiler: str, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                configs: list[Config], category: str, title: str, detail: str, version: str,
                untyped_outputs: Sequence[str] = ()) -> str:
    """`untyped_outputs`: outputs of a disruptive graph, declared without a type in ONNX."""
    from dlcfuzz.ir import dumps
    from dlcfuzz.lower.onnx import to_onnx

    if compiler == "onnxruntime":
        return ort_script(to_onnx(g, untyped_outputs=untyped_outputs).SerializeToString(), inputs, expected, configs, category, title, detail, version)
    if compiler == "tvm":
        return tvm_script(g, inputs, expected, configs, category, title, detail, version, untyped_outputs)
    return dlcfuzz_script(compiler, dumps(g), inputs, expected, configs, category, title, detail, version)


def metamorphic_ort_script(inputs: dict[str, np.ndarray], configs: list[Config], delta: float, title: str,
                           detail: str, version: str) -> str:
    """MT-DLComp reproducer: runs seed.onnx and mutant.onnx (written beside it: full-size models are
    too large to embed) under each configuration and compares label and scores."""
    return _header(title, detail, version) + f'''import base64
import io
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
{_common(inputs, None, "metamorphic", configs)}DELTA = {delta!r}
LEVELS = {{"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}}


def run(model, name):
    opts = CONFIGS[name]
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[opts.get("opt_level", "all")])
    sess = ort.InferenceSession(str(HERE / model), so, providers=["CPUExecutionProvider"],
                                disabled_optimizers=opts.get("disabled_optimizers") or None)
    return sess.run(None, {{i.name: INPUTS[i.name] for i in sess.get_inputs()}})


def main():
    for name in CONFIGS:
        seed = run("seed.onnx", name)[0].astype(np.float64)
        try:
            mutant = run("mutant.onnx", name)[0].astype(np.float64)
        except Exception as e:
            print(f"{{name}}: the mutant fails while its seed compiles: {{type(e).__name__}}: {{e}}")
            print("BUG REPRODUCED: mutant-rejected")
            return 1
        labels = seed.reshape(seed.shape[0], -1).argmax(-1), mutant.reshape(mutant.shape[0], -1).argmax(-1)
        d = float(np.max(np.abs(mutant - seed) / np.maximum(1.0, np.abs(seed))))
        print(f"{{name}}: labels {{labels[0].tolist()}} vs {{labels[1].tolist()}}, score distance {{d:.3g}}")
        if not np.array_equal(*labels) or d > DELTA:
            print("BUG REPRODUCED: metamorphic (the mutant is semantically equal to its seed)")
            return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
