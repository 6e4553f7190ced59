"""Backends: every configuration compiles and agrees on a correct program; knobs do what they say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.errors import UsageError
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.ops import check_graph
from dlcfuzz.oracle.numeric import compare

F = TensorType("float32", (1, 2, 4, 4))


def conv_relu_graph() -> Graph:
    rng = np.random.default_rng(0)
    g = Graph(
        inputs=[Value("x", F)],
        constants={"w": rng.normal(size=(3, 2, 3, 3)).astype("float32"), "b": rng.normal(size=(3,)).astype("float32")},
        nodes=[
            Node("conv2d", ["x", "w", "b"], [Value("c", TensorType("float32", (1, 3, 4, 4)))],
                 {"strides": [1, 1], "dilations": [1, 1], "pads": [1, 1, 1, 1], "group": 1}, name="n0"),
            Node("relu", ["c"], [Value("y", TensorType("float32", (1, 3, 4, 4)))], name="n1"),
        ],
        outputs=["y"],
    )
    check_graph(g)
    return g


def run_all(name: str):
    from dlcfuzz import reference

    backend = get_backend(name)
    g = conv_relu_graph()
    x = {"x": np.random.default_rng(1).normal(size=F.shape).astype("float32")}
    ref = reference.outputs(g, x)
    for config in backend.configs().values():
        got = backend.compile(g, config).run(x)
        assert not compare(got, ref), config.name
    return backend, g, x


def test_onnxruntime_configs_agree_and_dump_the_optimized_model():
    pytest.importorskip("onnxruntime")
    import onnx

    backend, g, x = run_all("onnxruntime")
    compiled = backend.compile(g, Config("dump", {"opt_level": "extended", "dump": True}))
    model = onnx.load_from_string(compiled.optimized_model)
    ops = [n.op_type for n in model.graph.node]
    assert "Relu" not in ops, ops  # ConvActivationFusion fired
    plain = backend.compile(g, Config("off", {"opt_level": "extended", "dump": True, "disabled_optimizers": ["ConvActivationFusion"]}))
    assert "Relu" in [n.op_type for n in onnx.load_from_string(plain.optimized_model).graph.node]


def test_tvm_configs_agree_across_methods_targets_and_exec_modes():
    pytest.importorskip("tvm")
    backend, _, _ = run_all("tvm")
    names = {c.options["target"] for c in backend.configs().values()} | {c.options["method"] for c in backend.configs().values()}
    assert {"llvm", "c", "direct", "onnx"} <= names


def test_tvm_unopt_builds_at_llvm_o0_and_its_reproducer_builds_each_configuration_s_target(tmp_path: Path) -> None:
    """tvm-unopt is unoptimized down to LLVM (-O0; the others at TVM's default -O3), and the reproducer builds
    every configuration for the target the campaign built it for: the kernels' library records it."""
    import runpy

    pytest.importorskip("tvm")
    from tvm import relax

    from dlcfuzz.backends.tvm.backend import codegen_target

    backend = get_backend("tvm")
    configs = backend.configs()
    levels = {name: codegen_target(c.options).attrs.get("opt-level") for name, c in configs.items()
              if c.options["target"] == "llvm"}
    assert levels == {"tvm-unopt": 0, "tvm-opt": None, "tvm-opt-compiled": None, "tvm-onnx-opt": None}
    x = TensorType("float32", (2, 3))
    g = Graph(inputs=[Value("x", x)], outputs=["y"], nodes=[Node("relu", ["x"], [Value("y", x)])])
    mod = relax.transform.LegalizeOps()(backend.lower(g, configs["tvm-unopt"]))
    for name in ("tvm-unopt", "tvm-opt"):
        lib = relax.build(mod, target=codegen_target(configs[name].options)).mod.imports[0]
        recorded = next(line for line in lib.inspect_source("ll").split("\n") if '"tvm_target"' in line)
        assert ("opt-level" in recorded) == (name == "tvm-unopt"), recorded
    path = tmp_path / "repro.py"
    path.write_text(backend.reproducer(g, {"x": np.ones((2, 3), np.float32)}, None, list(configs.values()),
                                       "inconsistency", "relu", "d"))
    script = runpy.run_path(str(path), run_name="repro")  # its definitions, without running main()
    for name, c in configs.items():
        assert str(script["target_of"](script["CONFIGS"][name])) == str(codegen_target(c.options)), name


def test_tvm_shape_output_is_an_int64_tensor_in_the_harness_and_the_reproducer(tmp_path: Path) -> None:
    """Regression (apache-tvm 0.25 campaign): TVM's ONNX importer returns a graph output made by `Shape` as
    a shape value (a tuple of ints), which our flattening iterated into a TypeError (an 'unexpected error'
    of TVM that was ours), and an empty one vanished, shifting later outputs. Every configuration agrees
    with the reference now, and the reproducer compares it too."""
    pytest.importorskip("tvm")
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import TestCase
    from dlcfuzz.oracle.verdict import judge

    backend = get_backend("tvm")
    x = TensorType("float32", (3, 4))
    g = Graph(inputs=[Value("x", x)], outputs=["s", "y"], nodes=[
        Node("shape", ["x"], [Value("s", TensorType("int64", (2,)))]), Node("relu", ["x"], [Value("y", x)])])
    tc = TestCase(g, {"x": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)}, list(backend.configs().values()),
                  seed=0, compiler="tvm")
    obs = run_configs(backend, tc)
    assert [o.status for o in obs] == ["ok"] * len(obs), [(o.config, o.error) for o in obs if o.status != "ok"]
    assert all(o.outputs[0].tolist() == [3, 4] and o.outputs[0].dtype == np.int64 for o in obs)
    ref = reference_of(tc)
    assert [v.kind for v in judge("tvm", backend.expected_error, ref.outputs, obs, ref.unstable)] == ["pass"]
    onnx_config = backend.configs()["tvm-onnx-opt"]
    script = backend.reproducer(g, tc.inputs, ref.outputs, [onnx_config], "wrong-result", "shape", "d")
    path = tmp_path / "repro.py"
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "not reproduced" in r.stdout, r.stdout + r.stderr


