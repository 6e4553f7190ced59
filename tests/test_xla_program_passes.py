"""The JAX programs' statements that reach XLA expanders the other statements never did (issue 39 item 4):
a float16 triangular solve, pooling and the gradient of max/min pooling, random numbers from explicit keys
(rbg draws with rng_bit_generator), lax.rng_uniform's range, bfloat16 activations and exact ops in every float8,
float4_e2m1fn, int4 and uint4 type (each normalized in a pass of its own), max/min reductions whose computation
branches (conditional-to-select), optimization_barrier, bitcasts to another width, and every input donated. Each is
generated,
compiled and judged equal on the real XLA (its transformations too); the planted fault on it is found, reduced
to it, and its plain-JAX reproducer fires standalone; the HLO pass it is there for changes the module it makes;
an ill-conditioned solve is an unknown, not a finding."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax", reason="the JAX dialect needs jax")

from dlcfuzz.backends.xla.programs import DIALECT, WIDTH, JaxDialect, reproducer, run_program  # noqa: E402
from dlcfuzz.oracle import categories as C  # noqa: E402
from dlcfuzz.programs.core import Input, Program, Stmt, Value, generate, reduce_program, value_dtypes, walk  # noqa: E402
from dlcfuzz.strategies.programs import ProgramTest, judge_program  # noqa: E402

XLA = ("xla", {"mode": "jit", "compiler_options": {}})
VMAP = ("xla+vmap7", {"mode": "jit", "compiler_options": {}, "transform": "vmap", "batch": [7]})
JVP = ("xla+jvp", {"mode": "jit", "compiler_options": {}, "transform": "jvp"})
GRAD = ("xla+grad", {"mode": "jit", "compiler_options": {}, "transform": "grad"})
DONATE = ("xla+donate", {"mode": "jit", "compiler_options": {}, "donate": True})

F32_44 = Input("x0", "float32", (3, 4, 4))
# (program, the HLO pass its compile needs to change the module)
PROGRAMS = {
    "triangular_solve": (Program(
        [F32_44, Input("x1", "float32", (3, 4, 2))],
        [Stmt("triangular_solve", ["x0", "x1"], {"n": 4, "left": True, "lower": True, "transpose": False, "unit": False,
                                                 "shift": 8.0, "half": True}, "v0")], ["v0"]),
        "triangular_solve_expander"),
    "reduce_window": (Program(
        [Input("x0", "float32", (4, 5))],
        [Stmt("reduce_window", ["x0"], {"kind": "max", "dims": [2, 2], "strides": [2, 1], "padding": "SAME"}, "v0")],
        ["v0"]), None),  # a forward pooling: no expander of its own (its gradient is pool_grad's)
    "pool_grad": (Program(
        [Input("x0", "float32", (4, 5))],
        [Stmt("pool_grad", ["x0"], {"kind": "max", "dims": [2, 3], "strides": [1, 2], "padding": "VALID"}, "v0")],
        ["v0"]), "select_and_scatter_expander"),
    "random": (Program(
        [Input("x0", "float32", (4, 5)), Input("x1", "int32", (2,))],
        [Stmt("random", ["x0", "x1"], {"kind": "uniform", "impl": "rbg", "seed": 7, "dtype": "float32", "fold": True},
              "v0")], ["v0"]), "rng-bit-generator-expander"),
    "rng_uniform": (Program(
        [Input("x0", "float32", (4, 5))], [Stmt("rng_uniform", ["x0"], {"dtype": "float32", "lo": -1, "hi": 2}, "v0")],
        ["v0"]), "rng-expander"),
    "optimization_barrier": (Program(
        [Input("x0", "float32", (4, 5)), Input("x1", "float32", (4, 5))],
        [Stmt("optimization_barrier", ["x0", "x1"], {"which": 1}, "v0")], ["v0"]), "cse_barrier_expander"),
    "bf16": (Program(  # a float32 product (rounded when cast to bfloat16), then max in bfloat16
        [Input("x0", "float32", (4, 5)), Input("x1", "float32", (4, 5))],
        [Stmt("multiply", ["x0", "x1"], {"swap": False, "nonzero": False}, "v0"),
         Stmt("bf16", ["v0", "x1"], {"fn": "maximum"}, "v1")], ["v1"]), "float-normalization-bf16"),
    "bitcast_convert_type": (Program(
        [Input("x0", "float32", (3, 4))], [Stmt("bitcast_convert_type", ["x0"], {"dtype": "uint8"}, "v0")], ["v0"]),
        "bitcast_dtypes_expander"),
    "low_precision": (Program(  # a float32 product clipped and rounded to float8_e4m3fn, then max there
        [Input("x0", "float32", (4, 5)), Input("x1", "float32", (4, 5))],
        [Stmt("multiply", ["x0", "x1"], {"swap": False, "nonzero": False}, "v0"),
         Stmt("low_precision", ["v0", "x1"], {"dtype": "float8_e4m3fn", "fn": "maximum", "lo": -448.0, "hi": 448.0},
              "v1")], ["v1"]), "float-normalization-f8e4m3fn"),
    "reduce_by_cond": (Program(
        [Input("x0", "float32", (4, 5))], [Stmt("reduce_by_cond", ["x0"], {"computation": "max", "axes": [1]}, "v0")],
        ["v0"]), "conditional-to-select"),
}


def _judged(program: Program, configs: list, fault: tuple[str, str] | None = None) -> list:
    meta, arrays = run_program(program, 3, configs, fault=fault)
    assert "undefined" not in meta and "invalid" not in meta, meta
    return judge_program("xla", ProgramTest(program, 3, configs), meta, arrays)[0]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_new_statement_agrees_on_real_xla_and_its_planted_fault_is_found(name):
    program, _ = PROGRAMS[name]
    differentiable = name not in ("random", "rng_uniform", "bitcast_convert_type", "bf16", "low_precision")
    configs = [XLA, VMAP, DONATE, *([JVP, GRAD] if differentiable else [])]
    verdicts = _judged(program, configs)
    assert [v.kind for v in verdicts] == ["pass"], [v.detail for v in verdicts]
    bad = _judged(program, configs, fault=("algsimp", name))
    # a jvp configuration compares the tangents alone, which an offset (the planted fault) leaves alone
    assert {v.configs[1] for v in bad if v.kind == "bug"} == {c[0] for c in configs if c is not JVP}, \
        [v.detail for v in bad]


def test_the_generator_draws_the_new_statements_and_the_types_they_claim():
    """Drawn by the generator (typed by jax.eval_shape), in every kind the samplers offer."""
    drawn: dict[str, list[Stmt]] = {}
    resized = 0  # bitcasts to another width
    for seed in range(150):
        program = generate(DIALECT, np.random.default_rng(seed), 10)
        dtypes = value_dtypes(program, DIALECT)
        for s in walk(program.stmts):
            drawn.setdefault(s.op, []).append(s)
        resized += sum(WIDTH[dtypes[s.args[0]]] != WIDTH[s.attrs["dtype"]] for s in program.stmts
                       if s.op == "bitcast_convert_type")
    assert set(PROGRAMS) <= set(drawn), set(PROGRAMS) - set(drawn)
    assert resized
    assert {s.attrs["impl"] for s in drawn["random"]} == {"threefry2x32", "rbg", "unsafe_rbg"}
    assert {s.attrs["kind"] for s in drawn["random"]} == {"uniform", "normal", "bits", "dropout"}
    assert {s.attrs["kind"] for s in drawn["pool_grad"]} == {"max", "min"}
    assert {s.attrs["dtype"] for s in drawn["low_precision"]} == set(_LOW_PASS)
    assert {s.attrs["computation"] for s in drawn["reduce_by_cond"]} == {"max", "min"}
    assert any(s.attrs["half"] for s in drawn["triangular_solve"])


def test_a_bfloat16_statement_agrees_exactly_and_its_derivatives_are_not_compared():
    """Eager rounds the float32 product to bfloat16 and so must jit (max adds no rounding): equal bits, no
    tolerance; jvp and grad, whose tangents XLA may keep in float32, are skipped with the reason."""
    program, _ = PROGRAMS["bf16"]
    meta, arrays = run_program(program, 3, [XLA, JVP, GRAD])
    assert np.array_equal(arrays["xla/out/0"], arrays["eager/out/0"])
    product = (arrays["eager/in/0"] * arrays["eager/in/1"]).reshape(-1)
    assert (product.astype(np.float32) != arrays["eager/out/0"].reshape(-1)).any()  # rounding happened
    assert set(meta["skipped"]) == {"xla+jvp", "xla+grad"} and "bfloat16" in meta["skipped"]["xla+grad"]


def test_an_ill_conditioned_solve_is_an_unknown_not_a_finding():
    """A unit-diagonal triangle of 4s: its inverse grows like 5^n (condition number past float16's limit)."""
    stmt = Stmt("triangular_solve", ["x0", "x0"], {"n": 4, "left": True, "lower": True, "transpose": False,
                                                   "unit": True, "shift": 0.0, "half": True}, "v0")
    p = Program([Input("x0", "float32", (4, 4))], [stmt], ["v0"])
    meta, arrays = run_program(p, 0, [XLA])
    assert meta["undefined"][0] == C.ILL_CONDITIONED_OUTPUT and "condition number" in meta["undefined"][1]
    verdicts, _ = judge_program("xla", ProgramTest(p, 0, [XLA]), meta, arrays)
    assert [v.kind for v in verdicts] == ["unknown"]


def test_a_donated_compile_agrees_and_a_fault_in_it_is_found():
    """Every input donated: the outputs, one of them the size of an input but not its shape (left to XLA's
    aliasing pass), agree with eager; the planted fault in the donated compile is found."""
    p = Program([Input("x0", "float32", (4, 5)), Input("x1", "int64", (4, 5))],
                [Stmt("add", ["x0", "x1"], {"swap": False, "nonzero": False}, "v0"),
                 Stmt("reshape", ["v0"], {}, "v1"),
                 Stmt("multiply", ["x1", 3], {"swap": False, "nonzero": False}, "v2")], ["v1", "v2"])
    meta, arrays = run_program(p, 1, [DONATE])
    assert meta["runs"]["xla+donate"]["status"] == "ok" and arrays["xla+donate/out/0"].shape == (20,)
    assert [v.kind for v in judge_program("xla", ProgramTest(p, 1, [DONATE]), meta, arrays)[0]] == ["pass"]
    assert any(v.kind == "bug" for v in _judged(p, [DONATE], fault=("algsimp", "add")))


_PASSES_CHILD = """
import json, sys
from dlcfuzz.backends.xla.passes import changed_passes
from dlcfuzz.backends.xla.programs import compile_and_run, source_function, transform_inputs, transformed
from dlcfuzz.programs.core import Program
for row in json.loads(sys.argv[1]):
    p, donate = Program.from_json(row[0]), row[1]
    specs = [[i.name, i.dtype, list(i.shape)] for i in p.inputs]
    args = transform_inputs(specs, 0, None)
    with changed_passes() as changed:
        compile_and_run(transformed(source_function(p), None, specs, []), args, {}, donate)
    print(sorted(changed))
"""


def test_the_new_statements_reach_the_passes_they_are_for():
    """In a process that logs XLA's passes (PASS_LOG_ENV): each program's compile changes the module in its
    pass (the float16 solve in triangular_solve_expander, the pooling gradient in select_and_scatter_expander,
    rbg in rng-bit-generator-expander, lax.rng_uniform in rng-expander, a bfloat16 max in
    float-normalization-bf16, a float8_e4m3fn max in float-normalization-f8e4m3fn, a reduction computation that
    branches in conditional-to-select, optimization_barrier in
    cse_barrier_expander, a narrowing bitcast in bitcast_dtypes_expander), and donation of an
    input whose flattened copy is the output in optimize_input_output_buffer_alias, which the same program
    without donation leaves alone."""
    from dlcfuzz.backends.xla.passes import PASS_LOG_ENV

    flat = Program([Input("x0", "float32", (4, 5))], [Stmt("reshape", ["x0"], {}, "v0")], ["v0"])
    rows = [[p.to_json(), False] for p, _ in PROGRAMS.values()] + [[flat.to_json(), False], [flat.to_json(), True]]
    r = subprocess.run([sys.executable, "-c", _PASSES_CHILD, json.dumps(rows)], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu", **PASS_LOG_ENV})
    assert r.returncode == 0, r.stderr[-2000:]
    changed = [set(ast.literal_eval(line)) for line in r.stdout.splitlines()]
    for (_, pass_name), seen in zip(PROGRAMS.values(), changed):
        assert pass_name is None or pass_name in seen, (pass_name, seen)
    assert "optimize_input_output_buffer_alias" in changed[-1] - changed[-2]


_LOW_CHILD = """
import json, sys
import numpy as np
from dlcfuzz.backends.xla.passes import changed_passes
from dlcfuzz.backends.xla.programs import compile_and_run, jax, source_function, transform_inputs, transformed
from dlcfuzz.programs.core import Program
for row in json.loads(sys.argv[1]):
    p = Program.from_json(row)
    specs = [[i.name, i.dtype, list(i.shape)] for i in p.inputs]
    g = transformed(source_function(p), None, specs, [])
    args = transform_inputs(specs, 0, None)
    with changed_passes() as changed:
        compiled = compile_and_run(g, args, json.loads(sys.argv[2]))[0]
    with jax.disable_jit():
        eager = g(*args)[0]
    same = all(np.array_equal(np.asarray(c), np.asarray(e), equal_nan=True) for c, e in zip(compiled, eager))
    print(json.dumps([sorted(changed), same]))
"""
# each narrow type's float-normalization pass (XLA's short type name), and its jax input dtype
_LOW_PASS = {"float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2", "float8_e4m3fnuz": "f8e4m3fnuz",
             "float8_e5m2fnuz": "f8e5m2fnuz", "float8_e4m3b11fnuz": "f8e4m3b11fnuz", "float8_e3m4": "f8e3m4",
             "float8_e4m3": "f8e4m3", "float8_e8m0fnu": "f8e8m0fnu", "float4_e2m1fn": "f4e2m1fn", "int4": "s4",
             "uint4": "u4"}


def _run_child(rows: list, options: dict) -> list:
    """[changed passes, compiled == eager] of each program compiled with `options` in a process that logs XLA's
    passes (a compile that kills its process fails the test here, not the pytest worker)."""
    from dlcfuzz.backends.xla.passes import PASS_LOG_ENV

    r = subprocess.run([sys.executable, "-c", _LOW_CHILD, json.dumps(rows), json.dumps(options)], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu", **PASS_LOG_ENV})
    assert r.returncode == 0, r.stderr[-2000:]
    return [json.loads(line) for line in r.stdout.splitlines()]


def _narrow_programs() -> list:
    """One generated low_precision statement per narrow type (the sampler's own draw, forced to the type; max of
    two values)."""
    from dlcfuzz.backends.xla.programs import LOW_INTS, OPS
    from dlcfuzz.programs.core import Pool

    rows = []
    for dtype in _LOW_PASS:
        x0, x1 = (Input(f"x{k}", "int8" if dtype in LOW_INTS else "float32", (4, 5)) for k in range(2))
        pool = Pool(np.random.default_rng(0), {x.name: Value(x.name, x.dtype, x.shape) for x in (x0, x1)})
        draw = None
        while draw is None or draw.attrs["dtype"] != dtype or draw.attrs["fn"] != "maximum":
            draw = OPS["low_precision"].sample(pool)
        rows.append(Program([x0, x1], [Stmt("low_precision", draw.args, draw.attrs, "v0")], ["v0"]).to_json())
    return rows


def test_every_narrow_type_is_computed_exactly_in_its_normalization_pass():
    """Each narrow type's statement: compiled and eager agree bit for bit, and the compile changes the module in
    the type's float-normalization pass (and sub-byte-size-setter for the 4-bit types)."""
    from dlcfuzz.backends.xla.programs import LOW_FLOATS, LOW_INTS

    assert set(_LOW_PASS) == set(LOW_FLOATS + LOW_INTS)
    for dtype, (changed, same) in zip(_LOW_PASS, _run_child(_narrow_programs(), {}), strict=True):
        assert same, dtype
        assert f"float-normalization-{_LOW_PASS[dtype]}" in changed, (dtype, changed)
        assert ("sub-byte-size-setter" in changed) == (dtype in ("float4_e2m1fn", "int4", "uint4")), (dtype, changed)


def test_the_narrow_types_and_a_branching_reducer_compile_and_agree_with_every_optional_pass_disabled():
    """xla-nopasses, one of the campaigns' default pair, disables every optional pass: the passes these statements
    cannot compile without (the float8/float4 normalizations; conditional-to-select: a cond inside a reducer
    aborted the process) are required, so each program still compiles and agrees with eager. (Others, such as the
    float16 solve, XLA:CPU refuses without their pass: UNIMPLEMENTED, skipped by the run as documented.)"""
    from dlcfuzz.backends.xla.passes import optional_passes

    rows = [PROGRAMS[k][0].to_json() for k in ("reduce_by_cond", "low_precision", "bf16")] + _narrow_programs()
    results = _run_child(rows, {"xla_disable_hlo_passes": ",".join(optional_passes())})
    assert len(results) == len(rows) and all(same for _, same in results), results


def test_a_planted_fault_in_a_new_statement_reduces_to_it_and_its_reproducer_fires(tmp_path: Path):
    """The pooling gradient's fault among the other new statements: the reduction keeps the statement alone,
    and the reproducer (jax and numpy alone) fires standalone with the fault and not without."""
    def attrs(name: str) -> dict:
        return PROGRAMS[name][0].stmts[0].attrs

    program = Program([Input("x0", "float32", (3, 4, 4)), Input("x1", "float32", (3, 4, 2)),
                       Input("x2", "float32", (4, 5)), Input("x3", "int32", (2,))],
                      [Stmt("triangular_solve", ["x0", "x1"], attrs("triangular_solve"), "v0"),
                       Stmt("pool_grad", ["x2"], attrs("pool_grad"), "v1"),
                       Stmt("random", ["x2", "x3"], attrs("random"), "v2"),
                       Stmt("bitcast_convert_type", ["v1"], {"dtype": "uint8"}, "v3")],
                      ["v0", "v1", "v2", "v3"])
    fault = ("algsimp", "pool_grad")

    def fails(p: Program) -> bool:
        return any(v.kind == "bug" for v in _judged(p, [XLA], fault))

    assert fails(program)
    reduced = reduce_program(program, fails, ops=DIALECT.ops)
    assert [s.op for s in reduced.stmts] == ["pool_grad"], reduced.stmts
    for with_fault, rc in ((fault, 1), (None, 0)):
        script = tmp_path / f"repro_{rc}.py"
        script.write_text(reproducer(reduced, 3, [XLA], "planted", "pool_grad off by one", "jax", with_fault))
        r = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, timeout=300)
        assert r.returncode == rc and ("BUG REPRODUCED" in r.stdout) == bool(rc), r.stdout + r.stderr[-2000:]


def test_the_fault_dialect_is_the_one_the_planted_compiler_hands_out():
    from dlcfuzz.backends.xla.planted import PlantedXla

    d = PlantedXla("algsimp", "pool_grad").program_dialect()
    assert isinstance(d, JaxDialect) and d.fault == ("algsimp", "pool_grad")
