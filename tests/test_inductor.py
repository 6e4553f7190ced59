"""The TorchInductor backend on the real torch 2.13: knob table, planted faults found by the oracle
(and a correct compile quiet on the same graphs), stage attribution, knob-set minimization,
compiler coverage, and the standalone reproducer. Compiles are few and shared (a cold Inductor
compile takes ~15 s, later ones ~1 s)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the inductor backend needs torch (pip install 'dlcfuzz[inductor]')")

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.base import Config  # noqa: E402
from dlcfuzz.backends.inductor.knobs import INDUCTOR_KNOBS, MODES, UNSAFE_MATH, sample_knobs  # noqa: E402
from dlcfuzz.exec.worker import run_configs  # noqa: E402
from dlcfuzz.gen.inputs import sample_inputs  # noqa: E402
from dlcfuzz.gen.random import generate  # noqa: E402
from dlcfuzz.gen.single import single_op_graph  # noqa: E402
from dlcfuzz.ir.graph import Graph, Node, Value  # noqa: E402
from dlcfuzz.ir.types import TensorType  # noqa: E402
from dlcfuzz.ops import check_graph, get_op  # noqa: E402
from dlcfuzz.oracle.policy import reference_of  # noqa: E402
from dlcfuzz.oracle.testcase import TestCase  # noqa: E402
from dlcfuzz.oracle.verdict import judge  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return get_backend("inductor")


def _relu_graphs():
    """Graphs where relu runs on float data: alone, and behind an add (fused into one kernel)."""
    rng = np.random.default_rng(3)
    alone = single_op_graph(get_op("relu"), rng, TensorType("float32", (4, 6)))
    chain = generate(np.random.default_rng(11), 3, ops=[get_op("add"), get_op("relu")], dtypes=["float32"])
    assert "relu" in chain.ops_used()
    return [alone, chain]


@pytest.fixture(scope="module")
def judged(backend):
    """(graph, configuration name) -> verdicts of eager vs that configuration, for the relu graphs."""
    c = backend.configs()
    out = {}
    for i, g in enumerate(_relu_graphs()):
        x = sample_inputs(g, np.random.default_rng(i))
        x = {k: np.where(v == 0, 1, v).astype(v.dtype) for k, v in x.items()}  # relu(x)+1 differs everywhere
        for name in ("inductor", "inductor-planted-accuracy", "inductor-planted-compile-error",
                     "inductor-planted-runtime-error"):
            tc = TestCase(g, x, [c["eager"], c[name]], seed=0)
            ref = reference_of(tc)
            obs = run_configs(backend, tc)
            out[(i, name)] = (obs, judge("inductor", backend.expected_error, ref.outputs, obs, ref.unstable), tc, ref)
    return out


def test_knob_table_names_real_options_of_the_installed_torch():
    cfg = torch._inductor.config.get_config_copy()
    assert set(INDUCTOR_KNOBS) <= set(cfg)
    assert all(v != cfg[k] for k, vs in INDUCTOR_KNOBS.items() for v in vs), "a listed value is the default"
    assert set(MODES) <= set(torch._inductor.list_mode_options())
    assert set(UNSAFE_MATH) <= set(cfg)


def test_no_disruptive_tests_because_torch_decides_what_a_broken_graph_means(backend, tmp_path):
    """Our lowering writes torch functions: eager PyTorch's documented type promotion makes a dtype-breaking
    graph valid (float32 * uint8 runs) before Inductor sees it, so an accepted broken graph is never
    Inductor's; the backend declares that no rule binds, `auto` leaves out its disruptive arm and an
    explicit disruptive campaign is refused."""
    from dlcfuzz.cli import main
    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.types import TensorType
    from dlcfuzz.strategies.auto import arms_for

    f32, u8 = TensorType("float32", (6,)), TensorType("uint8", (6,))
    g = Graph(inputs=[Value("a", f32), Value("b", u8)], nodes=[Node("mul", ["a", "b"], [Value("y", f32)])],
              outputs=["y"])
    out = backend.compile(g, backend.configs()["eager"]).run(
        {"a": np.linspace(0, 1, 6, dtype=np.float32), "b": np.arange(6, dtype=np.uint8)})
    assert out[0].shape == (6,)  # no error: documented promotion
    assert backend.disruptive_rules() == ()
    assert "disruptive" not in [a.name for a in arms_for("inductor", backend)]
    assert main(["fuzz", "--compiler", "inductor", "--strategy", "hirgen", "--mode", "disruptive", "--time", "5s",
                 "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()


def test_sampled_knobs_are_deterministic_and_never_unsafe(backend):
    a = [sample_knobs(np.random.default_rng(s)) for s in range(200)]
    b = [sample_knobs(np.random.default_rng(s)) for s in range(200)]
    assert a == b
    keys = {k for kn in a for k in kn}
    assert not keys & set(UNSAFE_MATH)
    assert keys <= set(INDUCTOR_KNOBS) | {"mode", "dynamic"}
    assert len(keys) >= 20  # the table is really explored
    g = _relu_graphs()[0]
    c = backend.configs()
    per = [backend.per_test_configs(np.random.default_rng(s), g, [c["eager"], c["inductor"]]) for s in range(40)]
    assert all(p[0] == c["eager"] for p in per)  # the baseline never changes
    assert 5 < sum(p[1].name == "inductor+knobs" for p in per) < 35


def test_correct_inductor_is_quiet_on_the_fault_graphs(judged):
    for i in range(2):
        obs, verdicts, _, ref = judged[(i, "inductor")]
        assert ref.outputs is not None
        assert [o.status for o in obs] == ["ok", "ok"]
        assert [v.kind for v in verdicts] == ["pass"]


def test_planted_accuracy_fault_is_an_inconsistency(judged):
    for i in range(2):
        _, verdicts, _, _ = judged[(i, "inductor-planted-accuracy")]
        assert [(v.kind, v.category) for v in verdicts] == [("bug", "inconsistency")]
        assert verdicts[0].configs == ["eager", "inductor-planted-accuracy"]


@pytest.mark.parametrize("fault", ["compile-error", "runtime-error"])
def test_planted_error_faults_are_unexpected_errors_attributed_to_the_inductor_stage(judged, fault):
    for i in range(2):
        obs, verdicts, _, _ = judged[(i, f"inductor-planted-{fault}")]
        assert obs[0].status == "ok" and obs[1].status == "error"
        assert "[stage inductor]" in obs[1].error  # aot_eager and decomposition compile it fine
        assert [(v.kind, v.category) for v in verdicts] == [("bug", "unexpected-error")]
        assert "dlcfuzz-inductor-" not in obs[1].error  # no cache path of this machine
        if fault == "compile-error":  # g++'s own first error names it, on the first line (the key's)
            headline = obs[1].error.split("\n")[0]
            assert headline.startswith("StageError: [stage inductor] InductorError: CppCompileError: C++ compile "
                                       "error: ") and len(headline) > 80, headline


def test_cpp_compile_errors_keep_the_errors_and_leave_out_the_warnings():
    """Regression (30-minute campaign): an int16 clip's `max_propagate_nan(int&, short int&)` compile error
    came with 2,662 lines of -Woverflow warnings from ATen's headers (an 8,000-line finding) and a key of
    "C++ compile error" alone, which every C++ compile error shares."""
    from dlcfuzz.backends.inductor import summarize_cpp_compile_error

    warning = ["In file included from /t/vec256.h:19,", "                 from /t/vec.h:8:",
               "/t/vec256_int.h: In instantiation of 'Vectorized<short int> shift_256_16(...)':",
               "/t/vec256_int.h:2244:28:   required from here",
               "/t/vec256_int.h:1746:7: warning: overflow in conversion from 'int' to 'char' [-Woverflow]",
               " 1746 |       0x80,", "      |       ^~~~"]
    error = ["/c/k.cpp: In function 'void kernel(const short int*, short int*)':",
             "/c/k.cpp:623:50: error: no matching function for call to 'max_propagate_nan(int&, short int&)'",
             "  623 |   auto tmp3 = max_propagate_nan(tmp1, tmp2);", "      |               ^",
             "/t/cpp_prefix.h:964:17: note: candidate: 'template<class scalar_t> scalar_t max_propagate_nan()'"]
    message = ("CppCompileError: C++ compile error\n\nCommand:\ng++ /c/k.cpp -o /c/k.so\n\nOutput:\n"
               + "\n".join(warning * 3 + error + warning) + "\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace")
    out = summarize_cpp_compile_error(message)
    assert out.split("\n")[0] == ("CppCompileError: C++ compile error: no matching function for call to "
                                   "'max_propagate_nan(int&, short int&)'")
    assert "warning:" not in out and "required from here" not in out and "0x80" not in out
    assert "\n".join(error) in out and "Output (28 lines of warnings left out):" in out
    assert "g++ /c/k.cpp -o /c/k.so" in out and "TORCHDYNAMO_VERBOSE" in out
    assert summarize_cpp_compile_error("RuntimeError: boom\nOutput:\nx") == "RuntimeError: boom\nOutput:\nx"


def test_expected_errors(backend):
    assert backend.expected_error("StageError: [stage eager] RuntimeError: boom") == "unsupported"
    assert backend.expected_error('RuntimeError: "foo_cpu" not implemented for \'Half\'') == "unsupported"
    assert backend.expected_error("StageError: [stage inductor] InductorError: CppCompileError") is None


def test_minimize_config_keeps_only_the_knobs_that_matter(backend):
    knobs = {"freezing": True, "cpp.simdlen": 1, "epilogue_fusion": False, "mode": "lite", "dynamic": True}
    config = Config("inductor+knobs", {"backend": "inductor", "knobs": knobs})
    calls = []

    def shows(c: Config) -> bool:  # the finding needs freezing and simdlen together
        calls.append(c)
        k = c.options.get("knobs", {})
        return k.get("freezing") is True and k.get("cpp.simdlen") == 1

    small, names = backend.minimize_config(config, shows)
    assert small.options["knobs"] == {"cpp.simdlen": 1, "freezing": True}
    assert names == ["cpp.simdlen=1", "freezing=True"]
    none, left = backend.minimize_config(config, lambda c: True)  # the defaults show it: no knob matters
    assert left == [] and "knobs" not in none.options


def test_reproducer_shows_the_planted_fault_and_not_the_correct_compile(backend, judged, tmp_path):
    _, verdicts, tc, ref = judged[(1, "inductor-planted-accuracy")]
    c = backend.configs()
    scripts = {}
    for name in ("inductor-planted-accuracy", "inductor"):
        src = backend.reproducer(tc.graph, tc.inputs, ref.outputs, [c["eager"], c[name]], "inconsistency",
                                 "relu off by one", verdicts[0].detail)
        assert "import dlcfuzz" not in src and "from dlcfuzz" not in src
        assert "def model(" in src and "torch.compile(" in src
        scripts[name] = tmp_path / f"{name}.py"
        scripts[name].write_text(src)
    # an error finding: the script must see the exception torch raises (it expected dlcfuzz's own
    # StageError wrapper and printed "not reproduced" for a real C++ compile error of a campaign)
    _, err_verdicts, err_tc, _ = judged[(1, "inductor-planted-compile-error")]
    src = backend.reproducer(err_tc.graph, err_tc.inputs, None, [c["inductor-planted-compile-error"]],
                             "unexpected-error", "relu does not compile", err_verdicts[0].detail)
    assert "ERROR_TYPE = 'InductorError'" in src
    scripts["inductor-planted-compile-error"] = tmp_path / "compile-error.py"
    scripts["inductor-planted-compile-error"].write_text(src)
    # all in one interpreter (one cold torch start): exit codes printed as "name=code"
    driver = (
        "import runpy, sys\n"
        f"for name, path in {[(k, str(v)) for k, v in scripts.items()]!r}:\n"
        "    ns = runpy.run_path(path, run_name='repro')\n"
        "    print(f'{name}={ns[\"main\"]()}', flush=True)\n"
    )
    r = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "inductor-planted-accuracy=1" in r.stdout and "BUG REPRODUCED" in r.stdout
    assert "inductor-planted-compile-error=1" in r.stdout, r.stdout[-3000:]
    assert "expected:" in r.stdout and "actual:" in r.stdout
    assert "\ninductor=0" in r.stdout, r.stdout


def test_coverage_items_tell_graphs_apart_and_repeat_for_the_same_graph(backend):
    import warnings

    g1, g2 = _relu_graphs()  # relu alone; add and relu fused (cheap: each traced compile runs g++ in full)
    c = backend.configs()["inductor"]

    def items(g):
        backend.start_coverage()
        try:
            backend.compile(g, c)
        finally:
            cov = backend.stop_coverage()
        return set(cov)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items(g1)  # a process's first compile fills process-wide caches (functools.cache'd helpers)
        a1, a2, b1 = items(g1), items(g1), items(g2)
    assert len(a1) > 1000 and all(":" in i and "->" in i for i in a1)
    assert not any(i.startswith("/") for i in a1)  # relative to the torch package
    assert {i.split("/")[0] for i in a1 | b1} <= {"_inductor", "_dynamo", "fx"}
    assert a1 == a2
    assert a1 != b1
    assert backend._coverage.tracer == "CTracer"


def test_sub_functions_compile_and_agree_with_the_reference(backend):
    """Dynamo inlines the sub-functions' calls: their module must resolve by name (a regression:
    'No module named dlcfuzz_torch_program')."""
    from dlcfuzz.gen.functions import outline
    from dlcfuzz.oracle.numeric import compare

    rng = np.random.default_rng(21)
    for _ in range(50):
        g = outline(generate(rng, 6, dtypes=["float32"]), rng)
        tc = TestCase(g, sample_inputs(g, rng), [], seed=0)
        ref = reference_of(tc)
        if g.functions and ref.outputs is not None:
            break
    assert g.functions and ref.outputs is not None
    got = backend.compile(g, backend.configs()["inductor"]).run(tc.inputs)
    assert not [m for m in compare(got, ref.outputs) if m.index not in ref.unstable]


@pytest.mark.slow
def test_compiler_coverage_feedback_keeps_graphs_and_grows_from_them(tmp_path):
    """hirgen with Inductor's own coverage as feedback: the worker's arcs reach the store; later tests
    grow from a prefix of an earlier test that reached new compiler code (LAG tests before at least)
    and keep their blob (their parent is not rebuilt on replay); `--feedback off` collects nothing."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options
    from dlcfuzz.engine.store import Store
    from dlcfuzz.gen.coverage import is_compiler_item
    from dlcfuzz.strategies.hirgen import LAG

    def campaign(out, tests, feedback):
        Campaign(campaign_options(compiler="inductor", strategy="hirgen", seconds=900, jobs=1, seed=2, out=out,
                                  quiet=True, max_tests=tests, ops=4, feedback=feedback,
                                  values="small", sizes="small")).run()  # the graph stream this seed was chosen on
        return Store(out / "store.sqlite", create=False)

    # 14 tests: with this seed tests 8, 9, 11 and 13 grow (measured; 18 added only 15), one more than needed
    store = campaign(tmp_path / "on", 14, "on")
    compiler = [i for i in store.coverage() if is_compiler_item(i)]
    assert len(compiler) > 1000 and all(i.startswith(("_inductor/", "_dynamo/", "fx/")) for i in compiler)
    grown = [(seq, TestCase.from_bytes(blob)) for seq, blob in store.blobs_from(0)]
    grown = [(seq, tc) for seq, tc in grown if "grown_from" in tc.meta]
    assert len(grown) >= 3  # half of the tests after the first LAG grow
    compared = 0
    for seq, tc in grown:
        parent_id, k = tc.meta["grown_from"]["test"], tc.meta["grown_from"]["nodes"]
        assert parent_id - 1 <= seq - LAG
        parent = TestCase.from_bytes(store.test_blob(parent_id)).graph
        if not tc.graph.functions:  # (an outlined child's main function is other nodes)
            assert [n.op for n in tc.graph.nodes[:k]] == [n.op for n in parent.nodes[:k]]
            compared += 1
    assert compared
    off = campaign(tmp_path / "off", 2, "off")
    assert not [i for i in off.coverage() if is_compiler_item(i)]