def test_a_relax_form_another_tvm_release_refuses_is_its_gap_and_ours_on_the_pinned_one(monkeypatch) -> None:
    """Regression (issue 36's apache-tvm 0.25 campaign): 0.25's own checks refused Relax forms of our rules that
    0.27 takes (rms_norm's broadcast scale, a float64 arange's Python-float bounds), and each was an internal
    error. Another release's refusal is that release's gap; on the release the rules are written for, it stays
    ours. A rule planted here builds an add of shapes that do not broadcast, which TVM's own check refuses."""
    tvm = pytest.importorskip("tvm")
    from tvm import relax

    import dlcfuzz.lower.relax as lower_relax
    from dlcfuzz.errors import LoweringGap

    x = TensorType("float32", (2, 3))
    g = Graph(inputs=[Value("x", x)], outputs=["y"], nodes=[Node("relu", ["x"], [Value("y", x)])])
    monkeypatch.setitem(lower_relax.RELAX.rules, "relu",
                        lambda spec, bb, ins, *_: [relax.op.add(ins[0], relax.const(np.zeros(4, np.float32)))])
    with pytest.raises(ValueError, match="broadcast") as raised:
        lower_relax.to_relax(g)
    assert not isinstance(raised.value, LoweringGap)
    monkeypatch.setattr(lower_relax, "WRITTEN_FOR", "0.25.")
    with pytest.raises(LoweringGap, match=f"apache-tvm {tvm.__version__} does not take our Relax lowering of relu"):
        lower_relax.to_relax(g)


def test_tvm_reproducer_says_when_its_tvmscript_does_not_parse_on_this_release(tmp_path: Path) -> None:
    """TVMScript printed by apache-tvm 0.25 (`out_dtype="void"`) does not parse on 0.26/0.27: five
    reproducers of a 0.25 campaign printed "not reproduced" (exit 0) there, which read as "fixed".
    Now exit 3: cannot tell on this release."""
    pytest.importorskip("tvm")
    backend = get_backend("tvm")
    x = TensorType("float32", (2, 3))
    g = Graph(inputs=[Value("x", x)], outputs=["y"], nodes=[Node("relu", ["x"], [Value("y", x)])])
    inputs = {"x": np.ones((2, 3), np.float32)}
    script = backend.reproducer(g, inputs, [inputs["x"]], [backend.configs()["tvm-opt"]], "wrong-result", "t", "d")
    assert "R.nn.relu(" in script
    path = tmp_path / "repro.py"
    for text, status in ((script, 0), (script.replace("R.nn.relu(", "R.nn.relu_of_another_release("), 3)):
        path.write_text(text)
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
        assert r.returncode == status, r.stdout + r.stderr
    assert "does not parse on apache-tvm" in r.stdout and "cannot check the finding here" in r.stdout


