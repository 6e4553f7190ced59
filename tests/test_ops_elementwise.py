"""Every elementwise operator agrees across the reference, ONNX, ONNXRuntime, TVM Relax and the importer."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir import TensorType
from dlcfuzz.ops import get_op, registry
from tests.op_harness import check_instance, instances

OPS = sorted(n for n, s in registry().items() if s.family == "elementwise")


@pytest.mark.parametrize("name", OPS)
def test_op_agrees_everywhere(name):
    spec = get_op(name)
    found = instances(spec, seed=zlib.crc32(name.encode()) % 1000, count=len(spec.dtypes) + 2)  # stable per process
    assert found, f"no valid instance of {name}"
    for g, x in found:
        check_instance(g, x)


def test_type_rules_raise():
    with pytest.raises(DTypeError):
        get_op("sin").infer([TensorType("int32", (2,))], {})
    with pytest.raises(ShapeError):
        get_op("add").infer([TensorType("float32", (2, 3)), TensorType("float32", (4,))], {})
    with pytest.raises(DTypeError):
        get_op("add").infer([TensorType("float32", (2,)), TensorType("float64", (2,))], {})
    with pytest.raises(DTypeError):  # BitShift has no floating types
        get_op("bit_shift").infer([TensorType("float32", (2,)), TensorType("float32", (2,))], {"direction": "LEFT"})
    with pytest.raises(ShapeError):  # SwiGLU does not broadcast
        get_op("swiglu").infer([TensorType("float32", (2, 3)), TensorType("float32", (3,))], {"alpha": 1.0})


def test_onnx_semantics_of_tricky_ops():
    a = np.array([-7, 7, -7, 7], dtype="int32")
    b = np.array([2, -2, -2, 2], dtype="int32")
    np.testing.assert_array_equal(get_op("div").reference([a, b], {})[0], [-3, -3, 3, 3])  # truncation
    np.testing.assert_array_equal(get_op("mod").reference([a, b], {"fmod": 0})[0], [1, -1, -1, 1])  # divisor's sign
    np.testing.assert_array_equal(get_op("mod").reference([a, b], {"fmod": 1})[0], [-1, 1, -1, 1])  # dividend's sign
    x = np.array([0.5, 1.5, 2.5, -0.5], dtype="float32")
    np.testing.assert_array_equal(get_op("round").reference([x], {})[0], [0, 2, 2, -0.0])  # half to even


def conformance(ops: set[str]) -> tuple[int, int, list[str]]:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from onnx_conformance import run

    passed, supported, _, _, failures = run(ops)
    return passed, supported, failures


def test_onnx_conformance_cases_of_widened_operators_pass():
    """ONNX's node tests of the operators whose attribute/dtype space was widened (one run for the
    families elementwise, nn, reduce, shape and quant: collecting the cases is the slow part)."""
    passed, supported, failures = conformance(
        {"add", "sub", "mul", "div", "mod", "max", "min", "sum", "mean", "bitshift", "less", "greater",
         "lessorequal", "greaterorequal", "equal", "bitwiseand", "bitwiseor", "bitwisexor", "bitwisenot",
         "celu", "isinf", "pow",  # uint16/32/64, signed BitShift and float Mod fmod=0 (opset 28), variadic
         "layernormalization", "maxpool", "averagepool", "dropout", "conv", "convtranspose",  # nn
         "argmax", "argmin",  # select_last_index
         "resize", "pad", "spacetodepth",  # linear/cubic, wrap, CRD
         "quantizelinear", "dequantizelinear"})  # int16/uint16
    assert not failures, failures
    assert supported >= 600 and passed == supported


def _one(op: str, types: list[TensorType], attrs: dict):
    from dlcfuzz.ir import Graph, Node, Value

    outs = get_op(op).infer(types, attrs)
    return Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(types)],
                 nodes=[Node(op, [f"x{i}" for i in range(len(types))], [Value("y", outs[0])], attrs, name="n0")],
                 outputs=["y"])


EDGES = np.array([0, 1, 5, 2**63 - 1, 2**63, 2**63 + 5, 2**64 - 1, 2**64 - 2, 12345678901234567890, 3], np.uint64)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_wide_unsigned_lowerings_are_exact_at_the_edges(dtype):
    """torch has no uint16/32/64 kernels and computes them in int64: every edge value (2**63 and up
    included) still gives the reference's bits."""
    torch_eager = pytest.importorskip("dlcfuzz.lower.torch").run_eager
    jax_eager = pytest.importorskip("dlcfuzz.lower.jax").run_eager
    a = np.repeat(EDGES, len(EDGES)).astype(dtype)
    b = np.tile(EDGES, len(EDGES)).astype(dtype)
    bits = np.dtype(dtype).itemsize * 8
    t = TensorType(dtype, a.shape)
    for op, attrs in [("add", {}), ("sub", {}), ("mul", {}), ("div", {}), ("mod", {"fmod": 0}), ("mod", {"fmod": 1}),
                      ("max", {}), ("min", {}), ("less", {}), ("greater_equal", {}), ("bitwise_xor", {}),
                      ("bit_shift", {"direction": "LEFT"}), ("bit_shift", {"direction": "RIGHT"})]:
        rhs = np.where(b == 0, 1, b).astype(dtype) if op in ("div", "mod") else b
        rhs = (rhs % bits).astype(dtype) if op == "bit_shift" else rhs
        g = _one(op, [t, t], attrs)
        (want,) = get_op(op).reference([a, rhs], attrs)
        for run in (torch_eager, jax_eager):
            got = np.asarray(run(g, {"x0": a, "x1": rhs})[0])
            np.testing.assert_array_equal(got, want, err_msg=f"{op} {attrs} {dtype} {run.__module__}")


