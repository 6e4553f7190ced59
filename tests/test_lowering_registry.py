"""Every registered operator has a lowering rule or a documented gap in every lowering target, and no
target names an operator that does not exist; `ops` (semantics) never imports a lowering."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcfuzz.engine.store import Store
from dlcfuzz.lower.registry import TARGET_MODULES, load_target, target
from dlcfuzz.ops import all_ops, registry
from dlcfuzz.ops.regions import REGION_OPS

# a target whose module imports its compiler (torch, jax) is skipped with a reason when that is absent
COMPILER_OF = {"torch": "torch", "jax": "jax"}


def loaded(name: str):
    if name in COMPILER_OF:
        pytest.importorskip(COMPILER_OF[name], reason=f"the {name} target needs {COMPILER_OF[name]}")
    try:
        return load_target(name)
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("dlcfuzz."):
            pytest.skip(f"the {name} target's module {TARGET_MODULES[name]} is not written yet")
        raise


@pytest.mark.parametrize("name", sorted(TARGET_MODULES))
def test_every_operator_has_a_rule_or_a_documented_gap(name):
    t = loaded(name)
    ops = [spec.name for spec in all_ops()] + list(REGION_OPS)
    assert len(ops) >= 100
    missing = [op for op in ops if not t.covers(op)]
    assert not missing, f"{name}: no rule and no gap for {missing}"
    both = sorted(set(t.rules) & set(t.gaps))
    assert not both, f"{name}: both a rule and a gap for {both}"
    for op, reason in t.gaps.items():
        assert len(reason.strip()) >= 10, f"{name}: the gap of {op} gives no reason"


@pytest.mark.parametrize("name", sorted(TARGET_MODULES))
def test_no_rule_or_gap_names_an_unknown_operator(name):
    t = loaded(name)
    unknown = sorted((set(t.rules) | set(t.gaps)) - set(registry()) - set(REGION_OPS))
    assert not unknown, f"{name}: rules or gaps for unknown operators {unknown}"


def test_a_target_refuses_a_second_rule_and_explains_a_gap():
    from dlcfuzz.errors import Unsupported

    t = target("test-only")
    t.register("add")(lambda *a: None)
    with pytest.raises(ValueError, match="lowered twice"):
        t.register("add")(lambda *a: None)
    t.gap("relu", "no such operator in this target's vocabulary")
    with pytest.raises(Unsupported, match="vocabulary"):
        t.rule("relu")
    with pytest.raises(Unsupported, match="no test-only lowering"):
        t.rule("exp")


def test_a_native_rule_precedes_a_shared_formula_only_where_it_applies():
    """torch's F.group_norm stands for GroupNormalization except for groups of one element, which it
    refuses: there its native rule declines and the shared formula (jax's rule too) is the lowering,
    whose normalized value is 0, so the output is the bias."""
    import numpy as np

    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.types import TensorType
    from dlcfuzz.lower.pysource.rules import native

    loaded("torch")
    from dlcfuzz.lower.torch import run_eager, to_torch_program

    def group_norm(channels: int, spatial: int) -> Graph:
        x, p = TensorType("float32", (2, channels, spatial)), TensorType("float32", (channels,))
        g = Graph(inputs=[Value("x", x), Value("scale", p), Value("bias", p)])
        g.nodes.append(Node("group_norm", ["x", "scale", "bias"], [Value("y", x)],
                            {"num_groups": 2, "epsilon": 1e-5}, name="n0"))
        g.outputs = ["y"]
        return g

    assert "F.group_norm(" in to_torch_program(group_norm(4, 3)).source
    one = group_norm(2, 1)
    assert "F.group_norm(" not in to_torch_program(one).source
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((2, 2, 1)).astype(np.float32),
              "scale": np.float32([2.0, 3.0]), "bias": np.float32([0.5, -1.5])}
    (y,) = run_eager(one, inputs)
    np.testing.assert_allclose(y, np.broadcast_to(inputs["bias"].reshape(1, 2, 1), (2, 2, 1)))
    with pytest.raises(ValueError, match="no shared rule that allows a native one"):
        native("torch", "add")(lambda *a: None)


def test_the_core_floors_do_not_import_lowering_or_compilers():
    """ir imports neither ops nor lower; ops imports no lowering and no compiler (fresh interpreter)."""
    code = (
        "import sys\n"
        "import dlcfuzz.ir\n"
        "assert not [m for m in sys.modules if m.startswith(('dlcfuzz.ops', 'dlcfuzz.lower'))]\n"
        "import dlcfuzz.ops\n"
        "bad = [m for m in sys.modules if m.startswith(('dlcfuzz.lower', 'onnx', 'tvm', 'torch', 'jax'))]\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ---- the ONNX target's proto builders: the same protos as onnx.helper's -----------------------------
scalars = st.one_of(st.integers(-2**63, 2**63 - 1), st.booleans(), st.floats(allow_nan=False, width=32),
                    st.text(max_size=8))
attribute_values = st.one_of(
    scalars, st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=5),
    st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=5).map(tuple),
    st.lists(st.one_of(st.integers(-9, 9), st.floats(-9, 9, width=32)), min_size=1, max_size=5),
    st.lists(st.text(max_size=4), min_size=1, max_size=3),
)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(attrs=st.dictionaries(st.sampled_from("abcdef"), st.one_of(attribute_values, st.none()), max_size=4),
       name=st.sampled_from([None, "", "n1"]), domain=st.sampled_from([None, "", "com.microsoft"]))
def test_onnx_node_builder_matches_onnx_helper(attrs, name, domain):
    import onnx

    from dlcfuzz.lower.onnx import make_node

    ours = make_node("Op", ["x", "y"], ["z"], name=name, domain=domain, **attrs)
    theirs = onnx.helper.make_node("Op", ["x", "y"], ["z"], name=name, domain=domain, **attrs)
    assert ours.SerializeToString() == theirs.SerializeToString()


@settings(max_examples=100, derandomize=True, deadline=None)
@given(shape=st.lists(st.integers(0, 2**40), max_size=5).map(tuple),
       dtype=st.sampled_from(["float32", "float16", "float64", "int8", "uint64", "bool", "int32"]))
def test_onnx_value_info_builder_matches_onnx_helper(shape, dtype):
    import numpy as np
    import onnx

    from dlcfuzz.lower.onnx import tensor_value_info

    theirs = onnx.helper.make_tensor_value_info("v", onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
    assert tensor_value_info("v", dtype, shape).SerializeToString() == theirs.SerializeToString()


def test_the_add_an_operator_recipe_from_one_plugin_file(tmp_path):
    """docs/architecture.md's "Add an operator", done from one file (tests/plugin_operator.py): every target
    covers the new operator, the Python targets spell it through the shared rule, and a campaign of it on
    ONNXRuntime judges its tests against the reference and stays quiet. Subprocesses, so the registry of
    this process keeps its operators."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "tests"), os.environ.get("PYTHONPATH", "")])}
    check = (
        "import plugin_operator as p\n"
        "from dlcfuzz.lower.registry import TARGET_MODULES, load_target\n"
        "assert all(load_target(t).covers(p.NAME) for t in TARGET_MODULES), 'a target misses it'\n"
        "print(sorted(t for t in TARGET_MODULES if p.NAME in load_target(t).rules))\n"
    )
    p = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "['jax', 'onnx', 'torch']"
    out = tmp_path / "cube"
    p = subprocess.run([sys.executable, "-m", "dlcfuzz.cli", "--plugin", "plugin_operator", "--plugin", "plugin_example",
                        "fuzz", "--strategy", "one-op", "--op", "example_cube", "--compiler", "onnxruntime",
                        "--max-tests", "6", "--jobs", "1", "--seed", "0", "--out", str(out), "--quiet"],
                       cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    store = Store(out / "store.sqlite", create=False)
    assert store.findings(distinct_only=False) == []
    assert store.totals()["verdicts"].get("pass", 0) >= 5  # judged against the reference, not unknown
