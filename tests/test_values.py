"""Value profiles (gen/inputs.py) and their repair (gen/repair.py): edge values inside every consumer's domain and
dtype, reproducible from the test's seed, on the target share of tests, and the oracle they feed finds a fault that
only large values show while staying quiet on the correct compiler."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcfuzz.gen.inputs import (
    EDGE_TEST_SHARE,
    PROFILES,
    attr_key,
    attr_values,
    boundary_values,
    magnitude_limits,
    sample_tensor,
)
from dlcfuzz.gen.random import allowed_choices, generate
from dlcfuzz.gen.repair import repair_values, sample_values
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import ANY, Domain
from dlcfuzz.oracle.policy import reference_of
from dlcfuzz.oracle.policy import test_seed as seed_of
from dlcfuzz.oracle.testcase import TestCase

NUMERIC = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]


@st.composite
def domains(draw: st.DrawFn) -> Domain:
    lo = draw(st.one_of(st.none(), st.floats(-6e4, 10.0)))
    hi = draw(st.one_of(st.none(), st.floats(-10.0, 6e4)))
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    if lo is not None and hi is not None and hi - lo < 1:  # an integer domain holds a value
        hi = lo + 1
    return Domain(lo, hi, draw(st.booleans()), False, draw(st.sampled_from([1.0, 2.0, 3.0])),
                  draw(st.sampled_from([1, 36, 4096])))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NUMERIC), domains(), st.integers(0, 2 ** 32 - 1))
def test_every_profile_lands_in_the_domain_and_the_dtype(dtype, d, seed):
    """Every value a profile draws is in the consumer's domain and the dtype; the small values a mixed profile keeps
    are the small profile's own (its domain: ops/ bounds both sides, or neither)."""
    rng = np.random.default_rng(seed)
    t = TensorType(dtype, (3, 4))
    small = np.zeros((3, 4), dtype=t.np_dtype) + np.asarray(sample_tensor(rng, t, ANY))
    kind = "f" if small.dtype.kind == "f" else "i"
    for p in PROFILES:
        if kind not in p.kinds:
            continue
        x = p.draw(rng, small, d)
        if x is None:  # no value of this profile in the domain
            continue
        assert x.dtype == small.dtype and x.shape == small.shape, p.name
        wide = x.astype(np.float64)[x != small]
        assert np.isfinite(wide).all(), p.name
        lo = d.lo if d.lo is not None else -np.inf
        hi = d.hi if d.hi is not None else np.inf
        if kind == "i":  # integer domains hold the integers between their bounds
            lo, hi = np.ceil(lo), np.floor(hi)
        assert ((wide >= lo) & (wide <= hi)).all(), (p.name, d, wide.min(), wide.max())
        if d.nonzero:
            assert (wide != 0).all(), p.name
        if kind == "f":  # within the consumer's kernels' range
            _, ceiling = magnitude_limits(small.dtype, d)
            assert (np.abs(wide) <= ceiling * (1 + 1e-3)).all(), (p.name, d, np.abs(wide).max(), ceiling)


def test_boundaries_hold_the_named_values():
    b = boundary_values(np.dtype("int32"), ANY).tolist()
    for v in (0, 1, -1, -2 ** 31, -2 ** 31 + 1, 2 ** 31 - 2, 2 ** 31 - 1, 2 ** 24, 2 ** 24 + 1, 255, 256, 32767, 65536):
        assert v in b, v
    assert 2 ** 31 not in b and 2 ** 32 not in b  # not held by int32
    u8 = boundary_values(np.dtype("uint8"), ANY).tolist()
    assert u8 == sorted(set(u8)) and 0 in u8 and 255 in u8 and 254 in u8 and min(u8) == 0
    f = boundary_values(np.dtype("float32"), ANY)
    wide = f.astype(np.float64).tolist()
    assert float(np.finfo(np.float32).max) in wide and 2.0 ** 24 in wide and 2.0 ** 24 - 1 in wide
    assert 2.0 ** 24 + 1 not in wide  # float32 does not hold it
    assert (np.signbit(f) & (f == 0)).any(), "signed zero"
    assert np.finfo(np.float32).smallest_subnormal in f
    # a consumer that squares and sums (a norm) keeps magnitudes below sqrt(max / terms), above sqrt(tiny)
    norm = Domain(power=2.0, terms=16)
    fn = np.abs(boundary_values(np.dtype("float32"), norm).astype(np.float64))
    lo, hi = magnitude_limits(np.dtype("float32"), norm)
    assert fn.max() <= hi and fn[fn > 0].min() >= lo
    assert boundary_values(np.dtype("int8"), Domain(lo=-3, hi=3, strict=True)).tolist() == [-3, -2, -1, 0, 1, 2, 3]


