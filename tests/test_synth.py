"""OATest (optimization-aware synthesis): patterns, splicing, extraction, trigger detection, dedup."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dlcfuzz.cli import main
from dlcfuzz.ir import dumps
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import check_graph
from dlcfuzz.synth.library import LIBRARY, library
from dlcfuzz.synth.pattern import Pattern, load_patterns, save_patterns
from dlcfuzz.synth.synthesize import Synthesizer, _Emitter, bridge, retype, splice

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "ort-optimizer-tests"
SUITE = ROOT / "tests" / "relax_pattern_suite"


def wrapped(p: Pattern) -> Graph:
    """The pattern between sigmoids: a rule that must not touch graph inputs/outputs can fire."""
    g = p.graph.copy()
    pre = [Node("sigmoid", [f"w_{v.name}"], [Value(v.name, v.type)], {}, name=f"pre_{v.name}") for v in g.inputs]
    g.inputs = [Value(f"w_{v.name}", v.type) for v in g.inputs]
    types = g.types()
    post = [Node("sigmoid", [o], [Value(f"post_{o}", types[o])], {}, name=f"post_{o}") for o in g.outputs]
    g.nodes = pre + g.nodes + post
    g.outputs = [f"post_{o}" for o in g.outputs]
    check_graph(g)
    return g


def test_library_patterns_are_valid_tagged_and_round_trip(tmp_path: Path) -> None:
    from dlcfuzz.synth.library_ort import ORT_LIBRARY

    pats = library()
    assert len(pats) >= 25
    for p in pats:
        check_graph(p.graph)
        # the shared patterns target TVM too; those written from ONNXRuntime's transformers, ORT alone
        assert p.holes and (p.targets.get("tvm") or (p.name in ORT_LIBRARY and p.targets.get("onnxruntime"))), p.name
    path = save_patterns(pats, tmp_path / "lib.json")
    back = load_patterns(path)
    assert [p.name for p in back] == [p.name for p in pats]
    assert back[0].targets == pats[0].targets and len(back[0].graph.nodes) == len(pats[0].graph.nodes)


def test_a_patterns_variants_are_made_once_per_answers_of_the_capability_predicate() -> None:
    """`pattern_variants` keeps what it made with the (operator, dtype) questions it asked: a predicate that answers
    them alike gets the same variants without a new making; one that answers one differently gets them made for it,
    what a fresh pattern makes (campaigns of a process share their patterns: `shared_default_patterns`)."""
    from dlcfuzz.synth.library import shared_default_patterns
    from dlcfuzz.synth.synthesize import pattern_variants

    def made(p: Pattern, supported) -> list[tuple[str, str]]:
        return [(v.name, dumps(v.graph).hex()) for v in pattern_variants(p, supported)]

    p = next(q for q in library() if q.name == "matmul_add")
    everything = lambda op, dt: True  # noqa: E731
    first = pattern_variants(p, everything)
    assert len(first) > 3 and any(v.meta.get("retyped") for v in first)
    again = pattern_variants(p, lambda op, dt: op != "relu")  # another predicate, alike on what was asked
    assert [id(v) for v in again] == [id(v) for v in first]  # the same objects, taken as made
    no_float16 = lambda op, dt: dt != "float16"  # noqa: E731
    fresh = next(q for q in library() if q.name == "matmul_add")
    assert made(p, no_float16) == made(fresh, no_float16) != made(fresh, everything)
    assert not any(v.name.endswith("@float16") for v in pattern_variants(p, no_float16))
    assert shared_default_patterns("onnxruntime")[0] is shared_default_patterns("onnxruntime")[0]


def test_bridge_adapts_dtype_element_count_and_shape() -> None:
    for src, dst in [(TensorType("float64", (2, 3)), TensorType("float32", (4, 5))),
                     (TensorType("int32", (5, 7)), TensorType("float32", (2, 3))),
                     (TensorType("float32", ()), TensorType("float32", (1, 3, 2, 2)))]:
        em = _Emitter("t_")
        out = bridge(em, "x", src, dst)
        g = Graph([Value("x", src)], {}, em.nodes, [out])
        check_graph(g)
        assert g.output_types() == [dst]


def test_retype_reconcretizes_elementwise_patterns_and_refuses_fixed_weights() -> None:
    by = {p.name: p for p in library()}
    g = retype(by["quick_gelu"], {"x": TensorType("float16", (2, 5, 7))})
    assert g is not None and g.output_types() == [TensorType("float16", (2, 5, 7))]
    assert retype(by["matmul_add"], {"x": TensorType("float32", (3, 9))}) is None  # weights are 8 x 5


def test_synthesis_types_every_graph_reuses_and_bridges_and_replays() -> None:
    def run(seed: int) -> list:
        syn = Synthesizer(library(), "onnxruntime")
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(150):
            s = syn.next(rng)
            check_graph(s.graph)
            syn.accept(s)
            out.append(s)
        assert syn.failures <= 0.05 * syn.attempts
        return out

    first = run(7)
    assert sum(s.reused for s in first) > 0 and sum(s.bridged for s in first) > 0
    assert sum(s.connected for s in first) > 0.5 * len(first)  # patterns are wired into their context
    assert max(s.order for s in first) >= 3  # high-order synthesis: seeds from the pool
    again = run(7)
    assert [s.pattern for s in first] == [s.pattern for s in again]
    assert [len(s.graph.nodes) for s in first] == [len(s.graph.nodes) for s in again]


def test_splice_connects_outputs_only_to_inputs_that_accept_any_value() -> None:
    from dlcfuzz.ops import ANY, get_op

    pats = library()
    rng = np.random.default_rng(3)
    syn = Synthesizer(pats, "onnxruntime")
    for k in range(60):
        seed, _ = syn.seed_graph(rng)
        s = splice(seed, pats[k % len(pats)], rng, k)
        if s is None:
            continue
        types = s.graph.types()
        pattern_values = {v.name for n in s.graph.nodes if n.name.startswith(f"s{k}_") for v in n.outputs}
        for n in s.graph.nodes:
            if n.name.startswith(f"s{k}_"):
                continue
            for j, i in enumerate(n.inputs):
                if i in pattern_values:
                    assert get_op(n.op).domain(j, [types[x] for x in n.inputs], n.attrs) == ANY


def test_library_tags_fire_on_ort() -> None:
    """Each ONNXRuntime tag names an optimizer `disabled_optimizers` really switches off (or, for
    the layout transformation's transpose optimizer, one whose rewrite shows in the model)."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
    from dlcfuzz.backends.onnxruntime.trigger import ort_fired
    from dlcfuzz.lower.onnx import to_onnx

    backend = OnnxRuntimeBackend()
    for p in library():
        tags = p.targets_for("onnxruntime")
        if tags:  # asked as the oatest worker asks it (its configuration: the opset, the transformer optimizer)
            config = backend.oatest_configs(np.random.default_rng(0), tags, [backend.default_pair()[1]])[-1]
            fired = backend.fired(wrapped(p), config, tags)
            assert all(fired.values()), (p.name, fired)
    # and a name ORT does not know never "fires"
    p = library()[0]
    assert ort_fired(backend, to_onnx(wrapped(p)).SerializeToString(), ["NoSuchOptimizer"]) == {"NoSuchOptimizer": False}


def test_tvm_pass_instrument_records_which_passes_changed_the_module() -> None:
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    from dlcfuzz.backends.tvm.trigger import tvm_changed_passes
    from dlcfuzz.lower.relax import to_relax

    by = {p.name: p for p in library()}
    changed = tvm_changed_passes(to_relax(wrapped(by["parallel_matmul"])), ["CombineParallelMatmul", "FoldConstant"])
    assert changed == ["CombineParallelMatmul"]
    assert tvm_changed_passes(to_relax(wrapped(by["concat_of_permutes"])), ["ReorderPermuteDimsAfterConcat"]) == \
        ["ReorderPermuteDimsAfterConcat"]


def test_tvm_optimizations_are_its_default_pipeline_and_fired_tells_them() -> None:
    """Backend.optimizations() on TVM: the passes of the installed release's default Relax pipeline (read from
    it), then the sequence passes our configurations run before it; fired() watches the whole Relax compile of a
    configuration (its explicit sequence and relax.build's pipeline), through either front door."""
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    from dlcfuzz.backends import get_backend
    from dlcfuzz.backends.tvm.trigger import pipeline_passes

    tvm = get_backend("tvm")
    opts = tvm.optimizations()
    assert {"LegalizeOps", "FoldConstant", "FuseOps", "FuseTIR", "DispatchSortScan", "StaticPlanBlockMemory"} <= set(opts)
    assert len(opts) == len(set(opts)) >= 12
    # FuseTIR runs DeadCodeElimination inside: not a pass of the pipeline itself, but one of the sequences'
    assert "DeadCodeElimination" not in pipeline_passes() and "DeadCodeElimination" in opts
    assert opts[:len(pipeline_passes())] == pipeline_passes() and {"CanonicalizeBindings", "FuseTransposeMatmul"} <= set(opts)
    f32 = TensorType("float32", (2, 3))
    # made for them: a constant subexpression (FoldConstant, once legalized) feeding an elementwise chain (FuseOps)
    g = Graph(inputs=[Value("x", f32)], constants={"a": np.ones((2, 3), "float32"), "b": np.ones((2, 3), "float32")},
              nodes=[Node("add", ["a", "b"], [Value("k", f32)], {}), Node("add", ["x", "k"], [Value("y", f32)], {}),
                     Node("relu", ["y"], [Value("z", f32)], {})], outputs=["z"])
    check_graph(g)
    every = tvm.configs()
    # (TVM's ONNX frontend folds the constant subexpression itself while it imports)
    for config, fold in (("tvm-opt", True), ("tvm-onnx-opt", False)):
        fired = tvm.fired(g, every[config], list(opts))
        assert set(fired) == set(opts)
        assert all(fired[p] for p in ("LegalizeOps", "FuseOps", "FuseTIR", "CallTIRRewrite")), (config, fired)
        assert fired["FoldConstant"] == fold, (config, fired)
        assert not fired["DispatchSortScan"] and not fired["DispatchSampling"], (config, fired)
    # relax.build's pipeline dispatches TopK before it legalizes: the unoptimized build, whose sequence is empty
    top = Graph(inputs=[Value("x", f32)], nodes=[Node("topk", ["x"], [Value("v", TensorType("float32", (2, 2))),
                                                                     Value("i", TensorType("int64", (2, 2)))],
                                                      {"k": 2, "axis": 1, "largest": 1, "sorted": 1})],
                outputs=["v", "i"])
    check_graph(top)
    assert tvm.fired(top, every["tvm-unopt"], ["DispatchSortScan", "FuseOps"]) == {"DispatchSortScan": True,
                                                                                   "FuseOps": False}


def _onnx_model(nodes: list, inputs: list, outputs: list, inits: list = (), domains: tuple = ()) -> bytes:
    from onnx import helper

    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    opsets = [helper.make_opsetid("", 17)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(g, opset_imports=opsets)


def test_extract_from_onnx_folder_reports_and_skips_contrib_nodes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    onnx = pytest.importorskip("onnx", reason="onnx is not installed")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 6, 6])  # a symbolic dimension
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    (tmp_path / "ConvActivationFusion").mkdir()
    onnx.save(_onnx_model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["y"])], [x], [y], [w]),
              str(tmp_path / "ConvActivationFusion" / "conv_relu.onnx"))
    (tmp_path / "QuickGeluFusion").mkdir()
    contrib = _onnx_model([helper.make_node("QuickGelu", ["x"], ["q"], domain="com.microsoft"),
                           helper.make_node("Sigmoid", ["q"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])], [y], domains=("com.microsoft",))
    contrib.graph.value_info.append(helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 5]))  # as ORT's tests carry
    onnx.save(contrib, str(tmp_path / "QuickGeluFusion" / "contrib.onnx"))
    (tmp_path / "QuickGeluFusion" / "broken.onnx").write_bytes(b"not a model")
    out = tmp_path / "p.json"
    assert main(["patterns", "extract", "--from", str(tmp_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "unreadable 1" in text and "com.microsoft:QuickGelu x1" in text
    pats = load_patterns(out)
    by_target = {t: p for p in pats for t in p.targets["onnxruntime"]}
    assert set(by_target) == {"ConvActivationFusion", "QuickGeluFusion"}
    assert by_target["ConvActivationFusion"].graph.ops_used() == {"conv2d", "relu"}
    assert by_target["ConvActivationFusion"].holes[0].rank == 4  # shapes abstracted to rank + dtype class
    assert by_target["QuickGeluFusion"].graph.ops_used() == {"sigmoid", "relu"}  # cut after the contrib node


def test_optimization_aware_cut_keeps_the_nodes_the_optimization_rewrites(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx", reason="onnx is not installed")
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from onnx import TensorProto, helper, numpy_helper

    from dlcfuzz.synth.extract import extract_onnx_dir

    w = numpy_helper.from_array(np.ones((6, 4), np.float32), "w")
    b = numpy_helper.from_array(np.ones((4,), np.float32), "b")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    (tmp_path / "MatMulAddFusion").mkdir()
    onnx.save(_onnx_model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("MatMul", ["s", "w"], ["m"]),
                           helper.make_node("Add", ["m", "b"], ["a"]), helper.make_node("Tanh", ["a"], ["y"])],
                          [x], [y], [w, b]),
              str(tmp_path / "MatMulAddFusion" / "m.onnx"))
    plain, _ = extract_onnx_dir(tmp_path)
    aware, report = extract_onnx_dir(tmp_path, aware=True)
    assert [p.graph.ops_used() for p in plain] == [{"sigmoid", "matmul", "add", "tanh"}]
    assert report.located == 1 and len(aware) == 1
    # the fused pair, and what the fusion enables downstream (Gemm + Tanh), never the untouched Sigmoid
    assert {"matmul", "add"} <= aware[0].graph.ops_used() and "sigmoid" not in aware[0].graph.ops_used()


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the ORT optimizer-test corpus (../shared/corpora) is absent")
def test_extract_from_the_ort_optimizer_test_corpus() -> None:
    from dlcfuzz.synth.extract import extract_onnx_dir

    patterns, report = extract_onnx_dir(CORPUS, max_nodes=12)
    assert report.sources > 2000 and report.unreadable == 0
    assert report.imported > 1000 and len(patterns) > 300
    assert ("com.microsoft", "QLinearConv") in report.skipped  # reported, never a crash
    assert {"ConvActivationFusion", "ConstantFolding", "TransposeOptimizer"} <= set(report.per_optimization)
    syn = Synthesizer(patterns, "onnxruntime")
    rng = np.random.default_rng(0)
    for _ in range(40):
        check_graph(syn.next(rng).graph)


def test_extract_from_a_pytest_run_of_relax_transform_tests(tmp_path: Path) -> None:
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    out = tmp_path / "relax.json"
    assert main(["patterns", "extract", "--pytest", str(SUITE), "--out", str(out)]) == 0
    pats = load_patterns(out)
    targets = {t for p in pats for t in p.targets["tvm"]}
    assert {"CombineParallelMatmul", "ReorderPermuteDimsAfterConcat", "RemoveRedundantReshape", "FuseOps",
            "EliminateCommonSubexpr", "FoldConstant"} <= targets
    fuse = [p for p in pats if "FuseOps" in p.targets["tvm"]]
    assert any(p.graph.ops_used() == {"matmul", "add", "relu"} for p in fuse)
    assert all(p.source.startswith("pytest:case_") for p in pats)


def test_patterns_cli_lists_and_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["patterns", "list", "--compiler", "onnxruntime"]) == 0
    assert "MatMulAddFusion" in capsys.readouterr().out
    assert main(["patterns", "extract", "--from", str(tmp_path / "nope"), "--out", str(tmp_path / "x.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["patterns", "list", str(bad)]) == 2
    assert main(["fuzz", "--strategy", "random", "--patterns", str(bad), "--out", str(tmp_path / "r")]) == 2


def test_planted_wrong_optimization_is_found_and_deduplicated_to_it(tmp_path: Path) -> None:
    """A wrong MatMulAddFusion (planted: the fused result is off by one wherever MatMul feeds Add)
    is found by an oatest campaign, and every inconsistency it causes reduces to that one
    optimization: one distinct finding whose key is the minimal set {MatMulAddFusion}."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store

    out = tmp_path / "run"
    # the shared built-in patterns only: with the shipped mined patterns (or the ORT-only library) too,
    # synthesis spreads over ~30 optimizations and 60 tests target MatMulAddFusion a couple of times
    lib = save_patterns([p for p in library() if p.name in LIBRARY], tmp_path / "library.json")
    opts = campaign_options(compiler="planted:fusion@MatMulAddFusion", strategy="oatest", seconds=120, jobs=1, seed=3,
                           out=out, max_tests=60, quiet=True, patterns=str(lib))
    Campaign(opts).run()
    store = Store(out / "store.sqlite", create=False)
    numeric = [f for f in store.findings(distinct_only=False) if f["category"] in ("inconsistency", "wrong-result")]
    assert numeric, "the planted wrong optimization was not found"
    assert all(f["key"].endswith("|opts=MatMulAddFusion") for f in numeric)  # whatever the mismatch kind
    assert len({f["signature"] for f in numeric}) == 1
    html = (out / "report.html").read_text()
    assert "Trigger rate per optimization" in html and "MatMulAddFusion" in html


def test_worker_reports_which_targeted_tvm_passes_fired() -> None:
    """The oatest worker handler runs the ordinary test and adds, per targeted Relax pass, whether
    it changed the module (PassInstrument), for a pattern spliced into a seed graph."""
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    from dlcfuzz.backends.tvm.backend import TvmBackend
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.ir.blob import unpack
    from dlcfuzz.lower.registry import load_target
    from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes
    from dlcfuzz.strategies.oatest import make_handler

    by = {p.name: p for p in library()}
    # seeds without TVM's documented gaps, as a campaign's capability cuts them (a float16 cosh is an unknown
    # LLVM intrinsic in apache-tvm 0.27; Relax has no NonZero)
    relax, tvm = load_target("relax"), TvmBackend()
    syn = Synthesizer([by["concat_of_permutes"]], "tvm",
                      supported=lambda op, dtype: relax.gap_of(op) is None and dtype not in tvm.known_gaps(op))
    rng = np.random.default_rng(5)
    s = syn.next(rng)
    configs = TvmBackend().configs()
    _, opt = TvmBackend().oatest_configs(rng, ["ReorderPermuteDimsAfterConcat"], list(TvmBackend().default_pair()))
    assert opt.options["passes"][0] == "ReorderPermuteDimsAfterConcat" and "FuseTIR" in opt.options["passes"]
    tc = TestCase(s.graph, sample_inputs(s.graph, rng), [configs["tvm-unopt"], opt], seed=5, compiler="tvm",
                  strategy="oatest", meta={"oatest": {"pattern": s.pattern, "targets": ["ReorderPermuteDimsAfterConcat"]}})
    reply = make_handler({"compiler": "tvm"})(tc.to_bytes())
    obs, _, _, _ = reply_from_bytes(reply)
    assert [o.status for o in obs] == ["ok", "ok"]
    assert unpack(reply)[0]["oatest"]["fired"] == {"ReorderPermuteDimsAfterConcat": True}


def test_oatest_campaign_replays_from_its_seed_also_across_resume(tmp_path: Path) -> None:
    """The seed pool grows at generation time, and a resumed campaign replays the generation of its
    earlier tests: the graphs of a campaign resumed half-way are the uninterrupted campaign's."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    import sqlite3

    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.ir import dumps
    from dlcfuzz.oracle.testcase import TestCase

    def graphs(out: Path) -> list[bytes]:
        db = sqlite3.connect(out / "store.sqlite")
        rows = [dumps(TestCase.from_bytes(b).graph) for (b,) in db.execute("SELECT blob FROM tests ORDER BY seq")]
        db.close()
        return rows

    def opts(out: Path, n: int) -> object:
        return campaign_options(strategy="oatest", seconds=120, jobs=1, seed=9, out=out, max_tests=n, quiet=True,
                                reduce=False, keep_tests=True)

    Campaign(opts(tmp_path / "whole", 16)).run()
    Campaign(opts(tmp_path / "split", 8)).run()
    Campaign(campaign_options(seconds=120, jobs=1, out=tmp_path / "split", max_tests=16, quiet=True, keep_tests=True),
             resume=True).run()
    whole = graphs(tmp_path / "whole")
    assert len(whole) == 16 and graphs(tmp_path / "split") == whole


def test_a_small_tests_splices_stay_within_the_long_axis_bounds(monkeypatch) -> None:
    """A small test's splice can be lengthened by its bridge (a reshape or pad to a long axis), so the element and
    work bounds hold for it as for a long-axis test. The bound is lowered here so that ordinary splices cross it."""
    import dlcfuzz.gen.sizes as sizes

    monkeypatch.setattr(sizes, "MAX_WORK", 1500)
    syn = Synthesizer(library(), "onnxruntime")
    rng = np.random.default_rng(11)
    spliced = [s for s in (syn.next(rng) for _ in range(40)) if s.pattern]
    assert len(spliced) >= 10, len(spliced)
    assert all(sizes.graph_work(s.graph) <= 1500 for s in spliced)
    assert syn.rejected["size: past the long-axis test's element or work bound"] >= 5, dict(syn.rejected)
