"""Patterns written from TVM's Relax passes (apache/tvm src/relax/transform/*.cc, read on main in 2026, and the
installed release's python/tvm/relax/transform/: the structure each pass rewrites, none of its code; each pattern
names its file), for the passes of `TvmBackend.optimizations()`
that no pattern of the shared library or mined from TVM's tests fired in `bench/optimization_triggers.py`. Each tag is
checked like the library's (`tests/test_tvm_optimizations.py`: the pattern between two other operators, compiled by
the configuration `TvmBackend.oatest_configs` makes for that one target, changes the module in that pass).

Every pattern here is also tagged with the passes of relax.build's default pipeline that rewrite any module with an
operator in it (`BUILD_PASSES`: legalization, fusion, memory planning, VM lowering; measured on each pattern), so that
a test drawn for one of them splices a pattern that was checked to fire it.

Passes of the list that no pattern here reaches, and why (apache-tvm 0.27, CPU): those out of reach of the
configurations (`backends/tvm/passes.TVM_OUT_OF_REACH`, left out of the trigger bench's denominator):
DispatchSampling, ComputePrimValue, Normalize. ConvertToDataflow has nothing to do where a function's operators are in
a dataflow block already, as our lowering and TVM's ONNX frontend emit them: it fires where a region (`relax.If`)
splits them, and `branch_on_sum` holds one (a region pattern: `synthesize.pattern_supported` admits it by its
bodies' operators, as the capability probe never answers for a region).
The passes that rewrite functions (LambdaLift, InlinePrivateFunctions, RemoveUnusedParameters) get them from the
configuration: `oatest_configs` outlines node ranges of a test that targets one into private sub-functions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.zoo.builder import Builder

# relax.build's default pipeline passes (and the passes FuseTIR runs inside) that rewrite every pattern below: each
# pattern is tagged with them too
BUILD_PASSES = ("LegalizeOps", "AnnotateTIROpPattern", "FuseTIR", "ToNonDataflow", "RemovePurityChecking",
                "CallTIRRewrite", "LowerAllocTensor", "KillAfterLastUse", "LowerRuntimeBuiltin", "VMShapeLower",
                "AttachGlobalSymbol", "CanonicalizeBindings", "ExpandTupleArguments")


def cumsum_rows(seed: int) -> Graph:
    """A CumSum (DispatchSortScan, dispatch_sort_scan.py: relax.cumsum, like sort, argsort and topk, becomes a call
    of its TOPI scan kernel before legalization)."""
    b = Builder("cumsum_rows", seed)
    x = b.input("x", (3, 8))
    return b.outputs(b.op("cumsum", [x], "cumsum", axis=1, exclusive=0, reverse=0))


def low_rank_matmul(seed: int) -> Graph:
    """x @ (A @ B) with A, B a low-rank pair (AdjustMatmulOrder, adjust_matmul_order.cc: re-associated to (x @ A) @ B
    where that takes fewer products, as for LoRA weights)."""
    b = Builder("low_rank_matmul", seed)
    x = b.input("x", (2, 16))
    ab = b.op("matmul", [b.input("a", (16, 2)), b.input("b", (2, 16))], "ab")
    return b.outputs(b.op("matmul", [x, ab], "mm"))


def matmul_of_input_sum(seed: int) -> Graph:
    """x @ (A + B) with A and B computed at run time (ExpandMatmulOfSum, expand_matmul_of_sum.cc: x @ A + x @ B; it
    leaves a sum of two constants to FoldConstant)."""
    b = Builder("matmul_of_input_sum", seed)
    x = b.input("x", (3, 6))
    w = b.add(b.input("w1", (6, 4)), b.input("w2", (6, 4)), "wsum")
    return b.outputs(b.op("matmul", [x, w], "mm"))


def gather_columns_matmul(seed: int) -> Graph:
    """x @ Gather(W, idx, axis=1) (ReorderTakeAfterMatmul, reorder_take_after_matmul.cc: matmul(x, take(W, idx)) with
    1-d indices on the weights' last axis becomes take(matmul(x, W), idx))."""
    b = Builder("gather_columns_matmul", seed)
    x = b.input("x", (3, 6))
    w = b.param("w", b.rng.normal(0, 0.3, (6, 8)))
    cols = b.op("gather", [w, b.param("idx", np.array([1, 4, 6], dtype=np.int64), "int64")], "cols", axis=1)
    return b.outputs(b.op("matmul", [x, cols], "mm"))


def reshape_between_matmuls(seed: int) -> Graph:
    """A Reshape between two MatMuls, fused with neither (RewriteDataflowReshape, rewrite_dataflow_reshape.cc: a
    reshape-like TIR call left alone after fusion becomes a VM reshape, a view)."""
    b = Builder("reshape_between_matmuls", seed)
    x = b.input("x", (4, 6))
    y = b.op("matmul", [x, b.input("w1", (6, 4))], "mm1")
    r = b.op("reshape", [y], "r", shape=[2, 8])
    return b.outputs(b.op("matmul", [r, b.input("w2", (8, 3))], "mm2"))


def add_of_dying_value(seed: int) -> Graph:
    """Add whose first operand is read nowhere else (DataflowUseInplaceCalls, dataflow_inplace.cc: an elementwise call
    whose input dies there writes its result into that input's storage)."""
    b = Builder("add_of_dying_value", seed)
    x = b.input("x", (3, 4))
    e = b.op("exp", [x], "e")
    return b.outputs(b.op("add", [e, b.input("y", (3, 4))], "add"))


def batch_norm_inference(seed: int) -> Graph:
    """BatchNormalization alone (DecomposeOpsForInference, decompose_ops.cc: relax.nn.batch_norm becomes its
    arithmetic with the running statistics)."""
    b = Builder("batch_norm_inference", seed)
    x = b.input("x", (1, 4, 5, 5))
    return b.outputs(b.bn(x, "bn"))


def interleaved_branches(seed: int) -> Graph:
    """Two independent chains whose nodes interleave (TopologicalSort, topological_sort.cc: bindings reordered
    depth-first from the inputs)."""
    b = Builder("interleaved_branches", seed)
    a = b.op("exp", [b.input("x", (3, 4))], "a")
    c = b.op("neg", [b.input("y", (3, 4))], "c")
    d = b.op("abs", [a], "d")
    return b.outputs(b.add(d, c, "out"))


def shape_only_read(seed: int) -> Graph:
    """A value read only through its Shape, a constant of static shapes (RemoveUnusedParameters,
    remove_unused_parameters.cc: once the Shape's range is outlined into a private function, that value is a
    parameter nobody reads; FoldConstant: the Cast of that constant, legalized into a TIR call of constants, is
    folded, with or without the outlining, where the shared library's constant_subgraph is the only other pattern
    that fires it)."""
    b = Builder("shape_only_read", seed)
    x = b.input("x", (3, 2))
    c = b.op("cast", [b.op("shape", [x], "s")], "c", to="float32")
    return b.outputs(b.op("add", [b.input("y", (3, 2)), c], "add"))


def branch_on_sum(seed: int) -> Graph:
    """An If on the sign of a sum, each branch one elementwise operator (ConvertToDataflow, convert_dataflow.cc: our
    lowering puts a region outside dataflow blocks, and the bindings that select the branch's result, in the If and
    beside it, are pure bindings outside one, which the pass wraps into dataflow blocks)."""
    b = Builder("branch_on_sum", seed)
    x = b.input("x", (3, 4))
    total = b.op("reduce_sum", [x], "total", axes=[0, 1], keepdims=1, noop_with_empty_axes=0)
    cond = b.op("greater", [total, b.scalar("zero", 0.0)], "cond")
    then = Builder("then_branch", seed)
    then_graph = then.outputs(then.op("exp", [then.input("t_x", (3, 4))], "t_exp"))
    other = Builder("else_branch", seed)
    else_graph = other.outputs(other.op("neg", [other.input("e_x", (3, 4))], "e_neg"))
    picked = b.op("if", [cond, x], "picked", then_branch=then_graph, else_branch=else_graph)
    return b.outputs(b.op("abs", [picked], "out"))


# name -> (builder, the TVM passes it fires besides BUILD_PASSES, granularity); no pattern targets both LambdaLift and
# InlinePrivateFunctions, or InlinePrivateFunctions with a pass its inlining would undo first (RemoveUnusedParameters)
TVM_LIBRARY: dict[str, tuple[Callable[[int], Graph], list[str], str]] = {
    "cumsum_rows": (cumsum_rows, ["DispatchSortScan", "StaticPlanBlockMemory", "InlinePrivateFunctions"], "subgraph"),
    "low_rank_matmul": (low_rank_matmul, ["AdjustMatmulOrder"], "subgraph"),
    "matmul_of_input_sum": (matmul_of_input_sum, ["ExpandMatmulOfSum"], "subgraph"),
    "gather_columns_matmul": (gather_columns_matmul, ["ReorderTakeAfterMatmul"], "subgraph"),
    "reshape_between_matmuls": (reshape_between_matmuls, ["RewriteDataflowReshape", "StaticPlanBlockMemory"],
                                "subgraph"),
    "add_of_dying_value": (add_of_dying_value, ["DataflowUseInplaceCalls", "RemoveUnusedOutputs"], "subgraph"),
    "batch_norm_inference": (batch_norm_inference, ["DecomposeOpsForInference"], "subgraph"),
    "interleaved_branches": (interleaved_branches, ["TopologicalSort", "LambdaLift"],
                             "subgraph"),
    "shape_only_read": (shape_only_read, ["RemoveUnusedParameters", "FoldConstant"], "subgraph"),
    "branch_on_sum": (branch_on_sum, ["ConvertToDataflow"], "subgraph"),
}
