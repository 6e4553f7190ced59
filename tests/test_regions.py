"""Regions (issue 40): conditionals, loops and scans in the IR (ops/regions.py), nested and capturing values of
the enclosing scope. They round-trip and are checked; the reference agrees with onnx's ReferenceEvaluator on
each kind; the ONNX lowering passes onnx's full check and ONNXRuntime and OpenVINO agree with the reference on
random region graphs; the random strategy finds a planted wrong branch and stays quiet on the real compiler."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import IRError
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.random import generate
from dlcfuzz.gen.regions import add_regions, bodies_in, region_samples
from dlcfuzz.ir import Graph, Node, TensorType, Value, dumps, graphs_equal, load, loads, save, to_text
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.ops import check_graph, get_op

F3 = TensorType("float32", (3,))
F23 = TensorType("float32", (2, 3))
I64 = TensorType("int64", ())
B = TensorType("bool", ())
# operators ONNXRuntime and OpenVINO's CPU plugin run in float32 (random graphs around the regions)
OPS = ("add", "sub", "mul", "relu", "sigmoid", "tanh", "abs", "matmul", "transpose", "concat", "reduce_sum",
       "reduce_max", "softmax", "neg")


def if_graph() -> Graph:
    """if x's sum > 0 then x + c else x * y: captures of the enclosing scope (x, y, a constant)."""
    then = Graph(inputs=[Value("x", F23), Value("y", F23), Value("c", F3)],
                 nodes=[Node("add", ["x", "c"], [Value("t", F23)], name="a")], outputs=["t"], name="then_branch")
    other = Graph(inputs=[Value("x", F23), Value("y", F23), Value("c", F3)],
                  nodes=[Node("mul", ["x", "y"], [Value("e", F23)], name="m")], outputs=["e"], name="else_branch")
    return Graph(inputs=[Value("x", F23), Value("y", F23)], constants={"c": np.arange(3, dtype=np.float32),
                                                                         "zero": np.zeros((), np.float32)},
                 nodes=[Node("reduce_sum", ["x"], [Value("s", TensorType("float32", ()))],
                             {"axes": [0, 1], "keepdims": 0, "noop_with_empty_axes": 0}, name="s"),
                        Node("greater", ["s", "zero"], [Value("cond", B)], name="g"),
                        Node("if", ["cond", "x", "y", "c"], [Value("out", F23)],
                             {"then_branch": then, "else_branch": other}, name="if")],
                 outputs=["out"])


def halving_body(step: str, early_exit: bool, scan: bool) -> Graph:
    """A loop body: acc <- acc * 0.5 + `step` (its capture), carried; with `scan` each trip's acc is also a scan
    slice (rank 1, which onnx's evaluator stacks as we do); with early_exit its condition stops it after trip 1."""
    body_nodes = [Node("mul", ["acc", "half"], [Value("h", F3)], name="m"),
                  Node("add", ["h", step], [Value("next", F3)], name="a")]
    body_out = "cond_in"
    if early_exit:
        body_nodes.append(Node("less", ["i", "one"], [Value("go", B)], name="l"))
        body_out = "go"
    return Graph(inputs=[Value("i", I64), Value("cond_in", B), Value("acc", F3), Value(step, F3)],
                 constants={"half": np.full(3, 0.5, np.float32), "one": np.array(1, np.int64)},
                 nodes=body_nodes, outputs=[body_out, "next"] + (["next"] if scan else []), name="body")


def loop_graph(early_exit: bool) -> Graph:
    """acc <- acc * 0.5 + step, carried; the trip count an input; each trip's acc a scan output; with early_exit
    the body's condition stops it after trip 1 (no scan output then)."""
    body = halving_body("step", early_exit, scan=not early_exit)
    attrs = {"body": body, "num_carried": 1} | ({} if early_exit else {"trips": 4})
    outs = [Value("final", F3)] + ([] if early_exit else [Value("trace", TensorType("float32", (4, 3)))])
    return Graph(inputs=[Value("n", TensorType("int64", ())), Value("x", F3), Value("step", F3)],
                 constants={"go": np.array(True)},
                 nodes=[Node("loop", ["n", "go", "x", "step"], outs, attrs, name="loop")],
                 outputs=[v.name for v in outs])


