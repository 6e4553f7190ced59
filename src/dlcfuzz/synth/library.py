"""The built-in pattern library: structures the compilers' optimizers rewrite, each tagged with the
optimizations it targets (what users get without any compiler test corpus).

ONNXRuntime names are the names `disabled_optimizers` accepts (graph transformers and rewrite
rules); each tag was checked by measurement (`tests/test_synth.py::test_library_tags_fire_on_ort`):
with the named optimizer disabled, the optimized model of the pattern (between two other operators)
differs from the one with it enabled (for the transformers that check cannot tell, the other observations of
`backends/onnxruntime/trigger.py`). Patterns without an ONNXRuntime tag found no CPU optimizer that rewrites
them (BiasSoftmaxFusion matches nodes of the CUDA provider only; FastGeluFusion's form is library_ort's
gelu_tanh_pow, with Pow). `TransposeOptimizer` is judged by the pattern's transposes disappearing.
ONNXRuntime's Python transformer optimizer's fusions are named "transformers.<class>" (FusionGelu, ...;
backends/onnxruntime/transformers.py), checked by the optimizer's run on the pattern.
TVM names are `relax.transform` passes of the pass table.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.ops import check_graph
from dlcfuzz.synth.forms import layer_norm_decomposed
from dlcfuzz.synth.pattern import Pattern, shipped_pattern_file, shipped_patterns
from dlcfuzz.zoo.builder import Builder

F32 = "float32"


def conv_bn(seed: int) -> Graph:
    b = Builder("conv_bn", seed)
    x = b.input("x", (1, 4, 6, 6))
    return b.outputs(b.bn(b.conv(x, 6, 3, "conv"), "bn"))


def conv_relu(seed: int) -> Graph:
    b = Builder("conv_relu", seed)
    x = b.input("x", (1, 3, 6, 6))
    return b.outputs(b.relu(b.conv(x, 4, 3, "conv", bias=True), "relu"))


def conv_clip(seed: int) -> Graph:
    b = Builder("conv_clip", seed)
    x = b.input("x", (1, 3, 6, 6))
    return b.outputs(b.relu6(b.conv(x, 4, 3, "conv"), "clip"))


def conv_add(seed: int) -> Graph:
    b = Builder("conv_add", seed)
    x = b.input("x", (1, 3, 5, 5))
    y = b.conv(x, 4, 3, "conv")
    return b.outputs(b.add(y, b.param("bias", b.rng.normal(0, 0.1, (4, 1, 1))), "add"))


def conv_mul(seed: int) -> Graph:
    b = Builder("conv_mul", seed)
    x = b.input("x", (1, 3, 5, 5))
    y = b.conv(x, 4, 3, "conv")
    return b.outputs(b.op("mul", [y, b.param("scale", b.rng.uniform(0.5, 1.5, (4, 1, 1)))], "mul"))


def conv_add_relu(seed: int) -> Graph:
    b = Builder("conv_add_relu", seed)
    x = b.input("x", (1, 3, 5, 5))
    r = b.input("r", (1, 4, 5, 5))
    return b.outputs(b.relu(b.add(b.conv(x, 4, 3, "conv", bias=True), r, "add"), "relu"))


def matmul_add(seed: int) -> Graph:
    b = Builder("matmul_add", seed)
    x = b.input("x", (3, 8))
    y = b.op("matmul", [x, b.param("w", b.rng.normal(0, 0.3, (8, 5)))], "mm")
    return b.outputs(b.add(y, b.param("bias", b.rng.normal(0, 0.1, (5,))), "add"))


def gemm_relu(seed: int) -> Graph:
    b = Builder("gemm_relu", seed)
    x = b.input("x", (4, 6))
    return b.outputs(b.relu(b.linear(x, 5, "fc"), "relu"))


def gelu_erf(seed: int) -> Graph:
    """0.5 * x * (1 + erf(x / sqrt(2))): the exact GELU spelled out, as exporters emit it."""
    b = Builder("gelu_erf", seed)
    x = b.input("x", (2, 3, 8))
    d = b.op("div", [x, b.scalar("sqrt2", np.sqrt(2.0))], "div")
    e = b.op("add", [b.op("erf", [d], "erf"), b.scalar("one", 1.0)], "add")
    m = b.op("mul", [x, e], "mul")
    return b.outputs(b.op("mul", [m, b.scalar("half", 0.5)], "mul_half"))


def gelu_tanh(seed: int) -> Graph:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))): the tanh approximation spelled out."""
    b = Builder("gelu_tanh", seed)
    x = b.input("x", (2, 8))
    x3 = b.op("mul", [b.op("mul", [x, x], "sq"), x], "cube")
    inner = b.op("add", [x, b.op("mul", [x3, b.scalar("k", 0.044715)], "kx3")], "inner")
    t = b.op("tanh", [b.op("mul", [inner, b.scalar("c", np.sqrt(2.0 / np.pi))], "scaled")], "tanh")
    one_t = b.op("add", [t, b.scalar("one", 1.0)], "one_t")
    return b.outputs(b.op("mul", [b.op("mul", [x, b.scalar("half", 0.5)], "half_x"), one_t], "gelu"))