def test_tvm_importer_skipping_the_elementwise_step_of_a_noop_reduction_is_found_and_known() -> None:
    """Registered TVM bug (0.25 campaign, still on 0.27): the ONNX importer returns x for ReduceSumSquare
    with noop_with_empty_axes=1 and no axes; the reference (as onnxruntime and onnx.reference) gives x*x.
    The direct Relax lowering is right, so the importer's configuration is the odd one out."""
    pytest.importorskip("tvm")
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import TestCase
    from dlcfuzz.oracle.verdict import judge

    backend = get_backend("tvm")
    t = TensorType("float32", (2, 3))
    g = Graph(inputs=[Value("x", t)], outputs=["y"], nodes=[
        Node("reduce_sum_square", ["x"], [Value("y", t)], attrs={"axes": [], "keepdims": 0, "noop_with_empty_axes": 1})])
    c = backend.configs()
    tc = TestCase(g, {"x": np.array([[-1.5, 0.5, 2.0], [3.0, -0.25, 1.0]], np.float32)},
                  [c["tvm-unopt"], c["tvm-onnx-opt"]], seed=0, compiler="tvm")
    ref = reference_of(tc)
    np.testing.assert_allclose(ref.outputs[0], tc.inputs["x"] ** 2)
    (v,) = judge("tvm", backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)
    assert (v.kind, v.category) == ("bug", "inconsistency") and "tvm-onnx-opt differs" in v.detail, v
    row = {"id": 1, "compiler": "tvm", "category": v.category, "configs": '["tvm-unopt", "tvm-onnx-opt"]',
           "key": f"{v.key}|ops=reduce_sum_square|opts=none", "detail": v.detail}
    known = Register(use_env=False).match(facts_of(row, graph=(frozenset({"reduce_sum_square"}), frozenset({"float32"}))),
                                          v.detail)
    assert known is not None and known.id == "tvm-onnx-reduce-noop-empty-axes-skips-elementwise"


def test_tvm_explicit_pass_sequence():
    pytest.importorskip("tvm")
    from dlcfuzz.backends.tvm.passes import PASSES

    backend = get_backend("tvm")
    g = conv_relu_graph()
    x = {"x": np.ones(F.shape, "float32")}
    base = backend.compile(g, backend.configs()["tvm-unopt"]).run(x)
    seq = ["FoldConstant", "DeadCodeElimination", "CanonicalizeBindings", "LegalizeOps", "AnnotateTIROpPattern",
           "FuseOps", "FuseTIR"]
    assert set(seq) <= set(PASSES) and len(PASSES) >= 20
    got = backend.compile(g, Config("seq", {"method": "direct", "passes": seq, "target": "llvm"})).run(x)
    assert not compare(got, base)


def test_unknown_backend_and_planted_syntax():
    with pytest.raises(UsageError, match="unknown compiler"):
        get_backend("nope")
    with pytest.raises(UsageError, match="unknown planted fault"):
        get_backend("planted:explode@add")


# ---- the compiler protocol's methods, on the real compilers ------------------------------------

def _inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(1).normal(size=F.shape).astype("float32")}


def _run_script(path, source: str):
    import subprocess
    import sys

    path.write_text(source)
    # standalone: run where `import dlcfuzz` fails (it is installed in this environment)
    no_dlcfuzz = ("import runpy, sys; sys.modules['dlcfuzz'] = None; sys.argv = sys.argv[1:]; "
                  "runpy.run_path(sys.argv[0], run_name='__main__')")
    return subprocess.run([sys.executable, "-c", no_dlcfuzz, str(path)], capture_output=True, text=True,
                          cwd=path.parent, timeout=300)


