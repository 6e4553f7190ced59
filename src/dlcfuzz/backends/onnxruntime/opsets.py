"""ONNXRuntime transformers gated by the model's opset below what dlcfuzz's lowering writes (OPSET and up), and the
model written at the opset they need.

Some transformers match nodes by their operator's since-version (graph_utils::IsSupportedOptypeVersionAndDomain), so
they fire on models of old opsets alone, as real models often are: AttentionFusion and EmbedLayerNormFusion ask for
Add-7, Reshape-5, Transpose-1, Unsqueeze-11 (opsets up to 12); UnsqueezeElimination for an Unsqueeze whose axes are an
attribute (up to 12; measured to fire at 11, not at 13); LayerNormFusionL2 returns at once from opset 17, where the
level-1 instance fuses. A test whose patterns target them is written at that opset (`OnnxRuntimeBackend.oatest_configs`
sets the configurations' option "opset"; `lower` calls `at_opset`).

`at_opset` is not onnx.version_converter, which lacks most down adapters (Sigmoid 13 -> 12, Pow 15 -> 12) and writes
ReduceMean-17 with an attribute it does not have: it relabels the model's opset and rewrites only the forms whose
signature moved (axes from an input to an attribute), for operators whose meaning is the same at both versions
(`SAME_MEANING`; the Softmax family only over its last axis, which it reduces over at every version). Anything else,
or a model ONNX's full check rejects at the lower opset, is not rewritten (None): the test runs at the opset it was
lowered in, where the transformer cannot fire, and is otherwise the same test.
"""

from __future__ import annotations

from typing import Any

# transformer -> the highest opset at which it fires (measured on onnxruntime 1.32, tests/test_ort_opsets.py)
ORT_OPSET_GATED: dict[str, int] = {
    "LayerNormFusionL2": 16,
    "UnsqueezeElimination": 12,
    "AttentionFusion": 12,
    "EmbedLayerNormFusion": 12,  # it fuses into the Attention AttentionFusion makes
}

# operators written as they are at any opset from 11 to OPSET, same inputs, attributes and meaning for the types the
# lower opset admits (ONNX's full check refuses the others); the axes forms are rewritten below
SAME_MEANING: frozenset[str] = frozenset({
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "AveragePool",
    "BatchNormalization", "Cast", "Ceil", "Clip", "Concat", "Conv", "Cos", "Cosh", "CumSum", "Div", "Elu", "Equal",
    "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "Gemm", "GlobalAveragePool",
    "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Less",
    "LessOrEqual", "Log", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pow",
    "Reciprocal", "Relu", "Reshape", "Round", "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Slice",
    "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "Tile", "Transpose", "Where", "Xor",
    # later versions add types, or attributes ONNX's check refuses at the lower opset where present (a scatter's
    # reduction, a recurrent layout, LpPool's dilations)
    "BitShift", "Celu", "Compress", "ConstantOfShape", "ConvInteger", "ConvTranspose", "DepthToSpace",
    "DequantizeLinear", "Det", "DynamicQuantizeLinear", "Einsum", "EyeLike", "GatherND", "GlobalLpPool", "GRU",
    "HardSwish", "InstanceNormalization", "LpNormalization", "LpPool", "LRN", "LSTM", "MatMulInteger", "MaxRoiPool",
    "MaxUnpool", "MeanVarianceNormalization", "NegativeLogLikelihoodLoss", "OneHot", "PRelu", "QLinearConv",
    "QLinearMatMul", "QuantizeLinear", "Range", "ReverseSequence", "RNN", "ScatterElements", "ScatterND", "Shrink",
    "SoftmaxCrossEntropyLoss", "SpaceToDepth", "ThresholdedRelu", "TopK",
})
LAST_AXIS_ONLY: frozenset[str] = frozenset({"Softmax", "LogSoftmax", "Hardmax"})  # 2-D coercion before 13
# operator -> the opset from which its axes are an input (an attribute below)
AXES_INPUT_SINCE: dict[str, int] = {
    "Unsqueeze": 13, "Squeeze": 13, "ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18,
    "ReduceProd": 18, "ReduceL1": 18, "ReduceL2": 18, "ReduceLogSum": 18, "ReduceLogSumExp": 18,
    "ReduceSumSquare": 18,
}
# attributes added after opset 11 that the lower opset lacks: kept only at their default, then dropped
NEWER_DEFAULTS: dict[tuple[str, str], int] = {
    ("Reshape", "allowzero"): 0, ("Shape", "start"): 0, ("BatchNormalization", "training_mode"): 0,
}


