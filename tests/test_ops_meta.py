"""Meta operators (Shape, Size, ConstantOfShape, CastLike, BitCast), the importer's folding and input
binding that they enable, and the exclusion table of ONNX's scope."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper as oh

from dlcfuzz import reference
from dlcfuzz.ir import TensorType
from dlcfuzz.lower.onnx_import import import_model
from dlcfuzz.lower.onnx_scope import EXCLUDED_DOMAINS, EXCLUDED_OPERATORS, EXCLUDED_TYPES, exclusion_of
from dlcfuzz.ops import get_op, registry
from op_harness import check_instance, instances

META_OPS = sorted(name for name, spec in registry().items() if spec.family == "meta")


def test_family_is_registered():
    assert set(META_OPS) == {"shape", "size", "constant_of_shape", "cast_like", "bitcast"}


@pytest.mark.parametrize("op", META_OPS)
def test_op_agrees_everywhere(op):
    got = instances(get_op(op), seed=3, count=4)
    assert len(got) >= 3, f"{op}: sample() produced too few instances"
    for g, inputs in got:
        check_instance(g, inputs, relax=op != "bitcast")  # Relax has no bitcast: a documented gap


def test_shape_slices_like_python_and_clamps():
    spec = get_op("shape")
    t = TensorType("float32", (2, 3, 4))
    x = np.zeros(t.shape, np.float32)
    for start, end in [(0, None), (1, None), (-1, None), (-9, 9), (2, 1), (0, -1)]:
        (out,) = spec.infer([t], {"start": start, "end": end})
        (y,) = spec.reference([x], {"start": start, "end": end})
        assert y.tolist() == list(t.shape[start:end]) and out.shape == y.shape and y.dtype == np.int64


def test_bitcast_keeps_the_bits():
    (y,) = get_op("bitcast").reference([np.array([1.0, -2.0], np.float32)], {"to": "int32"})
    assert y.tolist() == [0x3F800000, -0x40000000]
    with pytest.raises(Exception, match="width"):
        get_op("bitcast").infer([TensorType("float32", (2,))], {"to": "int64"})


def _model(nodes, inputs, outputs, inits=()):
    g = oh.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 18)])


def test_shape_arithmetic_folds_and_its_nodes_go():
    """Reshape(x, Concat(Shape(x)[:1], [-1])): the shape operand is computed, yet static here."""
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])
    nodes = [
        oh.make_node("Shape", ["x"], ["s"], end=1),
        oh.make_node("Concat", ["s", "minus1"], ["target"], axis=0),
        oh.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    m = _model(nodes, [x], [y], [onnx.numpy_helper.from_array(np.array([-1], np.int64), "minus1")])
    res = import_model(m)
    assert res.complete, res.skipped
    assert [n.op for n in res.graph.nodes] == ["reshape"]  # Shape and Concat were folded away
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (out,) = reference.outputs(res.graph, {res.graph.inputs[0].name: a})
    assert np.array_equal(out, a.reshape(2, 12))


def test_a_folded_value_read_as_a_tensor_keeps_its_node():
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    s = oh.make_tensor_value_info("s", TensorProto.INT64, [2])
    m = _model([oh.make_node("Shape", ["x"], ["s"])], [x], [s])
    res = import_model(m)
    assert res.complete and [n.op for n in res.graph.nodes] == ["shape"]
    (out,) = reference.outputs(res.graph, {res.graph.inputs[0].name: np.zeros((2, 3), np.float32)})
    assert out.tolist() == [2, 3]


def test_a_bound_input_becomes_an_attribute_and_the_rest_stay_inputs():
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    axes = oh.make_tensor_value_info("axes", TensorProto.INT64, [1])
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])
    m = _model([oh.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)], [x, axes], [y])
    assert not import_model(m).complete  # unbound, axes is not a constant: refused, not guessed
    res = import_model(m, bind={"x": np.ones((2, 3), np.float32), "axes": np.array([1], np.int64)})
    assert res.complete and res.input_names == ["x"]
    assert res.graph.nodes[0].attrs["axes"] == [1]


def test_the_exclusion_table_names_real_onnx_things_we_do_not_model():
    ours = {t for spec in registry().values() for t in spec.onnx_ops}
    for op, why in EXCLUDED_OPERATORS.items():
        assert onnx.defs.has(op), op
        assert op not in ours, f"{op} is modelled, yet excluded"
        assert len(why) >= 20
    known_domains = {s.domain for s in onnx.defs.get_all_schemas_with_history()}
    assert set(EXCLUDED_DOMAINS) <= known_domains
    for t in EXCLUDED_TYPES:
        assert t.endswith("_type") or t in TensorProto.DataType.keys(), t


def test_exclusion_of_reads_types_operators_and_domains():
    f = oh.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    bf = oh.make_tensor_value_info("y", TensorProto.BFLOAT16, [2])
    assert "bfloat16" in exclusion_of(_model([oh.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)], [f], [bf]))
    u = oh.make_tensor_value_info("u", TensorProto.FLOAT, [2])
    assert "Bernoulli" in exclusion_of(_model([oh.make_node("Bernoulli", ["x"], ["u"])], [f], [u]))
    assert exclusion_of(_model([oh.make_node("Relu", ["x"], ["u"])], [f], [u])) is None