def quick_gelu(seed: int) -> Graph:
    """x * sigmoid(1.702 x)."""
    b = Builder("quick_gelu", seed)
    x = b.input("x", (3, 8))
    s = b.op("sigmoid", [b.op("mul", [x, b.scalar("alpha", 1.702)], "scale")], "sigmoid")
    return b.outputs(b.op("mul", [x, s], "mul"))


def transpose_pair(seed: int) -> Graph:
    b = Builder("transpose_pair", seed)
    x = b.input("x", (2, 3, 4))
    t = b.op("transpose", [x], "t1", perm=[2, 0, 1])
    return b.outputs(b.op("transpose", [t], "t2", perm=[1, 2, 0]))


def transpose_matmul(seed: int) -> Graph:
    b = Builder("transpose_matmul", seed)
    x = b.input("x", (3, 6))
    y = b.input("y", (5, 6))
    return b.outputs(b.op("matmul", [x, b.op("transpose", [y], "t", perm=[1, 0])], "mm"))


def concat_of_permutes(seed: int) -> Graph:
    b = Builder("concat_of_permutes", seed)
    x = b.input("x", (2, 3, 4))
    y = b.input("y", (2, 5, 4))
    tx = b.op("transpose", [x], "tx", perm=[0, 2, 1])
    ty = b.op("transpose", [y], "ty", perm=[0, 2, 1])
    return b.outputs(b.op("concat", [tx, ty], "cat", axis=2))


def reshape_chain(seed: int) -> Graph:
    b = Builder("reshape_chain", seed)
    x = b.input("x", (2, 3, 4))
    r = b.op("reshape", [x], "r1", shape=[6, 4])
    return b.outputs(b.op("reshape", [b.op("reshape", [r], "r2", shape=[4, 6])], "r3", shape=[2, 12]))


def mul_one(seed: int) -> Graph:
    b = Builder("mul_one", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("relu", [b.op("mul", [x, b.scalar("one", 1.0)], "mul")], "relu"))


def add_zero(seed: int) -> Graph:
    b = Builder("add_zero", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("relu", [b.op("add", [x, b.scalar("zero", 0.0)], "add")], "relu"))


def identity_chain(seed: int) -> Graph:
    b = Builder("identity_chain", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("sigmoid", [b.op("identity", [x], "id")], "sigmoid"))


def dropout_inference(seed: int) -> Graph:
    b = Builder("dropout_inference", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("tanh", [b.op("dropout", [x], "drop", ratio=0.5)], "tanh"))


def parallel_matmul(seed: int) -> Graph:
    """Two matmuls that share their left operand (CombineParallelMatmul merges them; it leaves
    constant right operands alone, so these are holes)."""
    b = Builder("parallel_matmul", seed)
    x = b.input("x", (4, 6))
    a = b.op("matmul", [x, b.input("w1", (6, 3))], "mm1")
    c = b.op("matmul", [x, b.input("w2", (6, 5))], "mm2")
    return b.outputs(a, c)


def constant_subgraph(seed: int) -> Graph:
    """Arithmetic on constants only, feeding an operator on the input (constant folding)."""
    b = Builder("constant_subgraph", seed)
    x = b.input("x", (3, 4))
    k = b.op("exp", [b.op("mul", [b.param("c1", b.rng.normal(0, 0.5, (4,))), b.scalar("c2", 0.5)], "cm")], "ce")
    return b.outputs(b.op("mul", [x, k], "mul"))


def common_subexpression(seed: int) -> Graph:
    b = Builder("common_subexpression", seed)
    x = b.input("x", (3, 4))
    a = b.op("sigmoid", [x], "s1")
    c = b.op("sigmoid", [x], "s2")
    return b.outputs(b.op("add", [a, c], "add"))


def cast_roundtrip(seed: int) -> Graph:
    """A lossless cast pair (float32 -> float64 -> float32): removable."""
    b = Builder("cast_roundtrip", seed)
    x = b.input("x", (3, 4))
    c = b.op("cast", [x], "up", to="float64")
    return b.outputs(b.op("abs", [b.op("cast", [c], "down", to="float32")], "abs"))