def scan_graph(axis: int) -> Graph:
    """A running sum over an axis of xs, plus w (captured); the running sums stacked."""
    t = TensorType("float32", (4, 3) if axis == 0 else (3, 4))
    body = Graph(inputs=[Value("sum", F3), Value("row", F3), Value("w", F3)],
                 nodes=[Node("add", ["sum", "row"], [Value("s1", F3)], name="a"),
                        Node("add", ["s1", "w"], [Value("s2", F3)], name="b")],
                 outputs=["s2", "s2"], name="body")
    attrs = {"body": body, "num_states": 1, "num_scan_inputs": 1, "scan_input_axes": [axis],
             "scan_input_directions": [0], "scan_output_axes": [0], "scan_output_directions": [0]}
    return Graph(inputs=[Value("init", F3), Value("xs", t), Value("w", F3)],
                 nodes=[Node("scan", ["init", "xs", "w"], [Value("total", F3), Value("sums", TensorType("float32", (4, 3)))],
                             attrs, name="scan")],
                 outputs=["total", "sums"])


def nested_graph() -> Graph:
    """A loop whose body holds a conditional on its iteration number, whose branch reads a value captured from
    the outermost scope (y) through both levels."""
    then = Graph(inputs=[Value("acc", F3), Value("y", F3)], nodes=[Node("add", ["acc", "y"], [Value("t", F3)], name="a")],
                 outputs=["t"], name="then_branch")
    other = Graph(inputs=[Value("acc", F3), Value("y", F3)], nodes=[Node("sub", ["acc", "y"], [Value("e", F3)], name="s")],
                  outputs=["e"], name="else_branch")
    body = Graph(inputs=[Value("i", I64), Value("cond_in", B), Value("acc", F3), Value("y", F3)],
                 constants={"one": np.array(1, np.int64)},
                 nodes=[Node("less", ["i", "one"], [Value("first", B)], name="l"),
                        Node("if", ["first", "acc", "y"], [Value("next", F3)], {"then_branch": then, "else_branch": other},
                             name="if")],
                 outputs=["cond_in", "next"], name="body")
    return Graph(inputs=[Value("x", F3), Value("y", F3)],
                 constants={"n": np.array(3, np.int64), "go": np.array(True)},
                 nodes=[Node("loop", ["n", "go", "x", "y"], [Value("out", F3)], {"body": body, "num_carried": 1},
                             name="loop")],
                 outputs=["out"])


def hand_built() -> dict[str, Graph]:
    return {"if": if_graph(), "loop": loop_graph(False), "loop-early-exit": loop_graph(True),
            "scan": scan_graph(0), "scan-axis-1": scan_graph(1), "nested": nested_graph()}


def feeds(g: Graph, seed: int) -> dict[str, np.ndarray]:
    x = sample_inputs(g, np.random.default_rng(seed))
    if "n" in x:
        x["n"] = np.array(4, np.int64)
    return x


@pytest.mark.parametrize("name", sorted(hand_built()))
def test_regions_round_trip_are_checked_and_printed(tmp_path, name):
    g = hand_built()[name]
    check_graph(g)
    assert graphs_equal(loads(dumps(g)), g)
    assert graphs_equal(load(save(g, tmp_path / "g.json")), g)
    assert graphs_equal(g.light_copy(), g)
    text = to_text(g)
    assert f"= {g.nodes[-1].op}(" in text and "body(" in text or "then_branch(" in text
    assert g.nodes[-1].op in g.ops_used() and {"add"} <= g.ops_used()  # the bodies' operators count


