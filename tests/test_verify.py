"""Transformation verification (dlcfuzz.tvm_tir.verify): planted wrong rewrites are caught and confirmed by
running TVM-compiled code, correct rewrites are proven, the semantics agree with concrete values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

z3 = pytest.importorskip("z3", reason="verify needs z3-solver")
tvm = pytest.importorskip("tvm", reason="verify checks TVM's transformations")
from tvm import tirx  # noqa: E402

from dlcfuzz.cli import main  # noqa: E402
from dlcfuzz.tvm_tir.verify import (  # noqa: E402
    COUNTEREXAMPLE,
    MISMATCH,
    OVERFLOW,
    PROVEN,
    WRAP,
    check_equivalent,
    check_rewrite,
)
from dlcfuzz.tvm_tir.verify.enumerate import ExprSpace, StmtBuilder, StmtSpace, count_exprs, enumerate_exprs  # noqa: E402
from dlcfuzz.tvm_tir.verify.run import run_passes, simplifier  # noqa: E402
from dlcfuzz.tvm_tir.verify.semantics import NumpyEvaluator, Z3Translator  # noqa: E402
from dlcfuzz.tvm_tir.verify.validate import ExprChecker, StmtChecker, verify_exprs  # noqa: E402


def c(v: int, dtype: str = "int32"):
    return tirx.IntImm(dtype, v)


def _rewrite_everywhere(e, rule):
    """Apply `rule` (node -> node or None) bottom-up on binary TIR expressions."""
    if hasattr(e, "a") and hasattr(e, "b"):
        e = type(e)(_rewrite_everywhere(e.a, rule), _rewrite_everywhere(e.b, rule))
    r = rule(e)
    return e if r is None else r


def _half(e):
    """x for e = x // 2 * 2 (either operand order), else None."""
    if type(e).__name__ != "Mul":
        return None
    for two, div in ((e.b, e.a), (e.a, e.b)):
        if (type(two).__name__ == "IntImm" and int(two.value) == 2 and type(div).__name__ == "FloorDiv"
                and type(div.b).__name__ == "IntImm" and int(div.b.value) == 2):
            return div.a
    return None


def planted_wrong(e):
    """TVM's simplifier behind a planted wrong rule: x // 2 * 2 -> x."""
    return simplifier("simplify")(_rewrite_everywhere(e, _half))


def planted_correct(e):
    """The same place, a correct rule: x // 2 * 2 -> x - x % 2 (floor semantics)."""
    return simplifier("simplify")(_rewrite_everywhere(
        e, lambda n: tirx.Sub(_half(n), tirx.FloorMod(_half(n), c(2))) if _half(n) is not None else None))


SMALL = ExprSpace(depth=2, kinds=("FloorDiv",), root_kinds=("Mul",), n_vars=1, constants=(2,))


def test_small_space_contains_the_planted_pattern():
    exprs = [str(e) for e in enumerate_exprs(SMALL)]
    assert "2 * (x0 // 2)" in exprs
    assert len(exprs) == count_exprs(SMALL) == len(set(exprs))  # no duplicates up to renaming


def test_planted_wrong_rewrite_yields_confirmed_counterexample():
    stats = verify_exprs(enumerate_exprs(SMALL), planted_wrong, ExprChecker(), label="planted",
                         budget={MISMATCH: 2, OVERFLOW: 0, WRAP: 0})
    cex = stats.counterexamples
    assert stats.errors == 0, stats.error_samples
    assert cex, [(f.before, f.after, f.confirmation) for f in stats.findings]
    first = next(f for f in cex if f.before == "2 * (x0 // 2)")
    assert first.after == "x0" and first.kind == MISMATCH
    assert first.model["x0"] % 2 == 1  # only odd x tell the two apart
    # Confirmed by the reproducer: the TVM-compiled programs computed different values.
    assert first.confirmation.result["before"] != first.confirmation.result["after"]
    assert first.confirmation.result["before"] == first.confirmation.result["expected"]
    assert "tvm.compile" in first.script and "tirx.FloorDiv(x0, tirx.IntImm" in first.script


def test_planted_correct_rewrite_is_proven():
    stats = verify_exprs(enumerate_exprs(SMALL), planted_correct, ExprChecker(), label="planted")
    proven, cex, unknown = stats.totals()
    assert cex == 0 and stats.candidates == 0, [(f.before, f.after, f.model) for f in stats.findings]
    assert stats.errors == 0 and proven >= stats.enumerated - 1  # at most x // x * (2 // x) out of budget
    pattern = next(e for e in enumerate_exprs(SMALL) if str(e) == "2 * (x0 // 2)")
    assert check_rewrite(pattern, planted_correct(pattern)).status == PROVEN


