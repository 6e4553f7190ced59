"""ONNXRuntime's optimization levels and graph transformers, by the names its API takes (no
onnxruntime import: tables the reproducer templates and pattern mining read too), and the minimal
set of transformers that still shows a finding.

Minimization is delta debugging (ddmin) over the optimizers `disabled_optimizers` can switch off:
a candidate set S is tried by disabling every other listed optimizer at ORT_ENABLE_ALL. The
rule-based containers (Level1_RuleBasedTransformer, ...) are never disabled: their rules are
listed one by one, so that a rule alone is a candidate. An empty result means the optimizations in
reach are not needed: the inconsistency is in kernels or an optimizer the list does not name.
"""

from __future__ import annotations

from collections.abc import Callable

from dlcfuzz.oracle.testcase import Config
from dlcfuzz.reduce.ddmin import ddmin

# opt_level knob value -> the name of its onnxruntime.GraphOptimizationLevel member
LEVELS: dict[str, str] = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}

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

MAX_CHECKS = 48  # compile+run checks one minimization may spend


def minimal_optimizers(config: Config, shows: Callable[[Config], bool],
                       max_checks: int = MAX_CHECKS) -> tuple[Config, list[str]]:
    """The configuration at ORT_ENABLE_ALL with every listed optimizer disabled but a minimal set that
    `shows` (compiles and judges a candidate) still shows the finding with, and that set (sorted)."""
    names = list(ORT_OPTIMIZERS)

    def keeping(subset: list[str]) -> Config:
        keep = set(subset)
        return Config(config.name, {**config.options, "opt_level": "all",
                                    "disabled_optimizers": [n for n in names if n not in keep]})

    if shows(keeping([])):
        return keeping([]), []
    kept = sorted(ddmin(names, lambda s: shows(keeping(s)), max_checks=max_checks))
    return keeping(kept), kept
