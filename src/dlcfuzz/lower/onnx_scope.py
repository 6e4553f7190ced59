"""What of ONNX dlcfuzz leaves out on purpose: operators, domains and types, each with its reason.

Everything else of the standard domain is an operator in `ops/` (or a gap of ours to close).
`bench/onnx_conformance.py` counts a conformance case that touches anything here as excluded,
not as a failure; the README's operator table lists this table.
"""

from __future__ import annotations

from typing import Any

_RANDOM = "random sampling: the outputs are draws, with no single value to compare against a reference"
_SEQUENCE = "operates on ONNX sequences; our IR has tensors only"
_OPTIONAL = "operates on ONNX optionals; our IR has tensors only"
_STRING = "operates on string tensors, which no DL compiler we test optimizes"

EXCLUDED_OPERATORS: dict[str, str] = {
    "Bernoulli": _RANDOM,
    "Multinomial": _RANDOM,
    "RandomNormal": _RANDOM,
    "RandomNormalLike": _RANDOM,
    "RandomUniform": _RANDOM,
    "RandomUniformLike": _RANDOM,
    "SequenceAt": _SEQUENCE,
    "SequenceConstruct": _SEQUENCE,
    "SequenceEmpty": _SEQUENCE,
    "SequenceErase": _SEQUENCE,
    "SequenceInsert": _SEQUENCE,
    "SequenceLength": _SEQUENCE,
    "SequenceMap": _SEQUENCE,
    "SplitToSequence": _SEQUENCE,
    "ConcatFromSequence": _SEQUENCE,
    "Optional": _OPTIONAL,
    "OptionalGetElement": _OPTIONAL,
    "OptionalHasElement": _OPTIONAL,
    "StringConcat": _STRING,
    "StringNormalizer": _STRING,
    "StringSplit": _STRING,
    "RegexFullMatch": _STRING,
    "TfIdfVectorizer": "text featurization (n-gram counts over a vocabulary given as attributes), not a tensor "
                       "computation DL compilers rewrite; its inputs are strings or token ids",
    "ImageDecoder": "decodes encoded image files (JPEG, PNG bytes), not a tensor computation",
    "Upsample": "deprecated since opset 10 (Resize replaces it, and we model Resize)",
}

EXCLUDED_DOMAINS: dict[str, str] = {
    "ai.onnx.ml": "classical machine learning (tree ensembles, label encoders): not what DL compilers optimize",
    "ai.onnx.preview.training": "training-only optimizer steps (Adam, Adagrad, Momentum)",
    "ai.onnx.preview": "preview operators (FlexAttention) whose specification may still change",
}

_NARROW = "{}: no NumPy dtype, and the pinned CPU compilers compute few operators in it"
EXCLUDED_TYPES: dict[str, str] = {
    "BFLOAT16": "bfloat16: no NumPy dtype; its per-operation rounding differs between compilers by design",
    **{t: _NARROW.format(t.lower()) for t in (
        "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT8E8M0", "FLOAT4E2M1",
        "INT4", "UINT4", "INT2", "UINT2")},
    "STRING": _STRING,
    "COMPLEX64": "complex tensors: DFT's outputs are modelled as a trailing real/imaginary axis instead",
    "COMPLEX128": "complex tensors: DFT's outputs are modelled as a trailing real/imaginary axis instead",
    "sequence_type": _SEQUENCE,
    "optional_type": _OPTIONAL,
    "map_type": "ONNX maps (classical ML); our IR has tensors only",
    "sparse_tensor_type": "sparse tensors; our IR has dense tensors only",
}


def _type_names(t: Any) -> list[str]:
    import onnx

    kind = t.WhichOneof("value")
    if kind == "tensor_type":
        return [onnx.TensorProto.DataType.Name(t.tensor_type.elem_type)]
    return [kind] if kind else []


def exclusion_of(model: Any) -> str | None:
    """Why `model` is outside what dlcfuzz models (the first reason found), or None."""
    import onnx

    g = model.graph
    for n in g.node:
        if n.domain not in ("", "ai.onnx"):
            if n.domain in EXCLUDED_DOMAINS:
                return f"domain {n.domain}: {EXCLUDED_DOMAINS[n.domain]}"
            continue
        if n.op_type in EXCLUDED_OPERATORS:
            return f"{n.op_type}: {EXCLUDED_OPERATORS[n.op_type]}"
    for vi in list(g.input) + list(g.output):
        for name in _type_names(vi.type):
            if name in EXCLUDED_TYPES:
                return f"{vi.name}: {EXCLUDED_TYPES[name]}"
    for init in g.initializer:
        name = onnx.TensorProto.DataType.Name(init.data_type)
        if name in EXCLUDED_TYPES:
            return f"{init.name}: {EXCLUDED_TYPES[name]}"
    return None