def test_refinement_versus_wrap_around():
    x = tirx.Var("x0", "int32")
    assert check_rewrite(tirx.Sub(tirx.Add(x, c(3)), c(3)), x).status == PROVEN
    # x * 2 // 2 -> x: defined inputs never overflow, so it refines; the wrapped bits differ.
    out = check_rewrite(tirx.FloorDiv(tirx.Mul(x, c(2)), c(2)), x)
    assert out.status == WRAP
    assert not -(2**30) <= out.model["x0"] < 2**30
    # x -> x * 2 // 2 may overflow where x did not: a refinement violation, wrapped bits differ too.
    out = check_rewrite(x, tirx.FloorDiv(tirx.Mul(x, c(2)), c(2)))
    assert out.status == COUNTEREXAMPLE and out.kind == MISMATCH
    # (x + 1) * 2 -> x * 2 + 2 introduces an overflow at x = 2^30 - 1 but the wrapped bits agree.
    out = check_rewrite(tirx.Mul(tirx.Add(x, c(1)), c(2)), tirx.Add(tirx.Mul(x, c(2)), c(2)))
    assert out.status == COUNTEREXAMPLE and out.kind == OVERFLOW
    # Division semantics: floor vs trunc differ on negative operands.
    y = tirx.Var("x1", "int32")
    out = check_rewrite(tirx.FloorDiv(x, y), tirx.Div(x, y))
    assert out.status == COUNTEREXAMPLE and (out.model["x0"] < 0) != (out.model["x1"] < 0)
    assert check_rewrite(tirx.FloorMod(x, c(4)), tirx.BitwiseAnd(x, c(3))).status == PROVEN


_ALL_KINDS = ("Add", "Sub", "Mul", "FloorDiv", "FloorMod", "Div", "Mod", "Min", "Max", "BitwiseAnd", "BitwiseXor",
              "LShift", "RShift")


@pytest.mark.parametrize("dtype,kinds", [("int8", _ALL_KINDS), ("int32", ("Mul", "FloorDiv", "FloorMod", "Div", "Mod",
                                                                           "LShift"))])
def test_z3_and_numpy_semantics_agree(dtype, kinds):
    """Every depth-1 expression at boundary values: Z3 value and definedness equal NumPy's."""
    space = ExprSpace(dtype=dtype, depth=1, kinds=kinds, root_kinds=kinds + ("LT", "EQ"), n_vars=2)
    bits = int(dtype[3:])
    vals = [0, 1, -1, 2, -7, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1]
    pairs = list(itertools.product(vals, vals))
    env = {"x0": np.array([p[0] for p in pairs], dtype=np.int64), "x1": np.array([p[1] for p in pairs], dtype=np.int64)}
    ev = NumpyEvaluator(env, len(pairs))
    tr = Z3Translator()
    zx, zy = z3.BitVec("x0", bits), z3.BitVec("x1", bits)
    checked = 0
    for e in enumerate_exprs(space):
        b = ev.eval(e)
        t = tr.expr(e)
        for i, (p, q) in enumerate(pairs):
            sub = [(zx, z3.BitVecVal(p, bits)), (zy, z3.BitVecVal(q, bits))]
            defined = z3.is_true(z3.simplify(z3.substitute(t.defined, *sub)))
            assert defined == bool(b.no_overflow[i] and b.no_trap[i]), (str(e), p, q)
            if defined:
                v = z3.simplify(z3.substitute(t.value, *sub))
                got = int(z3.is_true(v)) if z3.is_bool(v) else v.as_signed_long()
                assert got == int(b.value[i]), (str(e), p, q, got, b.value[i])
            checked += 1
    assert checked > 500


def test_tvm_simplify_depth1_every_input_accounted():
    stats = verify_exprs(enumerate_exprs(ExprSpace(depth=1)), simplifier("canonical_simplify"), ExprChecker(),
                         label="canonical_simplify", budget={MISMATCH: 0, OVERFLOW: 0, WRAP: 0})
    proven, cex, unknown = stats.totals()
    assert proven + cex + unknown == stats.enumerated == count_exprs(ExprSpace(depth=1))
    assert stats.unchanged > 0 and stats.proven > 0