@pytest.mark.parametrize("name,deadline", [("onnxruntime", 15.0), ("tvm", 60.0)])
def test_deadlines_disruptive_front_doors_and_rules(name, deadline):
    pytest.importorskip("onnxruntime" if name == "onnxruntime" else "tvm")
    from dlcfuzz.gen.disruptive import RULES

    backend = get_backend(name)
    assert backend.deadline_s == deadline
    configs = backend.configs()
    front_doors = backend.disruptive_configs()
    assert len(front_doors) == 2 and set(front_doors) <= set(configs)
    rules = backend.disruptive_rules()
    if name == "tvm":
        assert rules == ("dtype-mismatch", "rank", "shape") and set(rules) <= set(RULES)
        assert [backend.per_op_rules(configs[n]) for n in front_doors] == [True, False]  # direct vs ONNX frontend
    else:
        assert rules[:len(RULES)] == RULES and {r for r in rules[len(RULES):] if r.startswith("malformed:")}  # ONNX
        assert not any(backend.per_op_rules(c) for c in configs.values())


def test_known_gaps_are_data_with_reasons_about_registered_operators():
    pytest.importorskip("tvm")
    pytest.importorskip("onnxruntime")
    from dlcfuzz.backends.onnxruntime.gaps import KNOWN_GAPS as ORT_GAPS
    from dlcfuzz.backends.tvm.gaps import KNOWN_GAPS as TVM_GAPS
    from dlcfuzz.ops import get_op, registry

    tvm_backend = get_backend("tvm")
    assert "uint8" in tvm_backend.known_gaps("argmax") and "float64" in tvm_backend.known_gaps("layer_norm")
    assert tvm_backend.known_gaps("add") == {} and get_backend("onnxruntime").known_gaps("argmax") == {}
    assert len(TVM_GAPS) >= 15
    for gaps in (ORT_GAPS, TVM_GAPS):
        for op, by_dtype in gaps.items():
            assert op in registry()
            for dtype, reason in by_dtype.items():
                assert dtype in get_op(op).dtypes and len(reason) > 20, (op, dtype)


def test_ort_per_test_configs_are_the_campaigns():
    pytest.importorskip("onnxruntime")
    backend = get_backend("onnxruntime")
    pair = list(backend.default_pair())
    assert backend.per_test_configs(np.random.default_rng(0), conv_relu_graph(), pair) == pair


def test_tvm_per_test_configs_vary_reproducibly_and_agree():
    pytest.importorskip("tvm")
    from dlcfuzz import reference
    from dlcfuzz.backends.tvm.backend import CROSS_METHOD, ONNX_DOOR
    from dlcfuzz.backends.tvm.passes import violations
    from dlcfuzz.gen.functions import outline
    from dlcfuzz.gen.random import generate

    backend = get_backend("tvm")
    pair = list(backend.default_pair())
    g = conv_relu_graph()
    seqs = set()
    for seed in range(30):
        configs = backend.per_test_configs(np.random.default_rng(seed), g, pair)
        again = backend.per_test_configs(np.random.default_rng(seed), g, pair)
        assert configs == again  # the same seed, the same configurations
        names = [c.name for c in configs]
        assert names[:2] == ["tvm-unopt", "tvm-passes"] and names[2] in CROSS_METHOD and len(names) == 3
        assert names[2] != ONNX_DOOR  # only a test drawn for the ONNX frontend compares it
        assert not violations(configs[1].options["passes"])
        seqs.add(tuple(configs[1].options["passes"]))
        drawn = [c.name for c in backend.per_test_configs(np.random.default_rng(seed), g,
                                                          [*pair, backend.configs()[ONNX_DOOR]])]
        assert drawn == ["tvm-unopt", "tvm-passes", ONNX_DOOR], drawn  # the door is its cross method
    assert len(seqs) >= 20  # sampled, not fixed
    x = _inputs()
    ref = reference.outputs(g, x)
    for c in backend.per_test_configs(np.random.default_rng(3), g, pair):
        assert not compare(backend.compile(g, c).run(x), ref), c.name
    rng = np.random.default_rng(5)
    with_functions = next(h for h in (outline(generate(rng, n_ops=6), rng) for _ in range(50)) if h.functions)
    names = [c.name for c in backend.per_test_configs(np.random.default_rng(0), with_functions, pair)]
    assert any(n.startswith("tvm-rewrite-") for n in names), names