def test_the_check_refuses_malformed_regions():
    g = if_graph()
    g.nodes[-1].attrs["else_branch"].nodes[0] = Node("concat", ["x", "y"], [Value("e", TensorType("float32", (4, 3)))],
                                                     {"axis": 0}, name="m")
    with pytest.raises(IRError, match="branches' output types differ"):
        check_graph(g)
    g = if_graph()
    g.nodes[-1].attrs["then_branch"].nodes[0].inputs = ["x", "undefined"]
    with pytest.raises(IRError, match="in its then_branch.*not defined"):
        check_graph(g)
    g = loop_graph(False)
    del g.nodes[0].attrs["trips"]
    with pytest.raises(IRError, match="static number of trips"):
        check_graph(g)


# onnx's ReferenceEvaluator scans axis 0 only (and stacks a Loop's scan outputs with np.vstack, which equals
# stacking for slices of rank 0 and 1 only): ONNXRuntime, unoptimized, is the second interpreter of the others
EVALUATOR_RUNS = ("if", "loop", "loop-early-exit", "nested", "scan")


@pytest.mark.parametrize("name", sorted(hand_built()))
def test_reference_agrees_with_onnx_reference_evaluator_and_onnxruntime(name):
    import onnx
    from onnx.reference import ReferenceEvaluator

    from op_harness import run_ort

    g = hand_built()[name]
    model = to_onnx(g)
    onnx.checker.check_model(model, full_check=True)
    for seed in range(3):
        x = feeds(g, seed)
        ours = reference.outputs(g, x)
        others = [run_ort(model, x)]
        if name in EVALUATOR_RUNS:
            others.append(ReferenceEvaluator(model).run(None, {v.name: x[v.name] for v in g.inputs}))
        for theirs in others:
            for a, b in zip(ours, theirs, strict=True):
                assert a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_reference_semantics_by_hand():
    x = {"x": np.ones(3, np.float32), "step": np.full(3, 2.0, np.float32), "n": np.array(4, np.int64)}
    final, trace = reference.outputs(loop_graph(False), x)
    np.testing.assert_allclose(trace[:, 0], [2.5, 3.25, 3.625, 3.8125])
    assert final[0] == trace[-1, 0]
    (early,) = reference.outputs(loop_graph(True), x)  # stops after trips 0 and 1
    np.testing.assert_allclose(early, [3.25] * 3)
    (nested,) = reference.outputs(nested_graph(), {"x": np.zeros(3, np.float32), "y": np.ones(3, np.float32)})
    np.testing.assert_allclose(nested, [-1.0] * 3)  # + y on trip 0, - y on trips 1 and 2
    bad = loop_graph(False)
    with pytest.raises(IRError, match="ran 2 trips"):
        reference.outputs(bad, {**x, "n": np.array(2, np.int64)})


def test_onnx_import_gives_back_the_regions():
    from dlcfuzz.lower.onnx_import import import_model

    for name, g in hand_built().items():
        x = feeds(g, 0)
        res = import_model(to_onnx(g), bind=x)  # a loop's scan outputs need its trip count: bound from the run
        assert res.complete, (name, res.skipped)
        assert {n.op for n in res.graph.all_nodes()} >= {g.nodes[-1].op}
        back = reference.outputs(res.graph, {v.name: x[n] for v, n in zip(res.graph.inputs, res.input_names)})
        for a, b in zip(back, reference.outputs(g, x), strict=True):
            np.testing.assert_array_equal(a, b)


def random_region_graphs(count: int, seed: int = 0) -> list[Graph]:
    """Random float32 graphs of OPS with 1-3 regions each (nested ones among them)."""
    rng = np.random.default_rng(seed)
    ops = [get_op(o) for o in OPS]
    return [add_regions(generate(rng, 6, ops=ops, dtypes=["float32"]), rng, max_regions=3) for _ in range(count)]


def test_generated_regions_cover_every_kind_and_nesting():
    graphs = random_region_graphs(40)
    kinds = {n.op for g in graphs for n in g.all_nodes()} & {"if", "loop", "scan"}
    assert kinds == {"if", "loop", "scan"}
    assert any(n.bodies() for g in graphs for body in bodies_in(g) for n in body.nodes)  # nested
    assert all(graphs_equal(loads(dumps(g)), g) for g in graphs)