def test_registered_sign_int16_compile_error_is_found_and_known(backend):
    """The register's Inductor entry (a 30-minute campaign's finding, torch 2.13.0): int16 sign then clip
    fails to compile at Inductor's defaults; eager runs it. The finding is an unexpected error and the
    register names it; int32 compiles."""
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register
    from dlcfuzz.ir.graph import Graph, Node, Value

    c = backend.configs()
    found = {}
    for dtype in ("int16", "int32"):
        t = TensorType(dtype, (3,))
        g = Graph(inputs=[Value("x", t)], outputs=["z"], nodes=[
            Node("sign", ["x"], [Value("y", t)]), Node("clip", ["y"], [Value("z", t)], attrs={"min": -2, "max": None})])
        tc = TestCase(g, {"x": np.array([-2, -1, 4], dtype=dtype)}, [c["eager"], c["inductor"]], seed=0)
        ref = reference_of(tc)
        found[dtype] = judge("inductor", backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)
    assert [v.category for v in found["int32"]] == ["pass"], found["int32"]
    (v,) = found["int16"]
    assert (v.kind, v.category, v.configs) == ("bug", "unexpected-error", ["inductor"]), v
    row = {"id": 1, "compiler": "inductor", "category": v.category, "configs": '["inductor"]', "key": v.key,
           "detail": v.detail}
    known = Register(use_env=False).match(facts_of(row, graph=(frozenset({"sign", "clip"}), frozenset({"int16"}))),
                                          v.detail)
    assert known is not None and known.id == "inductor-sign-int16-max-compile-error"