def test_ort_minimize_config_finds_the_planted_optimization():
    """A fault planted in ConvActivationFusion (fires only where it is enabled) is found as the one
    optimization that matters; a correct ONNXRuntime shows nothing."""
    pytest.importorskip("onnxruntime")
    from dlcfuzz import reference

    g, x = conv_relu_graph(), _inputs()
    ref = reference.outputs(g, x)
    for name, expected in (("planted:fusion@ConvActivationFusion", ["ConvActivationFusion"]), ("onnxruntime", None)):
        backend = get_backend(name)
        checks = []

        def shows(config: Config, backend=backend, checks=checks) -> bool:
            checks.append(config)
            return bool(compare(backend.compile(g, config).run(x), ref))

        optimized = backend.default_pair()[1]
        if expected is None:
            assert not shows(optimized)
            continue
        config, names = backend.minimize_config(optimized, shows)
        assert names == expected and shows(config) and len(checks) <= 50
        assert "ConvActivationFusion" not in config.options["disabled_optimizers"]


def test_minimal_optimization_set_says_when_it_cannot_tell():
    """Regression (onnxruntime 1.20.1 campaign): a finding that did not show again while its optimization
    set was minimized (uninitialized ReverseSequence output) was keyed with all 61 transformers. Now:
    a set that does not show the finding again is "cannot tell"; a wrong result of the unoptimized build
    too needs no optimization; the planted fusion is still found."""
    pytest.importorskip("onnxruntime")
    from dlcfuzz import reference
    from dlcfuzz.oracle.verdict import Verdict
    from dlcfuzz.strategies.graph import minimal_optimization_set

    g, x = conv_relu_graph(), _inputs()
    ref = reference.outputs(g, x)
    backend = get_backend("planted:fusion@ConvActivationFusion")
    unoptimized, optimized = backend.default_pair()
    inconsistency = Verdict("bug", "inconsistency", configs=[unoptimized.name, optimized.name])

    def shows(config: Config) -> bool:
        return bool(compare(backend.compile(g, config).run(x), ref))

    config, names = minimal_optimization_set(backend, inconsistency, unoptimized, optimized, shows)
    assert names == ["ConvActivationFusion"] and shows(config)
    # never shows again (without the check: every transformer would be "needed")
    assert minimal_optimization_set(backend, inconsistency, unoptimized, optimized, lambda c: False) is None
    wrong_everywhere = Verdict("bug", "wrong-result", configs=[unoptimized.name, optimized.name])
    calls: list[Config] = []
    assert minimal_optimization_set(backend, wrong_everywhere, unoptimized, optimized,
                                    lambda c: calls.append(c) or False) == (optimized, []) and not calls


def test_tvm_minimize_config_keeps_the_passes_a_finding_needs_with_their_prerequisites():
    pytest.importorskip("tvm")
    from dlcfuzz.backends.tvm.passes import OPTIMIZE

    backend = get_backend("tvm")
    optimized = Config("tvm-passes", {**backend.configs()["tvm-opt"].options,
                                      "passes": ["FoldConstant", *OPTIMIZE, "DeadCodeElimination"]})
    config, names = backend.minimize_config(optimized, lambda c: "FuseTIR" in c.options["passes"])
    assert names == ["LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR"] == config.options["passes"]
    config, names = backend.minimize_config(optimized, lambda c: True)  # no pass needed
    assert names == [] and config.options["passes"] == []


@pytest.mark.parametrize("name", ["onnxruntime", "tvm"])
def test_reproducer_is_quiet_on_agreement_and_fires_on_a_wrong_result(name, tmp_path):
    pytest.importorskip("onnxruntime" if name == "onnxruntime" else "tvm")
    from dlcfuzz import reference
    from dlcfuzz.oracle.numeric import TOLERANCE

    backend = get_backend(name)
    g, x = conv_relu_graph(), _inputs()
    ref = reference.outputs(g, x)
    configs = list(backend.default_pair())
    quiet = backend.reproducer(g, x, ref, configs, "wrong-result", "t", "detail")
    readable = "MODEL = build_model()" if name == "onnxruntime" else "@R.function"  # the model is code
    assert readable in quiet and "MODEL = base64" not in quiet
    assert f"TOL = {TOLERANCE!r}" in quiet  # oracle/numeric.py's tolerances, not a copy
    r = _run_script(tmp_path / "quiet.py", quiet)
    assert r.returncode == 0 and "not reproduced" in r.stdout, r.stdout + r.stderr[-2000:]
    wrong = [a + 1 for a in ref]
    r = _run_script(tmp_path / "fires.py", backend.reproducer(g, x, wrong, configs, "wrong-result", "t", "detail"))
    assert r.returncode == 1 and "BUG REPRODUCED" in r.stdout, r.stdout + r.stderr[-2000:]


