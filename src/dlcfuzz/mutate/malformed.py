"""Malformed models: disruptive mode below our IR, on the lowered ONNX model.

Each mutation appends one node to a valid model, reading a float graph input or output of static
shape, and breaks exactly one rule of the ONNX standard that our IR cannot express. Its legal twin
(the same node with the rule kept, built from the same draws) passes the ONNX checker; the
malformed node breaks the rule named in KINDS. Both declare the new output with the twin's
inferred type, so the broken rule is the only difference. A compiler must reject the malformed
model with an error: a silent result is `accepted-invalid`, a crash is a crash.

Excluded on purpose (legal, or documented leniency that would be a false positive): an empty
*optional* input (legal), a single-element 1-D tensor where a scalar is asked for (onnxruntime
treats shape [1] as a scalar by design), a declared output shape that contradicts the inferred one
(onnxruntime documents a lenient merge with a warning), and data-dependent rules (index values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# kind -> the rule of the ONNX standard it breaks (the operator's spec text or the checker's rule)
KINDS: dict[str, str] = {
    "axis-out-of-range": "an 'axis' attribute lies outside the operator's accepted range ([-r, r-1]; "
                         "Flatten [-r, r])",
    "nonpositive-attribute": "kernel_shape/strides (pooling) and blocksize (DepthToSpace) must be positive",
    "pads-beyond-extent": "Pad's negative pads remove more elements than the axis holds (output extent < 0)",
    "empty-required-input": "a required (single, non-optional) input is given the empty name",
    "wrong-rank-scalar-input": "Clip's min/max must be a scalar (tensor of empty shape); given rank >= 1 with "
                               "more than one element, or rank >= 2",
    "declared-type-contradicts": "a declared type contradicts the data: the output's elem type differs from the "
                                 "node's, or an initializer's raw_data size differs from its dims and data type",
}
FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)


@dataclass
class Malformation:
    """What a malformed model breaks: recorded in the test case for the oracle and the report."""

    kind: str
    op: str
    rule: str
    node: str
    output: str
    detail: str  # the offending attribute/input and its value

    def to_json(self) -> dict[str, str]:
        return dict(self.__dict__)


def _float_values(model: onnx.ModelProto) -> list[tuple[str, int, list[int]]]:
    """Graph inputs and outputs of a float type and a fully static shape: (name, elem type, shape)."""
    found = []
    inits = {t.name for t in model.graph.initializer}
    for vi in list(model.graph.input) + list(model.graph.output):
        t = vi.type.tensor_type
        if vi.name in inits or not vi.type.HasField("tensor_type") or t.elem_type not in FLOAT_TYPES:
            continue
        if not t.HasField("shape") or not all(d.HasField("dim_value") for d in t.shape.dim):
            continue
        shape = [d.dim_value for d in t.shape.dim]
        if shape and all(d > 0 for d in shape):
            found.append((vi.name, t.elem_type, shape))
    return found


def _pick(rng: np.random.Generator, options: list[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _plan(rng: np.random.Generator, kind: str, x: str, elem: int, shape: list[int], legal: bool,
          out: str, tag: str) -> tuple[onnx.NodeProto, list[onnx.TensorProto], str, str] | None:
    """(node, initializers, op, detail): the mutation of `kind`, or its legal twin when `legal`."""
    r = len(shape)
    np_dtype = helper.tensor_dtype_to_np_dtype(elem)
    if kind == "axis-out-of-range":
        op = _pick(rng, ["Softmax", "LogSoftmax", "Concat", "Flatten", "Gather"])
        hi = r if op == "Flatten" else r - 1  # the largest legal axis
        bad = _pick(rng, [hi + 1, hi + 1 + int(rng.integers(1, 4)), -r - 1 - int(rng.integers(0, 3))])
        axis = int(rng.integers(-r, hi + 1)) if legal else int(bad)
        if op == "Gather":
            idx = helper.make_tensor(f"{tag}_indices", TensorProto.INT64, [], [0])
            return helper.make_node(op, [x, idx.name], [out], name=tag, axis=axis), [idx], op, f"axis={axis}"
        ins = [x, x] if op == "Concat" else [x]
        return helper.make_node(op, ins, [out], name=tag, axis=axis), [], op, f"axis={axis} (rank {r})"
    if kind == "nonpositive-attribute":
        ops = ["MaxPool", "AveragePool"] if r >= 3 else []
        if r == 4 and shape[1] >= 1:
            ops.append("DepthToSpace")
        if not ops:
            return None
        op = _pick(rng, ops)
        bad = int(_pick(rng, [0, -1]))
        if op == "DepthToSpace":
            bs = 1 if legal else bad
            return helper.make_node(op, [x], [out], name=tag, blocksize=bs), [], op, f"blocksize={bs}"
        attr = _pick(rng, ["kernel_shape", "strides"])
        kernel, strides = [1] * (r - 2), [1] * (r - 2)
        if not legal:
            i = int(rng.integers(r - 2))
            (kernel if attr == "kernel_shape" else strides)[i] = bad
        node = helper.make_node(op, [x], [out], name=tag, kernel_shape=kernel, strides=strides)
        return node, [], op, f"kernel_shape={kernel} strides={strides}"
    if kind == "pads-beyond-extent":
        pads = [0] * (2 * r)
        if not legal:
            axis = int(rng.integers(r))
            side = int(rng.integers(2))
            pads[axis + side * r] = -(shape[axis] + int(rng.integers(1, 3)))
        p = helper.make_tensor(f"{tag}_pads", TensorProto.INT64, [2 * r], pads)
        return helper.make_node("Pad", [x, p.name], [out], name=tag), [p], "Pad", f"pads={pads} on shape {shape}"
    if kind == "empty-required-input":
        op = _pick(rng, ["Pad", "Reshape", "Add"])
        if op == "Pad":
            second = helper.make_tensor(f"{tag}_pads", TensorProto.INT64, [2 * r], [0] * (2 * r))
        elif op == "Reshape":
            second = helper.make_tensor(f"{tag}_shape", TensorProto.INT64, [r], shape)
        else:
            second = numpy_helper.from_array(np.zeros(shape[-1:], np_dtype), f"{tag}_b")
        name = second.name if legal else ""
        return (helper.make_node(op, [x, name], [out], name=tag), [second] if legal else [], op,
                f"input 1 = {name!r}")
    if kind == "wrong-rank-scalar-input":
        which = int(rng.integers(2))  # min or max
        bad_shape = _pick(rng, [[2], [3], [1, 1], [2, 1]])
        shp = [] if legal else bad_shape
        lim = numpy_helper.from_array(np.full(shp, -1.0 if which == 0 else 1.0, np_dtype), f"{tag}_limit")
        ins = [x, lim.name] if which == 0 else [x, "", lim.name]
        return (helper.make_node("Clip", ins, [out], name=tag), [lim], "Clip",
                f"{('min', 'max')[which]} of shape {shp}")
    if kind == "declared-type-contradicts":
        # the output-type variant is applied by malform() (it changes the declaration, not the node)
        b = numpy_helper.from_array(np.zeros(shape[-1:], np_dtype), f"{tag}_b")
        if not legal and rng.random() < 0.5:
            b.raw_data = b.raw_data[: len(b.raw_data) // 2 - 1] if len(b.raw_data) > 2 else b""
            return helper.make_node("Add", [x, b.name], [out], name=tag), [b], "Add", "initializer raw_data short"
        return helper.make_node("Add", [x, b.name], [out], name=tag), [b], "Add", "output declared"
    raise ValueError(f"unknown malformation kind {kind!r}")


def _infer_output(node: onnx.NodeProto, inits: list[onnx.TensorProto], x: str, elem: int, shape: list[int],
                  opset: Any) -> onnx.TypeProto | None:
    """The legal twin's output type, by ONNX's strict inference on the node alone."""
    g = helper.make_graph([node], "twin", [helper.make_tensor_value_info(x, elem, shape)],
                          [helper.make_empty_tensor_value_info(node.output[0])], initializer=inits)
    m = helper.make_model(g, opset_imports=opset)
    try:
        inferred = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
    except Exception:
        return None
    for vi in inferred.graph.output:
        if vi.name == node.output[0] and vi.type.tensor_type.HasField("shape"):
            return vi.type
    return None


def malform(model: onnx.ModelProto, kind: str, seed: int, legal: bool = False
            ) -> tuple[onnx.ModelProto, Malformation] | None:
    """A copy of `model` with one node appended that breaks the rule of `kind` (or keeps it, when
    `legal`: the twin). Deterministic in (model, kind, seed); None when the model has no float value
    of static shape to read, or none of the right rank."""
    if kind not in KINDS:
        raise ValueError(f"unknown malformation kind {kind!r}")
    rng = np.random.default_rng(seed)
    values = _float_values(model)
    if not values:
        return None
    x, elem, shape = _pick(rng, values)
    tag = f"malformed_{kind.replace('-', '_')}"
    out = f"{tag}_out"
    twin_rng, rng = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    twin = _plan(twin_rng, kind, x, elem, shape, True, out, tag)
    plan = _plan(rng, kind, x, elem, shape, legal, out, tag)
    if twin is None or plan is None:
        return None
    out_type = _infer_output(twin[0], twin[1], x, elem, shape, model.opset_import)
    if out_type is None:
        return None
    node, inits, op, detail = plan
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.node.append(node)
    m.graph.initializer.extend(inits)
    vi = m.graph.output.add()
    vi.name = out
    vi.type.CopyFrom(out_type)
    if kind == "declared-type-contradicts" and not legal and detail == "output declared":
        wrong = TensorProto.INT64 if elem != TensorProto.INT64 else TensorProto.INT32
        vi.type.tensor_type.elem_type = wrong
        detail = (f"output declared {helper.tensor_dtype_to_string(wrong)}, node computes "
                  f"{helper.tensor_dtype_to_string(elem)}")
    return m, Malformation(kind, op, KINDS[kind], tag, out, detail)


def malform_bytes(model_bytes: bytes, spec: dict[str, Any]) -> bytes:
    """The lowering hook: `spec` = {"kind", "seed"} as the test's configurations carry it, and "legal"
    for its twin (the node that keeps the rule). A model that offers no attachment point is returned
    unchanged (make_test never plans one)."""
    done = malform(onnx.load_from_string(model_bytes), spec["kind"], int(spec["seed"]), legal=bool(spec.get("legal")))
    return model_bytes if done is None else done[0].SerializeToString()


def check_strict(model: onnx.ModelProto) -> str | None:
    """The ONNX checker's verdict with strict inference: None when valid, else its first line."""
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # onnx raises ValidationError and InferenceError
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return None