def test_registered_uint8_min_of_sixteen_elements_is_found_and_known(backend):
    """The register's uint8 min entry (pytorch/pytorch#191499): a min over both axes of a uint8 [4, 5] tensor
    gives 1 under Inductor where eager and the reference give 16; one axis (5 elements) is right. The finding
    is Inductor's inconsistency with eager and the reference, and the register names it."""
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register
    from dlcfuzz.ir.graph import Graph, Node, Value

    c = backend.configs()
    x = np.array([[16, 200, 255, 17, 16], [30, 40, 50, 60, 70], [16, 99, 98, 97, 96], [250, 251, 16, 18, 19]], np.uint8)
    found = {}
    for axes, shape in (([0, 1], ()), ([1], (4,))):
        g = Graph(inputs=[Value("x", TensorType("uint8", (4, 5)))], outputs=["y"], nodes=[
            Node("reduce_min", ["x"], [Value("y", TensorType("uint8", shape))],
                 attrs={"axes": axes, "keepdims": 0, "noop_with_empty_axes": 0})])
        tc = TestCase(g, {"x": x}, [c["eager"], c["inductor"]], seed=0)
        ref = reference_of(tc)
        found[len(axes)] = judge("inductor", backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)
    assert [v.category for v in found[1]] == ["pass"], found[1]
    (v,) = found[2]
    assert (v.kind, v.category, v.configs) == ("bug", "inconsistency", ["eager", "inductor"]), v
    row = {"id": 1, "compiler": "inductor", "category": v.category, "configs": '["eager", "inductor"]', "key": v.key,
           "detail": v.detail}
    known = Register(use_env=False).match(facts_of(row, graph=(frozenset({"reduce_min"}), frozenset({"uint8"}))),
                                          v.detail)
    assert known is not None and known.id == "inductor-uint8-min-reduction-16-elements"


def test_instance_norm_of_an_empty_batch_is_judged_not_a_finding(backend):
    """F.instance_norm raises IndexError on an empty batch, eagerly too (torch 2.13.0): the lowering takes the
    formula there, so eager and Inductor both give the empty result the reference gives (the edge-value
    false-positive run had reported it twice)."""
    from dlcfuzz.ir.graph import Graph, Node, Value

    c = backend.configs()
    t, s = TensorType("float32", (0, 1, 1, 4)), TensorType("float32", (1,))
    g = Graph(inputs=[Value("x", t), Value("scale", s), Value("bias", s)], outputs=["y"],
              nodes=[Node("instance_norm", ["x", "scale", "bias"], [Value("y", t)], attrs={"epsilon": 1e-5})])
    tc = TestCase(g, {"x": np.ones((0, 1, 1, 4), np.float32), "scale": np.ones(1, np.float32),
                      "bias": np.zeros(1, np.float32)}, [c["eager"], c["inductor"]], seed=0)
    ref = reference_of(tc)
    verdicts = judge("inductor", backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)
    assert [v.category for v in verdicts] == ["pass"], verdicts


