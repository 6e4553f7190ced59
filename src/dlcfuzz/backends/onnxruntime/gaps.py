"""Known ONNXRuntime gaps: operator -> input-0 dtype -> the documented upstream reason it fails
there (an allow-list with references, never a silent skip); campaigns leave these out so that new
bugs stand out (the capability probe still records what a given release lacks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dlcfuzz.gen.random import FormGap
from dlcfuzz.ir.types import TensorType

KNOWN_GAPS: dict[str, dict[str, str]] = {
    # onnxruntime 1.32.0 registers its CPU LpPool/GlobalLpPool kernels for float only:
    # "NOT_IMPLEMENTED : Could not find an implementation for LpPool(18)" on double
    "lp_pool": {"float64": "onnxruntime 1.32.0 CPU LpPool has no double kernel (NOT_IMPLEMENTED)"},
    "global_lp_pool": {"float64": "onnxruntime 1.32.0 CPU GlobalLpPool has no double kernel (NOT_IMPLEMENTED)"},
    # onnxruntime 1.32.0 ScatterND/ScatterElements CPU kernels reject reductions on MLFloat16: "CPU execution
    # provider: MLFloat16 data type is not supported with ScatterND opset 18 when reduction is 'min'" (add,
    # mul, max, min for ScatterND; add, mul for ScatterElements; reduction none works)
    "scatter_nd": {"float16": "onnxruntime 1.32.0 CPU ScatterND has no float16 reductions (RUNTIME_EXCEPTION)"},
    # onnxruntime 1.32.0 registers MelWeightMatrix(17) for float, double and integer outputs only:
    # "NOT_IMPLEMENTED : Could not find an implementation for MelWeightMatrix(17)" with output_datatype float16
    # (an operator without tensor inputs: the dtype here is its output_datatype)
    "mel_weight_matrix": {"float16": "onnxruntime 1.32.0 CPU MelWeightMatrix has no float16 output (NOT_IMPLEMENTED)"},
    # (ScatterElements: the same MLFloat16 refusal as ScatterND above, for reductions add and mul)
    "scatter_elements": {
        "float16": "onnxruntime 1.32.0 CPU ScatterElements has no float16 add/mul reductions (RUNTIME_EXCEPTION)"},
    # onnxruntime 1.32.0 runs CenterCropPad(18) as its ONNX function body, whose Pad(18) has no int16 kernel:
    # "NOT_IMPLEMENTED : Could not find an implementation for Pad(18)"
    "center_crop_pad": {"int16": "onnxruntime 1.32.0 CPU CenterCropPad expands to Pad(18), which has no int16 "
                                 "kernel (NOT_IMPLEMENTED)"},
    # onnxruntime 1.32.0 recurrent kernels on double: RNN(14) is registered for float only (NOT_IMPLEMENTED);
    # GRU and LSTM are registered but refuse at run time: "GRU operator does not support double yet"
    "rnn": {"float64": "onnxruntime 1.32.0 CPU RNN has no double kernel (NOT_IMPLEMENTED)"},
    "gru": {"float64": "onnxruntime 1.32.0 CPU GRU: 'GRU operator does not support double yet' (RUNTIME_EXCEPTION)"},
    "lstm": {"float64": "onnxruntime 1.32.0 CPU LSTM: 'LSTM operator does not support double yet' (RUNTIME_EXCEPTION)"},
    # onnxruntime 1.32.0 ordering/linalg kernels: "NOT_IMPLEMENTED : Could not find an implementation for
    # Trilu(14)" on 8/16-bit integers, Hardmax(13) and Det(11) on double, EyeLike(9) on 8/16-bit and bool inputs
    **{"trilu": {dt: "onnxruntime 1.32.0 CPU Trilu has no kernel for this type (NOT_IMPLEMENTED)"
                 for dt in ("int8", "int16", "uint8")}},
    "hardmax": {"float64": "onnxruntime 1.32.0 CPU Hardmax has no double kernel (NOT_IMPLEMENTED)"},
    "det": {"float64": "onnxruntime 1.32.0 CPU Det has no double kernel (NOT_IMPLEMENTED)"},
    "eye_like": {dt: "onnxruntime 1.32.0 CPU EyeLike has no kernel for this input type (NOT_IMPLEMENTED)"
                 for dt in ("int8", "int16", "uint8", "bool")},
    # onnxruntime 1.32.0 spatial kernels: "NOT_IMPLEMENTED : Could not find an implementation for Col2Im(18)"
    # (MaxRoiPool(1), MaxUnpool(11) the same) on double; AffineGrid(20) on float16 runs its ONNX function body,
    # which fails inside ORT's function inlining
    "col2im": {"float64": "onnxruntime 1.32.0 CPU Col2Im has no double kernel (NOT_IMPLEMENTED)"},
    "max_roi_pool": {"float64": "onnxruntime 1.32.0 CPU MaxRoiPool has no double kernel (NOT_IMPLEMENTED)"},
    "max_unpool": {"float64": "onnxruntime 1.32.0 CPU MaxUnpool has no double kernel (NOT_IMPLEMENTED)"},
    "affine_grid": {"float16": "onnxruntime 1.32.0 CPU AffineGrid on float16 runs its function body, which fails"},
    # onnxruntime 1.32.0 OneHot(11): "NOT_IMPLEMENTED : Could not find an implementation for OneHot(11)" for
    # these indices with any values and depth types (ONE_HOT_KERNELS below: the triples it has)
    "one_hot": {dt: "onnxruntime 1.32.0 CPU OneHot has no kernel for these indices (NOT_IMPLEMENTED)"
                for dt in ("int8", "int16", "uint8", "float64")},
}


# onnxruntime's x64 integer GEMM multiplies unsigned by signed 8-bit values with an instruction that
# saturates each pair's sum to 16 bits, unless the CPU has VNNI: "x64 SSE4.1/AVX2/AVX512(with no VNNI) has
# overflow problem with quantized matrix multiplication with U8S8" (kOrtSessionOptionsAvx2PrecisionMode,
# include/onnxruntime/core/session/onnxruntime_session_options_config_keys.h; that option does not change
# these operators in 1.32.0). Where this machine's ORT saturates (measured: the backend's u8s8_saturates), the input-0 dtype
# that meets a signed/unsigned partner is left out: its results depend on the CPU by design.
U8S8_SATURATING: dict[str, str] = {"matmul_integer": "uint8", "qlinear_matmul": "uint8", "qlinear_conv": "uint8",
                                   "conv_integer": "int8"}
U8S8_REASON = ("onnxruntime's x64 U8S8 integer GEMM saturates 16-bit pair sums on CPUs without VNNI (documented: "
               "kOrtSessionOptionsAvx2PrecisionMode); measured on this machine")


# ---- forms of an operator that onnxruntime lacks where it runs the (operator, input-0 dtype) pair ----------
# (measured on onnxruntime 1.32.0; generation and the probe sample around them for ORT only)

# QLinearMatMul(21) and QLinearConv(10) register (input, weight, output) type triples (uint8, uint8, uint8),
# (uint8, int8, uint8) and (int8, int8, int8) only; ONNX allows any of int8/uint8 for each
QLINEAR_KERNELS = frozenset({("uint8", "uint8", "uint8"), ("uint8", "int8", "uint8"), ("int8", "int8", "int8")})


def _qlinear_types_without_kernel(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return (ins[0].dtype, ins[1].dtype, attrs.get("to")) not in QLINEAR_KERNELS


def _per_channel_w_zero_point(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return isinstance(attrs.get("w_zero_point"), list)


def _resize_scales(ins: Sequence[TensorType], attrs: dict[str, Any]) -> list[float]:
    from dlcfuzz.ops import get_op

    return get_op("resize").parse(ins[0], attrs)[1]  # type: ignore[attr-defined, no-any-return]


def _resize_interp_without_kernel(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    """upsamplebase.h ScalesValidation: linear on 2-D, 3-D, 4-D with both outer scales 1 (or the outermost
    and innermost) and 5-D with both outer scales 1; cubic on 2-D and 4-D with both outer scales 1, or the
    outermost and innermost 1 with antialias, or with the other scales >= 1 without."""
    mode = attrs.get("mode", "nearest")
    if mode == "nearest":
        return False
    s, r = _resize_scales(ins, attrs), ins[0].rank
    outer, nhwc = r >= 4 and s[0] == s[1] == 1, r == 4 and s[0] == s[3] == 1
    if mode == "linear":
        return not (r in (2, 3) or (r == 4 and (outer or nhwc)) or (r == 5 and outer))
    return not (r == 2 or (r == 4 and (outer or (nhwc and (attrs.get("antialias", 0) or min(s[1:3]) >= 1)))))


def _resize_linear_exclude_outside(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return attrs.get("mode") == "linear" and bool(attrs.get("exclude_outside")) and not attrs.get("antialias")


def _resize_roi_on_scale_one(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize" or attrs.get("mode", "nearest") == "nearest":
        return False
    r, roi = ins[0].rank, attrs.get("roi") or []
    return any(sc == 1 and (roi[k], roi[r + k]) != (0, 1) for k, sc in enumerate(_resize_scales(ins, attrs)))


KNOWN_FORM_GAPS: dict[str, tuple[FormGap, ...]] = {
    op: (FormGap(op, _qlinear_types_without_kernel,
                 f"onnxruntime 1.32.0 CPU {name} has kernels for the (input, weight, output) types (uint8, uint8, "
                 "uint8), (uint8, int8, uint8) and (int8, int8, int8) only (NOT_IMPLEMENTED)"),)
    for op, name in (("qlinear_matmul", "QLinearMatMul"), ("qlinear_conv", "QLinearConv"))
}
# conv_integer.cc: ORT_ENFORCE(IsScalarOr1ElementVector(W_Zero_Point)), "Non per-tensor quantization is not
# supported now" at run time
KNOWN_FORM_GAPS["conv_integer"] = (FormGap(
    "conv_integer", _per_channel_w_zero_point,
    "onnxruntime 1.32.0 CPU ConvInteger takes a scalar w_zero_point only: per-channel is refused at run time"),)
KNOWN_FORM_GAPS["resize"] = (
    FormGap("resize", _resize_interp_without_kernel,
            "onnxruntime 1.32.0 CPU Resize: \"'Linear' mode only supports 2-D inputs or 3-D ... or 4-D inputs with "
            "the corresponding outermost 2 scale values being 1\" (cubic: 2-D or such 4-D); other axes are refused"),
    FormGap("resize", _resize_linear_exclude_outside,
            "onnxruntime 1.32.0 CPU Resize: \"exclude_outside can be set to 1 when (1) mode is CUBIC, or (2) mode "
            "is LINEAR when anti-aliasing is enabled\""),
    FormGap("resize", _resize_roi_on_scale_one,
            "onnxruntime 1.32.0 CPU Resize ignores tf_crop_and_resize's roi on axes of scale 1 (it computes them "
            "as a copy; the spec crops them): a known divergence, not re-reported"),
)

# OneHot(11) registers these (indices, values, depth) type triples only (onehot.cc; measured: every other
# combination of ONNX's types is NOT_IMPLEMENTED); indices of another type have none (KNOWN_GAPS above)
ONE_HOT_KERNELS = frozenset(
    [("int32", v, d) for v in ("float16", "float32") for d in ("int32", "float32", "float16")]
    + [("int64", "int32", d) for d in ("float32", "float16")] + [("int64", "int64", "int64")]
    + [("int64", v, d) for v in ("float16", "float32") for d in ("int32", "int64", "float32", "float16")]
    + [(i, "int64", "int64") for i in ("float16", "float32")]
    + [(i, v, d) for i in ("float16", "float32") for v in ("float16", "float32") for d in ("float32", "float16")])
POW_EXPONENTS = ("int32", "int64", "float16", "float32", "float64")  # Pow(15)'s T1 types


def _one_hot_types_without_kernel(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return (ins[0].dtype, attrs.get("dtype"), attrs.get("depth_dtype")) not in ONE_HOT_KERNELS


def _pow_exponent_without_kernel(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return ins[1].dtype not in POW_EXPONENTS


def _batch_first(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return attrs.get("layout", 0) == 1


def _lrn_without_kernel(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return ins[0].rank != 4 or attrs.get("size", 1) % 2 == 0


def _rotary_cache_shorter_than_sequence(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    seq = ins[0].shape[2] if ins[0].rank == 4 else ins[0].shape[1]
    return len(ins) == 4 and ins[1].shape[0] < seq


def _lp_pool_same_dilated(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    return str(attrs.get("auto_pad", "NOTSET")).startswith("SAME") and any(d != 1 for d in attrs.get("dilations", []))


def _pad_not_smaller_than_kernel(ins: Sequence[TensorType], attrs: dict[str, Any]) -> bool:
    k, pads = attrs.get("kernel", []), attrs.get("pads", [])
    return any(p >= k[i % len(k)] for i, p in enumerate(pads)) if k else False


# operator -> (the form it lacks, the reason): one form gap each
_ONE_FORM: dict[str, tuple[Callable[[Sequence[TensorType], dict[str, Any]], bool], str]] = {
    "one_hot": (_one_hot_types_without_kernel,
                "onnxruntime 1.32.0 CPU OneHot has kernels for a few (indices, values, depth) type triples only "
                "(NOT_IMPLEMENTED for the others ONNX allows)"),
    "pow": (_pow_exponent_without_kernel,
            "onnxruntime 1.32.0 CPU Pow takes int32, int64, float16, float32 and float64 exponents only "
            "(NOT_IMPLEMENTED for ONNX's other numeric exponent types)"),
    **{op: (_batch_first, f"onnxruntime 1.32.0 CPU {name}: \"Batchwise recurrent operations (layout == 1) are not "
                          "supported\" (rnn/*_base.h, at session creation)")
       for op, name in (("rnn", "RNN"), ("gru", "GRU"), ("lstm", "LSTM"))},
    "lrn": (_lrn_without_kernel,
            "onnxruntime 1.32.0 CPU LRN enforces `X_shape.NumDimensions() == 4` and `size_ % 2 == 1` (nn/lrn.cc, "
            "lrn.h); ONNX allows any rank >= 3 and any size >= 1"),
    "rotary_embedding": (_rotary_cache_shorter_than_sequence,
                         "onnxruntime 1.32.0 CPU RotaryEmbedding refuses position_ids caches shorter than the sequence "
                         "(\"Updating cos_cache and sin_cache in RotaryEmbedding is not currently supported\"); ONNX "
                         "only needs the positions in it"),
    "lp_pool": (_lp_pool_same_dilated,
                "onnxruntime 1.32.0 CPU LpPool pads SAME_UPPER/SAME_LOWER for the undilated kernel: with dilations "
                "its output shape and values differ from ONNX's (a known divergence, not re-reported)"),
    **{op: (_pad_not_smaller_than_kernel,
            "onnxruntime 1.32.0 CPU pooling enforces \"Pad should be smaller than kernel\" (pool_attributes.h); ONNX "
            "needs a pad smaller than the dilated window only")
       for op in ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d")},
}
KNOWN_FORM_GAPS.update({op: (FormGap(op, matches, reason),) for op, (matches, reason) in _ONE_FORM.items()})
