"""The program IR: validation names the offending node, serialization is lossless, sub-functions work."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import DTypeError, IRError, ShapeError
from dlcfuzz.ir import Graph, Node, TensorType, Value, dumps, graphs_equal, load, loads, save, to_text
from dlcfuzz.ops import check_graph

F = TensorType("float32", (2, 3))


def small_graph() -> Graph:
    g = Graph(
        inputs=[Value("x", F)],
        constants={"c": np.arange(6, dtype="float32").reshape(2, 3)},
        nodes=[Node("add", ["x", "c"], [Value("y", F)], name="n0"), Node("relu", ["y"], [Value("z", F)], name="n1")],
        outputs=["z"],
    )
    check_graph(g)
    return g


def with_function() -> Graph:
    f = Graph(inputs=[Value("a", F), Value("b", F)], nodes=[Node("add", ["a", "b"], [Value("s", F)], name="f0"),
                                                            Node("relu", ["s"], [Value("r", F)], name="f1")],
              outputs=["r"], name="f")
    g = Graph(
        inputs=[Value("x", F)],
        constants={"c": np.full((2, 3), -1.0, dtype="float32")},
        nodes=[Node("call", ["x", "c"], [Value("y", F)], {"callee": "f"}, name="n0"),
               Node("add", ["y", "x"], [Value("z", F)], name="n1")],
        outputs=["z"],
        functions={"f": f},
    )
    check_graph(g)
    return g


def test_check_names_offending_node():
    g = small_graph()
    g.nodes[1].inputs = ["nope"]
    with pytest.raises(IRError, match="n1"):
        check_graph(g)


def test_check_raises_typed_errors():
    g = small_graph()
    g.nodes[0].inputs = ["x", "bad"]
    g.constants["bad"] = np.zeros((4,), dtype="float32")
    with pytest.raises(ShapeError, match="n0"):
        check_graph(g)
    g = small_graph()
    g.constants["c"] = np.zeros((2, 3), dtype="int32")
    with pytest.raises(DTypeError, match="n0"):
        check_graph(g)


def test_check_rejects_declared_type_mismatch_and_duplicates():
    g = small_graph()
    g.nodes[1].outputs = [Value("z", TensorType("float64", (2, 3)))]
    with pytest.raises(IRError, match="differ from inferred"):
        check_graph(g)
    g = small_graph()
    g.nodes[1].outputs = [Value("y", F)]
    with pytest.raises(IRError, match="defined twice"):
        check_graph(g)


def test_recursion_is_rejected():
    g = with_function()
    g.functions["f"].nodes.append(Node("call", ["a", "b"], [Value("q", F)], {"callee": "f"}, name="f2"))
    with pytest.raises(IRError, match="recursive"):
        check_graph(g)


def test_json_and_blob_round_trip_is_lossless(tmp_path):
    g = with_function()
    g.nodes[1].attrs = {"note": [float("inf"), float("-inf"), 0.1, 1e-310], "s": "x"}
    for back in (loads(dumps(g)), load(save(g, tmp_path / "g.json"))):
        assert graphs_equal(back, g)
        assert back.nodes[1].attrs["note"][:2] == [float("inf"), float("-inf")]


def test_corrupt_files_raise_irerror(tmp_path):
    p = tmp_path / "g.json"
    p.write_text("{not json")
    with pytest.raises(IRError):
        load(p)
    p.write_text('{"format": "something-else"}')
    with pytest.raises(IRError):
        load(p)
    with pytest.raises(IRError):
        loads(b"garbage")


def test_printer_is_readable():
    text = to_text(with_function())
    assert "def @f(%a: float32[2, 3], %b: float32[2, 3])" in text
    assert "%y: float32[2, 3] = @f(%x, %c)" in text


def test_text_elides_long_attribute_lists_and_keeps_short_ones():
    g = small_graph()
    g.nodes[1].attrs = {"indices": list(range(100, 1100)), "pads": [0, 1, 0, 1]}
    text = to_text(g)
    assert "indices=[100, 101, 102, 103, 104, 105, 106, 107, ... <1000 values, min 100, max 1099>]" in text
    assert "pads=[0, 1, 0, 1]" in text
    assert "1099," not in text


def test_reference_runs_functions_and_keeps_intermediates():
    g = with_function()
    x = np.array([[1, -2, 3], [0.5, 4, -1]], dtype="float32")
    env = reference.run(g, {"x": x}, keep_all=True)
    np.testing.assert_array_equal(env["z"], np.maximum(x - 1, 0) + x)
    assert {"x", "c", "y", "z"} <= set(env)


def test_function_graph_lowers_to_onnx_and_relax():
    pytest.importorskip("onnxruntime")
    from dlcfuzz.lower.onnx import to_onnx
    from tests.op_harness import run_ort, run_relax

    g = with_function()
    x = {"x": np.random.default_rng(0).normal(size=(2, 3)).astype("float32")}
    ref = reference.outputs(g, x)
    np.testing.assert_allclose(run_ort(to_onnx(g), x)[0], ref[0], rtol=1e-6)
    pytest.importorskip("tvm")
    from dlcfuzz.lower.relax import to_relax

    mod = to_relax(g)
    assert "f" in [gv.name_hint for gv in mod.get_global_vars()]
    np.testing.assert_allclose(run_relax(g, x)[0], ref[0], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
                                   "uint16", "uint32", "uint64"])
def test_type_of_an_array_names_its_dtype(dtype: str) -> None:
    # TensorType.of looks dtype names up in a table: the same names str(np.dtype) gives
    a = np.zeros((2, 0, 3), dtype=dtype)
    assert TensorType.of(a) == TensorType(str(a.dtype), (2, 0, 3)) == TensorType(dtype, (2, 0, 3))


@pytest.mark.parametrize("dtype", [">f4", "<U3", "object", "complex64", "datetime64[s]"])
def test_type_of_an_array_of_another_dtype_is_refused(dtype: str) -> None:
    with pytest.raises(ValueError, match="unknown dtype"):
        TensorType.of(np.zeros((2,), dtype=dtype))
