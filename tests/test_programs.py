"""The `programs` strategy on the real torch: generated PyTorch programs are valid in eager, the guards
stop undefined behaviour before anything compiles, the oracle's float64 rule, a planted Inductor fault
found by a short campaign (reduced to a few statements, its reproducer firing standalone) while the
correct Inductor stays quiet on the same tests, a wrong mutation of an input caught, and training steps
(a planted wrong gradient caught, the correct Inductor quiet) and programs that break Dynamo's graph on
purpose (a branch on a value, `.item()`: compiled without fullgraph, judged the same). Compiles are few:
one campaign pair and four single programs."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest

from program_harness import assert_reproducer_fires_standalone, planted_finding_folder

torch = pytest.importorskip("torch", reason="the programs strategy's dialect here is torch's (Inductor)")

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.inductor.programs import (  # noqa: E402
    DIALECT,
    GRADIENT_FAULT,
    OPS,
    UNDEFINED,
    checked_run,
    input_specs,
    make_inputs,
    run_program,
    source_function,
)
from dlcfuzz.oracle import categories as C  # noqa: E402
from dlcfuzz.programs.core import (  # noqa: E402
    Body,
    Input,
    Program,
    Stmt,
    closure,
    emit,
    generate,
    reduce_program,
    restrict,
    trainable,
    value_dtypes,
    walk,
    with_training,
)
from dlcfuzz.strategies.programs import ProgramTest, compare_to_eager, judge_program  # noqa: E402

PLANTED = ("inductor-planted-accuracy", {"backend": "inductor", "fault": "accuracy"})
CORRECT = ("inductor", {"backend": "inductor"})
EAGER = ("eager", {"backend": "eager"})
DYNAMIC = ("inductor+dynamic", {"backend": "inductor", "knobs": {"dynamic": True}})


def test_generated_programs_are_valid_in_eager():
    """200 programs (no compile): at least 95% run eagerly without an error; the guards stop at most 15%
    (undefined behaviour, before anything compiles); the op table's breadth shows in what was generated."""
    outcome, ops = collections.Counter(), collections.Counter()
    for seed in range(200):
        p = generate(DIALECT, np.random.default_rng(seed), 8)
        assert Program.from_json(p.to_json()) == p  # the store's form round-trips
        ops.update(s.op for s in p.stmts)
        inputs = make_inputs(input_specs(p), seed)
        try:
            ub = checked_run(p, inputs)
            if ub is None:
                source_function(p)(*make_inputs(input_specs(p), seed).values())
            outcome["undefined" if ub else "ok"] += 1
        except Exception:  # noqa: BLE001 - what the assertion counts
            outcome["error"] += 1
    assert outcome["error"] <= 10, outcome
    assert outcome["undefined"] <= 30, outcome
    assert len(ops) >= 50 and {"index_put_", "copy_", "scatter_reduce", "bitwise_left_shift", "slice"} <= set(ops)


def test_closure_keeps_what_a_kept_statement_reads_and_restrict_drops_unread_inputs():
    p = Program([Input("x0", "float32", (3,)), Input("x1", "int64", (3,))],
                [Stmt("relu", ["x0"], out="v0"), Stmt("neg", ["x1"], out="v1"),
                 Stmt("slice", ["v0"], {"dim": 0, "start": 0, "stop": 2, "step": 1}, out="v2"),
                 Stmt("add_", ["v2", 1.0]), Stmt("abs", ["v1"], out="v4")],
                ["v4", "v0"])
    assert closure(p, [3]) == [0, 2, 3]  # the in-place write keeps the view and what it views
    r = restrict(p, [3])
    assert [i.name for i in r.inputs] == ["x0"] and r.outputs == ["v0"]
    assert emit(r, OPS) == ("def program(x0):\n    v0 = torch.relu(x0)\n    v2 = v0[0:2:1]\n    v2.add_(1.0)\n"
                            "    return (v0,)\n")