def _values_digest(seeds: range) -> str:
    choices = allowed_choices(None, None, None)
    h = hashlib.sha256()
    for s in seeds:
        rng = np.random.default_rng(seed_of(7, s))
        g, inputs, _ = sample_values(generate(rng, 6, choices=choices), rng)
        for k in sorted(inputs):
            h.update(k.encode() + np.ascontiguousarray(inputs[k]).tobytes())
        for k in sorted(g.constants):
            h.update(k.encode() + np.ascontiguousarray(g.constants[k]).tobytes())
    return h.hexdigest()


def test_the_same_seed_gives_the_same_values_in_another_process():
    here = _values_digest(range(40))
    code = "import sys; sys.path.insert(0, 'tests'); from test_values import _values_digest; print(_values_digest(range(40)))"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert there.stdout.strip() == here


def _small_and_edge(campaign: int, test: int, ops: int, choices):
    """One test made with `--values small` and with `--values edge`: (graph, inputs, edges) of each."""
    made = []
    for values in ("small", "edge"):
        rng = np.random.default_rng(seed_of(campaign, test))
        made.append(sample_values(generate(rng, ops, choices=choices), rng, values))
    return made


def test_edge_values_leave_the_graph_and_the_other_values_as_small_values_make_them():
    """The edge profiles draw from a generator of their own: a test's graph and the values that get no edge profile
    are those `--values small` makes (which are exactly the tests of before profiles)."""
    choices = allowed_choices(None, None, None)
    edge_tests = 0
    for s in range(40):
        (g_small, small, _), (g_edge, edge, edges) = _small_and_edge(3, s, 6, choices)
        edge_tests += bool(edges.profiles)
        assert [n.op for n in g_edge.nodes if n.op != "clip"] == [n.op for n in g_small.nodes if n.op != "clip"]
        for k in small:
            if k not in edges.profiles and k not in edges.shrunk:
                assert np.array_equal(small[k], edge[k], equal_nan=True), k
        # attributes too: those of a node without an edge attribute, and the sampled ones edges.small_attrs keeps
        sampled = {n.name: n.attrs for n in g_small.nodes if not n.name.startswith("domain_")}
        for n in g_edge.nodes:
            if n.name in sampled:
                assert edges.small_attrs.get(n.name, n.attrs) == sampled[n.name], n.name
    assert edge_tests > 0


def test_edge_attributes_lie_in_their_legal_range_and_dtype_and_keep_the_graphs_types():
    """Every edge attribute is a value of its dtype (exact) inside the range its operator declares (value_attrs),
    the graph's types are those of the same test without edges, and the reference takes it exactly; some are large."""
    choices = allowed_choices(None, None, None)
    attrs, large, unusable = 0, 0, 0
    for s in range(300):
        (g_small, _, _), (g, inputs, edges) = _small_and_edge(13, s, 8, choices)
        types = g.types()
        assert all(types[k] == t for k, t in g_small.types().items() if k in types)  # domain repair's clips differ
        for key in edges.attrs:
            node = next(n for n in g.nodes if key == attr_key(n.name, key.rsplit(".", 1)[1]))
            va, value = attr_values(g, node, key.rsplit(".", 1)[1])
            assert np.array_equal(value.astype(np.float64), np.asarray(node.attrs[key.rsplit(".", 1)[1]], np.float64))
            d = va.domain
            wide = value.astype(np.float64)
            assert (d.lo is None or (wide >= d.lo).all()) and (d.hi is None or (wide <= d.hi).all()), (key, value)
            assert not (d.nonzero and (wide == 0).any()), key
            attrs += 1
            large += bool((np.abs(wide) >= 2 ** 15).any())
        if edges.attrs:
            unusable += reference_of(TestCase(g, dict(inputs), [], seed=s), tries=1, stability=False).outputs is None
    assert attrs >= 30 and large >= 5, (attrs, large)
    assert unusable <= 0.05 * attrs, (unusable, attrs)