def test_registered_concat_linear_of_2d_biases_fails_to_compile_and_is_known():
    """inductor-concat-linear-2d-bias-compile-error, with torch alone: three addmm of one input with 2-D bias
    parameters, frozen with concat-linear on, fail to compile (addmm_fuse_pattern_second concatenates the biases
    along their first axis); 1-D biases compile and agree with eager. The register names the error."""
    import torch
    import torch._inductor.config as inductor_config

    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register

    class ThreeAddmm(torch.nn.Module):
        def __init__(self, bias_shape: tuple[int, ...]) -> None:
            super().__init__()
            g = torch.Generator().manual_seed(0)
            self.w = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(10, 10, generator=g), requires_grad=False)
                                             for _ in range(3)])
            self.b = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(*bias_shape, generator=g),
                                                                requires_grad=False) for _ in range(3)])

        def forward(self, x):
            return [torch.addmm(b, x, w) for b, w in zip(self.b, self.w)]

    x = torch.randn(10, 10, generator=torch.Generator().manual_seed(1))
    knobs = {"freezing": True, "cpp.enable_concat_linear": True, "fallback_random": True}
    torch._dynamo.reset()
    one_d = ThreeAddmm((10,)).eval()
    with torch.no_grad(), inductor_config.patch(knobs):
        for got, want in zip(torch.compile(one_d)(x), one_d(x)):
            torch.testing.assert_close(got, want)
    torch._dynamo.reset()
    two_d = ThreeAddmm((10, 10)).eval()
    with torch.no_grad(), inductor_config.patch(knobs), pytest.raises(Exception) as failed:
        torch.compile(two_d)(x)
    two_d(x)  # eager runs it
    detail = f"{type(failed.value).__name__}: {failed.value}"
    row = {"id": 1, "compiler": "inductor", "category": "unexpected-error", "configs": '["eager", "inductor"]',
           "key": "error|inductor|inductor|BackendCompilerFailed", "detail": detail}
    known = Register(use_env=False).match(facts_of(row, graph=(frozenset(), frozenset({"float32"}))), detail)
    assert known is not None and known.id == "inductor-concat-linear-2d-bias-compile-error", detail[:300]


def _inductor_verdict_and_row(program, seed: int):
    """The one verdict of `program` (inputs from `seed`) compiled by Inductor against eager, and the finding row a
    campaign would store for it (the register's facts read its key and detail)."""
    from dlcfuzz.backends.inductor.programs import run_program
    from dlcfuzz.oracle.categories import with_option
    from dlcfuzz.strategies.programs import ProgramTest, judge_program

    inductor = ("inductor", {"backend": "inductor"})  # run_program compiles with fallback_random=True
    meta, arrays = run_program(program, seed, [inductor])
    verdicts, _ = judge_program("inductor", ProgramTest(program, seed, [inductor]), meta, arrays)
    (v,) = verdicts
    return v, {"id": 1, "compiler": "inductor", "category": v.category, "configs": '["eager", "inductor"]',
               "key": with_option(v.key, "ops", ",".join(program.ops())), "detail": v.detail}


def test_registered_write_to_a_0d_float64_input_is_dropped_and_known():
    """inductor-0d-float64-input-write-dropped, with torch alone: `x.add_(1.0); return x * 2` of a 0-d float64 x,
    compiled (Inductor, and aot_eager: before Inductor), returns the old x doubled and leaves x unwritten; Dynamo alone
    (backend "eager"), a float32 0-d x and a float64 [1] x are right. A programs test of the write, judged, is an
    inconsistency at the input after the call, and the register names it."""
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register
    from dlcfuzz.oracle import categories as C
    from dlcfuzz.oracle.categories import with_option
    from dlcfuzz.programs.core import Input, Program, Stmt

    def add_then_double(x):
        x.add_(1.0)
        return x * 2

    def run(backend: str | None, dtype: torch.dtype, shape: tuple[int, ...]) -> tuple[list[float], list[float]]:
        x = torch.full(shape, -0.5, dtype=dtype)
        fn = add_then_double if backend is None else torch.compile(add_then_double, backend=backend, fullgraph=True)
        torch._dynamo.reset()
        return fn(x).flatten().tolist(), x.flatten().tolist()

    assert run(None, torch.float64, ()) == ([1.0], [0.5])  # eager: x written, then doubled
    for backend in ("inductor", "aot_eager"):
        assert run(backend, torch.float64, ()) == ([-1.0], [-0.5]), backend  # the write dropped
    assert run("eager", torch.float64, ()) == ([1.0], [0.5])
    assert run("inductor", torch.float32, ()) == ([1.0], [0.5])
    assert run("inductor", torch.float64, (1,)) == ([1.0], [0.5])

    program = Program([Input("x0", "float64", ())], [Stmt("add_", ["x0", 1.0])], [])
    v, row = _inductor_verdict_and_row(program, 0)
    assert (v.kind, v.category) == ("bug", C.INCONSISTENCY) and "input x0 after the call" in v.detail, v
    known = Register(use_env=False).match(facts_of(row), v.detail)
    assert known is not None and known.id == "inductor-0d-float64-input-write-dropped", v.detail
    # a near miss: the same difference after another in-place op (the planted relu fault's) is no match
    relu_row = {**row, "key": with_option(v.key, "ops", "relu_")}
    assert Register(use_env=False).match(facts_of(relu_row), v.detail) is None


def test_registered_amax_of_a_recomputed_float16_value_has_a_nan_gradient_and_is_known():
    """inductor-amax-half-backward-remat-nan, with torch alone: the gradient of `amax(-1.5 * x, dim=1)` of a float16
    x is NaN compiled (the backward recomputes `-1.5 * x` unrounded, so amax's equality mask finds no maximum), right
    eagerly, with aot_eager and with `emulate_precision_casts`. The campaign's program (2 training steps), judged, is
    an inconsistency of x0 after the steps, and the register names it."""
    from torch._inductor import config as inductor_config

    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register
    from dlcfuzz.oracle import categories as C
    from dlcfuzz.programs.core import Program

    def amax_of_scaled(x):
        return torch.amax(-1.5 * x, dim=1)

    def gradient(backend: str | None, **options: bool) -> list[float]:
        torch._dynamo.reset()
        x = torch.tensor([[-2.75390625, 1.0]], dtype=torch.float16, requires_grad=True)
        fn = amax_of_scaled if backend is None else torch.compile(amax_of_scaled, backend=backend, fullgraph=True)
        with inductor_config.patch(options):
            fn(x).sum().backward()
        return x.grad.flatten().tolist()

    assert gradient(None) == [-1.5, 0.0]  # -1.5 * x rounds to 4.1328 in float16, the maximum
    assert all(np.isnan(gradient("inductor")))
    assert all(np.isnan(gradient("inductor", pattern_matcher=False)))
    assert gradient("aot_eager") == [-1.5, 0.0]
    assert gradient("inductor", emulate_precision_casts=True) == [-1.5, 0.0]

    program = Program.from_json({
        "inputs": [["x0", "float16", [2, 5, 3, 3], "contiguous"]], "outputs": ["v7"], "steps": 2,
        "stmts": [["operator", ["x0", -1.5], {"nonzero": False, "op": "*", "swap": True}, "v0"],
                  ["amax", ["v0"], {"dim": 1, "dtype": None, "keepdim": False}, "v7"]]})
    seed = 786517804  # the campaign's input seed: its first step leaves x0[1, :, 0, 1] as above
    v, row = _inductor_verdict_and_row(program, seed)
    assert (v.kind, v.category) == ("bug", C.INCONSISTENCY) and "x0 after 2 training steps: NaN" in v.detail, v
    known = Register(use_env=False).match(facts_of(row), v.detail)
    assert known is not None and known.id == "inductor-amax-half-backward-remat-nan", v.detail
    # a near miss: an output difference of the same program is no match (the entry is about gradients)
    out_row = {**row, "detail": v.detail.replace("x0 after 2 training steps", "output 0")}
    assert Register(use_env=False).match(facts_of(out_row), out_row["detail"]) is None