def test_the_reduced_program_is_one_that_was_judged_failing():
    """Regression (issue 38's finding 10): ddmin keeps every statement without judging them all, and `restrict` of
    all of them still dropped the input nothing read, which changes the other inputs' values (make_inputs draws
    them in order from one seed): the finding's reduced program and its reproducer, never judged, did not show it.
    A failure that needs the unread input's draw keeps the input; a smaller program that fails is returned."""
    p = Program([Input("x0", "int32", (2, 1), "transposed"), Input("x1", "float64", (3,))],
                [Stmt("relu", ["x1"], out="v0"), Stmt("neg", ["v0"], out="v1")], ["v1"])

    def needs_x0(q: Program) -> bool:
        return [i.name for i in q.inputs] == ["x0", "x1"] and len(q.stmts) == 2

    reduced = reduce_program(p, needs_x0, ops=OPS)
    assert needs_x0(reduced) and reduced.dumps() == p.dumps()
    assert reduce_program(p, lambda q: "v1" in q.outputs, ops=OPS).inputs == [Input("x1", "float64", (3,))]


def test_a_programs_values_are_typed_by_its_dialect_in_its_bodies_too():
    """value_dtypes (a programs finding's dtypes facts): the inputs, each statement's value and those of a region's
    bodies, as eager computes them."""
    branches = [Body(["v0"], [Stmt("neg", ["v0"], out="v1")], ["v1"]), Body(["v0"], [Stmt("abs", ["v0"], out="v2")],
                                                                           ["v2"])]
    p = Program([Input("x0", "int32", (4,)), Input("x1", "float32", (4,))],
                [Stmt("to", ["x0"], {"dtype": "float16"}, "v0"),
                 Stmt("cond", ["x1", "v0"], {"k": 1, "clone": []}, "v3", branches)], ["v3"])
    assert value_dtypes(p, DIALECT) == {"x0": "int32", "x1": "float32", "v0": "float16", "v1": "float16",
                                        "v2": "float16", "v3": "float16"}
    regions = 0
    for seed in range(40):
        p = generate(DIALECT, np.random.default_rng(seed), 8)
        types = value_dtypes(p, DIALECT)
        assert {d for s in walk(p.stmts) for d in s.defines()} <= set(types), seed
        regions += p.has_region()
        inputs = make_inputs(input_specs(p), seed)
        try:
            if checked_run(p, inputs) is not None:
                continue
            outs = source_function(p)(*make_inputs(input_specs(p), seed).values())
        except Exception:  # noqa: BLE001, S112 - an invalid program: nothing to compare
            continue
        assert [str(t.dtype).removeprefix("torch.") for t in outs] == [types[o] for o in p.outputs], seed
    assert regions >= 5


def _one(stmts: list[Stmt], inputs: list[Input], outputs: list[str]) -> Program:
    return Program(inputs, stmts, outputs)


@pytest.mark.parametrize("stmt, dtype, category", [
    (Stmt("to", ["x0"], {"dtype": "uint8"}, "v0"), "float32", UNDEFINED),  # -4.0 .. 4.0 to uint8
    (Stmt("floor_divide", ["x0", 0], {}, "v0"), "int32", C.INTEGER_DIVISION_BY_ZERO),
    (Stmt("bitwise_right_shift", ["x0", 9], {"left": False, "masked": False}, "v0"), "int8", UNDEFINED),
    (Stmt("operator", ["x0", 5000], {"op": "*", "swap": False}, "v0"), "int16", C.INTEGER_OVERFLOW),
    (Stmt("mul_", ["x0", 100]), "int8", C.INTEGER_OVERFLOW),
])
def test_guards_stop_undefined_behaviour_before_compiling(stmt, dtype, category):
    p = _one([stmt], [Input("x0", dtype, (64,))], [stmt.out] if stmt.out else [])
    meta, arrays = run_program(p, 0, [CORRECT])
    assert meta == {"undefined": [category, meta["undefined"][1]]} and not arrays
    verdicts, _ = judge_program("inductor", ProgramTest(p, 0, [CORRECT]), meta, arrays)
    assert [v.kind for v in verdicts] == ["unknown"] and verdicts[0].category == category


