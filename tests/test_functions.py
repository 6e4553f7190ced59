"""HirGen's function features: outlining, Relax function forms, the three function rewrites, and
random Relax pass sequences."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.backends.tvm.passes import NOT_AFTER, PASSES, REQUIRES, sample_pass_sequence, violations
from dlcfuzz.gen.functions import outline, outline_range
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.random import generate
from dlcfuzz.ir import CALL_OP, Graph, Node, TensorType, Value, dumps, graphs_equal, loads
from dlcfuzz.ops import all_ops, check_graph, get_op
from tests.op_harness import lowered_ops

F = TensorType("float32", (2, 3))
# operators and a dtype every TVM release we support compiles exactly (no documented gap)
SAFE_OPS = ("add", "sub", "mul", "relu", "exp", "tanh", "sigmoid", "matmul", "reshape", "transpose", "concat",
            "reduce_sum", "abs", "neg")


def _safe_graph(seed: int, n_ops: int = 7) -> tuple[Graph, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    g = generate(rng, n_ops, ops=[o for o in all_ops() if o.name in SAFE_OPS], dtypes=["float32"])
    h = outline(g, rng, 3)
    return h, sample_inputs(h, rng)


# ---- outline ---------------------------------------------------------------------------------

def test_outline_keeps_graphs_valid_and_outputs_bit_identical():
    calls = nested = multi = moved = 0
    for seed in range(150):
        rng = np.random.default_rng(seed)
        g = generate(rng, int(rng.integers(1, 10)))
        before = dumps(g)
        h = outline(g, rng, max_functions=3)
        assert dumps(g) == before, "outline must not modify its argument"
        check_graph(h)
        assert set(h.functions) <= {f"f{i}" for i in range(3)} and h.functions
        assert graphs_equal(loads(dumps(h)), h)
        x = sample_inputs(g, rng)
        want, got = reference.run(g, x), reference.run(h, x)
        assert list(want) == list(got)
        for k in want:
            assert want[k].dtype == got[k].dtype and want[k].tobytes() == got[k].tobytes(), (seed, k)
        call_nodes = [n for n in h.all_nodes() if n.op == CALL_OP]
        calls += len(call_nodes)
        nested += any(n.op == CALL_OP for f in h.functions.values() for n in f.nodes)
        multi += any(len(n.outputs) > 1 for n in call_nodes)
        moved += any(f.constants for f in h.functions.values())
    assert calls >= 150 and nested >= 10 and multi >= 10 and moved >= 10, (calls, nested, multi, moved)


def test_outline_range_parameters_outputs_and_constants():
    c = np.arange(6, dtype="float32").reshape(F.shape)
    g = Graph(
        inputs=[Value("x", F)],
        constants={"c": c, "d": c + 1},
        nodes=[
            Node("add", ["x", "c"], [Value("a", F)], name="n0"),
            Node("mul", ["a", "d"], [Value("b", F)], name="n1"),
            Node("sub", ["b", "x"], [Value("e", F)], name="n2"),
            Node("relu", ["d"], [Value("r", F)], name="n3"),
        ],
        outputs=["a", "e", "r"],
    )
    check_graph(g)
    x = {"x": np.ones(F.shape, "float32")}
    h = g.copy()
    assert outline_range(h, "main", 0, 2, move_constants=True) == "f0"
    f = h.functions["f0"]
    # x is read, c only by the range (moved), d also by n3 (a parameter); a is a graph output, b read later
    assert [v.name for v in f.inputs] == ["x", "d"] and list(f.constants) == ["c"]
    assert f.outputs == ["a", "b"] and "c" not in h.constants
    assert [n.op for n in h.nodes] == [CALL_OP, "sub", "relu"] and h.nodes[0].inputs == ["x", "d"]
    check_graph(h)
    assert all(np.array_equal(reference.run(g, x)[k], reference.run(h, x)[k]) for k in g.outputs)
    # nested: outline the call inside a new function, keeping constants as parameters
    assert outline_range(h, "main", 0, 2, move_constants=False) == "f1"
    check_graph(h)
    assert [n.op for n in h.functions["f1"].nodes] == [CALL_OP, "sub"]
    assert all(np.array_equal(reference.run(g, x)[k], reference.run(h, x)[k]) for k in g.outputs)
    # a range whose values nobody reads defines nothing to return
    dead = g.copy()
    dead.outputs = ["e"]
    assert outline_range(dead, "main", 3, 4) is None


# ---- pass sequences (no TVM needed) -------------------------------------------------------------

def test_pass_table_does_not_import_tvm():
    code = "import sys, dlcfuzz.backends.tvm.passes; sys.exit('tvm' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_sample_pass_sequence_respects_the_rules_and_covers_the_table():
    rng = np.random.default_rng(0)
    seen: set[str] = set()
    for _ in range(500):
        seq = sample_pass_sequence(rng, max_len=10)
        assert seq and len(seq) == len(set(seq)) and violations(seq) == [], seq
        seen.update(seq)
    assert len(PASSES) >= 20 and seen == set(PASSES)
    for p, reqs in REQUIRES.items():
        assert p in PASSES and set(reqs) <= set(PASSES)
    for p, later in NOT_AFTER.items():
        assert p in PASSES and set(later) <= set(PASSES)
    assert violations(["FuseOps"]) and violations(["LegalizeOps", "AnnotateTIROpPattern", "FuseTIR"])
    assert violations(["NoSuchPass"]) == ["unknown pass 'NoSuchPass'"]
    assert sample_pass_sequence(rng, pool=["FuseTIR"], min_len=1, max_len=1) == [
        "LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR"]


# ---- Relax forms and rewrites -------------------------------------------------------------------

@pytest.fixture(scope="module")
def tvm_backend():
    pytest.importorskip("tvm")
    from dlcfuzz.backends.tvm.backend import TvmBackend

    return TvmBackend()


def _run(backend, mod, g: Graph, x, passes=()):
    from dlcfuzz.backends.base import Config

    c = backend.compile_module(mod, Config("t", {"passes": list(passes)}), [v.name for v in g.inputs], len(g.outputs))
    return c.run(x)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forms_and_rewrites_preserve_semantics(tvm_backend, seed):
    from tvm import relax

    from dlcfuzz.backends.tvm.function_rewrites import KINDS, apply_rewrite
    from dlcfuzz.lower.relax import FORMS, to_relax
    from dlcfuzz.oracle.numeric import compare

    g, x = _safe_graph(seed)
    ref = reference.outputs(g, x)
    base = _run(tvm_backend, to_relax(g), g, x)
    assert not compare(base, ref)
    for form in FORMS:
        mod = to_relax(g, form=form)
        for kind in (None, *KINDS):
            m = mod if kind is None else apply_rewrite(mod, kind, seed)
            relax.analysis.well_formed(m)
            got = _run(tvm_backend, m, g, x)
            assert not compare(got, base), (form, kind)
            assert not compare(got, ref), (form, kind)


def test_forms_keep_the_prim_funcs_a_sub_function_emits(tvm_backend):
    """A sub-function whose operator lowers through emit_te (DFT: TOPI's kernel becomes a PrimFunc
    `dft`) is well formed in every form: the closure and returned forms once dropped that PrimFunc,
    and every such test was reported as TVM's "Cannot find ffi::Function dft"."""
    from tvm import relax

    from dlcfuzz.gen.functions import outline_range
    from dlcfuzz.lower.relax import FORMS, to_relax
    from dlcfuzz.oracle.numeric import compare

    t = TensorType("float32", (2, 4, 1))
    attrs = {"axis": 1, "dft_length": None, "inverse": 0, "onesided": 0}
    (spec_out,) = get_op("dft").infer([t], attrs)
    g = Graph(inputs=[Value("x", t)], nodes=[
        Node("relu", ["x"], [Value("r", t)], name="n0"),
        Node("dft", ["r"], [Value("y", spec_out)], attrs, name="n1"),
        Node("neg", ["y"], [Value("z", spec_out)], name="n2")], outputs=["z"])
    check_graph(g)
    assert outline_range(g, g.name, 0, 2, move_constants=False) is not None
    x = {"x": np.random.default_rng(0).standard_normal((2, 4, 1)).astype(np.float32)}
    ref = reference.outputs(g, x)
    for form in FORMS:
        mod = to_relax(g, form=form)
        relax.analysis.well_formed(mod)  # raises on a dangling GlobalVar
        assert "dft" in [gv.name_hint for gv in mod.functions], form
        assert not compare(_run(tvm_backend, mod, g, x), ref), form


