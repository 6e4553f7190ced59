"""TVM Relax: pipelines, opt level, explicit relax.transform sequences, targets, VM exec modes,
and two compilation methods (our direct Relax lowering, TVM's ONNX frontend)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import tvm
from tvm import relax

from dlcfuzz.backends.base import Config, Knob
from dlcfuzz.backends.relax_passes import OPTIMIZE, PASSES, sample_pass_sequence
from dlcfuzz.ir.graph import Graph
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.lower.relax import FORMS, to_relax
from dlcfuzz.mutate.functions import KINDS, apply_rewrite

__all__ = ["OPTIMIZE", "PASSES", "TvmBackend", "make_pass", "sample_pass_sequence"]  # the table lives in relax_passes

EXPECTED = [
    ("unsupported", re.compile(r"not supported|Unsupported|NotImplemented|is not implemented|not implemented|only support")),
    ("invalid-model", re.compile(r"InternalError: Check failed: \(false\) is false: Cannot find|TypeError: .*argument")),
]


def make_pass(name: str) -> Any:
    if name not in PASSES:
        raise ValueError(f"unknown Relax pass {name!r}")
    return getattr(relax.transform, name)()


def has_local_functions(mod: Any) -> bool:
    """Whether a Relax function of `mod` binds or returns a local function (a closure)."""
    found = False

    def visit(e: Any) -> None:
        nonlocal found
        found = found or isinstance(e, relax.Function)

    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, visit)
            if found:
                return True
    return False


def private_constants(mod: Any) -> Any:
    """`mod` with a fresh copy of every Relax constant's data.

    A compiled executable shares constant storage with the module it was built from, and
    DataflowUseInplaceCalls can make a kernel write into a constant at run time (a known
    apache-tvm 0.27 bug): without the copy, one configuration's build would corrupt the lowered
    module that the next configurations of the same test compile."""
    from tvm.relax.expr_functor import PyExprMutator, mutator

    def fresh(c: Any) -> Any:
        data = c.value if hasattr(c, "value") else c.data  # apache-tvm <= 0.25: relax.Constant.data
        return relax.const(data.numpy(), str(data.dtype))

    @mutator
    class Copy(PyExprMutator):
        def visit_generic_const_(self, c: Any) -> Any:
            return fresh(c)

        def visit_constant_(self, c: Any) -> Any:  # apache-tvm <= 0.25
            return fresh(c)

    m = Copy(mod)
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            m.builder_.update_func(gv, m.visit_expr(func))
    return m.builder_.get()


class TvmCompiled:
    def __init__(self, vm: Any, input_names: list[str], n_outputs: int) -> None:
        self.vm = vm
        self.input_names = input_names
        self.n_outputs = n_outputs

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        res = self.vm["main"](*[tvm.runtime.tensor(inputs[n]) for n in self.input_names])
        return _flatten(res)


def _flatten(res: Any) -> list[np.ndarray]:
    if hasattr(res, "numpy"):
        return [res.numpy()]
    out: list[np.ndarray] = []
    for r in res:
        out.extend(_flatten(r))
    return out


class TvmBackend:
    name = "tvm"
    packages = ("tvm", "tvm_ffi")  # where the compiler's own exceptions come from

    def version(self) -> str:
        return f"apache-tvm {tvm.__version__}"

    def knobs(self) -> list[Knob]:
        return [
            Knob("method", ["direct", "onnx"], "our BlockBuilder lowering, or TVM's relax.frontend.onnx"),
            Knob("passes", list(PASSES), "explicit relax.transform sequence applied before the build pipeline"),
            Knob("opt_level", [0, 1, 2, 3], "PassContext opt_level (4 enables FastMath: never compared exactly)"),
            Knob("target", ["llvm", "c"], "code generation target"),
            Knob("exec_mode", ["bytecode", "compiled"], "Relax VM execution mode"),
            Knob("form", list(FORMS), "sub-functions as global functions, local closures, or closures returned by globals"),
            Knob("rewrite", [None, *KINDS], "HirGen function rewrite applied after lowering (direct method only)"),
            Knob("rewrite_seed", [0, 1, 2, 3], "which function the rewrite picks"),
        ]

    def configs(self) -> dict[str, Config]:
        base = {"method": "direct", "target": "llvm", "exec_mode": "bytecode", "opt_level": 3}
        return {
            "tvm-unopt": Config("tvm-unopt", {**base, "passes": [], "opt_level": 0}),
            "tvm-opt": Config("tvm-opt", {**base, "passes": OPTIMIZE}),
            "tvm-opt-compiled": Config("tvm-opt-compiled", {**base, "passes": OPTIMIZE, "exec_mode": "compiled"}),
            "tvm-opt-c": Config("tvm-opt-c", {**base, "passes": OPTIMIZE, "target": "c"}),
            "tvm-onnx-opt": Config("tvm-onnx-opt", {**base, "method": "onnx", "passes": OPTIMIZE}),
        }

    def default_pair(self) -> tuple[Config, Config]:
        c = self.configs()
        return c["tvm-unopt"], c["tvm-opt"]

    def expected_error(self, message: str) -> str | None:
        return next((name for name, pat in EXPECTED if pat.search(message)), None)

    def compile_module(self, mod: Any, config: Config, input_names: list[str], n_outputs: int) -> TvmCompiled:
        o = config.options
        mod = private_constants(mod)
        passes = [make_pass(p) for p in o.get("passes", [])]
        target = tvm.target.Target(o.get("target", "llvm"))
        with tvm.transform.PassContext(opt_level=int(o.get("opt_level", 3))):
            if passes:
                with target:
                    mod = tvm.transform.Sequential(passes)(mod)
            if has_local_functions(mod):
                # VMShapeLower (in relax.build) rejects local functions: closures must be lifted first.
                mod = relax.transform.LambdaLift()(mod)
            ex = relax.build(mod, target=target, relax_pipeline="default", exec_mode=o.get("exec_mode", "bytecode"))
        vm = relax.VirtualMachine(ex, tvm.cpu())
        return TvmCompiled(vm, input_names, n_outputs)

    def lower(self, g: Graph, config: Config) -> Any:
        if config.options.get("method", "direct") == "onnx":
            return to_onnx(g)  # TVM's frontend import is the compiler's work, done in build()
        o = config.options
        mod = to_relax(g, form=o.get("form", "global"))
        if o.get("rewrite"):
            mod = apply_rewrite(mod, o["rewrite"], int(o.get("rewrite_seed", 0)))
        return mod

    def lower_key(self, config: Config) -> str:
        o = config.options
        if o.get("method", "direct") == "onnx":
            return "onnx"
        key = "direct"
        if o.get("form", "global") != "global":
            key += f"/{o['form']}"
        if o.get("rewrite"):
            key += f"/rewrite-{o['rewrite']}{int(o.get('rewrite_seed', 0))}"
        return key

    def build(self, lowered: Any, g: Graph, config: Config) -> TvmCompiled:
        mod = lowered
        if config.options.get("method", "direct") == "onnx":
            from tvm.relax.frontend.onnx import from_onnx

            mod = from_onnx(lowered, keep_params_in_input=False)
        return self.compile_module(mod, config, [v.name for v in g.inputs], len(g.outputs))

    def compile(self, g: Graph, config: Config) -> TvmCompiled:
        return self.build(self.lower(g, config), g, config)