def test_an_eager_error_is_an_invalid_program_not_a_bug():
    p = _one([Stmt("expand", ["x0"], {"shape": [3, 2]}, "v0"), Stmt("add_", ["v0", 1])],
             [Input("x0", "int64", (1, 2))], ["v0"])
    meta, _ = run_program(p, 0, [CORRECT])
    verdicts, _ = judge_program("inductor", ProgramTest(p, 0, [CORRECT]), meta, {})
    assert [v.category for v in verdicts] == [C.INVALID_TEST]


def test_float_results_are_judged_against_float64_and_rounding_decided_integers_are_not_bugs():
    eager = np.array([1.0, 2.0], np.float32)
    f64 = np.array([1.00001, 2.0])
    assert compare_to_eager(np.array([1.5, 2.0], np.float32), eager, f64)[0] == "value"
    assert compare_to_eager(eager + np.float32(1e-5), eager, f64)[0] is None
    # eager itself far from float64 (ill-conditioned): compiled as far is no bug
    rough = np.array([0.0, 2.0], np.float32)
    assert compare_to_eager(np.array([2.0, 2.0], np.float32), rough, f64)[0] == "ill-conditioned"
    # an integer the float64 run computes differently: rounding decides it
    assert compare_to_eager(np.array([1, 2]), np.array([1, 3]), np.array([1, 2]))[0] == "ill-conditioned"
    assert compare_to_eager(np.array([1, 2]), np.array([1, 3]), np.array([1, 3]))[0] == "value"
    assert compare_to_eager(np.array([1, 2], np.int32), np.array([1, 2]), None)[0] == "dtype"


def test_a_nan_difference_says_which_side_has_the_nan():
    """Regression (issue 38's acceptance triage): a compiled number where eager and float64 have NaN was reported as
    "NaN/Inf where eager and the float64 reference have numbers", and a NaN difference without a float64 reference
    as "distance 0 > 0.001"."""
    nan = np.array([np.nan, 1.0], np.float32)
    one = np.array([1.0, 1.0], np.float32)
    assert compare_to_eager(nan, one, one.astype(np.float64)) == \
        ("nan", "NaN/Inf where eager and the float64 reference have numbers")
    assert compare_to_eager(one, nan, nan.astype(np.float64)) == \
        ("nan", "numbers where eager and the float64 reference have NaN/Inf")
    assert compare_to_eager(one, nan, None) == ("nan", "NaN positions differ from eager's (no float64 reference)")


def test_a_wrong_mutation_of_an_input_is_caught_and_a_right_one_passes():
    """The relu's result only reaches the caller through an input written in place (no output); the
    correct Inductor, static and with dynamic shapes, writes it right."""
    p = _one([Stmt("relu", ["x1"], out="v0"), Stmt("copy_", ["x0", "v0"])],
             [Input("x0", "float32", (4, 6), "transposed"), Input("x1", "float32", (4, 6))], [])
    configs = [EAGER, PLANTED, CORRECT, DYNAMIC]
    meta, arrays = run_program(p, 3, configs)
    assert {n: r["status"] for n, r in meta["runs"].items()} == dict.fromkeys(["eager", "fp64", *(c[0] for c in
                                                                                                  configs[1:])], "ok")
    verdicts, _ = judge_program("inductor", ProgramTest(p, 3, configs), meta, arrays)
    assert [(v.kind, v.category, v.configs) for v in verdicts] == [("bug", C.INCONSISTENCY,
                                                                    ["eager", PLANTED[0]])]
    assert "input x0 after the call" in verdicts[0].detail and verdicts[0].key.endswith("|mutation")


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory) -> dict[str, Path]:
    """The same tests (seed 4: two of the 6 hold a relu, one of them in place, the planted fault's op) against the
    correct Inductor (6, all judged quiet) and against the planted fault (the first 3, up to the first that shows it:
    all its test asserts is that finding)."""
    from dlcfuzz.engine.campaign import Campaign, campaign_options

    out = {}
    for name, configs, tests in (("planted", "eager,inductor-planted-accuracy", FIRST_RELU_TESTS),
                                 ("correct", "eager,inductor", 6)):
        out[name] = tmp_path_factory.mktemp(name)
        Campaign(campaign_options(compiler="inductor", strategy="programs", configs=configs.split(","), seconds=900,
                                  jobs=1, seed=4, out=out[name], quiet=True, max_tests=tests)).run()
    return out


