"""Standalone TVM reproducers: the TVMScript of each module the configurations compile (constants
as literals when small), the ONNX model built with onnx.helper for the ONNX-frontend method,
relax.build per configuration (the public API only), dlcfuzz's comparison, expected vs actual
printed (backends/script.py). TVMScript printed by one release may not parse on another (0.25's
`out_dtype="void"`): the script then exits 3, neither "shows" (1) nor "does not show" (0)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlcfuzz.backends.base import Backend
from dlcfuzz.backends.script import (
    COMPARE,
    MAIN,
    ONNX_IMPORTS,
    UNPACK,
    arrays_source,
    common,
    header,
    onnx_model_source,
    text_source,
)
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.testcase import Config


def tvm_script(backend: Backend, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
               configs: list[Config], category: str, title: str, detail: str,
               untyped_outputs: Sequence[str] = ()) -> str:
    """TVMScript of each module the configurations compile (one per lowering: function form and
    rewrite), every constant printed as R.const over an array shipped with the script (printing
    constants needs show_meta, whose JSON export crashes on TVM 0.27). `backend`: the TvmBackend."""
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.lower.relax import to_script

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
    uses_onnx = any(c.options.get("method") == "onnx" for c in configs)
    model = onnx_model_source(to_onnx(g, untyped_outputs=untyped_outputs).SerializeToString()) if uses_onnx else ""
    sources_code = "{\n" + "".join(f"    {k!r}: {text_source(v)},\n" for k, v in sources.items()) + "}"
    return header(title, detail, backend.version()) + f'''import base64
import sys
import zlib

import numpy as np
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

try:
    from tvm.script import tirx as T
except ImportError:  # apache-tvm <= 0.25
    from tvm.script import tir as T
{ONNX_IMPORTS if uses_onnx else ""}{UNPACK}
SOURCES = {sources_code}
LOWERING = {lowering!r}  # configuration -> its module in SOURCES
CONSTS = {arrays_source(consts)}
{model}
INPUT_ORDER = {[v.name for v in g.inputs]!r}
{common(inputs, expected, category, configs, detail=detail)}

def module(name):
    if CONFIGS[name].get("method") == "onnx":
        import onnx
        from tvm.relax.frontend.onnx import from_onnx

        return from_onnx(onnx.load_from_string(MODEL))
    try:
        return tvm.script.from_source(SOURCES[LOWERING[name]], extra_vars={{"I": I, "R": R, "T": T, "CONSTS": CONSTS}})
    except Exception as e:  # printed by another TVM release: this one cannot tell whether the bug shows
        print(f"the TVMScript of {{name}} does not parse on apache-tvm {{tvm.__version__}} "
              f"({{type(e).__name__}}: {{str(e)[:300]}}): cannot check the finding here")
        sys.exit(3)


def has_local_functions(mod):
    found = []
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, lambda e: found.append(e) if isinstance(e, relax.Function) else None)
    return bool(found)


def flatten(res):
    if hasattr(res, "numpy"):
        return [res.numpy()]
    if isinstance(res, tvm.runtime.ShapeTuple):  # a Shape output comes back as a shape value
        return [np.asarray(list(res), dtype="int64")]
    return [x for r in res for x in flatten(r)]


def target_of(opts):
    kind = opts.get("target", "llvm")
    if kind == "llvm" and "llvm_opt_level" in opts:  # LLVM's own optimization level (TVM's default: 3)
        return tvm.target.Target({{"kind": "llvm", "opt-level": int(opts["llvm_opt_level"])}})
    return tvm.target.Target(kind)


def run(name):
    opts = CONFIGS[name]
    mod = module(name)
    target = target_of(opts)
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
{COMPARE}{MAIN}'''
