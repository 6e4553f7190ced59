"""Patterns written from ONNXRuntime's graph transformers and rewrite rules (onnxruntime/core/optimizer/*.cc:
the structure each matches, none of its code), for the optimizations no mined test model and no pattern of the
shared library fires. Each tag is checked like the library's (`tests/test_synth.py::test_library_tags_fire_on_ort`:
with the named optimizer disabled, the optimized model of the pattern between two other operators differs).

Transformers of the installed release that no pattern here reaches, and why (ORT 1.32, CPU):
- Out of reach of a CPU-only session (`backends/onnxruntime/optimizers.ORT_OUT_OF_REACH`, left out of the trigger
  bench's denominator): GroupQueryAttentionFusion, GroupQueryAttentionPreNormFusion, BiasDropoutFusion,
  MatMulActivationFusion, BiasSoftmaxFusion (registered for, or matching only nodes of, other providers),
  SwiGluFusion (`Mul(QuickGelu(gate), up)` did not fire it on a CPU session, and the CPU provider has no kernel for
  the SwiGLU it makes),
  MemcpyTransformer, FreeDimensionOverrideTransformer.
- LabelEncoderFusion: ai.onnx.ml LabelEncoder, an operator dlcfuzz does not speak.
- DynamicQuantizeMatMulFusion: it needs the zero point a DynamicQuantizeLinear computes read by the MatMulInteger
  (MatMulIntegerToFloat's a_zero_point) as well as its quantized values and scale; our MatMulInteger takes its zero
  points as attributes (constant initializers), and with a constant zero point and the DynamicQuantizeLinear's
  third output read elsewhere (three edges all the same) the installed release does not fuse (measured, 1.32).
Transformers that fire only below the opset our lowering writes (`backends/onnxruntime/opsets.ORT_OPSET_GATED`):
a test whose patterns target them is written at that opset where its operators allow it (unsqueezed_constant at 12,
layer_norm_decomposed_opset16 at 16, bert_attention at 12).
- EmbedLayerNormFusion: BERT's embeddings (word and segment Gathers of runtime int64 ids, a constant position
  embedding) into the layer norm of bert_attention's block fire it at opset 12 with MatMulAddFusion off
  (tests/test_ort_opsets.py builds that model), but synthesis refuses such a pattern (synthesize.strict_faults):
  its ids are computed values feeding Gather (constant ids would be folded first, and a hole bridged to int64 ids
  is computed too), so no library pattern targets it.
Transformers `disabled_optimizers` cannot tell apart are observed otherwise (`backends/onnxruntime/trigger.py`):
CastFloat16Transformer, RemoveDuplicateCastTransformer and EnsureUniqueDQForNodeUnit run whatever is disabled
(ORT_MANDATORY: float16_erf, the library's cast_roundtrip, dq_two_consumers); PreShapeNodeElimination and
FuseFp16InitializerToFp32NodeTransformer rewrite what ConstantFolding folds anyway, ConvAddActivationFusion what
NchwcTransformer takes first, TransposeOptimizer_CPUExecutionProvider what the level-1 TransposeOptimizer removed
(ORT_MASKED_BY: checked with those disabled; cast_before_shape, float16_weight_matmul, the library's conv_add_relu
and transpose_pair); GatherToSliceFusion likewise, the Range it reads being folded by ConstantFolding (range_gather),
and QDQFinalCleanupTransformer, whose DequantizeLinear -> QuantizeLinear pairs DoubleQDQPairsRemover and both
TransposeOptimizer instances remove first (requantize_same); MatMulNBitsFusion and AttentionFusion, whose MatMul +
bias Add MatMulAddFusion makes a Gemm first (dq_weight_matmul_bias, bert_attention), and UnsqueezeElimination, whose
Unsqueeze of a constant ConstantFolding folds first (unsqueezed_constant).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.synth.forms import layer_norm_decomposed, spelled_layer_norm
from dlcfuzz.zoo.builder import Builder

INT64_MAX = int(np.iinfo(np.int64).max)


def slice_to_end(seed: int) -> Graph:
    """A slice from 0 to INT64_MAX with step 1 (EliminateSlice needs `ends` past the end as exporters write it)."""
    b = Builder("slice_to_end", seed)
    x = b.input("x", (3, 4))
    s = b.op("slice", [x], "slice", starts=[0], ends=[INT64_MAX], axes=[1], steps=[1])
    return b.outputs(b.op("exp", [s], "exp"))


def cast_to_same(seed: int) -> Graph:
    b = Builder("cast_to_same", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("abs", [b.op("cast", [x], "cast", to=b.dtype)], "abs"))


def reciprocal_mul(seed: int) -> Graph:
    """1 / x * y (DivMulFusion: y / x)."""
    b = Builder("reciprocal_mul", seed)
    x = b.input("x", (3, 4))
    y = b.input("y", (3, 4))
    return b.outputs(b.op("mul", [b.op("div", [b.scalar("one", 1.0), x], "recip"), y], "mul"))


def relu_clip(seed: int) -> Graph:
    """Relu then Clip (FuseReluClip: one Clip with min raised to 0)."""
    b = Builder("relu_clip", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("clip", [b.op("relu", [x], "relu")], "clip", min=-1.0, max=6.0))


def gemm_sum(seed: int) -> Graph:
    """Gemm without C, then Sum with another tensor (GemmSumFusion: the Sum's input becomes C)."""
    b = Builder("gemm_sum", seed)
    x = b.input("x", (3, 6))
    r = b.input("r", (3, 5))
    g = b.op("gemm", [x, b.param("w", b.rng.normal(0, 0.3, (6, 5)))], "gemm", alpha=1.0, beta=1.0, transA=0, transB=0)
    return b.outputs(b.op("sum", [g, r], "sum"))


def transpose_gemm(seed: int) -> Graph:
    """Transpose into Gemm's A (GemmTransposeFusion: transA)."""
    b = Builder("transpose_gemm", seed)
    x = b.input("x", (6, 3))
    w = b.input("w", (6, 5))
    t = b.op("transpose", [x], "t", perm=[1, 0])
    return b.outputs(b.op("gemm", [t, w], "gemm", alpha=1.0, beta=1.0, transA=0, transB=0))


def not_where(seed: int) -> Graph:
    """Where on a negated condition (NotWhereFusion: the branches swap)."""
    b = Builder("not_where", seed)
    x = b.input("x", (3, 4))
    y = b.input("y", (3, 4))
    n = b.op("not", [b.op("greater", [x, y], "gt")], "not")
    return b.outputs(b.op("where", [x, y, n], "where"))


def pad_conv(seed: int) -> Graph:
    """A zero Pad of the spatial dimensions into a Conv with explicit pads (Pad_Fusion)."""
    b = Builder("pad_conv", seed)
    x = b.input("x", (1, 3, 5, 5))
    p = b.op("pad", [x], "pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="constant", value=0.0)
    return b.outputs(b.conv(p, 4, 3, "conv", pad=0))


def matmul_bn(seed: int) -> Graph:
    """MatMul by a constant, then BatchNormalization (MatMul_BatchNormalization_Fusion: a Gemm)."""
    b = Builder("matmul_bn", seed)
    x = b.input("x", (4, 6))
    return b.outputs(b.bn(b.op("matmul", [x, b.param("w", b.rng.normal(0, 0.3, (6, 5)))], "mm"), "bn"))


def relu_quantize(seed: int) -> Graph:
    """Relu into a uint8 QuantizeLinear with zero point 0 (ReluQuantRewrite: the Relu is redundant)."""
    b = Builder("relu_quantize", seed)
    x = b.input("x", (3, 4))
    q = b.op("quantize_linear", [b.op("relu", [x], "relu")], "q", scale=0.0625, zero_point=0, to="uint8")
    return b.outputs(b.op("dequantize_linear", [q], "dq", scale=0.0625, zero_point=0))


def clip_quantize(seed: int) -> Graph:
    """Clip into a QuantizeLinear whose range lies inside the Clip's (ClipQuantRewrite)."""
    b = Builder("clip_quantize", seed)
    x = b.input("x", (3, 4))
    q = b.op("quantize_linear", [b.op("clip", [x], "clip", min=0.0, max=6.0)], "q", scale=0.0078125, zero_point=0,
             to="uint8")
    return b.outputs(b.op("dequantize_linear", [q], "dq", scale=0.0078125, zero_point=0))


def slices_to_space_to_depth(seed: int) -> Graph:
    """Four stride-2 slices concatenated on channels (YOLO's focus layer): SliceConcatToSpaceToDepthFusion."""
    b = Builder("slices_to_space_to_depth", seed)
    x = b.input("x", (1, 3, 6, 6))
    parts = [b.op("slice", [x], f"s{i}{j}", starts=[i, j], ends=[6, 6], axes=[2, 3], steps=[2, 2])
             for i in (0, 1) for j in (0, 1)]
    return b.outputs(b.op("concat", parts, "cat", axis=1))


def rms_norm_decomposed(seed: int) -> Graph:
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis (SimplifiedLayerNormFusion)."""
    b = Builder("rms_norm_decomposed", seed)
    x = b.input("x", (2, 3, 8))
    ms = b.op("reduce_mean", [b.op("pow", [x, b.scalar("two", 2.0)], "sq")], "ms", axes=[-1], keepdims=1,
              noop_with_empty_axes=0)
    r = b.op("sqrt", [b.op("add", [ms, b.scalar("eps", 1e-6)], "ms_eps")], "rms")
    return b.outputs(b.op("mul", [b.op("div", [x, r], "normed"), b.param("gamma", b.rng.uniform(0.5, 1.5, (8,)))],
                         "scaled"))


def add_layer_norm(seed: int) -> Graph:
    """A residual Add into LayerNormalization over the last axis (SkipLayerNormFusion)."""
    b = Builder("add_layer_norm", seed)
    x = b.input("x", (2, 3, 8))
    skip = b.input("skip", (2, 3, 8))
    a = b.op("add", [x, skip], "add")
    gamma = b.param("gamma", b.rng.uniform(0.5, 1.5, (8,)))
    beta = b.param("beta", b.rng.normal(0, 0.1, (8,)))
    return b.outputs(b.op("layer_norm", [a, gamma, beta], "ln", axis=-1, epsilon=1e-5))


def matmul_bias_skip_layer_norm(seed: int) -> Graph:
    """MatMul + 1-D bias into a SkipLayerNormalization, the MatMul read by a second consumer
    (BiasSkipLayerNormFusion absorbs the bias; with one consumer, MatMulAddFusion takes the pair first)."""
    b = Builder("matmul_bias_skip_layer_norm", seed)
    x = b.input("x", (2, 3, 8))
    skip = b.input("skip", (2, 3, 8))
    mm = b.op("matmul", [x, b.param("w", b.rng.normal(0, 0.3, (8, 8)))], "mm")
    biased = b.op("add", [mm, b.param("bias", b.rng.normal(0, 0.1, (8,)))], "bias_add")
    gamma = b.param("gamma", b.rng.uniform(0.5, 1.5, (8,)))
    beta = b.param("beta", b.rng.normal(0, 0.1, (8,)))
    return b.outputs(b.op("ms_skip_layer_norm", [biased, skip, gamma, beta], "sln", epsilon=1e-5),
                 b.op("relu", [mm], "second"))


def bias_gelu_erf(seed: int) -> Graph:
    """A 1-D bias Add into the spelled-out erf GELU (GeluFusionL2 makes the Gelu, BiasGeluFusion takes the bias)."""
    b = Builder("bias_gelu_erf", seed)
    x = b.input("x", (2, 3, 8))
    a = b.op("add", [x, b.param("bias", b.rng.normal(0, 0.1, (8,)))], "bias_add")
    e = b.op("add", [b.op("erf", [b.op("div", [a, b.scalar("sqrt2", np.sqrt(2.0))], "div")], "erf"),
                     b.scalar("one", 1.0)], "erf_plus_one")
    return b.outputs(b.op("mul", [b.op("mul", [a, e], "mul"), b.scalar("half", 0.5)], "gelu"))


def gelu_tanh_pow(seed: int) -> Graph:
    """The tanh GELU approximation with x^3 as Pow, as exporters write it (FastGeluFusion; the library's
    gelu_tanh, x*x*x, is not the form it matches)."""
    b = Builder("gelu_tanh_pow", seed)
    x = b.input("x", (2, 8))
    x3 = b.op("pow", [x, b.scalar("three", 3.0)], "cube")
    inner = b.op("add", [x, b.op("mul", [x3, b.scalar("k", 0.044715)], "kx3")], "inner")
    t = b.op("tanh", [b.op("mul", [inner, b.scalar("c", np.sqrt(2.0 / np.pi))], "scaled")], "tanh")
    one_t = b.op("add", [t, b.scalar("one", 1.0)], "one_t")
    return b.outputs(b.op("mul", [b.op("mul", [x, b.scalar("half", 0.5)], "half_x"), one_t], "gelu"))


def _qdq(b: Builder, x: str, name: str, scale: float = 0.0625, zero_point: int = 0) -> str:
    """x through a uint8 QuantizeLinear / DequantizeLinear pair (a quantization point of a QDQ model)."""
    q = b.op("quantize_linear", [x], f"{name}_q", scale=scale, zero_point=zero_point, to="uint8")
    return b.op("dequantize_linear", [q], f"{name}_dq", scale=scale, zero_point=zero_point)


def double_qdq(seed: int) -> Graph:
    """Two Q/DQ pairs in a row (DoubleQDQPairsRemover keeps one)."""
    b = Builder("double_qdq", seed)
    x = b.input("x", (3, 4))
    return b.outputs(_qdq(b, _qdq(b, x, "a"), "b", scale=0.125, zero_point=3))


def qdq_conv_u8(seed: int) -> Graph:
    """A uint8 QDQ Conv with 8 channels (QDQSelectorActionTransformer: QLinearConv; NhwcTransformer: its
    channels-last form)."""
    b = Builder("qdq_conv_u8", seed)
    x = b.input("x", (1, 8, 5, 5))
    w = b.op("dequantize_linear", [b.param("w8", b.rng.integers(-20, 20, (8, 8, 3, 3)), "int8")], "dw",
             scale=0.03125, zero_point=0)
    c = b.op("conv2d", [_qdq(b, x, "a", zero_point=128), w], "conv", strides=[1, 1], dilations=[1, 1],
             pads=[1, 1, 1, 1], group=1)
    return b.outputs(_qdq(b, c, "o", scale=0.125, zero_point=128))


def qdq_conv_float_bias(seed: int) -> Graph:
    """An int8 QDQ Conv (DQ input, DQ int8 weight) with a float bias (WeightBiasQuantization quantizes the bias;
    QDQS8ToU8Transformer moves the int8 activations to uint8; QDQSelectorActionTransformer then makes a
    QLinearConv, NhwcTransformer its channels-last form)."""
    b = Builder("qdq_conv_float_bias", seed)
    x = b.input("x", (1, 3, 5, 5))
    q = b.op("quantize_linear", [x], "q", scale=0.0625, zero_point=0, to="int8")
    dq = b.op("dequantize_linear", [q], "dq", scale=0.0625, zero_point=0)
    w = b.op("dequantize_linear", [b.param("w8", b.rng.integers(-20, 20, (4, 3, 3, 3)), "int8")], "dw",
             scale=0.03125, zero_point=0)
    c = b.op("conv2d", [dq, w, b.param("bias", b.rng.normal(0, 0.1, (4,)))], "conv", strides=[1, 1],
             dilations=[1, 1], pads=[1, 1, 1, 1], group=1)
    q2 = b.op("quantize_linear", [c], "q2", scale=0.125, zero_point=0, to="int8")
    return b.outputs(b.op("dequantize_linear", [q2], "dq2", scale=0.125, zero_point=0))


def reshape_gathers_slice(seed: int) -> Graph:
    """A Reshape read by exactly two Gathers of a constant int64 index and one Slice of step 1, all on one axis
    (GatherSliceToSplitFusion, written for multi-query attention's split of a fused QKV: one Split)."""
    b = Builder("reshape_gathers_slice", seed)
    x = b.input("x", (2, 12))
    r = b.op("reshape", [x], "r", shape=[2, 4, 3])
    g0 = b.op("gather", [r, b.param("i0", np.array(0), "int64")], "g0", axis=2)
    g1 = b.op("gather", [r, b.param("i1", np.array(1), "int64")], "g1", axis=2)
    s = b.op("slice", [r], "s", starts=[2], ends=[3], axes=[2], steps=[1])
    return b.outputs(g0, g1, s)


def matmul_integer_scaled(seed: int) -> Graph:
    """MatMulInteger, Cast to float, Mul by the product of two scales (MatMulIntegerToFloatFusion: one
    MatMulIntegerToFloat). One scale is a hole: a product of constants would be folded before level 2."""
    b = Builder("matmul_integer_scaled", seed)
    x = b.input("x", (3, 8))
    a_scale = b.input("a_scale", (1,))
    # int8 A: uint8 A (U8S8) is a known gap of campaigns on CPUs without VNNI (pair sums saturate)
    q = b.op("quantize_linear", [x], "q", scale=0.0625, zero_point=0, to="int8")
    mi = b.op("matmul_integer", [q, b.param("w8", b.rng.integers(-20, 20, (8, 5)), "int8")], "mmi",
              a_zero_point=0, b_zero_point=0)
    scales = b.op("mul", [a_scale, b.scalar("b_scale", 0.03125)], "scales")
    return b.outputs(b.op("mul", [b.op("cast", [mi], "cast", to="float32"), scales], "scaled"))


def where_dq_scalar(seed: int) -> Graph:
    """A QDQ Where whose one branch is a DequantizeLinear and whose other is a rank-0 float constant, read by one
    QuantizeLinear (WhereDummyDq gives the constant a DequantizeLinear, so the Where groups into QLinearWhere)."""
    b = Builder("where_dq_scalar", seed)
    x = b.input("x", (3, 4))
    dq = _qdq(b, x, "a", zero_point=128)
    w = b.op("where", [dq, b.scalar_rank0("fill", 0.5), b.op("less", [x, b.scalar("zero", 0.0)], "neg")], "where")
    return b.outputs(_qdq(b, w, "o", zero_point=128))


def float16_erf(seed: int) -> Graph:
    """A float16 Erf, which ORT's CPU provider has no float16 kernel for (CastFloat16Transformer puts it between
    Casts to float32 and back)."""
    b = Builder("float16_erf", seed, dtype="float16")
    x = b.input("x", (3, 4))
    return b.outputs(b.op("erf", [x], "erf"))


def dq_two_consumers(seed: int) -> Graph:
    """A DequantizeLinear read by two nodes (EnsureUniqueDQForNodeUnit gives each node unit its own copy)."""
    b = Builder("dq_two_consumers", seed)
    x = b.input("x", (3, 4))
    dq = _qdq(b, x, "a", zero_point=128)
    return b.outputs(b.op("relu", [dq], "first"), b.op("sigmoid", [dq], "second"))


def cast_before_shape(seed: int) -> Graph:
    """A Cast read by a Shape alone (PreShapeNodeElimination: Shape reads the Cast's input); the shape goes on as
    float32, the dtype the pattern's neighbours take."""
    b = Builder("cast_before_shape", seed)
    x = b.input("x", (3, 4))
    shape = b.op("shape", [b.op("cast", [x], "cast", to="float64")], "shape")
    return b.outputs(b.op("cast", [shape], "shape_f", to="float32"))


def float16_weight_matmul(seed: int) -> Graph:
    """A float16 weight cast to float32 into a MatMul (FuseFp16InitializerToFp32NodeTransformer: a float32 weight)."""
    b = Builder("float16_weight_matmul", seed)
    x = b.input("x", (3, 6))
    w = b.op("cast", [b.param("w16", b.rng.normal(0, 0.3, (6, 5)), "float16")], "w32", to="float32")
    return b.outputs(b.op("matmul", [x, w], "mm"))


def range_gather(seed: int) -> Graph:
    """A Gather of a Range with constant bounds (GatherToSliceFusion: a Slice with the Range's start, limit and step;
    ConstantFolding folds the Range first unless it is disabled)."""
    b = Builder("range_gather", seed)
    x = b.input("x", (3, 8))
    return b.outputs(b.op("gather", [x, b.op("range", [], "idx", start=1, limit=7, delta=2, dtype="int64")], "gather",
                          axis=1))


def requantize_same(seed: int) -> Graph:
    """Two Q/DQ pairs of the same scale and zero point in a row: the DequantizeLinear -> QuantizeLinear in the middle
    is a no-op (QDQFinalCleanupTransformer removes it; DoubleQDQPairsRemover and the transpose optimizers' QDQ
    cleanup remove it first unless they are disabled)."""
    b = Builder("requantize_same", seed)
    x = b.input("x", (3, 4))
    return b.outputs(b.op("relu", [_qdq(b, _qdq(b, x, "a", zero_point=128), "b", zero_point=128)], "relu"))


def gelu_erf_opset20(seed: int) -> Graph:
    """The spelled-out erf GELU in a model of opset 20, where Gelu is an ONNX operator and the level-1 GeluFusion fuses
    it (below 20 it leaves it to GeluFusionL2's contrib Gelu). A float16 IsInf beside it is what makes the model
    opset 20: our lowering writes the lowest opset its operators need, 18 for the GELU alone."""
    b = Builder("gelu_erf_opset20", seed)
    x = b.input("x", (2, 8))
    e = b.op("add", [b.op("erf", [b.op("div", [x, b.scalar("sqrt2", np.sqrt(2.0))], "div")], "erf"),
                     b.scalar("one", 1.0)], "erf_plus_one")
    gelu = b.op("mul", [b.op("mul", [x, e], "mul"), b.scalar("half", 0.5)], "gelu")
    inf = b.op("isinf", [b.op("cast", [x], "x16", to="float16")], "isinf", detect_negative=1, detect_positive=1)
    return b.outputs(gelu, b.op("cast", [inf], "isinf_f", to="float32"))


def dq_weight_matmul_bias(seed: int) -> Graph:
    """MatMul by a DequantizeLinear'd int8 weight, then a 1-D bias of N (QDQSelectorActionTransformer makes the pair a
    com.microsoft MatMulNBits; MatMulNBitsFusion moves the Add into its bias input, matmul_nbits_fusion.cc's
    BiasFusion: one consumer, an Add, a bias of shape [N]). MatMulAddFusion takes MatMul + Add into a Gemm first,
    which the same action turns into a MatMulNBits with bias (ORT_MASKED_BY: checked with it disabled)."""
    b = Builder("dq_weight_matmul_bias", seed)
    x = b.input("x", (2, 16))
    w = b.op("dequantize_linear", [b.param("w8", b.rng.integers(-8, 8, (16, 8)), "int8")], "dw", scale=0.0625,
             zero_point=0)
    mm = b.op("matmul", [x, w], "mm")
    return b.outputs(b.op("add", [mm, b.param("bias", b.rng.normal(0, 0.1, (8,)))], "bias_add"))


def unsqueezed_constant(seed: int) -> Graph:
    """An Unsqueeze of a constant, added to the input (UnsqueezeElimination folds it into the initializer where the
    axes are an attribute, opsets up to 12: the test is written there, backends/onnxruntime/opsets.py)."""
    b = Builder("unsqueezed_constant", seed)
    x = b.input("x", (3, 4))
    u = b.op("unsqueeze", [b.param("row", b.rng.normal(0, 1, (4,)))], "unsqueeze", axes=[0])
    return b.outputs(b.op("add", [x, u], "add"))


def bert_attention_block(b: Builder, x: str, lengths: str, heads: int = 2) -> str:
    """A layer norm of x, then BERT's self-attention over it with a residual Add (see bert_attention)."""
    batch, seq, hidden = b.type_of(x).shape
    head = hidden // heads
    ln = spelled_layer_norm(b, x, "ln")

    def projection(name: str, v: str) -> str:
        mm = b.op("matmul", [v, b.param(f"{name}_w", b.rng.normal(0, 0.3, (hidden, hidden)))], f"{name}_mm")
        return b.op("add", [mm, b.param(f"{name}_b", b.rng.normal(0, 0.1, (hidden,)))], f"{name}_add")

    def split_heads(name: str, perm: list[int]) -> str:
        r = b.op("reshape", [projection(name, ln)], f"{name}_heads", shape=[0, 0, heads, head])
        return b.op("transpose", [r], f"{name}_t", perm=perm)

    q, k, v = split_heads("q", [0, 2, 1, 3]), split_heads("k", [0, 2, 3, 1]), split_heads("v", [0, 2, 1, 3])
    scores = b.op("div", [b.op("matmul", [q, k], "qk"), b.scalar("sqrt_head", np.sqrt(head))], "qk_scaled")
    # a right-padded 0/1 mask: position < max(|length|, 1)
    row_length = b.op("add", [b.op("abs", [lengths], "length_abs"), b.scalar("length_min", 1.0)], "row_length")
    positions = b.param("positions", np.arange(seq).reshape(1, seq))
    mask = b.op("cast", [b.op("less", [positions, row_length], "in_row")], "mask", to=b.dtype)
    mask4 = b.op("unsqueeze", [b.op("unsqueeze", [mask], "mask_u1", axes=[1])], "mask_u2", axes=[2])
    bias = b.op("mul", [b.op("sub", [b.scalar("one", 1.0), mask4], "mask_inv"), b.scalar("big", -10000.0)], "mask_bias")
    probs = b.op("softmax", [b.op("add", [scores, bias], "masked")], "probs", axis=3)
    ctx = b.op("transpose", [b.op("matmul", [probs, v], "ctx")], "ctx_t", perm=[0, 2, 1, 3])
    merged = b.op("reshape", [ctx], "ctx_merged", shape=[0, 0, hidden])
    return b.op("add", [projection("o", merged), ln], "residual")


def bert_attention(seed: int) -> Graph:
    """BERT's self-attention as exporters of opsets up to 12 wrote it, after a spelled-out layer norm (attention_fusion.cc
    and its diagram: LayerNormalization read by the q, k, v MatMul + bias Add and by the residual Add; q and v
    reshaped to [B, S, N, H] (0, 0, N, H) and transposed (0, 2, 1, 3), k (0, 2, 3, 1); q.k / sqrt(H) + (1 - mask) *
    -10000, Softmax over axis 3, times v, transposed back, reshaped to (0, 0, W), output projection, residual Add).
    AttentionFusion makes one com.microsoft Attention with the mask's per-row count as its mask index, which equals
    the additive mask only for a right-padded 0/1 mask: the mask here is one, position < a row length of at least 1,
    drawn from the `lengths` input. The test is written at opset 12 (Add-7, Reshape-5, ... are what it matches;
    opsets.py), where LayerNormFusionL2 makes the LayerNormalization it starts from; MatMulAddFusion makes the
    projections Gemms first (ORT_MASKED_BY: checked with it disabled)."""
    b = Builder("bert_attention", seed)
    x = b.input("x", (2, 4, 8))
    return b.outputs(bert_attention_block(b, x, b.input("lengths", (2, 1))))


def layer_norm_rank0_constants(seed: int) -> Graph:
    """The spelled-out layer norm with its 2 and epsilon 0-d, as torch exports it (the transformer optimizer's
    FusionLayerNormalization reads the epsilon with float(), which raises for the library's shape-[1] constants: a
    known finding, so that one would never fire it; ORT's LayerNormFusionL1 fuses both)."""
    b = Builder("layer_norm_rank0_constants", seed)
    return b.outputs(spelled_layer_norm(b, b.input("x", (2, 3, 8)), rank0=True))


# name -> (builder, the ONNXRuntime optimizations it fires, granularity)
ORT_LIBRARY: dict[str, tuple[Callable[[int], Graph], list[str], str]] = {
    "slice_to_end": (slice_to_end, ["EliminateSlice"], "subgraph"),
    "cast_to_same": (cast_to_same, ["CastElimination"], "subgraph"),
    "reciprocal_mul": (reciprocal_mul, ["DivMulFusion"], "subgraph"),
    "relu_clip": (relu_clip, ["FuseReluClip"], "subgraph"),
    "gemm_sum": (gemm_sum, ["GemmSumFusion"], "subgraph"),
    "transpose_gemm": (transpose_gemm, ["GemmTransposeFusion"], "subgraph"),
    "not_where": (not_where, ["NotWhereFusion"], "subgraph"),
    "pad_conv": (pad_conv, ["Pad_Fusion"], "subgraph"),
    "matmul_bn": (matmul_bn, ["MatMul_BatchNormalization_Fusion"], "subgraph"),
    "relu_quantize": (relu_quantize, ["ReluQuantRewrite"], "subgraph"),
    "clip_quantize": (clip_quantize, ["ClipQuantRewrite"], "subgraph"),
    "slices_to_space_to_depth": (slices_to_space_to_depth, ["SliceConcatToSpaceToDepthFusion"], "subgraph"),
    "rms_norm_decomposed": (rms_norm_decomposed, ["SimplifiedLayerNormFusion"], "subgraph"),
    "add_layer_norm": (add_layer_norm, ["SkipLayerNormFusion", "transformers.FusionSkipLayerNormalization"], "subgraph"),
    "matmul_bias_skip_layer_norm": (matmul_bias_skip_layer_norm,
                                    ["BiasSkipLayerNormFusion", "transformers.FusionBiasSkipLayerNormalization"],
                                    "subgraph"),
    "bias_gelu_erf": (bias_gelu_erf, ["BiasGeluFusion", "GeluFusionL2"], "subgraph"),
    "gelu_tanh_pow": (gelu_tanh_pow, ["FastGeluFusion", "transformers.FusionFastGelu"], "subgraph"),
    "double_qdq": (double_qdq, ["DoubleQDQPairsRemover"], "subgraph"),
    "qdq_conv_u8": (qdq_conv_u8, ["QDQSelectorActionTransformer", "NhwcTransformer"], "subgraph"),
    "qdq_conv_float_bias": (qdq_conv_float_bias, ["WeightBiasQuantization", "QDQS8ToU8Transformer",
                                                  "QDQSelectorActionTransformer", "NhwcTransformer"], "subgraph"),
    "reshape_gathers_slice": (reshape_gathers_slice, ["GatherSliceToSplitFusion"], "subgraph"),
    "matmul_integer_scaled": (matmul_integer_scaled, ["MatMulIntegerToFloatFusion"], "subgraph"),
    "where_dq_scalar": (where_dq_scalar, ["WhereDummyDq"], "subgraph"),
    "float16_erf": (float16_erf, ["CastFloat16Transformer"], "subgraph"),
    "dq_two_consumers": (dq_two_consumers, ["EnsureUniqueDQForNodeUnit"], "subgraph"),
    "cast_before_shape": (cast_before_shape, ["PreShapeNodeElimination"], "subgraph"),
    "float16_weight_matmul": (float16_weight_matmul, ["FuseFp16InitializerToFp32NodeTransformer"], "subgraph"),
    "range_gather": (range_gather, ["GatherToSliceFusion"], "subgraph"),
    "requantize_same": (requantize_same, ["QDQFinalCleanupTransformer"], "subgraph"),
    "gelu_erf_opset20": (gelu_erf_opset20, ["GeluFusionL1"], "subgraph"),
    "dq_weight_matmul_bias": (dq_weight_matmul_bias, ["MatMulNBitsFusion"], "subgraph"),
    "unsqueezed_constant": (unsqueezed_constant, ["UnsqueezeElimination"], "subgraph"),
    # the shared library's decomposed layer norm, written at opset 16 (opsets.py): the level-2 instance's form
    "layer_norm_decomposed_opset16": (layer_norm_decomposed, ["LayerNormFusionL2"], "subgraph"),
    "bert_attention": (bert_attention, ["AttentionFusion"], "subgraph"),
    "layer_norm_rank0_constants": (layer_norm_rank0_constants,
                                   ["transformers.FusionLayerNormalization", "LayerNormFusionL1"], "subgraph"),
}
