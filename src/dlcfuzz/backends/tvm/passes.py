"""The Relax pass table, its ordering rules, and random pass sequences (no TVM import: strategies
and reducers can sample and check sequences without loading the compiler; only `make_pass`, which
makes a named pass, imports TVM when called).

Every pass here takes no argument, applies to the modules dlcfuzz builds (before relax.build's
own pipeline runs), and keeps main's results unchanged: a mismatch, crash or internal error after
a sequence that satisfies the rules below is a compiler bug. The rules encode measured ordering
needs only (random graphs through random sequences, including ones that break the rules), each
with the reason it exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.backends.tvm.ordering import order_violations, repair_sequence

PASSES: dict[str, str] = {
    "FoldConstant": "evaluates constant subexpressions",
    "FuseOps": "groups operators into fused primitive functions (after LegalizeOps + AnnotateTIROpPattern)",
    "FuseTIR": "merges fused primitive functions into single TIR functions (after FuseOps)",
    "DeadCodeElimination": "removes unused bindings and functions",
    "EliminateCommonSubexpr": "merges identical bindings",
    "CanonicalizeBindings": "removes trivial var-to-var bindings",
    "LambdaLift": "lifts local functions to global ones",
    "InlinePrivateFunctions": "inlines private functions into callers",
    "ConvertToDataflow": "wraps pure bindings into dataflow blocks",
    "ToNonDataflow": "turns dataflow blocks into ordinary ones",
    "RemoveUnusedParameters": "drops parameters nobody reads",
    "RemoveUnusedOutputs": "drops tuple outputs nobody reads",
    "ExpandTupleArguments": "flattens tuple parameters",
    "CombineParallelMatmul": "merges matmuls that share an operand",
    "ReorderPermuteDimsAfterConcat": "moves permute_dims after concat",
    "AdjustMatmulOrder": "re-associates chains of matmuls",
    "RemoveRedundantReshape": "drops reshape of reshape / identity reshapes",
    "DecomposeOpsForInference": "decomposes batch_norm etc. for inference",
    "FoldBatchnormToConv2D": "folds batch_norm into the preceding conv2d",
    "ExpandMatmulOfSum": "expands matmul(x, a + b)",
    "ReorderTakeAfterMatmul": "moves take after matmul",
    "FuseTransposeMatmul": "fuses transpose into matmul",
    "Normalize": "normalizes the AST",
    "TopologicalSort": "orders bindings topologically",
    "LegalizeOps": "lowers high-level ops to TIR",
    "AnnotateTIROpPattern": "annotates TIR functions with their op pattern",
    "RewriteDataflowReshape": "turns reshape-like TIR calls into VM reshapes (views)",
    "DataflowUseInplaceCalls": "turns elementwise ops whose input dies into in-place TIR calls",
}

# The optimization pipeline the "opt" configurations run (relax.build's own zero pipeline, spelled out).
OPTIMIZE = ["LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR"]

# pass -> passes that must have run before it (the sampler inserts what is missing). Measured:
# out of order these passes find nothing to work on and do nothing (no error, same results), so
# the rules keep sampled sequences from wasting them rather than from breaking the build.
REQUIRES: dict[str, tuple[str, ...]] = {
    # FuseOps groups TIR calls by the op pattern AnnotateTIROpPattern puts on PrimFuncs, which
    # only exist after LegalizeOps.
    "FuseOps": ("LegalizeOps", "AnnotateTIROpPattern"),
    "AnnotateTIROpPattern": ("LegalizeOps",),  # annotates PrimFuncs: none exist before LegalizeOps
    "FuseTIR": ("FuseOps",),  # merges the primitive functions FuseOps creates
}

# pass -> passes after which it must not run (the sampler drops it instead).
NOT_AFTER: dict[str, tuple[str, ...]] = {}

# pass -> (opening, closing): it must not run after the opening pass unless the closing one ran in
# between (the sampler postpones it past the closing pass, or drops it).
NOT_BETWEEN: dict[str, tuple[str, str]] = {
    # FuseTIR accepts only call_tir inside the primitive functions FuseOps made, and
    # RewriteDataflowReshape turns reshape-like call_tir there into R.reshape ("Only call_tir and
    # call_tir_inplace are supported in primitive function"); relax.build runs it after FuseTIR.
    "RewriteDataflowReshape": ("FuseOps", "FuseTIR"),
}

# Passes with a known apache-tvm 0.27 bug that random sequences hit (found by dlcfuzz; minimal
# reproducers in the README). They stay in the table: a campaign that wants new findings can
# leave them out with `pool`.
KNOWN_BUGS: dict[str, str] = {
    "DataflowUseInplaceCalls": "ValueError 'In-place index 0 is out of range' on R.add(R.const(scalar), x); "
                               "segfault on a call returning a tuple whose items alias one value; "
                               "in-place kernels write through aliases: R.tile(x, [1, 1]) overwrites the caller's x, "
                               "a constant viewed through expand_dims drifts between runs",
    "FuseOps": "InternalError 'it_creator != group2func_.end()' when a local function is bound in a dataflow block",
    "RemoveUnusedOutputs": "rewrites a private function used as a value (a lifted closure that is returned): dangling GlobalVar",
    "RemoveUnusedParameters": "same: drops parameters of a private function used as a value",
    "InlinePrivateFunctions": "same: removes a private function used as a value",
}

# Passes of TvmBackend.optimizations() that cannot rewrite anything dlcfuzz's configurations compile, with the reason:
# not counted as misses in the trigger bench's denominator, printed there with the reason (measured: none of them
# changed a module of the built-in library or of the patterns written for TVM, synth/library_tvm.py).
TVM_OUT_OF_REACH: dict[str, str] = {
    "DispatchSampling": "dispatches relax.multinomial_from_uniform, which no operator dlcfuzz speaks lowers to "
                        "(ONNX Multinomial samples at random: out of scope, lower/onnx_scope.py; TVM's ONNX frontend "
                        "has no converter for it)",
    "ComputePrimValue": "computes R.prim_value expressions of symbolic shape variables; dlcfuzz's modules, from "
                        "either front door, have static shapes only, so every prim_value is a constant",
    "Normalize": "normalizes the IR; the BlockBuilder normalizes every binding our lowering and TVM's ONNX frontend "
                 "emit, so the module an oatest sequence starts from has nothing left for it (measured on every "
                 "built-in pattern)",
}


def make_pass(name: str) -> Any:
    """The Relax pass object of a name in PASSES (imports TVM)."""
    from tvm import relax

    if name not in PASSES:
        raise ValueError(f"unknown Relax pass {name!r}")
    return getattr(relax.transform, name)()


def violations(seq: Sequence[str]) -> list[str]:
    """What is wrong with a Relax pass sequence under the rules above (empty: it is well ordered)."""
    return order_violations(seq, PASSES, REQUIRES, NOT_AFTER, NOT_BETWEEN)


def sample_pass_sequence(rng: np.random.Generator, *, min_len: int = 1, max_len: int = 8,
                         pool: Sequence[str] | None = None) -> list[str]:
    """A random subset of `pool` (default: every pass) in random order, repaired to satisfy the
    rules: a missing prerequisite is inserted right before the pass that needs it (so the result
    may be longer than max_len), a pass that must not follow an earlier one is dropped, one that
    must wait for a closing pass runs right after it (or is dropped). Distinct passes."""
    names = list(PASSES if pool is None else pool)
    k = int(rng.integers(max(min_len, 0), min(max_len, len(names)) + 1))
    chosen = [names[i] for i in rng.permutation(len(names))[:k]]
    return repair_sequence(chosen, PASSES, REQUIRES, NOT_AFTER, NOT_BETWEEN)


def has_local_functions(mod: Any) -> bool:
    """Whether a Relax function of `mod` binds or returns a local function (a closure)."""
    from tvm import relax

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


def relax_passes(mod: Any, options: dict[str, Any]) -> Any:
    """A configuration's explicit pass sequence on `mod`, then its closures lifted: what runs before
    relax.build's own pipeline (in the caller's PassContext)."""
    import tvm
    from tvm import relax

    passes = [make_pass(p) for p in options.get("passes", [])]
    if passes:
        with tvm.target.Target(options.get("target", "llvm")):
            mod = tvm.transform.Sequential(passes)(mod)
    if has_local_functions(mod):
        # VMShapeLower (in relax.build) rejects local functions: closures must be lifted first.
        mod = relax.transform.LambdaLift()(mod)
    return mod
