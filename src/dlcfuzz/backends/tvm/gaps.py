"""Known TVM (apache-tvm 0.27) gaps and bugs dlcfuzz already found: operator -> input-0 dtype -> the
upstream reason it fails there (an allow-list with references, never a silent skip). Campaigns
leave these out so that new bugs stand out; the per-operator agreement tests skip exactly these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dlcfuzz.gen.random import FormGap
from dlcfuzz.ir.types import TensorType

_NO_F16 = "TVM 0.27 LLVM codegen: unknown intrinsic for float16 (InternalError at build)"
_NORM_F64 = "TVM 0.27 Relax: 'only support float32 and float16 for now' (documented check)"

KNOWN_GAPS: dict[str, dict[str, str]] = {
    **{n: {"float16": _NO_F16} for n in ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh")},
    "sign": {"uint8": "TVM 0.27 topi.sign builds the constant -1 in the input dtype: "
                      "'cannot make uint from negative value -1' (a TVM bug)"},
    "equal": {"bool": "TVM 0.27 lowers equal on bool to an LLVM fcmp on i1: "
                      "'LLVM module verification failed' (a TVM bug)"},
    "pow": {dt: "TVM 0.27 tir.pow is float-only: 'power only applies to float' for integer bases"
            for dt in ("int32", "int64")},
    "layer_norm": {"float64": _NORM_F64},
    "instance_norm": {"float64": _NORM_F64},
    "batch_norm": {
        "float16": "TVM 0.27: batch_norm on float16 returns a float32 tensor at run time although its type says float16",
    },
    "reduce_mean": {
        "int32": "TVM bug: LegalizeOps lowers R.mean over int32 to a TIR function returning int64 (topi divides by "
                 "an int64 count), contradicting R.mean's inferred int32 type",
    },
    # TVM's argmax/argmin reducer starts from (index -1, dtype min/max) and only replaces it on a strict
    # improvement, so a row whose values all equal the dtype's min (argmax) / max (argmin) yields -1.
    # For uint8 argmax that is any all-zero row, which ordinary inputs hit; other dtypes need -inf/INT_MIN rows.
    "argmax": {"uint8": "TVM bug: R.argmax returns -1 for a row of all zeros (the uint8 minimum): its reducer's "
                        "identity (-1, min_value) is never replaced on ties"},
    "argmin": {"uint8": "TVM bug: R.argmin returns -1 for a row of all 255 (the uint8 maximum): its reducer's "
                        "identity (-1, max_value) is never replaced on ties"},
}

# Forms that TVM's ONNX frontend (relax.frontend.onnx, apache-tvm 0.27; the `tvm-onnx-opt` door) cannot import, or
# imports into a module Relax rejects, where it takes the (operator, input-0 dtype) pair otherwise: measured by
# importing one-operator models of every pair the door probe admits, several sampled forms each, and read in the
# converters of onnx_frontend.py. A test drawn for the door samples around them (`Backend.door_form_gaps`); the
# direct Relax lowering keeps them. Most are frontend bugs a campaign would otherwise re-find in every such test.
_FLOAT32_CONSTANTS = ("the converter builds its constants as float32 (relax.const of a Python float) and Relax "
                      "rejects the mixed-dtype arithmetic: 'Binary operators must have the same datatype'")


def _input0_dtype_not(dtype: str) -> Callable[[Sequence[TensorType], dict[str, Any]], bool]:
    return lambda ins, attrs: ins[0].dtype != dtype


_MAX_POOL_INDICES = {op: (FormGap(op, lambda ins, attrs: bool(attrs.get("indices", 0)),
                                  "the MaxPool converter returns one output: with the Indices output 'Missing outputs "
                                  "during conversion'"),) for op in ("max_pool1d", "max_pool2d", "max_pool3d")}

ONNX_FRONTEND_FORM_GAPS: dict[str, tuple[FormGap, ...]] = {
    "attention": (FormGap("attention", lambda ins, attrs: True,
                          "the frontend maps Attention to its com.microsoft converter, which reads the contrib "
                          "`num_heads` attribute the ONNX operator does not have: KeyError 'num_heads'"),),
    "constant_of_shape": (FormGap("constant_of_shape", lambda ins, attrs: list(attrs.get("shape", [1])) == [],
                                  "an empty shape (a scalar output) goes through relax broadcast_to, which rejects "
                                  "a target of lower rank than its 1-element input"),),
    **{op: (FormGap(op, _input0_dtype_not("float32"), _FLOAT32_CONSTANTS),) for op in ("elu", "selu", "thresholded_relu")},
    "eye_like": (FormGap("eye_like", lambda ins, attrs: attrs.get("dtype", ins[0].dtype) != ins[0].dtype,
                         "the converter raises 'dtype mismatch between input and attribute' for a `dtype` other "
                         "than the input's (the spec allows any)"),),
    "group_norm": (FormGap("group_norm", lambda ins, attrs: attrs.get("stash_type", 1) != 1,
                           "'GroupNormalization currently only supports stash_type=1 (FLOAT)' (documented check)"),),
    "lrn": (FormGap("lrn", lambda ins, attrs: ins[0].dtype != "float32" or len(ins[0].shape) != 4,
                    "float32 constants on other dtypes (" + _FLOAT32_CONSTANTS + "); 'LRN only supports 3D or 4D "
                    "input', and 3-D inputs fail in relax.divide"),),
    **{op: _MAX_POOL_INDICES[op] for op in ("max_pool1d", "max_pool2d")},
    "max_unpool": (FormGap("max_unpool", lambda ins, attrs: "output_shape" in attrs,
                           "an `output_shape` input reaches `.tolist()` as a relax constant: AttributeError "
                           "'GenericConst' object has no attribute 'tolist'"),),
    "one_hot": (FormGap("one_hot", lambda ins, attrs: ins[0].dtype.startswith("float")
                        or str(attrs.get("depth_dtype", "int64")).startswith("float"),
                        "relax.op.one_hot takes integer indices and an integer depth: float indices or a float "
                        "`depth` raise a TypeError"),
                FormGap("one_hot", lambda ins, attrs: int(attrs.get("axis", -1)) < -1,
                        "a negative axis other than -1 fails to legalize: IndexError 'Index 2 out of bounds 2' in "
                        "_one_hot (known_bugs.json tvm-one-hot-negative-axis; axis -2 and -3 on every values dtype)"),
                FormGap("one_hot", lambda ins, attrs: attrs.get("dtype") not in ("int64", "float64", "bool"),
                        "the converter turns `values` into Python numbers, so the output is int64 or float64 "
                        "whatever the values' dtype (known_bugs.json tvm-onnx-onehot-output-dtype; measured on "
                        "int8, uint8, int16, int32, float16 and float32 values)")),
    "max_pool3d": (FormGap("max_pool3d", lambda ins, attrs: attrs.get("auto_pad") == "SAME_LOWER",
                           "3-D SAME_LOWER pooling fails to build: 'cannot make uint from negative value' (known_bugs"
                           ".json tvm-onnx-maxpool3d-same-lower; float32 and uint8 alike, SAME_UPPER builds)"),
                   *_MAX_POOL_INDICES["max_pool3d"]),
    "layer_norm": (FormGap("layer_norm", lambda ins, attrs: int(attrs.get("outputs", 1)) > 1,
                           "the converter returns the Mean and InvStdDev outputs as rank-0 zeros (known_bugs.json "
                           "tvm-onnx-layer-norm-mean-invstddev-outputs): a consumer that needs their rank fails, any "
                           "other reads zeros"),),
    "shape": (FormGap("shape", lambda ins, attrs: True,
                      "the frontend makes Shape a ShapeExpr, which only its shape-compatible converters (Reshape, "
                      "Cast, Concat, ...) take: Abs, Neg, Identity or ReduceSum of it raise 'cannot handle ShapeExpr "
                      "inputs' (known_bugs.json tvm-onnx-shapeexpr-consumer), and a generated Shape's consumer is "
                      "any operator"),),
    "pow": (FormGap("pow", lambda ins, attrs: ins[1].dtype != ins[0].dtype,
                    "the converter passes both operands to relax.power, which requires one dtype (ONNX Pow allows "
                    "an exponent of another)"),),
    "prelu": (FormGap("prelu", lambda ins, attrs: not ins[0].dtype.startswith("float") or len(ins[0].shape) == 0,
                      "relax.nn.prelu requires a float input of rank >= 1 (the converter passes axis ndim - 1)"),),
    "resize": (FormGap("resize", lambda ins, attrs: not 3 <= len(ins[0].shape) <= 5,
                       "'Only resize1d/resize2d/resize3d are supported': inputs of rank 3 to 5"),
               FormGap("resize", lambda ins, attrs: attrs.get("coordinate_transformation_mode") == "half_pixel_symmetric",
                       "'Unsupported coordinate_transformation_mode: half_pixel_symmetric' (added in opset 18)")),
    "rms_norm": (FormGap("rms_norm", lambda ins, attrs: list(ins[1].shape) != list(ins[0].shape)[attrs.get("axis", -1):],
                         "relax.nn.rms_norm takes a scale of exactly the normalized axes' shape; a broadcast scale "
                         "is rejected"),),
}