def test_error_reproducer_wants_the_finding_exception_not_any(tmp_path):
    """An unexpected-error script counts only the finding's exception type: a TVM reproducer whose
    TVMScript did not parse once printed "BUG REPRODUCED" for an error it never reached."""
    pytest.importorskip("onnxruntime")
    from onnxruntime.capi.onnxruntime_pybind11_state import Fail

    backend = get_backend("onnxruntime")
    g, x = conv_relu_graph(), _inputs()
    broken = [Config("ort-x", {"opt_level": "no-such-level"})]  # the script itself fails: KeyError
    detail = "Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Conv node"
    script = backend.reproducer(g, x, None, broken, "unexpected-error", "t", detail)
    assert f"ERROR_TYPE = {Fail.__name__!r}" in script
    r = _run_script(tmp_path / "other.py", script)
    assert r.returncode == 0 and "raised KeyError" in r.stdout and "not reproduced" in r.stdout, r.stdout + r.stderr
    r = _run_script(tmp_path / "any.py", backend.reproducer(g, x, None, broken, "unexpected-error", "t", "no type"))
    assert r.returncode == 1 and "BUG REPRODUCED" in r.stdout, r.stdout + r.stderr  # no type known: any error


def test_ort_pair_reproducer_compares_seed_and_mutant(tmp_path):
    pytest.importorskip("onnxruntime")
    backend = get_backend("onnxruntime")
    seed, x = conv_relu_graph(), _inputs()
    configs = list(backend.default_pair())
    for mutant, code in ((conv_relu_graph(), 0), (_shifted(conv_relu_graph()), 1)):
        folder = tmp_path / str(code)
        folder.mkdir()
        files = backend.pair_reproducer(seed, mutant, x, configs, 1e-4, "t", "detail")
        assert set(files) == {"seed.onnx", "mutant.onnx", "repro_mutant.py"}
        for fname, content in files.items():
            (folder / fname).write_bytes(content) if isinstance(content, bytes) else (folder / fname).write_text(content)
        r = _run_script(folder / "repro_mutant.py", files["repro_mutant.py"])
        assert r.returncode == code, r.stdout + r.stderr[-2000:]


def _shifted(g: Graph) -> Graph:
    g.constants["b"] = g.constants["b"] + np.float32(1.0)  # a different model: scores move
    return g


def test_fired_tells_which_targeted_optimizations_changed_the_program():
    pytest.importorskip("onnxruntime")
    ort_backend = get_backend("onnxruntime")
    g = conv_relu_graph()
    fired = ort_backend.fired(g, ort_backend.default_pair()[1], ["ConvActivationFusion", "MatMulAddFusion"])
    assert fired == {"ConvActivationFusion": True, "MatMulAddFusion": False}
    pytest.importorskip("tvm")
    tvm_backend = get_backend("tvm")
    fired = tvm_backend.fired(g, tvm_backend.configs()["tvm-opt"], ["FuseOps", "ExpandMatmulOfSum"])
    assert fired == {"FuseOps": True, "ExpandMatmulOfSum": False}


def test_tvm_oatest_configs_put_the_targeted_passes_in_a_valid_pipeline():
    pytest.importorskip("tvm")
    from dlcfuzz.backends.tvm.passes import OPTIMIZE, violations

    backend = get_backend("tvm")
    for seed in range(20):
        unopt, opt = backend.oatest_configs(np.random.default_rng(seed), ["FoldBatchnormToConv2D", "FuseTIR"],
                                            list(backend.default_pair()))
        seq = opt.options["passes"]
        assert unopt.name == "tvm-unopt" and not violations(seq)
        assert {"FoldBatchnormToConv2D", *OPTIMIZE} <= set(seq)


