"""The TIR pass table (`tvm.tirx.transform`, `tvm.s_tir.transform`), ordering rules, and pass-sequence
sampling and mutation. No TVM import: the campaign samples sequences without loading the compiler.

A pass sequence P runs on a PrimFunc at the level the mutators work on (blocks lowered, buffers
not yet flattened), and then the mandatory tail MANDATORY that every configuration runs (so that
virtual threads, vectorized loops and multi-dimensional buffers reach LLVM codegen). The
"lowest" configuration is the tail alone. Left out: GPU-only passes (PTX, warp, shared memory,
thread sync, fragments, VTCM, async DMA, default GPU schedule), the block-level passes that need
SBlocks the seeds no longer have, the instrumentation that calls a profiling runtime, and the
tail's own passes (MakePackedAPI and after), which the rules would only let run once anyway.
Measured by applying every constructor to lowered seeds before and after FlattenBuffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.backends.tvm.ordering import order_violations, repair_sequence


@dataclass(frozen=True)
class TirPass:
    module: str  # "tirx" or "s_tir"
    ctor: str  # the constructor's name in module.transform
    args: tuple[Any, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)  # PassContext config the pass reads
    doc: str = ""


PASSES: dict[str, TirPass] = {
    "CanonicalizeLoop": TirPass("s_tir", "CanonicalizeLoop", doc="loops start at 0 with step 1"),
    "CompactBufferAllocation": TirPass("s_tir", "CompactBufferAllocation", doc="shrinks allocations to the accessed region"),
    "LowerMatchBuffer": TirPass("s_tir", "LowerMatchBuffer", doc="removes match_buffer regions"),
    "AnnotateIrregularLoop": TirPass("s_tir", "AnnotateIrregularLoop", doc="marks loops with data-dependent exits"),
    "InjectSoftwarePipeline": TirPass("s_tir", "InjectSoftwarePipeline", doc="software pipelining of annotated loops"),
    "LoopPartition": TirPass("s_tir", "LoopPartition", doc="splits loops at likely() conditions"),
    "LoopPartition[const]": TirPass("s_tir", "LoopPartition", config={"s_tir.LoopPartition": {"partition_const_loop": True}},
                                    doc="also partitions constant-extent loops"),
    "InjectVirtualThread": TirPass("s_tir", "InjectVirtualThread", doc="lowers virtual threads"),
    "InjectDoubleBuffer": TirPass("s_tir", "InjectDoubleBuffer", doc="double-buffers annotated allocations"),
    "HoistIfThenElse": TirPass("s_tir", "HoistIfThenElse", doc="hoists loop-invariant conditions out of loops"),
    "HoistExpression": TirPass("s_tir", "HoistExpression", doc="hoists loop-invariant expressions and conditions"),
    "RenormalizeSplitPattern": TirPass("s_tir", "RenormalizeSplitPattern", doc="rewrites floordiv/floormod split patterns"),
    "RewriteUnsafeSelect": TirPass("s_tir", "RewriteUnsafeSelect", doc="turns Select with unsafe branches into if_then_else"),
    "UseAssumeToReduceBranches": TirPass("s_tir", "UseAssumeToReduceBranches", doc="removes branches using assume()"),
    "RemoveStoreUndef": TirPass("s_tir", "RemoveStoreUndef", doc="removes stores of undef()"),
    "UnifyThreadBinding": TirPass("s_tir", "UnifyThreadBinding", doc="unifies thread bindings of one launch"),
    "InstrumentBoundCheckers": TirPass("s_tir", "InstrumentBoundCheckers", doc="adds bounds checks to buffer accesses"),
    "ConvertSSA": TirPass("tirx", "ConvertSSA", doc="renames variables so that each is defined once"),
    "StmtSimplify": TirPass("tirx", "StmtSimplify", doc="arithmetic simplification of statements"),
    "StmtSimplify[prove]": TirPass("tirx", "StmtSimplify", config={"tirx.StmtSimplify": {
        "transitively_prove_inequalities": True, "convert_boolean_to_and_of_ors": True,
        "apply_constraints_to_boolean_branches": True}},
        doc="simplification with every proof option on"),
    "FlattenBuffer": TirPass("tirx", "FlattenBuffer", doc="multi-dimensional buffers to flat ones"),
    "BF16ComputeLegalize": TirPass("tirx", "BF16ComputeLegalize", doc="bfloat16 arithmetic in float32"),
    "FP8ComputeLegalize": TirPass("tirx", "FP8ComputeLegalize", doc="float8 arithmetic in float32"),
    "NarrowDataType": TirPass("tirx", "NarrowDataType", (32,), doc="narrows int64 indices to int32 where they fit"),
    "ForceNarrowIndexToInt32": TirPass("tirx", "ForceNarrowIndexToInt32", doc="forces int32 indices"),
    "VectorizeLoop": TirPass("tirx", "VectorizeLoop", (True,), doc="vectorizes loops of kind vectorized"),
    "UnrollLoop": TirPass("tirx", "UnrollLoop", doc="unrolls loops of kind unrolled and small ones"),
    "UnrollLoop[auto16]": TirPass("tirx", "UnrollLoop", config={"tirx.UnrollLoop": {"auto_max_step": 16, "explicit_unroll": True}},
                                  doc="unrolls every loop nest of up to 16 steps"),
    "StorageRewrite": TirPass("tirx", "StorageRewrite", doc="reuses and merges allocations"),
    "CommonSubexprElim": TirPass("tirx", "CommonSubexprElim", doc="common subexpression elimination"),
    "RemoveNoOp": TirPass("tirx", "RemoveNoOp", doc="removes statements without effect"),
    "RemoveAssume": TirPass("tirx", "RemoveAssume", doc="removes assume() calls"),
    "SkipAssert": TirPass("tirx", "SkipAssert", doc="removes assertions"),
    "PointerValueTypeRewrite": TirPass("tirx", "PointerValueTypeRewrite", doc="rewrites pointer element types to the accessed ones"),
    "LowerIntrin": TirPass("tirx", "LowerIntrin", doc="lowers intrinsics to target calls"),
    "VerifyMemory": TirPass("tirx", "VerifyMemory", doc="checks host code does not touch device memory"),
}

# The tail every configuration runs after its sequence (the minimum LLVM codegen needs).
# LowerOpaqueBlock first: UnifyThreadBinding turns `launch_thread` into thread_binding loops that
# only LowerOpaqueBlock turns back (measured: without it LLVM codegen fails with "cannot handle for
# type launch_thread"; TVM's own pipeline always runs LowerOpaqueBlock after UnifyThreadBinding).
MANDATORY = [TirPass("s_tir", "LowerOpaqueBlock"), TirPass("s_tir", "InjectVirtualThread"), TirPass("tirx", "FlattenBuffer"),
             TirPass("tirx", "VectorizeLoop", (False,)), TirPass("tirx", "AnnotateEntryFunc"),
             TirPass("tirx", "SplitHostDevice"), TirPass("tirx", "MakePackedAPI")]

# The order s_tir's default pipeline runs them in (documented there): passes that run on flattened
# buffers need FlattenBuffer first.
REQUIRES: dict[str, tuple[str, ...]] = {
    # plans flat allocations; refuses vectorized loops ("VectorizeLoop before LiftStorageAlloc")
    "StorageRewrite": ("FlattenBuffer", "VectorizeLoop"),
    "NarrowDataType": ("FlattenBuffer",),
    "InjectDoubleBuffer": ("FlattenBuffer",),
    "PointerValueTypeRewrite": ("FlattenBuffer",),  # rewrites the flat buffers' pointer types
    # a vectorized loop variable in a non-last index: "Only the last index of a buffer access may
    # be a vector type" (measured: `compute[0, i1, 0, 0]` with i1 vectorized)
    "VectorizeLoop": ("FlattenBuffer",),
}
# Passes that work on unflattened buffers only (the default pipeline runs them before FlattenBuffer).
NOT_AFTER: dict[str, tuple[str, ...]] = {
    "CompactBufferAllocation": ("FlattenBuffer",),
    "LowerMatchBuffer": ("FlattenBuffer",),
    "CanonicalizeLoop": ("FlattenBuffer",),
    "InjectSoftwarePipeline": ("FlattenBuffer",),
}


def violations(seq: Sequence[str]) -> list[str]:
    """What is wrong with a TIR pass sequence under the rules above (empty: it is well ordered)."""
    return order_violations(seq, PASSES, REQUIRES, NOT_AFTER)


def repair(seq: Sequence[str]) -> list[str]:
    """The sequence with missing prerequisites inserted right before the pass that needs them,
    and passes that must not follow an earlier one dropped (a pass may repeat)."""
    return repair_sequence(seq, PASSES, REQUIRES, NOT_AFTER, distinct=False)


def sample_sequence(rng: np.random.Generator, min_len: int = 1, max_len: int = 8) -> list[str]:
    names = list(PASSES)
    k = int(rng.integers(min_len, max_len + 1))
    return repair([names[int(i)] for i in rng.integers(len(names), size=k)])


def mutate_sequence(seq: Sequence[str], rng: np.random.Generator, max_len: int = 12) -> list[str]:
    """Insert, delete, replace or swap passes (a pass may repeat), then repair."""
    out = list(seq)
    names = list(PASSES)
    op = int(rng.integers(4)) if out else 0
    if op == 0 and len(out) < max_len:
        out.insert(int(rng.integers(len(out) + 1)), names[int(rng.integers(len(names)))])
    elif op == 1:
        del out[int(rng.integers(len(out)))]
    elif op == 2:
        out[int(rng.integers(len(out)))] = names[int(rng.integers(len(names)))]
    elif len(out) > 1:
        i, j = (int(x) for x in rng.choice(len(out), 2, replace=False))
        out[i], out[j] = out[j], out[i]
    return repair(out)


def instantiate(p: TirPass) -> Any:
    """The pass object (imports TVM)."""
    import tvm

    mod = tvm.tirx.transform if p.module == "tirx" else tvm.s_tir.transform
    return getattr(mod, p.ctor)(*p.args)