def test_forms_have_the_shape_they_promise(tvm_backend):
    from tvm import relax

    from dlcfuzz.backends.tvm.passes import has_local_functions
    from dlcfuzz.lower.relax import to_relax

    g, _ = _safe_graph(1)
    names = lambda m: {gv.name_hint for gv in m.get_global_vars()}  # noqa: E731
    assert names(to_relax(g)) == {"main", *g.functions} and not has_local_functions(to_relax(g))
    closure = to_relax(g, form="closure")
    assert names(closure) == {"main"} and has_local_functions(closure)
    returned = to_relax(g, form="returned")
    assert names(returned) == {"main", *(f"make_{f}" for f in g.functions)} and has_local_functions(returned)
    for f in g.functions:
        maker = returned[f"make_{f}"]
        assert len(maker.params) == 0 and isinstance(maker.body.body, relax.Var)
    with pytest.raises(ValueError, match="unknown function form"):
        to_relax(g, form="inline")


def test_rewrites_have_the_shape_they_promise(tvm_backend):
    from tvm import relax

    from dlcfuzz.backends.tvm.function_rewrites import apply_rewrite, rewritable, rewrite_a, rewrite_b, rewrite_c
    from dlcfuzz.lower.relax import to_relax

    g, _ = _safe_graph(2)
    mod = to_relax(g)
    f = rewritable(mod)[0]

    def calls(m, fn):
        out = []
        relax.analysis.post_order_visit(
            m[fn].body, lambda e: out.append(e.op.name_hint) if isinstance(e, relax.Call) and isinstance(e.op, relax.GlobalVar) else None)
        return out

    callers = [gv.name_hint for gv in mod.get_global_vars() if f in calls(mod, gv.name_hint)]
    a = rewrite_a(mod, f)
    assert f not in {gv.name_hint for gv in a.get_global_vars()}
    ty = lambda p: str(p.ty if hasattr(p, "ty") else p.struct_info)  # noqa: E731
    assert [ty(p) for p in a[f"{f}_closure"].params] == [ty(p) for p in mod[f].params]
    assert all(f"{f}_closure" in calls(a, c) for c in callers)
    b = rewrite_b(mod, f)
    assert len(b[f"{f}_getter"].params) == 0 and all(f not in calls(b, c) and f"{f}_getter" in calls(b, c) for c in callers)
    c = rewrite_c(mod, f)
    assert calls(c, f"{f}_wrapper") == [f] and all(f"{f}_wrapper" in calls(c, x) and f not in calls(c, x) for x in callers)
    plain = to_relax(Graph([Value("x", F)], {}, [Node("relu", ["x"], [Value("y", F)])], ["y"]))
    assert apply_rewrite(plain, "a", 0) is plain  # nothing to rewrite
    with pytest.raises(ValueError, match="unknown function rewrite"):
        apply_rewrite(mod, "d", 0)