def _known_error(detail: str) -> str | None:
    """The register's label of an unexpected-error finding of the programs strategy with `detail`."""
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register

    row = {"id": 1, "compiler": "inductor", "category": "unexpected-error", "configs": '["eager", "inductor"]',
           "key": "error|inductor|inductor|[stage inductor] Error", "detail": detail}
    known = Register(use_env=False).match(facts_of(row, graph=(frozenset(), frozenset())), detail)
    return known.id if known is not None else None


def test_registered_cond_with_an_unbacked_width_names_an_undefined_symbol_and_is_known():
    """inductor-cond-unbacked-width-nameerror, with torch alone: the campaign's reduced program (a cond past an
    `.item()` graph break, dynamic shapes) runs eagerly and with aot_eager, and Inductor's code raises NameError."""
    def program(x1, x2):
        v0 = torch.index_put(x1, (torch.tensor([0]),), x1.new_full((), 5), accumulate=False)
        v1 = torch.floor_divide(x2, 1)
        v2 = torch.minimum(x2, v1)
        v3 = (v1 * x1.amin().item())
        v4 = v2[0:1:1]
        v5 = torch.bitwise_left_shift(v2.clamp(min=0), v3 & 7)

        def v10_true(v5, v3, v0, v4, v1):
            return (torch.topk(v0, 1, dim=-2, largest=True).values,)

        def v10_false(v5, v3, v0, v4, v1):
            return (torch.bitwise_or(v4, v1),)

        return torch.cond((v3 > 0).sum() > 0, v10_true, v10_false, (v5, v3, v0, v4.clone(), v1))

    x1, x2 = torch.tensor([[4, -6, -1, -5]]), torch.tensor([[3, -5, -4, 6]])
    (want,) = program(x1, x2)
    assert want.tolist() == [[5, 5, 5, 5]]
    torch._dynamo.reset()
    (got,) = torch.compile(program, backend="aot_eager", dynamic=True)(x1, x2)
    assert torch.equal(got, want)
    torch._dynamo.reset()
    with pytest.raises(NameError) as failed:
        torch.compile(program, backend="inductor", dynamic=True)(x1, x2)
    assert _known_error(f"[stage inductor] NameError: {failed.value}") == "inductor-cond-unbacked-width-nameerror"


def test_registered_cond_operand_that_is_also_concatenated_fails_a_stride_check_and_is_known():
    """inductor-cond-operand-layout-stride-assert, with torch alone: y, a cond operand and a cat input, is written
    into the cat's buffer, and the branch subgraph's input check refuses its strides; aot_eager is right."""
    def cond_and_cat(x, p):
        y = x * 2
        (c,) = torch.cond(p.sum() > 0, lambda y: (y.sqrt(),), lambda y: (-y,), (y,))
        return c, torch.cat((y, x), dim=1)

    x, p = torch.arange(45.0).reshape(3, 5, 3), torch.tensor([1.0, -1.0, 2.0])
    want = cond_and_cat(x, p)
    torch._dynamo.reset()
    got = torch.compile(cond_and_cat, backend="aot_eager", fullgraph=True)(x, p)
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
    torch._dynamo.reset()
    with pytest.raises(AssertionError) as failed:
        torch.compile(cond_and_cat, backend="inductor", fullgraph=True)(x, p)
    assert "expected size 3==3, stride 30==15 at dim=0" in str(failed.value)
    assert _known_error(f"[stage inductor] AssertionError: {failed.value}") == "inductor-cond-operand-layout-stride-assert"


def test_registered_cond_operand_from_a_conv2d_fails_the_same_stride_check_and_is_known():
    """inductor-cond-operand-layout-stride-assert's second route, with torch alone: Inductor lays a conv2d's output
    out channels-last and hands it to a branch subgraph compiled for eager's contiguous strides; aot_eager is right."""
    import torch.nn.functional as F

    def conv_then_cond(x, w, p):
        y = F.conv2d(x, w)
        return torch.cond(p, lambda y: (-y,), lambda y: (y.sqrt(),), (y,))[0]

    x, w, p = torch.linspace(-1, 1, 72).reshape(3, 3, 4, 2), torch.ones(6, 3, 1, 1), torch.tensor(True)
    want = conv_then_cond(x, w, p)
    assert want.stride() == (48, 8, 2, 1)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(conv_then_cond, backend="aot_eager", fullgraph=True)(x, w, p), want)
    torch._dynamo.reset()
    with pytest.raises(AssertionError) as failed:
        torch.compile(conv_then_cond, backend="inductor", fullgraph=True)(x, w, p)
    assert "expected size 6==6, stride 1==8 at dim=1" in str(failed.value)
    assert _known_error(f"[stage inductor] AssertionError: {failed.value}") == "inductor-cond-operand-layout-stride-assert"


def test_registered_sfdp_18_rewrite_changes_strides_a_later_cond_refuses_and_is_known():
    """inductor-sfdp-18-strides-cond-refused, with torch alone: `_sfdp_pattern_18`'s body compiled returns SDPA's
    layout (the rewrite's: not with pattern_matcher=False), eager a contiguous result; a cond whose branches keep
    and drop that layout is refused where eager's agree."""
    from torch._inductor import config as inductor_config

    def attention(q, k, v, mask):  # torch 2.13's fuse_attention._sfdp_pattern_18 body, dropout 0
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        w = torch.matmul(q, k.permute(0, 1, 3, 2)).div(torch.full([], 0.66666, dtype=q.dtype))
        w = torch.where(mask, w, torch.full((), torch.finfo(q.dtype).min, dtype=q.dtype))
        return torch.nn.functional.dropout(w.softmax(dim=-1), 0.0).matmul(v)

    q = (torch.arange(512, dtype=torch.float64).reshape(1, 4, 8, 16) % 7) * 0.25
    mask = torch.tensor([True, False, True, True]).reshape(1, 1, 1, 4)
    want = attention(q, q, q, mask)
    assert want.stride() == (512, 64, 16, 1)
    strides = {}
    for name, options in (("inductor", {}), ("no pattern matcher", {"pattern_matcher": False})):
        torch._dynamo.reset()
        with inductor_config.patch(options):
            got = torch.compile(attention, backend="inductor", fullgraph=True)(q, q, q, mask)
        torch.testing.assert_close(got, want)
        strides[name] = got.stride()
    assert strides == {"inductor": (512, 16, 128, 1), "no pattern matcher": (512, 64, 16, 1)}

    def branches(v0):
        return torch.cond((v0 > 0).sum() > 159, lambda v: (torch.relu(v),),
                          lambda v: (torch.masked_fill(v / -1.5, v / -1.5 > 0, 0.25),), (v0,))

    branches(want)  # eager: both branches contiguous
    torch._dynamo.reset()
    relaid = want.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)  # the compiled result's layout
    with pytest.raises(Exception, match="sorted order of strides of the two branches") as failed:
        torch.compile(branches, backend="eager", fullgraph=True)(relaid)
    assert _known_error(f"[stage inductor] {type(failed.value).__name__}: {failed.value}") == \
        "inductor-sfdp-18-strides-cond-refused"