def test_statement_checker_planted_pass():
    """A wrong 'pass' that drops the second statement of a sequence is caught; the identity is quiet,
    and TVM's RemoveNoOp is proven on small statements."""
    b = StmtBuilder()
    A, x = b.A, b.x
    seq = tirx.SeqStmt([tirx.BufferStore(A, x[0], [c(0)]), tirx.BufferStore(A, x[1], [c(1)])])
    f = b.func(seq)
    dropped = f.with_body(seq.seq[0])
    buffers = {"A": ("int32", 4)}
    out = StmtChecker().check(f, dropped, buffers, [x[0], x[1]])
    assert out.status == COUNTEREXAMPLE and out.model["x1"] != out.model["A[1]"]
    loop = b.func(b.loop(lambda i: tirx.BufferStore(A, tirx.Add(b.load(i), x[0]), [i])))
    unrolled = tvm.tirx.transform.UnrollLoop()(tvm.IRModule({"main": loop}))["main"]
    assert StmtChecker().check(loop, unrolled, buffers, [x[0], x[1]]).status in ("unchanged", PROVEN)
    stats = run_passes(["tirx.RemoveNoOp"], StmtSpace(kinds=("Store", "Seq", "Evaluate"), depth=1))
    assert stats.enumerated > 100 and stats.totals()[1] == 0 and stats.candidates == 0


def _clip(v, bound: int):
    return tirx.Min(tirx.Max(v, c(-bound)), c(bound))


def test_metamorphic_integer_opaque_condition_is_proven():
    """Item 5: our metamorphic insertion t -> t - |max(-(d*d), 0) * garbage| (the UOC of
    mutate/metamorphic.py, on integers) is an identity both ways once its operands are clipped so
    that d*d cannot overflow; unclipped, the insertion is not a refinement (d*d overflows)."""
    t, i, j, g1, g2 = (tirx.Var(n, "int32") for n in ("t", "i", "j", "g1", "g2"))

    def mutant(bound: int | None):
        ci, cj = (_clip(i, bound), _clip(j, bound)) if bound else (i, j)
        d = tirx.Sub(ci, cj)
        cond = tirx.Max(tirx.Mul(c(-1), tirx.Mul(d, d)), c(0))  # Relu(Neg(d * d))
        garbage = tirx.Add(_clip(g1, 1000), _clip(g2, 1000))
        prod = tirx.Mul(cond, garbage)
        return tirx.Sub(t, tirx.Max(prod, tirx.Mul(c(-1), prod)))  # t - |cond * garbage|

    forward, backward = check_equivalent(t, mutant(23170), wrap=False)  # 2 * 23170 squared < 2^31
    assert forward.status == PROVEN and backward.status == PROVEN
    out = check_rewrite(t, mutant(None), wrap=False)
    assert out.status == COUNTEREXAMPLE


def test_cli_verify_small_run(tmp_path, capsys):
    rc = main(["verify", "simplify", "--depth", "1", "--kinds", "Add,Sub,Min", "--root-kinds", "Add,Min,LT",
               "--vars", "1", "--jobs", "1", "--max-confirm", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc in (0, 1)
    assert out[-1].startswith("proven: ") and ", counterexamples: " in out[-1] and ", unknown: " in out[-1]
    assert any(line.startswith("elapsed: ") and "peak RSS" in line for line in out)
    assert (tmp_path / "summary.json").exists()


def test_cli_verify_bad_input(capsys):
    assert main(["verify", "pass", "NoSuchPass"]) == 2
    assert "available:" in capsys.readouterr().err
    assert main(["verify", "simplify", "--dtype", "float8"]) == 2
    assert main(["verify", "simplify", "--kinds", "Add,Frobnicate"]) == 2
    assert main(["verify", "pass", "--list"]) == 0


def test_float_semantics_ieee():
    """Floats are Z3 IEEE floats: x * 1.0 -> x holds, reassociation and x + 0.0 -> x (x = -0.0) do not."""
    a, b, d = (tirx.Var(n, "float32") for n in ("a", "b", "d"))
    assert check_rewrite(tirx.Mul(a, tirx.FloatImm("float32", 1.0)), a).status == PROVEN
    assert check_rewrite(tirx.Add(a, tirx.FloatImm("float32", 0.0)), a).status == COUNTEREXAMPLE
    assert check_rewrite(tirx.Add(tirx.Add(a, b), d), tirx.Add(a, tirx.Add(b, d))).status == COUNTEREXAMPLE
