"""Known TVM (apache-tvm 0.27) gaps and bugs dlcfuzz already found: operator -> input-0 dtype -> the
upstream reason it fails there (an allow-list with references, never a silent skip). Campaigns
leave these out so that new bugs stand out; the per-operator agreement tests skip exactly these.
"""

from __future__ import annotations

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