FIRST_RELU_TESTS = 3  # seed 4: test 2 (the third) is the first whose relu shows the planted fault


@pytest.mark.slow
def test_planted_fault_is_found_reduced_and_reproduced_standalone(campaigns):
    """Reduced to the relu and what it reads: every statement left is in the relu's dependency closure and the relu's
    is the one output (how long its input chain is depends on the seed's draws, e.g. a splice before it). The relu is
    `relu` or in place `relu_` (the planted fault is in the kernel both lower to): `relu_` of an input has no output,
    its result reaches the caller through the input written in place."""
    folder = planted_finding_folder(campaigns["planted"])
    reduced = Program.from_json(json.loads((folder / "program.json").read_text()))
    relu = next(k for k, s in enumerate(reduced.stmts) if s.op in ("relu", "relu_"))
    planted = reduced.stmts[relu]
    assert closure(reduced, [relu]) == list(range(len(reduced.stmts)))
    assert reduced.outputs == ([planted.out] if planted.out else [])
    # its values' dtypes are stored beside it: the finding's dtypes facts (clusters, the register's dtypes_any)
    from dlcfuzz.engine.clusters import facts_of
    from dlcfuzz.engine.store import Store

    dtypes = json.loads((folder / "program.json").read_text())["dtypes"]
    assert dtypes == value_dtypes(reduced, DIALECT)
    assert {i.name for i in reduced.inputs} | {d for s in walk(reduced.stmts) for d in s.defines()} <= set(dtypes)
    row = min(Store(campaigns["planted"] / "store.sqlite", create=False).findings(), key=lambda r: r["id"])
    assert facts_of(row, folder).dtypes == set(dtypes.values())
    assert_reproducer_fires_standalone(folder)


def test_correct_inductor_is_quiet_on_the_same_tests(campaigns):
    from dlcfuzz.engine.store import Store

    assert Store(campaigns["correct"] / "store.sqlite", create=False).findings() == []


def test_some_tests_compile_with_dynamic_shapes_and_a_planted_fault_stays_as_it_is():
    rng = np.random.default_rng(0)
    drawn = [DIALECT.per_test_configs(rng, [EAGER, CORRECT, PLANTED]) for _ in range(200)]
    dynamic = [d for d in drawn if d[1] == DYNAMIC]
    assert 40 <= len(dynamic) <= 80 and all(d[0] == EAGER and d[2] == PLANTED for d in drawn)


def test_auto_adds_the_programs_arm_only_where_the_backend_has_a_program_language():
    from dlcfuzz.strategies.auto import arms_for

    assert "programs" in [a.name for a in arms_for("inductor", get_backend("inductor"))]
    assert "programs" not in [a.name for a in arms_for("inductor", None)]


# ---- training steps --------------------------------------------------------------------------------
PLANTED_GRADIENT = ("inductor-planted-gradient", {"backend": "inductor", "fault": GRADIENT_FAULT})


def test_only_float_programs_of_differentiable_ops_train_and_the_stored_form_keeps_the_steps():
    trained, floor_divides = 0, 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        p = with_training(generate(DIALECT, rng, 8), OPS, rng, DIALECT.train_share)
        if p.steps:
            trained += 1
            assert any(i.dtype in ("float16", "float32", "float64") for i in p.inputs)
            assert 1 <= p.steps <= 3 and Program.from_json(p.to_json()) == p and restrict(p, [0]).steps == p.steps
        else:
            assert "steps" not in p.to_json()  # an inference program's stored form is what it was
        floor_divides += any(s.op == "floor_divide" or s.attrs.get("op") == "//" for s in p.stmts if p.steps)
    assert 40 <= trained <= 110 and floor_divides == 0  # torch has no derivative of floor_divide
    ints = Program([Input("x0", "int32", (3,))], [Stmt("neg", ["x0"], out="v0")], ["v0"])
    assert not trainable(ints, OPS)