def test_edge_values_keep_every_generated_trip_count():
    """A loop's trip count is its structure (LoopSpec.domain): an edge profile there (2**62) would make the
    reference run MAX_TRIPS trips per repair evaluation (half a minute of the campaign's driver) and the
    compiler loop until the test's timeout. Edge values still reach the loops' other inputs."""
    from dlcfuzz.gen.inputs import edge_values

    graphs = [g for g in random_region_graphs(40) if any(n.op == "loop" for n in g.nodes)]
    trip_counts = {n.inputs[0] for g in graphs for n in g.nodes if n.op == "loop"}
    assert len(graphs) >= 5 and trip_counts <= {k for g in graphs for k in g.constants}
    edged = set()
    for k, g in enumerate(graphs):
        for seed in range(20):
            h = g.light_copy()
            edges = edge_values(h, sample_inputs(h, np.random.default_rng(seed)), np.random.default_rng([k, seed]))
            edged |= set(edges.profiles)
            for n in h.nodes:
                if n.op == "loop":
                    assert n.inputs[0] not in edges.profiles
                    np.testing.assert_array_equal(h.constants[n.inputs[0]], g.constants[n.inputs[0]])
    assert edged - trip_counts  # the other inputs and constants do get edge values


@pytest.mark.parametrize("compiler", ["onnxruntime", "openvino"])
def test_compilers_agree_with_the_reference_on_random_region_graphs(compiler):
    import onnx

    pytest.importorskip(compiler)
    from dlcfuzz.backends import get_backend
    from op_harness import judged_cases, judged_side_by_side

    backend = get_backend(compiler)
    graphs = random_region_graphs(36, seed=1)
    for g in graphs[:6]:
        onnx.checker.check_model(to_onnx(g), full_check=True)
    cases = judged_cases(graphs)
    configs = list(backend.default_pair())
    assert judged_side_by_side(backend, cases, lambda g: configs, batch=12) >= 30


def test_samples_lower_on_onnx_compilers_only():
    from dlcfuzz.backends import get_backend

    for kind, g in zip(("if", "loop", "scan"), region_samples()):
        assert g.nodes[-1].op == kind
        check_graph(g)
        get_backend("onnxruntime").lower(g, get_backend("onnxruntime").default_pair()[0])


@pytest.mark.slow
def test_random_strategy_finds_a_planted_wrong_branch_and_is_quiet_on_the_real_compiler(tmp_path):
    pytest.importorskip("onnxruntime")
    import regions_plugin  # noqa: F401  (registers the planted compiler)
    from planted_ort import planted_found_and_real_quiet

    planted_found_and_real_quiet(tmp_path, "wrong-branch", list(OPS), ops=5, max_tests=10, min_passes=7, regions=1.0)


def test_reduction_removes_regions_while_the_finding_shows():
    from dlcfuzz.reduce.graph import reduce_graph
    from dlcfuzz.reduce.regions import without_region

    g = if_graph()
    x = {"x": np.ones((2, 3), np.float32), "y": np.full((2, 3), 2.0, np.float32)}  # the sum is positive: then
    taken = without_region(g, 2, "then_branch")
    check_graph(taken)
    np.testing.assert_array_equal(reference.outputs(taken, x)[0], reference.outputs(g, x)[0])
    # a finding that needs an add (the taken branch's) reduces to the graph without the conditional
    small, _ = reduce_graph(g, x, lambda h, _: "add" in h.ops_used())
    assert "if" not in small.ops_used() and small.ops_used() == {"add"}
    for make in (lambda: loop_graph(True), nested_graph):  # one trip; a nested conditional inlined with it
        h = make()
        one = without_region(h, len(h.nodes) - 1)
        check_graph(one)
        assert "loop" not in {n.op for n in one.nodes}
    assert without_region(loop_graph(False), 0) is None  # four trips of scan outputs: the types would change
    s = scan_graph(0)
    s.inputs[1] = Value("xs", TensorType("float32", (1, 3)))
    s.nodes[0].outputs[1] = Value("sums", TensorType("float32", (1, 3)))
    check_graph(s)
    one = without_region(s, 0)
    check_graph(one)
    feed = {"init": np.ones(3, np.float32), "xs": np.full((1, 3), 2.0, np.float32), "w": np.ones(3, np.float32)}
    for a, b in zip(reference.outputs(one, feed), reference.outputs(s, feed), strict=True):
        np.testing.assert_array_equal(a, b)