def test_repair_shrinks_an_overflowing_edge_attribute_until_the_reference_is_finite():
    """LeakyRelu(x) with a large alpha overflows float32 where x is large too: repair shrinks the larger of the two
    (the attribute here) until the reference is finite, keeping it large."""
    from dlcfuzz.gen.inputs import EdgeValues
    from dlcfuzz.ir.graph import Graph, Node, Value

    t = TensorType("float32", (3,))
    g = Graph(inputs=[Value("x", t)], nodes=[Node("leaky_relu", ["x"], [Value("y", t)], {"alpha": 3e37}, name="n0")],
              outputs=["y"])
    inputs = {"x": np.array([-1e4, 2.0, -0.5], dtype=np.float32)}
    edges = EdgeValues(attrs={"n0.alpha": "huge"}, small_attrs={"n0": {"alpha": 0.25}})
    repair_values(g, inputs, edges)
    assert reference_of(TestCase(g, dict(inputs), [], seed=0), tries=1, stability=False).outputs is not None
    assert edges.shrunk == {"n0.alpha"} and edges.attrs == {"n0.alpha": "huge"}
    assert 1e10 < g.nodes[0].attrs["alpha"] < 3e37  # halved, then square-rooted and isinstance(g.nodes[0].attrs["alpha"], float)


def test_a_range_edge_keeps_its_length_and_its_elements_exact():
    """Range's limit follows a drawn start and delta (Range.with_values): its length stays, and a draw whose
    elements leave the dtype, or are not exact in it, is refused."""
    from dlcfuzz.ops import get_op

    spec = get_op("range")
    ints = {"start": 0, "limit": 10, "delta": 2, "dtype": "int32"}  # 5 elements
    moved = spec.with_values([], ints, {"start": 2 ** 31 - 11, "delta": 2})
    assert moved is not None and spec.reference([], moved)[0].tolist() == [2 ** 31 - 11 + 2 * i for i in range(5)]
    assert spec.with_values([], ints, {"start": 2 ** 31 - 9, "delta": 2}) is None  # the limit leaves int32
    assert spec.with_values([], ints, {"delta": 2 ** 28}) is not None  # 5 * 2^28 < 2^31
    assert spec.with_values([], ints, {"delta": 2 ** 29}) is None
    floats = {"start": 0.0, "limit": 1.125, "delta": 0.25, "dtype": "float32"}  # 5 elements
    big = spec.with_values([], floats, {"start": 2.0 ** 30})
    assert big is None  # 2^30 + 0.25 is not a float32
    big = spec.with_values([], floats, {"start": 2.0 ** 20})
    assert big is not None and spec.infer([], big)[0].shape == (5,)
    assert spec.reference([], big)[0].tolist() == [2.0 ** 20 + 0.25 * i for i in range(5)]


def test_onnxruntime_computes_edge_attributes_as_the_reference_does():
    """An attribute edge reaches the compiler: edge tests of LeakyRelu, ConstantOfShape and Range draw large
    attributes, and ONNXRuntime's outputs on them match the reference."""
    pytest.importorskip("onnxruntime")
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.ops import get_op
    from dlcfuzz.oracle.numeric import compare

    ort = get_backend("onnxruntime")
    config = ort.configs()["ort-disable"]
    choices = allowed_choices([get_op(k) for k in ("leaky_relu", "constant_of_shape", "range", "add")], None,
                         lambda op, dt: op != "range" or dt != "float16")
    large: dict[str, int] = {}
    for s in range(400):
        rng = np.random.default_rng(seed_of(17, s))
        g, inputs, edges = sample_values(generate(rng, 3, choices=choices), rng)
        big = [k for k in edges.attrs
               if (np.abs(np.asarray(next(n for n in g.nodes if n.name == k.rsplit(".", 1)[0]).attrs[k.rsplit(".", 1)[1]],
                                     np.float64)) >= 2 ** 15).all()]
        if not big:
            continue
        tc = TestCase(g, inputs, [config], compiler="onnxruntime")
        ref = reference_of(tc, tries=1, stability=False)
        assert ref.outputs is not None, s
        (o,) = run_configs(ort, tc)
        assert o.status == "ok", (s, o.error)
        assert compare(o.outputs, ref.outputs) == [], (s, [n.attrs for n in g.nodes])
        for k in big:
            op = next(n for n in g.nodes if n.name == k.rsplit(".", 1)[0]).op
            large[op] = large.get(op, 0) + 1
    assert set(large) == {"leaky_relu", "constant_of_shape", "range"} and min(large.values()) >= 2, large


def test_the_share_of_edge_tests_lies_in_the_target_and_few_are_discarded():
    """25-50% of tests keep an edge value after repair (EDGE_TEST_SHARE), and the reference judges edge tests
    about as often as the others (repair shrinks what overflows)."""
    choices = allowed_choices(None, None, None)
    n, edge, unusable = 300, 0, 0
    for s in range(n):
        rng = np.random.default_rng(seed_of(11, s))
        g, inputs, edges = sample_values(generate(rng, 8, choices=choices), rng)
        if edges.profiles:
            edge += 1
            ref = reference_of(TestCase(g, dict(inputs), [], seed=s), tries=1, stability=False)
            unusable += ref.outputs is None
    assert 0.25 <= edge / n <= 0.5, edge / n
    assert EDGE_TEST_SHARE >= edge / n - 0.05
    assert unusable <= 0.05 * edge, (unusable, edge)


