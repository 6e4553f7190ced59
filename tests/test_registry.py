"""The registry is complete and every registered operator is exercised by an agreement test."""

from __future__ import annotations

import importlib

from dlcfuzz.ops import registry

FAMILY_TESTS = {"elementwise": "tests.test_ops_elementwise", "nn": "tests.test_ops_nn",
                "shape": "tests.test_ops_shape", "reduce": "tests.test_ops_reduce", "quant": "tests.test_ops_quant",
                "contrib": "tests.test_ops_contrib"}


def test_every_operator_is_exercised_by_its_family_test():
    covered: set[str] = set()
    for module in FAMILY_TESTS.values():
        mod = importlib.import_module(module)
        params = [m for m in mod.test_op_agrees_everywhere.pytestmark if m.name == "parametrize"]
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