def test_registered_float16_cast_underflow_is_not_rounded_compiled_and_is_known():
    """inductor-half-cast-underflow-not-rounded, with torch alone: `h = x.to(float16); h // h` of a float32 value
    that underflows in float16 is 0 // 0 = nan eagerly and 1 compiled (the cast not rounded in the fused kernel);
    emulate_precision_casts gives eager's. A programs finding of that NaN difference with a cast is named."""
    from torch._inductor import config as inductor_config

    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register

    def self_floor_divide_in_half(x):
        h = x.to(torch.float16)
        return h // h

    x = torch.tensor([1.1374919e-13, 0.5])
    assert np.isnan(self_floor_divide_in_half(x)[0].item()) and self_floor_divide_in_half(x)[1].item() == 1.0
    for options, want in (({}, [1.0, 1.0]), ({"emulate_precision_casts": True}, None)):
        torch._dynamo.reset()
        with inductor_config.patch(options):
            got = torch.compile(self_floor_divide_in_half, fullgraph=True)(x)
        if want is None:
            assert np.isnan(got[0].item()) and got[1].item() == 1.0
        else:
            assert got.tolist() == want
    detail = "inductor+freezing differs from eager at output 0: numbers where eager and the float64 reference have NaN/Inf"
    row = {"id": 1, "compiler": "inductor", "category": "inconsistency", "configs": '["eager", "inductor+freezing"]',
           "key": "inconsistency|inductor|inductor+freezing|nan|output|ops=operator,pattern,permute,to", "detail": detail}
    known = Register(use_env=False).match(facts_of(row), detail)
    assert known is not None and known.id == "inductor-half-cast-underflow-not-rounded"
    no_cast = {**row, "key": row["key"].replace(",to", "")}  # a NaN difference without a cast is not this bug
    assert Register(use_env=False).match(facts_of(no_cast), detail) is None


FINDING_11_PROGRAM = {  # issue 38's programs campaign, finding 11 (cluster 11): its reduced program
    "inputs": [["x0", "float32", [1, 5, 1, 5], "contiguous"]], "outputs": ["v1"],
    "stmts": [["pattern", ["x0", "x0", "x0", "x0", 2.0], {
        "argnames": ["query", "key", "value", "attn_mask", "inv_scale"],
        "bridges": [[[2, 4, 8, 16], [0, 1, 2, 3], "float16", 25]] * 3 + [[[2, 4], [0, 1], "float16", 25], None],
        "cast": None, "kwargs": {}, "search": "torch._inductor.fx_passes.fuse_attention:_sfdp_pattern_15",
        "tuple": False, "variant": "float16 scalar inference"}, "v0"], ["relu", ["v0"], {}, "v1"]]}


def test_registered_sfdp_15_mask_not_binary_is_named_by_its_pattern_statement(tmp_path):
    """inductor-sfdp-15-20-mask-not-binary, with torch alone: torch's own `_sfdp_pattern_15` (its search function,
    taken from the installed torch as a spliced program calls it) with a mask holding 2, 0.5 and 0.25 differs
    compiled from eager (the replacement keeps the positions where the mask is 1, eager those where it is not 0); a
    0/1 mask and `pattern_matcher=False` agree. A programs finding of a spliced `_sfdp_pattern_15` (issue 38's
    finding 11, its reduced program) is named by the register through the statement's search function; the same
    finding of another pattern is not. Regression: no register fact carried a pattern statement's search function,
    so the programs campaign's findings of this bug listed as new."""
    from torch._inductor import config as inductor_config

    from dlcfuzz.backends.inductor.pattern_seeds import inductor_pattern
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register

    attention = inductor_pattern("torch._inductor.fx_passes.fuse_attention:_sfdp_pattern_15")
    q = ((torch.arange(1024, dtype=torch.float32).reshape(2, 4, 8, 16) % 7) - 3) * 0.25
    k, v = q.flip(-1), q.flip(1)

    def differs(mask: torch.Tensor, **options: bool) -> bool:
        want = attention(q, k, v, mask, 2.0)
        torch._dynamo.reset()
        with torch.no_grad(), inductor_config.patch({"fallback_random": True, **options}):
            got = torch.compile(attention, fullgraph=True)(q, k, v, mask, 2.0)
        return not torch.allclose(got, want, atol=1e-5)

    not_binary = torch.tensor([[1.0, 2.0, 0.0, 0.5], [1.0, 1.0, 1.0, 0.25]])
    assert differs(not_binary)
    assert not differs((not_binary != 0).float())
    assert not differs(not_binary, pattern_matcher=False)

    (tmp_path / "program.json").write_text(json.dumps(FINDING_11_PROGRAM))
    detail = "inductor differs from eager at output 0: distance from float64 1 > 2 x eager's 0.000621 + 0.01"
    row = {"id": 11, "compiler": "inductor", "category": "inconsistency", "configs": '["eager", "inductor"]',
           "key": "inconsistency|inductor|inductor|value|output|ops=pattern,relu", "detail": detail}
    facts = facts_of(row, tmp_path)
    assert "search=torch._inductor.fx_passes.fuse_attention:_sfdp_pattern_15," in facts.attrs
    known = Register(use_env=False).match(facts, detail)
    assert known is not None and known.id == "inductor-sfdp-15-20-mask-not-binary"
    # a near miss: the same finding of another pattern (26, a mask added to the scores) is not this bug
    other = json.dumps(FINDING_11_PROGRAM).replace("_sfdp_pattern_15", "_sfdp_pattern_26")
    (tmp_path / "program.json").write_text(other)
    assert Register(use_env=False).match(facts_of(row, tmp_path), detail) is None


