"""TVM Relax: pipelines, opt level, explicit relax.transform sequences, targets, VM exec modes,
and two compilation methods (our direct Relax lowering, TVM's ONNX frontend)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tvm
from tvm import relax

from dlcfuzz.backends.base import BackendBase, Config, Knob
from dlcfuzz.backends.tvm.function_rewrites import KINDS, apply_rewrite
from dlcfuzz.backends.tvm.gaps import KNOWN_GAPS, ONNX_FRONTEND_FORM_GAPS
from dlcfuzz.backends.tvm.passes import (
    KNOWN_BUGS,
    OPTIMIZE,
    PASSES,
    REQUIRES,
    TVM_OUT_OF_REACH,
    relax_passes,
    sample_pass_sequence,
    violations,
)
from dlcfuzz.gen.random import FormGap
from dlcfuzz.ir.graph import Graph
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.lower.relax import FORMS, constant_data, map_constants, to_relax
from dlcfuzz.reduce.ddmin import ddmin

EXPECTED = [
    ("unsupported", re.compile(r"not supported|Unsupported|NotImplemented|is not implemented|not implemented|only support")),
    ("invalid-model", re.compile(r"InternalError: Check failed: \(false\) is false: Cannot find|TypeError: .*argument")),
]
# HirGen's cross-method oracle: one of these joins each generated test (VM exec mode, target, front door)
CROSS_METHOD = ("tvm-opt-compiled", "tvm-opt-c", "tvm-onnx-opt")
# TVM's ONNX frontend imports fewer operators (and forms) than our direct Relax lowering lowers: it is a door
# configuration (Backend.door_configs), probed apart, and this share of generated tests is drawn for it
# (only from what it imports) and compares it; the others draw from everything the direct lowering takes
ONNX_DOOR = "tvm-onnx-opt"
ONNX_DOOR_SHARE = 0.75
MINIMIZE_CHECKS = 48  # compile+run checks one pass-sequence minimization may spend
# Relax passes that rewrite functions, calls and closures, which an oatest graph (a pattern spliced into a flat
# graph) does not have: a configuration targeting one lowers the graph with node ranges outlined into private
# sub-functions (gen/functions.outline, same outputs bit for bit), as closures where the pass lifts closures
FUNCTION_PASSES = ("LambdaLift", "InlinePrivateFunctions", "RemoveUnusedParameters")
CLOSURE_PASSES = ("LambdaLift",)


def codegen_target(options: dict[str, Any]) -> Any:
    """A configuration's code generation target: its `target` kind, and for llvm its `llvm_opt_level` where it
    names one (TVM's own default is 3). The reproducer builds the same target (reproducer.py's `target_of`)."""
    kind = options.get("target", "llvm")
    if kind == "llvm" and "llvm_opt_level" in options:
        return tvm.target.Target({"kind": "llvm", "opt-level": int(options["llvm_opt_level"])})
    return tvm.target.Target(kind)


def private_constants(mod: Any) -> Any:
    """`mod` with a fresh copy of every Relax constant's data.

    A compiled executable shares constant storage with the module it was built from, and
    DataflowUseInplaceCalls can make a kernel write into a constant at run time (a known
    apache-tvm 0.27 bug): without the copy, one configuration's build would corrupt the lowered
    module that the next configurations of the same test compile."""

    def fresh(c: Any) -> Any:
        data = constant_data(c)
        return relax.const(data.numpy(), str(data.dtype))

    return map_constants(mod, fresh)


def close_passes(order: list[str]) -> Callable[[list[str]], list[str]]:
    """Complete a subset of a pass sequence with the passes it requires, keeping the original order."""

    def close(subset: list[str]) -> list[str]:
        keep = set(subset)
        changed = True
        while changed:
            changed = False
            for p in list(keep):
                for r in REQUIRES.get(p, ()):
                    if r not in keep and r in order:
                        keep.add(r)
                        changed = True
        return [p for p in order if p in keep]

    return close


def privatized(mod: Any) -> Any:
    """`mod` with every Relax function but main private (no global symbol): to_relax makes the global form's
    sub-functions public, and InlinePrivateFunctions and RemoveUnusedParameters rewrite private ones only."""
    out = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function) and gv.name_hint != "main" and func.attrs and "global_symbol" in func.attrs:
            out[gv] = func.without_attr("global_symbol")
    return out


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
    if isinstance(res, tvm.runtime.ShapeTuple):  # the ONNX importer returns a Shape output as a shape value
        return [np.asarray(list(res), dtype="int64")]
    out: list[np.ndarray] = []
    for r in res:
        out.extend(_flatten(r))
    return out


# (operator, rule) our direct Relax lowering passes to a Relax operator whose documented semantics accept
# the broken form, so "accepted" says nothing about TVM (found as accepted-invalid by a 30-minute campaign):
DIRECT_LENIENCY: dict[tuple[str, str], str] = {
    ("tile", "rank"): "relax.op.tile has numpy.tile semantics: a `repeats` of another length than the rank "
                      "prepends 1s (to repeats or to the data's shape)",
    ("gemm", "rank"): "our lowering of Gemm is relax.op.matmul (and permute_dims), which batches operands of "
                      "rank above 2 as documented",
}

# Relax's ONNX importer runs onnx.checker.check_model but turns its errors into warnings, by design
# (onnx_frontend.py: "the checker is a bit violent about errors, so simply print warnings here"), and
# converts whatever it is given: an invalid model it accepts is documented behaviour, not a bug (a
# crash or an internal error while importing one still is)
ONNX_IMPORTER_LENIENCY = ("tvm.relax.frontend.onnx.from_onnx only warns on onnx.checker errors and converts "
                          "invalid models as given (documented in its source)")


class TvmBackend(BackendBase):
    name = "tvm"
    packages = ("tvm", "tvm_ffi")  # where the compiler's own exceptions come from
    distributions = ("apache-tvm", "apache-tvm-ffi")
    own_strategies = ("tzer",)  # Tzer mutates TIR and TVM's pass sequences
    # TVM's C++ backtrace frames ("  File ..., in tvm::relax::Normalizer::..." / "  0: tvm::...")
    frame_patterns = (r"in (tvm::[\w:<>]+)",)

    def front_door(self, config: str) -> str:
        return "onnx"  # both methods take the test as an ONNX model checked by onnx's checker
    deadline_s = 60.0  # LLVM builds of a whole Relax module: seconds each, several configurations per test
    reduction_checks = 60  # each check builds several modules
    input_sets = 8  # a build costs seconds, a run of the built module milliseconds (issue 42)
    sub_functions = True  # Relax has functions, calls and closures

    def version(self) -> str:
        return f"apache-tvm {tvm.__version__}"

    def knobs(self) -> list[Knob]:
        return [
            Knob("method", ["direct", "onnx"], "our BlockBuilder lowering, or TVM's relax.frontend.onnx"),
            Knob("passes", list(PASSES), "explicit relax.transform sequence applied before the build pipeline"),
            Knob("opt_level", [0, 1, 2, 3], "PassContext opt_level (4 enables FastMath: never compared exactly)"),
            Knob("target", ["llvm", "c"], "code generation target"),
            Knob("llvm_opt_level", [0, 3], "LLVM's own optimization level of the llvm target (TVM's default: 3)"),
            Knob("exec_mode", ["bytecode", "compiled"], "Relax VM execution mode"),
            Knob("form", list(FORMS), "sub-functions as global functions, local closures, or closures returned by globals"),
            Knob("rewrite", [None, *KINDS], "HirGen function rewrite applied after lowering (direct method only)"),
            Knob("rewrite_seed", [0, 1, 2, 3], "which function the rewrite picks"),
        ]

    def configs(self) -> dict[str, Config]:
        base = {"method": "direct", "target": "llvm", "exec_mode": "bytecode", "opt_level": 3}
        return {
            # unoptimized down to LLVM, whose -O0 also builds faster (bench/tvm_speed.py: 1.26x on the probe's graphs)
            "tvm-unopt": Config("tvm-unopt", {**base, "passes": [], "opt_level": 0, "llvm_opt_level": 0}),
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

    def known_gaps(self, op: str) -> dict[str, str]:
        return dict(KNOWN_GAPS.get(op, {}))

    # ---- what a campaign compares ------------------------------------------
    def door_configs(self) -> dict[str, float]:
        return {ONNX_DOOR: ONNX_DOOR_SHARE}

    def door_form_gaps(self, door: str, op: str) -> Sequence[FormGap]:
        return ONNX_FRONTEND_FORM_GAPS.get(op, ()) if door == ONNX_DOOR else ()

    def per_test_configs(self, rng: np.random.Generator, g: Graph, configs: list[Config]) -> list[Config]:
        """HirGen's three oracles, per test: original unoptimized vs optimized, where the optimized one
        is a random order/subset of the Relax passes with a random function form; a function-rewritten
        variant (rewrite a/b/c) joins when the graph has sub-functions; and one other compilation
        method is added: the ONNX frontend when the test was drawn for it (it is in `configs`), else
        the VM's compiled exec mode or the C target. (`configs`, the campaign's pair, is otherwise
        replaced.)"""
        every = self.configs()
        opt = every["tvm-opt"].options
        form = FORMS[int(rng.integers(len(FORMS)))]
        # passes with a documented TVM bug stay out (FuseOps' needs a closure in a dataflow
        # block: the closure form without ConvertToDataflow cannot make one)
        pool = [p for p in PASSES if p == "FuseOps" or p not in KNOWN_BUGS]
        if form == "closure":
            pool.remove("ConvertToDataflow")
        out = [every["tvm-unopt"],
               Config("tvm-passes", {**opt, "passes": sample_pass_sequence(rng, pool=pool), "form": form})]
        if g.functions:
            kind = "abc"[int(rng.integers(3))]
            out.append(Config(f"tvm-rewrite-{kind}", {**opt, "rewrite": kind, "rewrite_seed": int(rng.integers(2**31)),
                                                       "form": FORMS[int(rng.integers(len(FORMS)))]}))
        names = [c.name for c in out]
        if any(c.name == ONNX_DOOR for c in configs):  # drawn for the frontend: its graph imports
            return [*out, every[ONNX_DOOR]]
        extra = [n for n in CROSS_METHOD if n in every and n not in names and n != ONNX_DOOR]
        if extra:
            out.append(every[extra[int(rng.integers(len(extra)))]])
        return out

    def oatest_configs(self, rng: np.random.Generator, targets: list[str], configs: list[Config]) -> list[Config]:
        """Unoptimized vs the targeted passes (with what they require) in random order, then the rest
        of the default optimization pipeline. A target that OPTIMIZE or relax.build's pipeline runs anyway
        keeps its place there: drawn to the front, LegalizeOps or ToNonDataflow would leave the passes that
        rewrite high-level operators in dataflow blocks (DecomposeOpsForInference, DataflowUseInplaceCalls,
        ReorderTakeAfterMatmul) nothing to rewrite."""
        from dlcfuzz.backends.tvm.trigger import pipeline_passes

        every = self.configs()
        built = {*OPTIMIZE, *pipeline_passes()}
        wanted = [t for t in targets if t in PASSES and t not in built]
        seq = sample_pass_sequence(rng, min_len=len(wanted), max_len=len(wanted), pool=wanted) if wanted else []
        seq += [p for p in OPTIMIZE if p not in seq]
        if violations(seq):
            seq = list(OPTIMIZE) + [t for t in wanted if t not in OPTIMIZE]
        options = {**every["tvm-opt"].options, "passes": seq}
        if any(t in FUNCTION_PASSES for t in wanted):  # give them functions to work on (FUNCTION_PASSES)
            options["outline_seed"] = int(rng.integers(2**31))
            if any(t in CLOSURE_PASSES for t in wanted) and "ConvertToDataflow" not in seq:  # (FuseOps' known bug)
                options["form"] = "closure"
        return [every["tvm-unopt"], Config("tvm-oatest", options)]

    def disruptive_configs(self) -> list[str]:
        return ["tvm-opt", "tvm-onnx-opt"]

    def disruptive_rules(self) -> tuple[str, ...] | None:
        # Relax defines its own operators' dtypes: only rank, shape and dtype-mismatch rules bind it
        return ("dtype-mismatch", "rank", "shape")

    def documented_leniency(self, config: Config, op: str, rule: str) -> str | None:
        if config.options.get("method", "direct") == "onnx":
            return ONNX_IMPORTER_LENIENCY
        return DIRECT_LENIENCY.get((op, rule))

    def per_op_rules(self, config: Config) -> bool:
        # our direct lowering reaches each Relax operator's type inference; the ONNX frontend is one importer
        return config.options.get("method", "direct") != "onnx"

    def minimize_config(self, config: Config, shows: Callable[[Config], bool]) -> tuple[Config, list[str]]:
        """ddmin over the configuration's Relax pass sequence (subsets completed by the passes they
        require, in order)."""
        seq = list(config.options.get("passes", []))
        with_passes = lambda s: Config(config.name, {**config.options, "passes": s})  # noqa: E731
        if not seq or shows(with_passes([])):
            return with_passes([]), []
        close = close_passes(seq)
        kept = close(ddmin(seq, lambda s: shows(with_passes(s)), close=close, max_checks=MINIMIZE_CHECKS))
        return with_passes(kept), kept

    # ---- compile and run -----------------------------------------------------
    def compile_module(self, mod: Any, config: Config, input_names: list[str], n_outputs: int) -> TvmCompiled:
        o = config.options
        mod = private_constants(mod)
        target = codegen_target(o)
        with tvm.transform.PassContext(opt_level=int(o.get("opt_level", 3))):
            mod = relax_passes(mod, o)
            ex = relax.build(mod, target=target, relax_pipeline="default", exec_mode=o.get("exec_mode", "bytecode"))
        vm = relax.VirtualMachine(ex, tvm.cpu())
        return TvmCompiled(vm, input_names, n_outputs)

    def lower(self, g: Graph, config: Config) -> Any:
        if config.options.get("method", "direct") == "onnx":
            return to_onnx(g)  # TVM's frontend import is the compiler's work, done in build()
        o = config.options
        if o.get("outline_seed") is not None and not g.functions:  # oatest_configs' FUNCTION_PASSES
            from dlcfuzz.gen.functions import outline

            g = outline(g, np.random.default_rng(int(o["outline_seed"])))
        # a disruptive test's broken node must reach a Relax operator as it is (untyped_outputs names it)
        mod = to_relax(g, form=o.get("form", "global"), checked=o.get("untyped_outputs", ()))
        if o.get("outline_seed") is not None:
            mod = privatized(mod)
        if o.get("rewrite"):
            mod = apply_rewrite(mod, o["rewrite"], int(o.get("rewrite_seed", 0)))
        return mod

    def lower_key(self, config: Config) -> str:
        o = config.options
        if o.get("method", "direct") == "onnx":
            return "onnx"
        key = "direct"
        if o.get("outline_seed") is not None:
            key += f"/outlined{int(o['outline_seed'])}"
        if o.get("form", "global") != "global":
            key += f"/{o['form']}"
        if o.get("rewrite"):
            key += f"/rewrite-{o['rewrite']}{int(o.get('rewrite_seed', 0))}"
        return key

    def relax_module(self, lowered: Any, config: Config) -> Any:
        """The Relax module a configuration compiles from its lowering (TVM's ONNX frontend imports it here)."""
        if config.options.get("method", "direct") == "onnx":
            from tvm.relax.frontend.onnx import from_onnx

            return from_onnx(lowered, keep_params_in_input=False)
        return lowered

    def build(self, lowered: Any, g: Graph, config: Config) -> TvmCompiled:
        return self.compile_module(self.relax_module(lowered, config), config, [v.name for v in g.inputs],
                                   len(g.outputs))

    # ---- findings --------------------------------------------------------------
    def reproducer(self, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str,
                   untyped_outputs: tuple[str, ...] = ()) -> str:
        from dlcfuzz.backends.tvm.reproducer import tvm_script

        return tvm_script(self, g, inputs, expected, configs, category, title, detail, untyped_outputs)

    def fired(self, g: Graph, config: Config, targets: list[str]) -> dict[str, bool] | None:
        """Which targeted passes changed the module while the configuration compiled it: its explicit
        sequence and relax.build's Relax pipeline (trigger.py)."""
        from dlcfuzz.backends.tvm.trigger import tvm_fired

        return tvm_fired(self, g, config, targets)

    def optimizations(self) -> tuple[str, ...]:
        """The passes of TVM's default Relax pipeline for the CPU (`relax.get_default_pipeline`), as the
        installed release runs them (its legalization part is what the optimized configurations run first,
        the rest what relax.build runs), then the Relax passes our sampled sequences run before it (`PASSES`:
        the `passes` knob and oatest's sequences, which are what TVM's patterns target). No FuseOpsByPattern
        pattern: that pipeline runs none, and the release registers none until a BYOC backend (cutlass,
        cublas, dnnl) is imported."""
        from dlcfuzz.backends.tvm.trigger import pipeline_passes

        return tuple(dict.fromkeys([*pipeline_passes(), *PASSES]))

    def optimizations_out_of_reach(self) -> dict[str, str]:
        """Those of `optimizations()` no configuration can fire, with why (`passes.TVM_OUT_OF_REACH`)."""
        return {name: why for name, why in TVM_OUT_OF_REACH.items() if name in self.optimizations()}
