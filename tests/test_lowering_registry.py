"""Every registered operator has a lowering rule or a documented gap in every lowering target, and no
target names an operator that does not exist; `ops` (semantics) never imports a lowering."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