FP_RUN_FINDING_3_PROGRAM = {  # issue 38's false-positive run (fp-ind54), finding 3: its reduced program
    "inputs": [["x0", "float32", [5, 1], "contiguous"]], "outputs": ["v0"], "steps": 2,
    "stmts": [["pattern", ["x0", "x0", "x0"], {
        "argnames": ["query", "key", "value"], "bridges": [[[2, 4, 8, 16], [0, 1, 2, 3], "float32", 5]] * 3,
        "cast": None, "kwargs": {"dropout_p": 0.0, "inv_scale": 0.66666},
        "search": "torch._inductor.fx_passes.fuse_attention:_sfdp_pattern_9", "tuple": False,
        "variant": "float32 registered training"}, "v0"]]}


def test_registered_sfdp_7_to_10_on_float32_returns_float32_and_is_named_by_its_pattern_statement(tmp_path):
    """inductor-sfdp-half-cast-dropped, with torch alone: torch's own `_sfdp_pattern_10` (its search function, as
    a spliced program calls it) on float32 q/k/v casts its weights to float16, so eager returns float16; compiled,
    the SDPA replacement returns float32, and with `pattern_matcher=False` float16 again. A programs finding of
    that dtype difference at a spliced `_sfdp_pattern_9` (the false-positive run's finding 3) is named by the
    register; the same difference at another pattern, and a value difference at this one, are not.
    Regression: the entry had no `match`, so the run counted its findings as false positives."""
    from torch._inductor import config as inductor_config

    from dlcfuzz.backends.inductor.pattern_seeds import inductor_pattern
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register

    attention = inductor_pattern("torch._inductor.fx_passes.fuse_attention:_sfdp_pattern_10")
    q = ((torch.arange(1024, dtype=torch.float32).reshape(2, 4, 8, 16) % 7) - 3) * 0.25
    k, v = q.flip(-1), q.flip(1)
    want = attention(q, k, v, 0.66666)
    assert want.dtype == torch.float16
    dtypes = {}
    for name, options in (("inductor", {}), ("no pattern matcher", {"pattern_matcher": False})):
        torch._dynamo.reset()
        with torch.no_grad(), inductor_config.patch({"fallback_random": True, **options}):
            got = torch.compile(attention, fullgraph=True)(q, k, v, 0.66666)
        torch.testing.assert_close(got.to(torch.float16), want, atol=2e-3, rtol=2e-3)  # the values agree
        dtypes[name] = got.dtype
    assert dtypes == {"inductor": torch.float32, "no pattern matcher": torch.float16}

    def known(program: dict, detail: str) -> str | None:
        (tmp_path / "program.json").write_text(json.dumps(program))
        row = {"id": 3, "compiler": "inductor", "category": "inconsistency",
               "configs": '["eager", "inductor+dynamic"]', "detail": detail,
               "key": "inconsistency|inductor|inductor+dynamic|dtype|output|ops=pattern"}
        k = Register(use_env=False).match(facts_of(row, tmp_path), detail)
        return k.id if k is not None else None

    dtype_differs = "inductor+dynamic differs from eager at output 0: dtype float32 != float16"
    assert known(FP_RUN_FINDING_3_PROGRAM, dtype_differs) == "inductor-sfdp-half-cast-dropped"
    other = json.loads(json.dumps(FP_RUN_FINDING_3_PROGRAM).replace("_sfdp_pattern_9", "_sfdp_pattern_5"))
    assert known(other, dtype_differs) is None
    value_differs = "inductor+dynamic differs from eager at output 0: distance from float64 1 > 2 x eager's 0 + 0.01"
    assert known(FP_RUN_FINDING_3_PROGRAM, value_differs) is None