def test_ort_reproducer_writes_a_minimal_optimizer_set_as_the_few_it_keeps():
    """A configuration minimized to a few ORT transformers reads `all_but([...])` in repro.py, and the
    code gives back exactly the options the campaign compiled with."""
    from dlcfuzz.backends.onnxruntime.optimizers import ort_optimizers
    from dlcfuzz.backends.onnxruntime.reproducer import configs_source

    minimal = Config("ort-all", {"opt_level": "all",
                                 "disabled_optimizers": [n for n in ort_optimizers() if n not in ("ConstantFolding",)]})
    few = Config("ort-some", {"opt_level": "all", "disabled_optimizers": ["ConstantFolding"]})
    code, defs = configs_source([Config("ort-disable", {"opt_level": "disable"}), minimal, few])
    assert "all_but(['ConstantFolding'])" in code
    space: dict = {}
    exec(defs + "CONFIGS = " + code, space)
    assert space["CONFIGS"] == {"ort-disable": {"opt_level": "disable"}, "ort-all": minimal.options,
                                "ort-some": few.options}


def test_capability_cache_is_per_probed_configuration(tmp_path, monkeypatch):
    """A probe of TVM's ONNX importer (which takes ORT's contrib operators) must not stand for its direct
    Relax lowering (which cannot): a campaign that probed tvm-onnx-opt once made later hirgen campaigns
    generate contrib operators for Relax, each test an internal error (LoweringGap)."""
    from dlcfuzz.strategies.probe import cache_path, load_or_probe

    monkeypatch.setenv("DLCFUZZ_CACHE", str(tmp_path))
    onnx_door, direct = cache_path("tvm", "0.27", ["tvm-onnx-opt"]), cache_path("tvm", "0.27", ["tvm-unopt"])
    assert onnx_door != direct and direct.parent == tmp_path / "capabilities"
    assert cache_path("tvm", "0.27", ["a", "b"]) == cache_path("tvm", "0.27", ["b", "a"])
    # a door's probe (only the pairs the baseline takes) never stands for a whole probe of that configuration
    assert cache_path("tvm", "0.27", ["tvm-onnx-opt"], among="tvm-unopt") not in (onnx_door, direct)
    onnx_door.parent.mkdir(parents=True)
    onnx_door.write_text('[{"op": "ms_fused_conv", "dtype": "float32", "ok": true, "reason": ""}]')

    class Config:
        name = "tvm-onnx-opt"

    class Backend:
        name = "tvm"

        def version(self) -> str:
            return "0.27"

        def known_form_gaps(self, op: str) -> tuple:
            return ()

        def probe_identity(self, config) -> tuple[str, str]:
            return self.name, self.version()

    assert load_or_probe(None, Backend(), [Config()]) == {("ms_fused_conv", "float32"): (True, "")}  # its own cache


def test_a_planted_fault_probes_its_baseline_as_onnxruntime(tmp_path, monkeypatch):
    """A planted fault fires only in ort-all: its ort-disable probe is onnxruntime's and shares its cache
    (the suite's 20 planted variants each probed ORT again, ~10 s apiece); its ort-all probe is its own."""
    pytest.importorskip("onnxruntime")
    from dlcfuzz.strategies.probe import cache_path, forms_fingerprint, load_or_probe

    monkeypatch.setenv("DLCFUZZ_CACHE", str(tmp_path))
    ort, planted = get_backend("onnxruntime"), get_backend("planted:wrong@add")
    base, optimized = planted.configs()["ort-disable"], planted.configs()["ort-all"]
    assert planted.probe_identity(base) == ort.probe_identity(base) == ("onnxruntime", ort.version())
    assert planted.probe_identity(optimized) == (planted.name, planted.version())
    shared = cache_path("onnxruntime", ort.version(), ["ort-disable"], forms=forms_fingerprint(ort))
    shared.parent.mkdir(parents=True)
    shared.write_text('[{"op": "add", "dtype": "float32", "ok": false, "reason": "as cached"}]')
    assert load_or_probe(None, planted, [base]) == {("add", "float32"): (False, "as cached")}  # no probe ran