def expand_same_shape(seed: int) -> Graph:
    b = Builder("expand_same_shape", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("neg", [b.op("expand", [x], "expand", shape=[3, 4])], "neg"))


def full_slice(seed: int) -> Graph:
    b = Builder("full_slice", seed)
    x = b.input("x", (3, 4))
    s = b.op("slice", [x], "slice", starts=[0], ends=[4], axes=[1], steps=[1])
    return b.outputs(b.op("exp", [s], "exp"))


def matmul_scale(seed: int) -> Graph:
    b = Builder("matmul_scale", seed)
    x = b.input("x", (3, 6))
    s = b.op("mul", [x, b.scalar("factor", 0.125)], "scaled")
    return b.outputs(b.op("matmul", [s, b.param("w", b.rng.normal(0, 0.3, (6, 4)))], "mm"))


def matmul_of_sum(seed: int) -> Graph:
    b = Builder("matmul_of_sum", seed)
    x = b.input("x", (3, 6))
    w = b.add(b.param("w1", b.rng.normal(0, 0.3, (6, 4))), b.param("w2", b.rng.normal(0, 0.3, (6, 4))), "wsum")
    return b.outputs(b.op("matmul", [x, w], "mm"))


def unsqueeze_squeeze(seed: int) -> Graph:
    b = Builder("unsqueeze_squeeze", seed)
    x = b.input("x", (3, 4))
    u = b.op("unsqueeze", [x], "unsqueeze", axes=[0])
    return b.outputs(b.op("squeeze", [u], "squeeze", axes=[0]))


def bias_softmax(seed: int) -> Graph:
    b = Builder("bias_softmax", seed)
    x = b.input("x", (2, 3, 5))
    y = b.add(x, b.param("bias", b.rng.normal(0, 0.5, (5,))), "add")
    return b.outputs(b.op("softmax", [y], "softmax", axis=-1))


# name -> (builder, {compiler: optimizations}, granularity)
LIBRARY: dict[str, tuple[Callable[[int], Graph], dict[str, list[str]], str]] = {
    "conv_bn": (conv_bn, {"onnxruntime": ["ConvBNFusion"], "tvm": ["FoldBatchnormToConv2D"]}, "subgraph"),
    "conv_relu": (conv_relu, {"onnxruntime": ["ConvActivationFusion"], "tvm": ["FuseOps"]}, "subgraph"),
    "conv_clip": (conv_clip, {"onnxruntime": ["ConvActivationFusion"], "tvm": ["FuseOps"]}, "subgraph"),
    "conv_add": (conv_add, {"onnxruntime": ["ConvAddFusion"], "tvm": ["FuseOps"]}, "subgraph"),
    "conv_mul": (conv_mul, {"onnxruntime": ["ConvMulFusion"], "tvm": ["FuseOps"]}, "subgraph"),
    "conv_add_relu": (conv_add_relu, {"onnxruntime": ["NchwcTransformer", "ConvAddActivationFusion"],
                                      "tvm": ["FuseOps"]}, "subgraph"),
    "matmul_add": (matmul_add, {"onnxruntime": ["MatMulAddFusion"], "tvm": ["FuseOps"]}, "subgraph"),
    "gemm_relu": (gemm_relu, {"onnxruntime": ["GemmActivationFusion"], "tvm": ["FuseOps"]}, "subgraph"),
    "gelu_erf": (gelu_erf, {"onnxruntime": ["GeluFusionL2", "transformers.FusionGelu"], "tvm": ["FuseOps"]},
                 "subgraph"),
    "gelu_tanh": (gelu_tanh, {"tvm": ["FuseOps"]}, "subgraph"),
    "quick_gelu": (quick_gelu, {"onnxruntime": ["QuickGeluFusion", "transformers.FusionQuickGelu"], "tvm": ["FuseOps"]},
                   "subgraph"),
    "layer_norm_decomposed": (layer_norm_decomposed, {"onnxruntime": ["LayerNormFusionL1"], "tvm": ["FuseOps"]},
                              "subgraph"),
    "transpose_pair": (transpose_pair, {"onnxruntime": ["TransposeOptimizer", "TransposeOptimizer_CPUExecutionProvider"],
                                        "tvm": ["FuseOps"]}, "subgraph"),
    "transpose_matmul": (transpose_matmul, {"onnxruntime": ["MatmulTransposeFusion"],
                                            "tvm": ["FuseTransposeMatmul"]}, "subgraph"),
    "concat_of_permutes": (concat_of_permutes, {"onnxruntime": ["TransposeOptimizer"],
                                                "tvm": ["ReorderPermuteDimsAfterConcat"]}, "subgraph"),
    "reshape_chain": (reshape_chain, {"onnxruntime": ["ReshapeFusion"], "tvm": ["RemoveRedundantReshape"]},
                      "subgraph"),
    "mul_one": (mul_one, {"onnxruntime": ["NoopElimination"], "tvm": ["FuseOps"]}, "subgraph"),
    "add_zero": (add_zero, {"onnxruntime": ["NoopElimination"], "tvm": ["FuseOps"]}, "subgraph"),
    "identity_chain": (identity_chain, {"onnxruntime": ["EliminateIdentity"], "tvm": ["FuseOps"]}, "subgraph"),
    "dropout_inference": (dropout_inference, {"onnxruntime": ["EliminateDropout"], "tvm": ["FuseOps"]},
                          "subgraph"),
    "parallel_matmul": (parallel_matmul, {"tvm": ["CombineParallelMatmul"]},
                        "block"),
    "constant_subgraph": (constant_subgraph, {"onnxruntime": ["ConstantFolding"], "tvm": ["FoldConstant"]},
                          "block"),
    "common_subexpression": (common_subexpression, {"onnxruntime": ["CommonSubexpressionElimination"],
                                                    "tvm": ["EliminateCommonSubexpr"]}, "block"),
    "cast_roundtrip": (cast_roundtrip, {"onnxruntime": ["RemoveDuplicateCastTransformer"], "tvm": ["FuseOps"]},
                       "subgraph"),
    "expand_same_shape": (expand_same_shape, {"onnxruntime": ["ExpandElimination"], "tvm": ["FuseOps"]},
                          "subgraph"),
    "full_slice": (full_slice, {"tvm": ["FuseOps"]}, "subgraph"),
    "matmul_scale": (matmul_scale, {"onnxruntime": ["MatMulScaleFusion"], "tvm": ["FuseOps"]}, "subgraph"),
    "matmul_of_sum": (matmul_of_sum, {"onnxruntime": ["ConstantFolding"], "tvm": ["ExpandMatmulOfSum"]},
                      "subgraph"),
    "unsqueeze_squeeze": (unsqueeze_squeeze, {"tvm": ["FuseOps"]},
                          "subgraph"),
    "bias_softmax": (bias_softmax, {"tvm": ["FuseOps"]}, "subgraph"),
}


