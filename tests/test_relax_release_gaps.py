"""Forms our Relax lowering cannot hand to an installed TVM are gaps of that configuration, never internal
errors (issue: apache-tvm 0.25 campaigns exited 3 on GridSample 3-D and on Flatten of an empty tensor)."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.exec.worker import run_configs
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.numeric import compare
from dlcfuzz.oracle.testcase import TestCase
from dlcfuzz.oracle.verdict import judge

pytest.importorskip("tvm")

from dlcfuzz.backends import get_backend  # noqa: E402


def one_node(op: str, x: TensorType, out: TensorType, attrs: dict, extra: list[Value] = ()) -> Graph:
    return Graph(inputs=[Value("x", x), *extra], nodes=[Node(op, ["x", *(v.name for v in extra)], [Value("y", out)], attrs)],
                 outputs=["y"])


@pytest.mark.parametrize("op, shape, attrs, out", [
    ("flatten", (2, 0), {"axis": 2}, (0, 1)),  # relax.op.reshape reads the 0 in (0, 1) as "copy dim 0"
    ("flatten", (0, 3, 2), {"axis": 1}, (0, 6)),
])
def test_empty_reshapes_compile_and_agree_on_every_configuration(op, shape, attrs, out):
    tvm = get_backend("tvm")
    g = one_node(op, TensorType("int16", shape), TensorType("int16", out), attrs)
    inputs = {"x": np.zeros(shape, np.int16)}
    obs = run_configs(tvm, TestCase(g, inputs, list(tvm.configs().values()), compiler="tvm"))
    assert len(obs) == len(tvm.configs()) and all(o.status == "ok" for o in obs), [(o.config, o.error) for o in obs]
    want = [reference.run(g, inputs)["y"]]
    assert all(not compare(o.outputs, want) for o in obs)


def test_a_lowering_gap_is_a_skipped_configuration_and_the_test_not_lowerable():
    """BitCast is a documented gap of our Relax lowering: its configurations are skipped (not an exception of
    the worker, which the engine would count as dlcfuzz's internal error), TVM's ONNX importer is still tried."""
    tvm = get_backend("tvm")
    g = one_node("bitcast", TensorType("float32", (2, 3)), TensorType("int32", (2, 3)), {"to": "int32"})
    configs = [c for c in tvm.configs().values()]
    obs = run_configs(tvm, TestCase(g, {"x": np.ones((2, 3), np.float32)}, configs, compiler="tvm"))
    by_method = {o.config: o.status for o in obs}
    direct = [c.name for c in configs if c.options.get("method", "direct") != "onnx"]
    assert direct and all(by_method[n] == "skipped" for n in direct), by_method
    assert all("LoweringGap" in (o.error or "") for o in obs if o.status == "skipped")
    only_direct = [o for o in obs if o.config in direct]
    v = judge("tvm", lambda e: None, None, only_direct)
    assert [x.category for x in v] == [C.NOT_LOWERABLE]


def test_volumetric_grid_sample_is_lowered_where_the_release_takes_it():
    """apache-tvm 0.25's grid_sample has no NCDHW layout (a gap of that release, found by probing once);
    the pinned release takes it, and the 3-D lowering agrees with the reference."""
    from dlcfuzz.lower.relax.spatial import _volumetric_grid_sample

    assert _volumetric_grid_sample()
    tvm = get_backend("tvm")
    x_t, grid_t = TensorType("float32", (1, 2, 3, 3, 3)), TensorType("float32", (1, 2, 2, 2, 3))
    g = one_node("grid_sample", x_t, TensorType("float32", (1, 2, 2, 2, 2)),
                 {"mode": "linear", "padding_mode": "zeros", "align_corners": 0}, [Value("grid", grid_t)])
    rng = np.random.default_rng(5)
    inputs = {"x": rng.uniform(-2, 2, x_t.shape).astype(np.float32),
              "grid": rng.uniform(-1, 1, grid_t.shape).astype(np.float32)}
    direct = [c for c in tvm.configs().values() if c.options.get("method", "direct") != "onnx"][:1]
    (o,) = run_configs(tvm, TestCase(g, inputs, direct, compiler="tvm"))
    assert o.status == "ok", o.error
    assert not compare(o.outputs, [reference.run(g, inputs)["y"]])