def test_repair_shrinks_an_overflowing_edge_input_until_the_reference_is_exact():
    from dlcfuzz.gen.inputs import EdgeValues
    from dlcfuzz.ir.graph import Graph, Node, Value

    t = TensorType("int32", (4,))
    g = Graph(inputs=[Value("a", t), Value("b", t)], nodes=[Node("add", ["a", "b"], [Value("y", t)], {}, name="n0")],
              outputs=["y"])
    big = np.array([2 ** 31 - 1, -2 ** 31, 2 ** 30, 7], dtype=np.int32)
    small = np.array([1, -2, 3, 4], dtype=np.int32)
    inputs = {"a": big.copy(), "b": big.copy()}
    edges = EdgeValues({"a": "boundary", "b": "boundary"}, {"a": small, "b": small.copy()})
    repair_values(g, inputs, edges)
    assert reference_of(TestCase(g, dict(inputs), [], seed=0), tries=1, stability=False).outputs is not None
    assert edges.shrunk and np.abs(inputs["a"].astype(np.int64)).max() > 2 ** 24  # large, and in range


# ---- end to end: a fault only large values show ------------------------------------------------------------
def _campaign(tmp_path, compiler: str, values: str, tests: int = 60):
    pytest.importorskip("onnxruntime")
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    out = tmp_path / f"{compiler.replace(':', '_').replace('@', '_')}-{values}"
    Campaign(campaign_options(compiler=compiler, strategy="random", seconds=600, jobs=2, seed=5, out=out, ops=4,
                              max_tests=tests, quiet=True, values=values,
                              only_ops=["add", "sub", "mul", "neg", "abs"])).run()
    db = sqlite3.connect(out / "store.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM findings")]


def test_a_fault_beyond_2_24_is_found_with_profiles_and_not_without(tmp_path):
    """planted:narrow@add sends every integer output through float32 (right within +-2^24 only): edge values find
    it, `--values small` does not, and the correct compiler stays quiet on the same edge tests."""
    found = _campaign(tmp_path, "planted:narrow@add", "edge")
    assert found and all(f["category"] in ("wrong-result", "inconsistency") for f in found), found
    assert _campaign(tmp_path, "planted:narrow@add", "small") == []
    assert _campaign(tmp_path, "onnxruntime", "edge") == []


def test_a_bound_the_dtype_rounds_outward_still_holds():
    """float16's nearest value to 0.99999988 (an open interval's bound) is 1.0: clipping to the bound cast to the
    dtype let 1.0 through (80 of 200,000 draws; a Hypothesis example found it); the dtype's nearest value inside
    the bound holds it."""
    from dlcfuzz.gen.inputs import _magnitudes
    from dlcfuzz.ops.base import Domain

    d = Domain(lo=-0.99999988, hi=0.99999988)
    x = _magnitudes(np.random.default_rng(0), (200000,), np.dtype("float16"), d, 0.5, 0.99999988).astype(np.float64)
    assert np.abs(x).max() == np.float16(0.99951171875) and (np.abs(x) < 0.99999988).all()


def test_an_int64_shrink_past_2_63_in_float_is_an_integer_overflow():
    """ONNX computes an integer Shrink in float: INT64_MAX - 2 rounds to 2^63, outside int64, whose conversion back is
    undefined (XLA saturates to INT64_MAX, NumPy wraps to INT64_MIN): the reference says unknown, not either."""
    from dlcfuzz.ir.graph import Graph, Node, Value

    t = TensorType("int64", (2,))
    g = Graph(inputs=[Value("x", t)], nodes=[Node("shrink", ["x"], [Value("y", t)], {"bias": 2.0, "lambd": 1.0},
                                                  name="n0")], outputs=["y"])
    unusable = reference_of(TestCase(g, {"x": np.array([2 ** 63 - 1, 5], np.int64)}, [], seed=0), tries=1, stability=False)
    assert unusable.outputs is None and unusable.reason == "integer-overflow"
    fine = reference_of(TestCase(g, {"x": np.array([2 ** 52, -5], np.int64)}, [], seed=0), tries=1, stability=False)
    assert fine.outputs is not None and fine.outputs[0].tolist() == [2 ** 52 - 2, -3]