def library(seed: int = 0) -> list[Pattern]:
    """Every built-in pattern, instantiated with weights from `seed`: the shared ones, then those written
    for ONNXRuntime's transformers alone (library_ort.py), then those written for TVM's Relax passes alone
    (library_tvm.py, each also tagged with the build pipeline's passes it fires)."""
    from dlcfuzz.synth.library_ort import ORT_LIBRARY
    from dlcfuzz.synth.library_tvm import BUILD_PASSES, TVM_LIBRARY

    out = []
    entries = [*LIBRARY.items(), *((name, (build, {"onnxruntime": tags}, granularity))
                                   for name, (build, tags, granularity) in ORT_LIBRARY.items()),
               *((name, (build, {"tvm": [*tags, *BUILD_PASSES]}, granularity))
                 for name, (build, tags, granularity) in TVM_LIBRARY.items())]
    for name, (build, targets, granularity) in entries:
        g = build(seed)
        check_graph(g)
        out.append(Pattern(name, g, {k: list(v) for k, v in targets.items()}, granularity, "library"))
    return out


def default_patterns(compiler: str) -> list[Pattern]:
    """What `--strategy oatest` synthesizes from without `--patterns`: the built-in library plus the
    patterns mined from the compiler's own tests that ship with dlcfuzz."""
    return library() + shipped_patterns(compiler)


_SHARED_DEFAULTS: dict[tuple[str, str, int, int], list[Pattern]] = {}


def shared_default_patterns(compiler: str) -> list[Pattern]:
    """`default_patterns(compiler)` made once per process (and version of the shipped file), for campaigns: they share
    the Pattern objects, which nobody changes, and with them what synthesis works out from each (`Pattern.derived`:
    its usable form and its variants). Reading the ~500 shipped patterns and deriving what a campaign draws was
    about a fifth of an ORT oatest campaign process's CPU, the same in each campaign of a process."""
    path = shipped_pattern_file(compiler)
    stat = path.stat() if path is not None else None
    key = (compiler, str(path), stat.st_mtime_ns if stat else 0, stat.st_size if stat else 0)
    if key not in _SHARED_DEFAULTS:
        _SHARED_DEFAULTS[key] = default_patterns(compiler)
    return list(_SHARED_DEFAULTS[key])