def test_onnx_reproducer_source_builds_regions_with_onnx_helper():
    import onnx

    from dlcfuzz.backends.script import UNPACK, onnx_model_source

    model = to_onnx(nested_graph())
    source = onnx_model_source(model.SerializeToString())
    assert "def build_model" in source and "then_branch=graph_" in source and "body=graph_" in source
    space = {"np": np, "base64": __import__("base64"), "zlib": __import__("zlib"), "TensorProto": onnx.TensorProto,
             "helper": onnx.helper, "numpy_helper": onnx.numpy_helper}
    exec(UNPACK + source, space)  # noqa: S102 - the reproducer's own code
    assert onnx.load_from_string(space["MODEL"]).graph.node[0].op_type == "Loop"


def test_jax_lowering_runs_regions_eagerly_and_under_jit():
    jax = pytest.importorskip("jax")
    from dlcfuzz.lower.jax import to_jax_program

    for name, g in hand_built().items():
        x = feeds(g, 0)
        prog = to_jax_program(g)
        jitted = jax.jit(prog.function())(*[prog.argument(np.array(x[n])) for n in prog.input_names])
        for ours, eager, compiled in zip(reference.outputs(g, x), prog.run_eager(x), jitted, strict=True):
            np.testing.assert_allclose(eager, ours, rtol=1e-6, atol=1e-6, err_msg=name)
            np.testing.assert_allclose(np.asarray(compiled), ours, rtol=1e-6, atol=1e-6, err_msg=name)


def test_xla_agrees_with_the_reference_on_random_region_graphs():
    pytest.importorskip("jax")
    from dlcfuzz.backends import get_backend
    from op_harness import judged_cases, judged_side_by_side

    backend = get_backend("xla")
    cases = judged_cases(random_region_graphs(4, seed=5))  # XLA's compile time grows with the module
    assert judged_side_by_side(backend, cases, lambda g: list(backend.default_pair()), batch=4) == 4


def test_torch_lowering_runs_conditionals_with_torch_cond():
    pytest.importorskip("torch")
    from dlcfuzz.lower.torch import to_torch_program

    # torch.cond traces its branches with Dynamo even eagerly: one graph (Inductor compiling random graphs with
    # conditionals agreed too, probed apart: a compile costs half a minute here)
    for g in [if_graph()]:
        x = feeds(g, 0)
        prog = to_torch_program(g)
        assert "torch.cond(" in prog.source
        for ours, eager in zip(reference.outputs(g, x), prog.run_eager(x), strict=True):
            np.testing.assert_allclose(eager, ours, rtol=1e-5, atol=1e-6)


def test_tvm_agrees_with_the_reference_on_conditionals():
    """Our Relax lowering (relax.If, the dataflow blocks split around it) and TVM's ONNX front door."""
    pytest.importorskip("tvm")
    from dlcfuzz.backends import get_backend
    from op_harness import judged_cases, judged_side_by_side

    backend = get_backend("tvm")
    rng = np.random.default_rng(12)
    graphs = [if_graph()] + [add_regions(generate(rng, 5, ops=[get_op(o) for o in OPS], dtypes=["float32"]), rng,
                                         kinds=("if",)) for _ in range(2)]
    configs = [backend.configs()[n] for n in ("tvm-unopt", "tvm-opt", "tvm-onnx-opt")]
    assert judged_side_by_side(backend, judged_cases(graphs), lambda g: configs, batch=3) == 3
