"""The registry is complete and every registered operator is exercised by an agreement test."""

from __future__ import annotations

import importlib
from pathlib import Path

from dlcfuzz.ops import registry

FAMILY_TESTS = sorted(f"tests.{p.stem}" for p in Path(__file__).parent.glob("test_ops_*.py"))


def test_every_operator_is_exercised_by_its_family_test():
    """Each family's test file checks every operator of it against ONNX, ORT, TVM and the importer
    (`test_op_agrees_everywhere`, parametrized over the operators)."""
    covered: set[str] = set()
    families = {s.family for s in registry().values()}
    have = {m.removeprefix("tests.test_ops_") for m in FAMILY_TESTS}
    assert not families - have, f"families without a test file: {sorted(families - have)}"
    for module in FAMILY_TESTS:
        mod = importlib.import_module(module)
        agree = getattr(mod, "test_op_agrees_everywhere", None)
        if agree is None:  # a file of a family that extends another (reduce_lp's operators are "reduce")
            continue
        params = [m for m in agree.pytestmark if m.name == "parametrize"]
        assert params, f"{module} does not parametrize over its operators"
        covered |= set(params[0].args[1])
    assert covered == set(registry()), f"not exercised: {sorted(set(registry()) - covered)}"


def test_registry_size_and_families():
    specs = list(registry().values())
    assert len(specs) >= 70
    unary = [s for s in specs if s.family == "elementwise" and s.n_inputs == 1]
    binary = [s for s in specs if s.family == "elementwise" and s.n_inputs == 2]
    assert len(unary) >= 25 and len(binary) >= 15
    for s in specs:
        assert s.dtypes, s.name
        assert s.onnx_ops, f"{s.name} has no ONNX import mapping"
