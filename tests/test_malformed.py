"""Malformed ONNX models (mutate/malformed.py): each kind breaks the rule it names while its legal
twin passes the ONNX checker; onnxruntime rejects each one; disruptive mode's oracle fires on a
planted compiler that runs malformed models silently and stays quiet on the real one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend  # noqa: E402
from dlcfuzz.exec.worker import run_configs  # noqa: E402
from dlcfuzz.gen.coverage import Coverage  # noqa: E402
from dlcfuzz.mutate.malformed import KINDS, check_strict, malform  # noqa: E402
from dlcfuzz.oracle.verdict import judge_rejection  # noqa: E402
from dlcfuzz.strategies.base import Context  # noqa: E402
from dlcfuzz.strategies.hirgen import MALFORMED, DisruptiveHirgen  # noqa: E402

# what the checker's message names for each kind (Clip's scalar rule is spec text the checker does not check)
CHECKER_SAYS = {
    "axis-out-of-range": ("axis", "Axis", "rank"),
    "nonpositive-attribute": ("positive",),
    "pads-beyond-extent": ("Pad",),
    "empty-required-input": ("marked single but has an empty string",),
    "declared-type-contradicts": ("elem type differs", "raw_data size"),
}


def base_model(shape: list[int]) -> Any:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def session_error(model: Any, shape: list[int]) -> str | None:
    import onnxruntime as ort

    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, {"x": np.ones(shape, np.float32)})
    except Exception as e:  # onnxruntime's rejection: an exception with a message
        return str(e) or type(e).__name__
    return None


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_breaks_its_rule_its_twin_is_valid_and_onnxruntime_rejects_it(kind):
    judged = 0
    for shape in ([2, 3, 4, 5], [3, 7], [2, 4, 6]):
        base = base_model(shape)
        for seed in range(4):
            bad, twin = malform(base, kind, seed), malform(base, kind, seed, legal=True)
            if kind == "nonpositive-attribute" and len(shape) < 3:
                assert bad is None and twin is None  # pooling and DepthToSpace need rank >= 3
                continue
            assert bad is not None and twin is not None
            m, what = bad
            assert check_strict(twin[0]) is None, (kind, seed, twin[1].detail)
            assert session_error(twin[0], shape) is None, (kind, seed, twin[1].detail)
            why = check_strict(m)
            if kind == "wrong-rank-scalar-input":
                # the checker leaves "must be a scalar" to the operator: check the spec rule directly
                assert why is None
                limit = next(t for t in m.graph.initializer if t.name.endswith("_limit"))
                assert len(limit.dims) >= 2 or int(np.prod(limit.dims)) > 1, what.detail
            else:
                assert why is not None and any(s in why for s in CHECKER_SAYS[kind]), (what.detail, why)
            assert what.kind == kind and what.rule == KINDS[kind] and what.node in [n.name for n in m.graph.node]
            err = session_error(m, shape)
            assert err, f"onnxruntime ran a model breaking {kind}: {what.detail}"
            judged += 1
    assert judged >= 8


class SilentOrt(OnnxRuntimeBackend):
    """Planted fault: accepts a malformed model silently, running it without the node it cannot build."""

    def build(self, lowered: bytes, g: Any, config: Any) -> Any:
        m = onnx.load_from_string(lowered)
        dropped = [n for n in m.graph.node if n.name.startswith("malformed_")]
        gone = {o for n in dropped for o in n.output}
        for n in dropped:
            m.graph.node.remove(n)
        for vi in [o for o in m.graph.output if o.name in gone]:
            m.graph.output.remove(vi)
        for t in [t for t in m.graph.initializer if t.name.startswith("malformed_")]:
            m.graph.initializer.remove(t)
        return super().build(m.SerializeToString(), g, config)


def strategy(backend: Any) -> DisruptiveHirgen:
    ctx = Context("onnxruntime", 0, {"ops": 5, "mode": "disruptive"}, list(backend.default_pair()), False, backend,
                  backend.version(), None, Coverage(), Path("."), False, 0.0, None, lambda: None)
    s = DisruptiveHirgen(ctx)
    # host graphs onnxruntime runs (float32 elementwise and matmul), so that a rejection is the malformed node's
    s.params["only_ops"] = ["add", "sub", "mul", "relu", "sigmoid", "tanh", "abs", "neg", "exp", "matmul"]
    s.supported = lambda op, dt: dt == "float32"
    return s


def test_planted_silent_compiler_fires_and_onnxruntime_stays_quiet():
    real = get_backend("onnxruntime")
    forms = [r.removeprefix(MALFORMED) for r in real.disruptive_rules() if r.startswith(MALFORMED)]
    assert sorted(forms) == sorted(KINDS)
    s = strategy(real)
    quiet, fired, kinds = 0, 0, set()
    for seed in range(24):
        kind = forms[seed % len(forms)]
        test = s.malformed_test(seed, seed, np.random.default_rng(seed), [kind])
        if test is None:  # the generated graph offered no float value of static shape
            continue
        tc = test.payload
        assert tc.meta["broken"]["rule"] == MALFORMED + kind and all(c.options["malformed"] for c in tc.configs)
        obs = run_configs(real, tc, invalid=True)
        verdicts = judge_rejection("onnxruntime", tc.meta["broken"], obs, s.per_op_rules)
        assert [v.category for v in verdicts] == ["rejected"], (kind, [o.error for o in obs])
        assert all("malformed_" in (o.error or "") for o in obs), (kind, [o.error for o in obs])  # for its reason
        quiet += 1
        planted = judge_rejection("onnxruntime", tc.meta["broken"], run_configs(SilentOrt(), tc, invalid=True))
        assert {v.category for v in planted} == {"accepted-invalid"} and len(planted) == len(tc.configs)
        assert all(kind in v.key for v in planted) and all(KINDS[kind] in v.detail for v in planted)
        fired += 1
        kinds.add(kind)
    assert quiet >= 15 and fired == quiet and len(kinds) >= 5


def test_lowering_and_reproducer_carry_the_malformed_model():
    """The configuration's {"kind", "seed"} makes lower() (and the reproducer's model) the malformed one."""
    backend = get_backend("onnxruntime")
    test = strategy(backend).malformed_test(0, 5, np.random.default_rng(5), ["empty-required-input"])
    assert test is not None
    tc = test.payload
    lowered = onnx.load_from_string(backend.lower(tc.graph, tc.configs[0]))
    assert tc.meta["broken"]["node"] in [n.name for n in lowered.graph.node]
    assert check_strict(lowered) is not None
    plain = type(tc.configs[0])(tc.configs[0].name, {k: v for k, v in tc.configs[0].options.items()
                                                       if k != "malformed"})
    assert check_strict(onnx.load_from_string(backend.lower(tc.graph, plain))) is None


def test_an_accepted_malformed_model_is_reduced_around_its_node_and_reduced_txt_shows_the_node(tmp_path):
    """A malformed node lives in the lowered model, not in the graph: the graph around it is reduced (the same
    node on any graph that offers it a float value to read) and reduced.txt names the node it breaks."""
    from dlcfuzz.exec.pool import TaskResult
    from dlcfuzz.oracle.testcase import TestCase, observations_to_bytes
    from dlcfuzz.reduce.budget import ReductionBudget
    from dlcfuzz.strategies.base import Finding

    silent = SilentOrt()

    class InProcess:  # the reducer's worker, in this process, on the planted compiler
        def run(self, payload: bytes, timeout_s: float | None = None) -> TaskResult:
            obs = run_configs(silent, TestCase.from_bytes(payload), invalid=True)
            return TaskResult(0, "ok", observations_to_bytes(obs, silent.version()))

    s = strategy(get_backend("onnxruntime"))
    s.ctx.reduce, s.ctx.reducer_pool = True, InProcess
    s.ctx.budget_box[0] = ReductionBudget(seconds=120, checks=400)
    reduced = 0
    for seed in range(12):
        test = s.malformed_test(seed, seed, np.random.default_rng(seed), ["axis-out-of-range"])
        if test is None or len(test.payload.graph.nodes) < 3:
            continue
        tc = test.payload
        broken = tc.meta["broken"]
        v = judge_rejection("onnxruntime", broken, run_configs(silent, tc, invalid=True), s.per_op_rules,
                            s.lenient(broken))[0]
        assert v.category == "accepted-invalid"
        red = s.reduce(test, v)
        assert red.reduced_nodes < red.nodes, red.summary
        folder = tmp_path / f"f{seed}"
        folder.mkdir()
        red.write(Finding(1, seed, "sig", v.key, "title", folder))
        text = (folder / "reduced.txt").read_text()
        assert "malformed_axis_out_of_range" in text and KINDS["axis-out-of-range"] in text, text
        reduced += 1
        if reduced == 2:
            break
    assert reduced == 2


def test_a_disruptive_finding_that_is_not_an_accepted_invalid_one_reduces_without_a_reference() -> None:
    """A disruptive test's reducer pool replies without a reference (an invalid graph has no semantics). Reducing
    one of its findings of another category (a crash or inconsistency of a malformed model, judged by the graph
    strategy's predicate) read the reference's reason and died with TypeError: an internal error of an `auto`
    campaign against onnxruntime 1.20.1. The predicate now compares the configurations: the real onnxruntime,
    which rejects the malformed node everywhere, does not show an inconsistency, and no candidate raises."""
    from dlcfuzz.exec.pool import TaskResult
    from dlcfuzz.oracle.testcase import TestCase, observations_to_bytes
    from dlcfuzz.oracle.verdict import Verdict

    real = get_backend("onnxruntime")

    class InProcess:  # the disruptive reducer's worker, in this process: no reference in its reply
        def run(self, payload: bytes, timeout_s: float | None = None) -> TaskResult:
            obs = run_configs(real, TestCase.from_bytes(payload), invalid=True)
            return TaskResult(0, "ok", observations_to_bytes(obs, real.version()))

    s = strategy(real)
    s.ctx.reduce, s.ctx.reducer_pool = True, InProcess
    judged = 0
    for seed in range(12):
        test = s.malformed_test(seed, seed, np.random.default_rng(seed), ["axis-out-of-range"])
        if test is None:
            continue
        tc = test.payload
        v = Verdict("bug", "inconsistency", "planted", [c.name for c in tc.configs], key="inconsistency|planted")
        assert s.still_fails(tc, v)(tc.graph, tc.inputs) is False
        judged += 1
        if judged == 3:
            break
    assert judged == 3