def test_signed_bit_shift_follows_opset_28():
    x = np.array([-8, 8, 1, -1, 100, -128], np.int8)
    s = np.array([1, 9, -1, 8, 1, 7], np.int8)
    right = get_op("bit_shift").reference([x, s], {"direction": "RIGHT"})[0]
    left = get_op("bit_shift").reference([x, s], {"direction": "LEFT"})[0]
    np.testing.assert_array_equal(right, [-4, 0, 0, -1, 50, -1])  # arithmetic; out of range: the sign fill
    np.testing.assert_array_equal(left, [-16, 0, 0, 0, -56, 0])  # bits past the sign bit are dropped
    from dlcfuzz.lower.onnx import to_onnx

    g = _one("bit_shift", [TensorType("int8", (6,))] * 2, {"direction": "RIGHT"})
    assert to_onnx(g).opset_import[0].version == 28
    check_instance(g, {"x0": x, "x1": s})


def test_float_mod_with_fmod_0_is_floor_modulo_at_opset_28():
    from dlcfuzz.lower.onnx import to_onnx

    a = np.array([-7.5, 7.5, -7.5, 7.5], np.float32)
    b = np.array([2.0, -2.0, -2.0, 2.0], np.float32)
    np.testing.assert_array_equal(get_op("mod").reference([a, b], {"fmod": 0})[0], [0.5, -0.5, -1.5, 1.5])
    g = _one("mod", [TensorType("float32", (4,))] * 2, {"fmod": 0})
    assert to_onnx(g).opset_import[0].version == 28
    check_instance(g, {"x0": a, "x1": b})


@pytest.mark.parametrize("n", [1, 3])
def test_variadic_max_min_sum_mean(n):
    rng = np.random.default_rng(n)
    shapes = [(2, 3), (3,), (1, 3)][:n]
    xs = {f"x{i}": rng.standard_normal(sh).astype(np.float32) for i, sh in enumerate(shapes)}
    for op, fn in [("max", np.maximum), ("min", np.minimum), ("sum", np.add)]:
        g = _one(op, [TensorType.of(x) for x in xs.values()], {})
        want = xs["x0"]
        for k in list(xs)[1:]:
            want = fn(want, xs[k])
        np.testing.assert_allclose(get_op(op).reference(list(xs.values()), {})[0], want, rtol=1e-6)
        check_instance(g, xs)
    mean = get_op("mean").reference(list(xs.values()), {})[0]
    np.testing.assert_allclose(mean, get_op("sum").reference(list(xs.values()), {})[0] / n, rtol=1e-6)


def test_cast_to_wide_unsigned_and_saturate_import():
    from onnx import TensorProto, helper

    from dlcfuzz.lower.onnx_import import import_model

    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.UINT32, saturate=1)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT32, [3])])
    res = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)]))
    assert res.complete and res.graph.nodes[0].attrs == {"to": "uint32"}
    x = np.array([0.5, 3.9, 70000.0], np.float32)
    np.testing.assert_array_equal(get_op("cast").reference([x], {"to": "uint32"})[0], [0, 3, 70000])


def test_swish_and_swiglu():
    x = np.array([-2.0, 0.0, 1.5], np.float32)
    sw = get_op("swish").reference([x], {"alpha": 0.5})[0]
    np.testing.assert_allclose(sw, x / (1 + np.exp(-0.5 * x)), rtol=1e-6)
    np.testing.assert_allclose(get_op("swiglu").reference([x, x], {"alpha": 0.5})[0], sw * x, rtol=1e-6)


def test_integer_div_truncates_toward_zero_at_the_int64_extremes():
    """Regression (30-minute auto campaign on onnxruntime 1.20.1): INT64_MIN / -3 was expected as
    -3074457345618258603 because |INT64_MIN| overflows; ORT's 3074457345618258602 is right."""
    lo, hi = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
    pairs = [(lo, -3), (lo, 3), (lo, 2), (hi, -3), (hi, 7), (-7, 2), (7, -2), (-7, -2), (0, -5), (lo + 1, -1)]
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    got = get_op("div").reference([a, b], {})[0].astype(np.int64).tolist()
    exact = [-(-x // y) if (x < 0) != (y < 0) else x // y for x, y in pairs]  # Python ints: no overflow
    assert got == exact