def test_ort_deliberate_refusals_of_empty_inputs_are_expected_errors():
    """ORT refuses some empty tensors on purpose, in so many words: findings of the issue-18 campaign
    that were no bugs. Any other failure of the same kernels stays unexpected."""
    pytest.importorskip("onnxruntime")
    backend = get_backend("onnxruntime")
    for message in ("Invalid input shape. Only N can be zero. Got:{1,0,4}",
                    "Input spatial dimensions must be non-empty for sampling. Dimension 2 has size 0",
                    "DFT input signal dimension must be greater than zero when the output is non-empty.",
                    "deform_conv_attributes.h:90 DeformConvValidateAndComputeCommonDims Invalid deform conv dimensions.",
                    "Size of X.shape[axis:] must be at least 1, got 0"):
        assert backend.expected_error("Fail: [ONNXRuntimeError] : 1 : FAIL : " + message) == "unsupported", message
    assert backend.expected_error("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while "
                                  "running GridSample node. Status Message: bad index") is None


def test_u8s8_saturation_is_measured_and_left_out_where_onnxruntime_saturates():
    """onnxruntime's x64 U8S8 GEMM saturates 16-bit pair sums on CPUs without VNNI (documented): there,
    random full-range MatMulInteger results differ from exact ones on most graphs, and campaigns leave the
    combination out; elsewhere they agree and nothing is left out. The probe answers for this machine."""
    pytest.importorskip("onnxruntime")
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [5, 8]),
                                            helper.make_tensor_value_info("b", TensorProto.INT8, [8, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                              initializer=[helper.make_tensor("az", TensorProto.UINT8, [], [113]),
                                           helper.make_tensor("bz", TensorProto.INT8, [], [20])])
    sess = ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
                                .SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    differ = 0
    for _ in range(20):
        a = rng.integers(0, 256, (5, 8)).astype(np.uint8)
        b = rng.integers(-128, 128, (8, 3)).astype(np.int8)
        exact = (a.astype(np.int64) - 113) @ (b.astype(np.int64) - 20)
        differ += int(not np.array_equal(sess.run(None, {"a": a, "b": b})[0], exact))
    backend = get_backend("onnxruntime")
    assert differ in (0, 20) or differ >= 15, differ  # a CPU property: (nearly) always or never
    assert backend.u8s8_saturates == (differ > 0)
    assert ("uint8" in backend.known_gaps("matmul_integer")) == (differ > 0)
    assert ("int8" in backend.known_gaps("conv_integer")) == (differ > 0)
    assert "int8" not in backend.known_gaps("matmul_integer")  # signed x signed is exact everywhere


def test_an_output_that_is_not_a_tensor_is_the_configurations_error_not_ours(tmp_path: Path) -> None:
    """Regression (30-minute auto campaign on onnxruntime 1.20.1): ORT_ENABLE_ALL returned None for the
    output of an empty constant-folded Div; the worker's reply then failed to serialize (an object array)
    and the test became an internal error. Now that configuration's observation is an error, judged as an
    unexpected error of that configuration alone (planted: output 0 comes back as None), and the correct
    compiler stays quiet on the same graph."""
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import TestCase, observations_to_bytes
    from dlcfuzz.oracle.verdict import judge

    t = TensorType("float32", (3,))
    g = Graph(inputs=[Value("a", t), Value("b", t)], nodes=[Node("add", ["a", "b"], [Value("y", t)])], outputs=["y"])
    inputs = {"a": np.arange(3, dtype=np.float32), "b": np.ones(3, np.float32)}
    for name, want in (("planted:none@add", [("bug", "unexpected-error")]), ("onnxruntime", [("pass", "pass")])):
        backend = get_backend(name)
        tc = TestCase(g, inputs, list(backend.default_pair()), seed=0, compiler=name)
        obs = run_configs(backend, tc)
        observations_to_bytes(obs, backend.version())  # serializable whatever the compiler returned
        verdicts = judge(name, backend.expected_error, reference_of(tc).outputs, obs, False)
        assert [(v.kind, v.category) for v in verdicts] == want, [(v.kind, v.category, v.detail) for v in verdicts]
        if name.startswith("planted"):
            assert verdicts[0].configs == ["ort-all"] and "NonTensorOutput: output 0 is [None]" in verdicts[0].detail
            # its reproducer sees the None too (it compared values and printed "not reproduced")
            v = verdicts[0]
            script = backend.reproducer(g, inputs, None, [c for c in tc.configs if c.name in v.configs],
                                        v.category, "planted none", v.detail)
            path = tmp_path / "repro.py"
            path.write_text(script)
            r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
            assert r.returncode == 1 and "raised NonTensorOutput: output 0 is [None]" in r.stdout, r.stdout + r.stderr