@pytest.fixture(scope="module")
def training_run() -> tuple[Program, dict, dict]:
    """Three training steps of a program that writes a parameter in place (from an integer input it also
    mutates) before reading it, and whose input is a transposed view."""
    p = Program([Input("x0", "float32", (4, 6), "transposed"), Input("x1", "float32", (4, 6)),
                 Input("x2", "int64", (6,))],
                [Stmt("add_", ["x1", "x2"]), Stmt("mul", ["x0", "x1"], out="v0"), Stmt("tanh", ["v0"], out="v1"),
                 Stmt("add_", ["x2", 1]), Stmt("relu", ["v1"], out="v2")], ["v2"], steps=3)
    meta, arrays = run_program(p, 3, [EAGER, CORRECT, PLANTED_GRADIENT])
    return p, meta, arrays


def test_a_training_step_compares_gradients_and_the_state_after_the_steps(training_run):
    p, meta, arrays = training_run
    assert meta["n_grad"] == 2 and {n: r["status"] for n, r in meta["runs"].items()} == dict.fromkeys(
        ["eager", "fp64", CORRECT[0], PLANTED_GRADIENT[0]], "ok")
    assert not np.array_equal(arrays["eager/param/0"], make_inputs(input_specs(p), 3)["x0"].numpy())  # it trained
    assert arrays["eager/in/2"].tolist() == (make_inputs(input_specs(p), 3)["x2"] + 1).tolist()  # the first call's


def test_a_planted_wrong_gradient_is_caught_and_the_correct_inductor_is_quiet(training_run):
    p, meta, arrays = training_run
    verdicts, _ = judge_program("inductor", ProgramTest(p, 3, [EAGER, CORRECT, PLANTED_GRADIENT]), meta, arrays)
    # the correct Inductor's outputs, mutations, gradients and state after the steps all agree with eager
    assert [(v.kind, v.category, v.configs) for v in verdicts] == [("bug", C.INCONSISTENCY,
                                                                    ["eager", PLANTED_GRADIENT[0]])]
    assert verdicts[0].key.endswith("|gradient") and "the gradient of x0" in verdicts[0].detail
    # the forward is right: the first step's outputs agree
    assert np.array_equal(arrays[f"{PLANTED_GRADIENT[0]}/out/0"], arrays[f"{CORRECT[0]}/out/0"])


# ---- Dynamo features ------------------------------------------------------------------------------
def test_a_program_that_breaks_the_graph_compiles_without_fullgraph_and_is_judged_the_same():
    """A Python branch on a value and `.item()`: Dynamo splits the program (graph breaks counted, no
    finding); the planted fault in the relu between them is caught, the correct Inductor is quiet."""
    from dlcfuzz.programs.core import one_graph

    p = Program([Input("x0", "float32", (4, 6)), Input("x1", "int32", (3,))],
                [Stmt("branch", ["x0", 1.5], {"threshold": 0, "arms": ["+", "*"]}, "v0"),
                 Stmt("relu", ["v0"], out="v1"), Stmt("item", ["v1", "x1"], {"reduce": "amax"}, "v2")], ["v2"])
    assert not one_graph(p, OPS) and one_graph(Program(p.inputs, p.stmts[1:2], []), OPS)
    configs = [EAGER, CORRECT, PLANTED]
    meta, arrays = run_program(p, 3, configs)
    assert all(meta["runs"][n]["status"] == "ok" and meta["runs"][n]["graph_breaks"] >= 1 for n, _ in configs[1:])
    verdicts, _ = judge_program("inductor", ProgramTest(p, 3, configs), meta, arrays)
    assert [(v.kind, v.category, v.configs) for v in verdicts] == [("bug", C.INCONSISTENCY, ["eager", PLANTED[0]])]