def test_backend_knobs_lower_forms_and_rewrites(tvm_backend):
    from dlcfuzz.backends.base import Config
    from dlcfuzz.oracle.numeric import compare

    knobs = {k.name: k.values for k in tvm_backend.knobs()}
    assert knobs["form"] == ["global", "closure", "returned"] and knobs["rewrite"] == [None, "a", "b", "c"]
    g, x = _safe_graph(3)
    ref = reference.outputs(g, x)
    keys = set()
    for form in ("global", "closure", "returned"):
        for rewrite in (None, "a", "b", "c"):
            config = Config("c", {"method": "direct", "form": form, "rewrite": rewrite, "rewrite_seed": 1,
                                  "passes": ["LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR"]})
            keys.add(tvm_backend.lower_key(config))
            assert not compare(tvm_backend.compile(g, config).run(x), ref), (form, rewrite)
    assert len(keys) == 12 and tvm_backend.lower_key(Config("d", {})) == "direct"


def test_scripts_round_trip_with_closures_and_constants(tvm_backend):
    import tvm_ffi

    from dlcfuzz.backends.tvm.function_rewrites import KINDS, apply_rewrite
    from dlcfuzz.lower.relax import FORMS, from_script, to_relax, to_script

    for seed in range(4):
        rng = np.random.default_rng(seed)
        # every op and dtype Relax lowers (its documented gaps raise): constants of all kinds, T.* literals
        g = outline(generate(rng, 6, ops=lowered_ops("relax")), rng, 3)
        for form in FORMS:
            for kind in (None, *KINDS):
                mod = to_relax(g, form=form)
                mod = mod if kind is None else apply_rewrite(mod, kind, seed)
                source, arrays = to_script(mod, prefix="m0_")
                assert "metadata[" not in source
                assert tvm_ffi.structural_equal(mod, from_script(source, arrays), map_free_vars=True), (seed, form, kind)


def test_reproducer_runs_every_form_and_rewrite(tvm_backend, tmp_path):
    from dlcfuzz.backends.base import Config

    g, x = _safe_graph(4)
    base = {"method": "direct", "target": "llvm", "exec_mode": "bytecode", "opt_level": 3, "passes": []}
    configs = [Config(f"{f}-{r}", {**base, "form": f, "rewrite": r, "rewrite_seed": 0})
               for f in ("global", "closure", "returned") for r in (None, "a", "b")]
    script = tmp_path / "repro.py"
    script.write_text(tvm_backend.reproducer(g, x, reference.outputs(g, x), configs, "wrong-result", "t", "d"))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert r.returncode == 0 and "not reproduced" in r.stdout, r.stdout + r.stderr[-2000:]