def _rank(model: Any, name: str) -> int | None:
    for v in [*model.graph.input, *model.graph.value_info, *model.graph.output]:
        if v.name == name and v.type.tensor_type.HasField("shape"):
            return len(v.type.tensor_type.shape.dim)
    return None


# floating elem types (onnx.TensorProto: FLOAT, FLOAT16, DOUBLE, BFLOAT16)
FLOAT_ELEM_TYPES: frozenset[int] = frozenset({1, 10, 11, 16})
FLOOR_MOD_OF_FLOATS_SINCE = 28  # Mod with fmod=0 (its default) on floats; before, fmod must be 1 for them


def _elem_type(model: Any, name: str) -> int | None:
    for v in [*model.graph.input, *model.graph.value_info, *model.graph.output]:
        if v.name == name:
            return int(v.type.tensor_type.elem_type)
    return next((int(i.data_type) for i in model.graph.initializer if i.name == name), None)


def at_opset(model_bytes: bytes, opset: int) -> bytes | None:
    """The model written at the standard `opset` (lower than its own), or None where `SAME_MEANING` does not cover it
    or ONNX's full check rejects the result."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(model_bytes)
    standard = next((o for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if standard is None or standard.version <= opset:
        return None
    inits = {i.name: i for i in model.graph.initializer}
    inferred = onnx.shape_inference.infer_shapes(model)
    used_as_axes: set[str] = set()
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx") or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                                    for a in node.attribute):
            return None
        if node.op_type in AXES_INPUT_SINCE:
            if opset < AXES_INPUT_SINCE[node.op_type] <= standard.version and len(node.input) > 1 and node.input[1]:
                if node.input[1] not in inits:
                    return None
                axes = [int(a) for a in numpy_helper.to_array(inits[node.input[1]]).reshape(-1)]
                used_as_axes.add(node.input[1])
                del node.input[1:]
                node.attribute.append(onnx.helper.make_attribute("axes", axes))
            noop = [a for a in node.attribute if a.name == "noop_with_empty_axes"]
            if noop and opset < 18:
                if noop[0].i != 0:
                    return None
                node.attribute.remove(noop[0])
        elif node.op_type in LAST_AXIS_ONLY:
            axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
            rank = _rank(inferred, node.input[0])
            if rank is None or axis not in (-1, rank - 1):
                return None
        elif node.op_type == "Pad":  # an axes input (18) or the wrap mode (19) is what the lower opset lacks
            if len(node.input) > 3 or any(a.name == "mode" and a.s == b"wrap" for a in node.attribute):
                return None
        elif node.op_type == "Mod" and opset < FLOOR_MOD_OF_FLOATS_SINCE:
            # ONNX's check admits it below 28 (a rule of the operator's text, not of its types) and onnxruntime
            # then refuses to run it: a false 'unexpected-error' finding (ORT 1.32 acceptance campaign, finding 1)
            fmod = next((a.i for a in node.attribute if a.name == "fmod"), 0)
            if fmod == 0 and _elem_type(inferred, node.input[0]) in FLOAT_ELEM_TYPES | {None}:
                return None
        elif node.op_type not in SAME_MEANING:
            return None
        for a in list(node.attribute):
            if (node.op_type, a.name) in NEWER_DEFAULTS:
                if a.i != NEWER_DEFAULTS[(node.op_type, a.name)]:
                    return None
                node.attribute.remove(a)
    # an axes initializer read by no other node goes with its input
    still_read = {i for n in model.graph.node for i in n.input}
    kept = [i for i in model.graph.initializer if i.name not in used_as_axes or i.name in still_read]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    standard.version = opset
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:  # noqa: BLE001 - a type or form the lower opset lacks: the test stays at its own opset
        return None
    return model.SerializeToString()