def test_registered_float_floor_division_of_a_quotient_just_below_an_integer_is_one_too_high_and_is_known(tmp_path):
    """inductor-float-floor-divide-rounded-quotient, with torch alone: `a // b` where the exact quotient lies just
    below an integer (39.99..., 9.99...) is that integer compiled (the floor of the rounded quotient) and one less
    eagerly, as with aot_eager, Python and the exact quotient; float32 too, and `torch.div(rounding_mode="floor")`.
    A programs finding of a float floor division's value difference (issue 38's finding 10) is named; one whose
    program divides integers alone, or whose difference is a NaN, is not."""
    import math
    from fractions import Fraction

    from torch._inductor import config as inductor_config

    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.known import Register

    a, b = [0.2825509299547244, 1.0], [0.007063773248868111, 0.1]  # finding 10's operands, and Python's classic
    assert [math.floor(Fraction(x) / Fraction(y)) for x, y in zip(a, b)] == [39, 9] == [x // y for x, y in zip(a, b)]
    for dtype in (torch.float64, torch.float32):
        for divide in (torch.floor_divide, lambda x, y: torch.div(x, y, rounding_mode="floor")):
            x, y = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
            assert divide(x, y).tolist() == [39.0, 9.0]
            torch._dynamo.reset()
            assert torch.compile(divide, backend="aot_eager", fullgraph=True)(x, y).tolist() == [39.0, 9.0]
            torch._dynamo.reset()
            with inductor_config.patch(fallback_random=True):
                assert torch.compile(divide, fullgraph=True)(x, y).tolist() == [40.0, 10.0], (dtype, divide)

    def known(dtype: str, detail: str) -> str | None:
        program = {"inputs": [["x0", dtype, [4], "contiguous"], ["x1", dtype, [4], "contiguous"]], "outputs": ["v0"],
                   "stmts": [["floor_divide", ["x0", "x1"], {"nonzero": False}, "v0"]], "dtypes": {"v0": dtype}}
        (tmp_path / "program.json").write_text(json.dumps(program))
        row = {"id": 10, "compiler": "inductor", "category": "inconsistency", "configs": '["eager", "inductor"]',
               "key": "inconsistency|inductor|inductor|value|output|ops=floor_divide", "detail": detail}
        k = Register(use_env=False).match(facts_of(row, tmp_path), detail)
        return k.id if k is not None else None

    distance = "inductor+fusions differs from eager at output 0: distance from float64 0.0256 > 2 x eager's 0 + 1e-06"
    assert known("float64", distance) == "inductor-float-floor-divide-rounded-quotient"
    assert known("int64", "inductor differs from eager at output 0: flat index 3: 2 vs 1") is None
    assert known("float64", "inductor differs from eager at output 0: "
                            "NaN/Inf where eager and the float64 reference have numbers") is None


def test_registered_write_to_an_input_saved_for_backward_fails_the_compiled_backward_and_is_known():
    """inductor-mutated-input-saved-for-backward, with torch alone: a training step whose compiled function writes
    in place to an input that requires grad fails in `backward()` (the input saved for the backward is bumped by
    the epilogue's `copy_`) where eager gives the gradient; `x.mul_(x * 2)` fails with aot_eager already
    (AOTAutograd, not Inductor's code), the false-positive run's finding 9 (`x.mul_(index_put(x, ...))`, float64)
    with Inductor. Its detail is named by the register; an eager-like version error of another tensor is not."""

    def grad_of(fn, backend: str | None, x0: torch.Tensor) -> torch.Tensor:
        p = x0.clone().requires_grad_()
        x = p.clone()
        if backend is not None:
            torch._dynamo.reset()
            fn = torch.compile(fn, backend=backend, fullgraph=True)
        fn(x)
        (0.5 * (x * x).sum()).backward()
        return p.grad

    def doubled(x):
        x.mul_(x * 2)

    def finding_9(x):  # the run's reduced program (index_put, then mul_ of the input by it)
        x.mul_(torch.index_put(x, (torch.tensor([2, 0]),), x.new_full((), -0.75), accumulate=False))

    small = torch.tensor([[-1.0, 0.5], [2.0, -0.25]])
    assert grad_of(doubled, None, small).tolist() == [[-8.0, 1.0], [64.0, -0.125]]  # 4 x^3
    finding_9_input = torch.arange(9, dtype=torch.float64).reshape(3, 3) / 4 - 1
    grad_of(finding_9, None, finding_9_input)  # eager runs its backward
    failures = []
    for fn, backend, x0 in ((doubled, "aot_eager", small), (finding_9, "inductor", finding_9_input)):
        with pytest.raises(RuntimeError, match="output 0 of torch::autograd::CopyBackwards") as failed:
            with torch._inductor.config.patch(fallback_random=True):
                grad_of(fn, backend, x0)
        failures.append(f"[stage none] RuntimeError: {failed.value}")
    assert "[torch.DoubleTensor [3, 3]]" in failures[1]
    assert [_known_error(f) for f in failures] == ["inductor-mutated-input-saved-for-backward"] * 2
    other = failures[1].replace("torch::autograd::CopyBackwards", "MulBackward0")  # a saved product, not the copy
    assert _known_error(other) is None


def _if_graph(x: TensorType, then: list, other: list, consts: dict) -> Graph:
    """if p then <then> else <else> of x (each branch a list of (op, inputs, attrs, type) on x and `consts`)."""

    def branch(name: str, steps: list) -> Graph:
        nodes, last, out_type = [], "x", None
        for k, (op, ins, attrs, t) in enumerate(steps):
            nodes.append(Node(op, [last if i == "_" else i for i in ins], [Value(f"{name}{k}", t)], attrs,
                              name=f"{name}{k}"))
            last, out_type = f"{name}{k}", t
        return Graph(inputs=[Value("x", x), *[Value(c, TensorType(str(a.dtype), a.shape)) for c, a in consts.items()]],
                     nodes=nodes, outputs=[last], name=f"{name}_branch"), out_type

    (t, out), (e, _) = branch("then", then), branch("else", other)
    return Graph(inputs=[Value("p", TensorType("bool", ())), Value("x", x)], constants=dict(consts),
                 nodes=[Node("if", ["p", "x", *consts], [Value("y", out)], {"then_branch": t, "else_branch": e},
                             name="if")], outputs=["y"])



def test_the_eager_configuration_does_not_depend_on_earlier_conds_in_the_worker(backend):
    """Eager torch.cond compiles torch's one `_cond_op_wrapper` with Dynamo: after a cond of other shapes,
    automatic dynamic shapes traced the next with symbolic sizes, and torch 2.13 refused a grouped conv's
    branch output there (pytorch/pytorch#188151; inductor finding 3 of issue 37's false-positive run, whose
    configuration "eager" raised). The eager configuration keeps each cond's concrete shapes: both judged."""
    from dlcfuzz import reference

    f = TensorType("float32", (3, 6, 3))
    sqrt = _if_graph(f, [("sqrt", ["_"], {}, f)], [("sqrt", ["_"], {}, f), ("neg", ["_"], {}, f)], {})
    x4, y4 = TensorType("float32", (2, 6, 6, 6)), TensorType("float32", (2, 12, 5, 4))
    w = {"w": np.linspace(-1, 1, 72, dtype=np.float32).reshape(12, 1, 2, 3)}
    conv = [("conv2d", ["_", "w"], {"dilations": [1, 1], "group": 6, "pads": [0, 0, 0, 0], "strides": [1, 1]}, y4)]
    conv_if = _if_graph(x4, conv, [*conv, ("neg", ["_"], {}, y4)], w)
    eager = backend.configs()["eager"]
    rng = np.random.default_rng(0)
    for g in (sqrt, conv_if):  # in this order in one worker: the second raised in eager
        feeds = {"p": np.array(True), "x": rng.uniform(0.5, 2, g.inputs[1].type.shape).astype(np.float32)}
        got = backend.compile(g, eager).run(feeds)
        np.testing.assert_allclose(got[0], reference.outputs(g, feeds)[0], rtol=1e-5, atol=1e-5)


def test_conditional_branches_return_contiguous_outputs_that_torch_cond_takes(backend):
    """torch.cond refuses branches whose outputs' strides are ordered differently: Attention's present key and value
    (a permuted layout out of its lowering) returned by one branch and negated by the other made the eager
    configuration raise ("The sorted order of strides of the two branches' output doesn't match", issue 37's
    Inductor run, finding 6, ours). ONNX has no layout: each branch returns contiguous copies, eager runs it."""
    from dlcfuzz import reference

    q, kv = TensorType("float32", (2, 5, 5)), TensorType("float32", (2, 5, 5))
    rng = np.random.default_rng(6)
    consts = {"k": rng.uniform(-2, 2, (2, 5, 5)).astype(np.float32)}
    attrs = {"has_mask": 0, "has_nonpad": 0, "has_past": 0, "is_causal": 1, "kv_num_heads": 5, "left_window_size": -1,
             "present": 1, "q_num_heads": 5, "qk_matmul_output_mode": 0, "qk_output": 0, "right_window_size": -1,
             "scale": None, "softcap": 0.0, "softmax_precision": 0}
    types = get_op("attention").infer([q, q, kv], attrs)

    def branch(name: str, negated: bool) -> Graph:
        outs = [Value(f"a{i}", t) for i, t in enumerate(types)]
        nodes = [Node("attention", ["x", "k", "v"], outs, attrs, name="att")]
        if negated:
            nodes += [Node("neg", [o.name], [Value(f"{o.name}_neg", o.type)], {}, name=f"neg{i}") for i, o in enumerate(outs)]
        return Graph(inputs=[Value("x", q), Value("k", q), Value("v", kv)], nodes=nodes, name=f"{name}_branch",
                     outputs=[f"{o.name}_neg" if negated else o.name for o in outs])

    g = Graph(inputs=[Value("p", TensorType("bool", ())), Value("x", q), Value("v", kv)], constants=dict(consts),
              nodes=[Node("if", ["p", "x", "k", "v"], [Value(f"y{i}", t) for i, t in enumerate(types)],
                          {"then_branch": branch("then", False), "else_branch": branch("else", True)}, name="if")],
              outputs=[f"y{i}" for i in range(len(types))])
    check_graph(g)
    feeds = {"p": np.array(True), "x": rng.uniform(-2, 2, (2, 5, 5)).astype(np.float32),
             "v": rng.uniform(-2, 2, (2, 5, 5)).astype(np.float32)}
    got = backend.compile(g, backend.configs()["eager"]).run(feeds)
    for mine, ref in zip(got, reference.outputs(g, feeds)):
        np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-5)
