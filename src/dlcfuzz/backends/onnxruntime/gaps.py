"""Known ONNXRuntime gaps: operator -> input-0 dtype -> the documented upstream reason it fails
there (an allow-list with references, never a silent skip); campaigns leave these out so that new
bugs stand out (the capability probe still records what a given release lacks)."""

from __future__ import annotations

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
