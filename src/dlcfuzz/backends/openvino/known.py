"""What the pinned OpenVINO release documents it cannot do, and how it says no: data, with references.

Expected errors are rejections OpenVINO documents (an operator or element type its ONNX frontend
or CPU plugin does not implement); anything else it raises is a finding.
"""

from __future__ import annotations

import re

# (class, pattern over the exception message); the first match names the class.
EXPECTED: list[tuple[str, re.Pattern[str]]] = [
    # ONNX frontend: no translator for an op (or for this opset version of it)
    ("unsupported", re.compile(r"OpConversionFailure|No conversion rule found|"
                               r"is not supported|isn't supported|not supported|Unsupported|unsupported")),
    # CPU plugin: no kernel for an element type / layout ("doesn't support ... precision")
    ("unsupported", re.compile(r"doesn't support|does not support|Cannot create .* node|has unsupported|"
                               r"node with name .* only supports")),
    # Model.evaluate (the op-level reference) has no evaluate() for this node or element type
    ("unsupported", re.compile(r"Model\.evaluate returned False|Evaluation failed on ")),
    # the PyTorch front door: torch's eager run of the program already fails (a dtype torch lacks)
    ("unsupported", re.compile(r"\[stage eager\] ")),
]

# OpenVINO's CPU plugin executes every f64 operation in f32 (the plugin converts f64 to f32 on
# load: docs "Supported Inference Data Types" of the CPU device), so f64 results carry f32 rounding,
# which the f64 tolerance (1e-6) rightly rejects. Not a bug: f64 graphs are left out.
F64_IN_F32 = ("float64", "CPU plugin runs f64 in f32 (docs: CPU device, supported inference data types: "
              "f64 is converted to f32)")
# f64 values still reach it where an operator's first input is not f64 (OneHot's values, a Cast to f64): a float64
# value that float32 does not hold (beyond its range or precision) is then a documented limitation too.
FLOATS_IN_F32 = ("the CPU plugin computes float64 in float32 (docs: CPU device, supported inference data types: f64 is "
                 "converted to f32), and the values {names} are not float32 values")

# OpenVINO's CPU plugin runs integer tensors wider than i32 in i32 (docs "Supported Inference Data Types" of the
# CPU device: the one integer inference precision is i32; i64, u32 and u64 are converted on load), so an int64,
# uint32 or uint64 value beyond the int32 range (an input, constant, intermediate or output) is outside what it
# computes: a difference is then a documented limitation, not a bug (backend.documented_limitation). Measured:
# uint32 Greater(2754024292, 3) and uint64 Less(6501225658289100001, 0) compare as the wrapped i32 values, a
# uint64 Mod by 2^53 returns 18446744071562067968.
WIDER_THAN_I32 = ("int64", "uint32", "uint64")
INTEGERS_IN_I32 = ("the CPU plugin computes int64, uint32 and uint64 in int32 precision (docs: CPU device, supported "
              "inference data types: integer precision i32), and the values {names} leave the int32 range")

# Known upstream bug, worked around so that campaigns keep testing the graphs it touches: the ONNX
# frontend's Dropout on a graph input renames that input's tensor to the Dropout's output name, so
# the input cannot be fed by name ("Port for tensor name x was not found"). Known:
# openvinotoolkit/openvino#21615 (open; fix PR #34168 closed unmerged), still in 2026.4.1.
DROPOUT_RENAMES_INPUT = "openvinotoolkit/openvino#21615"

# op -> input-0 dtype -> why the pinned release fails on it (campaigns leave these out, so that new
# bugs stand out). Each has a standalone reproducer (tests/test_openvino.py holds the LRN one).
KNOWN_GAPS: dict[str, dict[str, str]] = {
    "div": dict.fromkeys(("int8", "int16", "int32", "int64", "uint8"), (
        "integer Div on CPU: the ONNX frontend emits Divide(m_pythondiv=true) (floor) where ONNX truncates, "
        "and the CPU plugin honours it in some kernels only (openvinotoolkit/openvino#38248, #35830); the "
        "Eltwise kernel (SNIPPETS_MODE=DISABLE) rounds u8 quotients to nearest (2/3 gives 1; found by dlcfuzz)")),
    "lrn": dict.fromkeys(("float16", "float32"), (
        "CPU plugin's Lrn node truncates `bias` to an integer (k = static_cast<int>(lrn->get_bias()) in "
        "src/plugins/intel_cpu/src/nodes/lrn.cpp: bias 1.1992 acts as 1, 0.5 as 0); found by dlcfuzz, not "
        "reported upstream as of 2026.4.1")),
    "bit_shift": {"uint8": (
        "ONNX frontend lowers BitShift to Multiply/Divide by Power(2, s): LEFT saturates at 255 on CPU instead of "
        "dropping bits (the u8 Multiply saturation of openvinotoolkit/openvino#35646), and a rank-0 BitShift "
        "becomes rank 1 (its Power constant has shape [1]; found by dlcfuzz, not reported upstream)")},
    "pow": dict.fromkeys(("int32", "int64"), (
        "integer Pow is computed through f32 on CPU and loses exactness above 2^24: "
        "openvinotoolkit/openvino#35838 (open)")),
    "reduce_prod": {"int64": (
        "the CPU plugin computes i64 in i32 (docs: CPU device, supported inference data types: integer "
        "precision i32), so a product beyond the i32 range wraps (4081466880 gives -213500416); sums of the "
        "sampled integers stay far inside it")},
    "prelu": dict.fromkeys(("float16", "float32", "int32", "int64"), (
        "a 1-D slope whose length equals the channel dimension is applied along the channels instead of "
        "broadcast along the last axis as ONNX requires: openvinotoolkit/openvino#35958 (open; fix PR #36020)")),
}

# A known bug that corrupts the process's heap (register entry ov-cpu-rfft-padded-heap-corruption): the CPU
# plugin's one-sided forward DFT of a real signal (ONNX DFT onesided=1, inverse=0; the frontend's RDFT) zero-padded
# to a dft_length past the axis it transforms reads and writes past its buffers. Its own outputs are garbage, and a
# later, unrelated model compiled or run in the same process dies with SIGSEGV (finding 95 of issue 40's
# false-positive run: an EyeLike/Compress test crashed only after this test in its worker). For a rank-2 input
# [N, 1] the frontend transforms the unit axis, so any dft_length past 1 pads.
RFFT_PADDED = "ov-cpu-rfft-padded-heap-corruption"


def rfft_pads(shape: tuple[int, ...] | None, axis: int, dft_length: int | None) -> bool:
    """Whether a one-sided forward DFT of a real input of `shape` along `axis` zero-pads the axis the CPU plugin
    transforms (the form of RFFT_PADDED); a shape not known (None) may."""
    if dft_length is None:
        return False
    if shape is None:
        return True
    transformed = 1 if len(shape) == 2 else shape[axis % len(shape)]
    return not isinstance(transformed, int) or dft_length > transformed
