"""Dedup of inconsistencies by the minimal set of optimizations that still shows them.

ONNXRuntime: delta debugging (ddmin) over the optimizers `disabled_optimizers` can switch off:
a candidate set S is tried by disabling every other listed optimizer at ORT_ENABLE_ALL. The
rule-based containers (Level1_RuleBasedTransformer, ...) are never disabled: their rules are
listed one by one, so that a rule alone is a candidate. TVM: ddmin over the Relax pass sequence
of the configuration that shows the inconsistency (subsets are completed by the passes they
require, in order). An empty result means the optimizations in reach are not needed: the
inconsistency is in kernels, code generation, or an optimizer the list does not name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.ir.graph import Graph
from dlcfuzz.reduce.ddmin import ddmin

# Leaf graph transformers and rewrite rules of ONNXRuntime's CPU optimizer (levels 1-3), by the
# names `disabled_optimizers` matches; `ORT_CONTAINERS` hold rules and stay enabled.
ORT_OPTIMIZERS: tuple[str, ...] = (
    # level 1 rewrite rules
    "EliminateIdentity", "EliminateSlice", "UnsqueezeElimination", "EliminateDropout", "ExpandElimination",
    "CastElimination", "PreShapeNodeElimination", "NoopElimination", "DivMulFusion", "FuseReluClip",
    "GemmSumFusion", "GemmTransposeFusion", "NotWhereFusion", "ConvAddFusion", "ConvMulFusion", "ConvBNFusion",
    "ClipQuantFusion", "ReluQuantFusion", "LabelEncoderFusion",
    # level 1 transformers
    "CommonSubexpressionElimination", "ConstantFolding", "MatMulAddFusion", "ReshapeFusion",
    "FreeDimensionOverrideTransformer", "QDQPropagationTransformer", "EnsureUniqueDQForNodeUnit",
    "ConstantSharing", "RemoveDuplicateCastTransformer", "PadFusion", "SplitFusion",
    # level 2
    "QDQS8ToU8Transformer", "QDQSelectorActionTransformer", "GemmActivationFusion", "MatMulIntegerToFloatFusion",
    "DynamicQuantizeMatMulFusion", "ConvActivationFusion", "GeluFusionL1", "GeluFusionL2", "LayerNormFusionL1",
    "LayerNormFusionL2", "SimplifiedLayerNormFusion", "AttentionFusion", "EmbedLayerNormFusion",
    "GatherSliceToSplitFusion", "GatherToSliceFusion", "MatmulTransposeFusion", "BiasGeluFusion",
    "SkipLayerNormFusion", "FastGeluFusion", "QuickGeluFusion", "BiasSoftmaxFusion", "BiasDropoutFusion",
    "MatMulScaleFusion", "MatMulActivationFusion", "MatMulNBitsFusion", "QDQFinalCleanupTransformer",
    "DoubleQDQPairsRemover", "IsInfReduceSumFusion", "ConvAddActivationFusion",
    # level 3
    "NhwcTransformer", "NchwcTransformer",
)
ORT_CONTAINERS: tuple[str, ...] = ("Level1_RuleBasedTransformer", "Level2_RuleBasedTransformer")


def _close_passes(order: Sequence[str]) -> Callable[[list[str]], list[str]]:
    """Complete a subset of a pass sequence with the passes it requires, keeping the original order."""
    from dlcfuzz.backends.relax_passes import REQUIRES

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


def minimal_optimizations(compiler: str, g: Graph, inputs: dict[str, np.ndarray], reference: Config,
                          optimized: Config, shows: Callable[[Graph, dict[str, np.ndarray], list[Config]], bool],
                          max_checks: int = 48) -> list[str]:
    """The minimal set of optimizations under which `optimized` still shows the inconsistency
    against `reference`; `shows(g, inputs, configs)` runs a candidate pair and says whether it does."""
    def config(options: dict[str, Any]) -> Config:
        return Config(optimized.name, {**optimized.options, **options})

    if compiler == "tvm":
        seq = list(optimized.options.get("passes", []))
        if not seq or shows(g, inputs, [reference, config({"passes": []})]):
            return []
        close = _close_passes(seq)
        kept = ddmin(seq, lambda s: shows(g, inputs, [reference, config({"passes": s})]), close=close,
                     max_checks=max_checks)
        return close(kept)
    names = list(ORT_OPTIMIZERS)

    def fails(subset: list[str]) -> bool:
        keep = set(subset)
        return shows(g, inputs, [reference, config({"opt_level": "all",
                                                    "disabled_optimizers": [n for n in names if n not in keep]})])

    if fails([]):
        return []
    return sorted(ddmin(names, fails, max_checks=max_checks))
