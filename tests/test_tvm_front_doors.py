"""TVM's two front doors are probed apart: a test drawn for the ONNX-frontend configuration draws only what
TVM's ONNX frontend imports (operators, and the forms of them it lacks: `door_form_gaps`), while the direct Relax
lowering still gets what only it takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlcfuzz.gen.coverage import Coverage
from dlcfuzz.ir.graph import Graph, Node, Value

# celu: our direct lowering lowers it, TVM's ONNX frontend (apache-tvm 0.27) has no converter for Celu
FRONTEND_LACKS = "celu"
# pow: both doors take it, but the frontend passes an exponent of another dtype to relax.power, which rejects it
FORM_LACKED = "pow"
PICKED = (FRONTEND_LACKS, "relu", "add", FORM_LACKED)


@pytest.fixture(scope="module")
def strategies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """hirgen, random and disruptive hirgen on TVM, started (both probes, in a cache of their own) on the
    picked operators in float32: one probe per door for all the tests below."""
    pytest.importorskip("tvm")
    from dlcfuzz.backends import get_backend
    from dlcfuzz.strategies import probe as probe_module
    from dlcfuzz.strategies.base import Context
    from dlcfuzz.strategies.graph import RandomStrategy
    from dlcfuzz.strategies.hirgen import DisruptiveHirgen, HirgenStrategy

    every = probe_module.probe_cases
    tvm = get_backend("tvm")
    made: dict[str, Any] = {"backend": tvm}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DLCFUZZ_CACHE", str(tmp_path_factory.mktemp("cache")))
        mp.setattr(probe_module, "probe_cases", lambda seed=0, form_gaps=None: [
            c for c in every(seed, form_gaps) if c[0] in PICKED and c[1] == "float32"])
        for name, kind, mode in (("hirgen", HirgenStrategy, "strict"), ("random", RandomStrategy, "strict"),
                                 ("disruptive", DisruptiveHirgen, "disruptive")):
            ctx = Context("tvm", 0, {"ops": 6, "only_ops": list(PICKED), "mode": mode, "sizes": "small"},
                          list(tvm.default_pair()), False, tvm, tvm.version(), None, Coverage(), Path("."), False,
                          0.0, None, lambda: None, log=lambda msg: None)
            s = kind(ctx)
            s.start(None, False)
            made[name] = s
    return made


def ops_in(tc: Any) -> set[str]:
    return {n.op for n in tc.graph.nodes} | {n.op for f in tc.graph.functions.values() for n in f.nodes}


def test_an_operator_the_frontend_cannot_import_is_never_drawn_for_it(strategies: dict[str, Any]) -> None:
    from dlcfuzz.backends.tvm.backend import ONNX_DOOR

    hirgen = strategies["hirgen"]
    assert set(hirgen.doors) == {ONNX_DOOR}
    assert hirgen.supported(FRONTEND_LACKS, "float32") and not hirgen.doors[ONNX_DOOR](FRONTEND_LACKS, "float32")
    assert hirgen.doors[ONNX_DOOR]("relu", "float32")
    for name in ("hirgen", "random"):
        door, other = [], []
        for seq in range(40):
            tc = strategies[name].make_test(seq, 1000 + seq).payload
            (door if any(c.name == ONNX_DOOR for c in tc.configs) else other).append(tc)
        assert 10 <= len(door) <= 34, (name, len(door))  # about ONNX_DOOR_SHARE of the tests
        assert not any(FRONTEND_LACKS in ops_in(tc) for tc in door), name
        assert any(FRONTEND_LACKS in ops_in(tc) for tc in other), name  # the direct lowering still gets it
    # every disruptive test compares the frontend: none draws what it cannot import
    disruptive = [strategies["disruptive"].make_test(seq, 2000 + seq).payload for seq in range(15)]
    assert all(any(c.name == ONNX_DOOR for c in tc.configs) for tc in disruptive)
    assert not any(FRONTEND_LACKS in ops_in(tc) for tc in disruptive)


def test_a_test_drawn_for_the_frontend_is_imported_and_judged_there(strategies: dict[str, Any]) -> None:
    from dlcfuzz.backends.tvm.backend import ONNX_DOOR
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.oracle.testcase import TestCase

    tvm = strategies["backend"]
    tc = next(t for seq in range(40) for t in [strategies["random"].make_test(seq, 3000 + seq).payload]
              if any(c.name == ONNX_DOOR for c in t.configs))
    obs = run_configs(tvm, TestCase(tc.graph, tc.inputs, [tvm.configs()[ONNX_DOOR]], seed=tc.seed, compiler="tvm"))
    assert [o.status for o in obs] == ["ok"], [o.error for o in obs]


def mixed_pow(tc: Any) -> bool:
    env = tc.graph.types()
    return any(n.op == FORM_LACKED and env[n.inputs[1]].dtype != env[n.inputs[0]].dtype for n in tc.graph.nodes)


def test_a_form_the_frontend_cannot_import_is_never_drawn_for_it(strategies: dict[str, Any]) -> None:
    """Pow with an exponent of another dtype: a form gap of the ONNX-frontend door alone. Tests drawn for the door
    never hold it and every one of them imports through the real frontend; the direct lowering's tests still get it,
    and the frontend really rejects it."""
    from tvm.relax.frontend.onnx import from_onnx

    from dlcfuzz.backends.tvm.backend import ONNX_DOOR
    from dlcfuzz.lower.onnx import to_onnx

    tvm = strategies["backend"]
    assert tvm.door_form_gaps(ONNX_DOOR, FORM_LACKED) and not tvm.known_form_gaps(FORM_LACKED)
    door, other = [], []
    for seq in range(60):
        tc = strategies["random"].make_test(seq, 5000 + seq).payload
        (door if any(c.name == ONNX_DOOR for c in tc.configs) else other).append(tc)
    assert sum(FORM_LACKED in ops_in(tc) for tc in door) >= 10  # the operator itself is still drawn there
    assert not any(mixed_pow(tc) for tc in door)
    for tc in door:
        from_onnx(to_onnx(tc.graph), keep_params_in_input=False)  # imports: no form it lacks
    lacking = [tc for tc in other if mixed_pow(tc)]
    assert lacking  # the direct lowering still gets the form
    env = lacking[0].graph.types()
    node = next(n for n in lacking[0].graph.nodes if n.op == FORM_LACKED and env[n.inputs[1]].dtype != env[n.inputs[0]].dtype)
    alone = Graph(inputs=[Value(f"x{k}", env[i]) for k, i in enumerate(node.inputs)],
                  nodes=[Node(FORM_LACKED, ["x0", "x1"], [Value("y", env[node.outputs[0].name])], {})], outputs=["y"])
    with pytest.raises(Exception, match="same datatype"):
        from_onnx(to_onnx(alone), keep_params_in_input=False)


def run_alone(op: str, in_types: list[Any], attrs: dict[str, Any], consumer: str | None = None) -> str:
    """One node of `op` (with `consumer` reading its first output), built and run through the ONNX-frontend door:
    'ok', 'error: ...', or 'wrong: ...' when an output's dtype or shape is not the one ONNX defines."""
    import numpy as np

    from dlcfuzz.backends import get_backend
    from dlcfuzz.backends.tvm.backend import ONNX_DOOR
    from dlcfuzz.ops import check_graph, get_op

    tvm = get_backend("tvm")
    ins = [Value(f"x{k}", t) for k, t in enumerate(in_types)]
    outs = get_op(op).infer(in_types, attrs)
    nodes = [Node(op, [v.name for v in ins], [Value(f"y{k}", t) for k, t in enumerate(outs)], attrs)]
    if consumer is not None:
        (t,) = get_op(consumer).infer([outs[0]], {})
        nodes.append(Node(consumer, ["y0"], [Value("z", t)], {}))
    g = Graph(inputs=ins, nodes=nodes, outputs=["z"] if consumer else [f"y{k}" for k in range(len(outs))])
    check_graph(g)
    rng = np.random.default_rng(0)
    inputs = {v.name: rng.integers(0, 3, v.type.shape).astype(v.type.dtype) for v in ins}
    config = tvm.configs()[ONNX_DOOR]
    try:
        got = tvm.build(tvm.lower(g, config), g, config).run(inputs)
    except Exception as e:  # noqa: BLE001 - the frontend's or the build's rejection is what is measured
        return f"error: {type(e).__name__}: {e}"
    want = g.output_types()
    wrong = [f"{a.dtype}{list(a.shape)} != {t.dtype}{list(t.shape)}" for a, t in zip(got, want, strict=True)
             if (str(a.dtype), tuple(a.shape)) != (t.dtype, tuple(t.shape))]
    return f"wrong: {wrong}" if wrong else "ok"


def door_label(ops: set[str], reason: str, dtype: str = "float32") -> str | None:
    """The id of the register entry (None: none) that labels an inconsistency of these operators, for this reason
    (shape, dtype, value), between the direct lowering and the ONNX-frontend door."""
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    configs = ("tvm-unopt", "tvm-onnx-opt")
    key = f"inconsistency|tvm|{','.join(configs)}|{reason}|ops={','.join(sorted(ops))}"
    f = FindingFacts(1, "tvm", "inconsistency", configs, "", frozenset(ops), frozenset({dtype}), "", key, reason)
    k = Register(use_env=False).match(f, "")
    return k.id if k else None


def _t(dtype: str, shape: tuple[int, ...]) -> Any:
    from dlcfuzz.ir.types import TensorType

    return TensorType(dtype, shape)


_ONE_HOT = {"depth": 3, "depth_dtype": "int64", "values": [0, 1]}
_POOL3D = {"dilations": [1, 1, 1], "kernel": [1, 2, 2], "pads": [0] * 6, "strides": [2, 1, 2]}
_LAYER_NORM = {"axis": -1, "epsilon": 1e-5}
# (operator, input types, the form the gap names, its neighbour the door keeps, consumer of the first output,
# what the lacked form gives): each door form gap of the known frontend bugs, measured alone on the real frontend
DOOR_GAPS = [
    ("one_hot", lambda: [_t("int64", (2, 1))], {**_ONE_HOT, "axis": -2, "dtype": "int64"},
     {**_ONE_HOT, "axis": 1, "dtype": "int64"}, None, "Index 2 out of bounds"),
    ("one_hot", lambda: [_t("int64", (2, 1))], {**_ONE_HOT, "axis": -1, "dtype": "int32"},
     {**_ONE_HOT, "axis": -1, "dtype": "int64"}, None, r"int64\[2, 1, 3\] != int32"),
    ("max_pool3d", lambda: [_t("uint8", (1, 1, 1, 4, 2))], {**_POOL3D, "auto_pad": "SAME_LOWER"},
     {**_POOL3D, "auto_pad": "SAME_UPPER"}, None, "cannot make uint from negative value"),
    ("layer_norm", lambda: [_t("float32", (2, 3)), _t("float32", (3,)), _t("float32", (3,))],
     {**_LAYER_NORM, "outputs": 2}, {**_LAYER_NORM, "outputs": 1}, None, r"float32\[\] != float32\[2, 1\]"),
    ("shape", lambda: [_t("float32", (2, 3))], {"start": 0, "end": 2}, None, "neg", "cannot handle ShapeExpr"),
]


@pytest.mark.parametrize("op,types,lacked,kept,consumer,fails", DOOR_GAPS, ids=[f"{d[0]}-{k}" for k, d in
                                                                               enumerate(DOOR_GAPS)])
def test_a_known_frontend_bug_is_a_door_form_gap_and_fails_alone(strategies: dict[str, Any], op: str, types: Any,
                                                                 lacked: dict[str, Any], kept: dict[str, Any] | None,
                                                                 consumer: str | None, fails: str) -> None:
    """The form a door gap names fails through the real frontend when imported alone (or returns another dtype or
    shape than ONNX defines), its neighbour form runs, and the gap matches the one and not the other (the direct
    lowering keeps both). Shape has no neighbour: any consumer outside the frontend's short list refuses it."""
    import re

    from dlcfuzz.backends.tvm.backend import ONNX_DOOR
    from dlcfuzz.gen.random import form_gap_of

    tvm = strategies["backend"]
    ins = types()
    door_gaps = lambda o: tvm.door_form_gaps(ONNX_DOOR, o)  # noqa: E731
    assert form_gap_of(op, ins, lacked, door_gaps) is not None
    assert form_gap_of(op, ins, lacked, tvm.known_form_gaps) is None
    got = run_alone(op, ins, lacked, consumer)
    assert got != "ok" and re.search(fails, got), got
    if kept is not None:
        assert form_gap_of(op, ins, kept, door_gaps) is None
        assert run_alone(op, ins, kept) == "ok"


def test_the_frontend_returns_dropouts_mask_in_the_datas_dtype_and_the_register_names_it() -> None:
    """tvm-onnx-dropout-mask-not-bool (found by the door campaign, reproduced with TVM alone): through the ONNX
    frontend the mask of an inference Dropout comes back as the data's dtype (ones), where ONNX's is bool; without
    the mask the door runs it right. This asserts the wrong dtype, so it fails once the installed TVM is fixed."""

    for dtype in ("float32", "float64"):
        got = run_alone("dropout", [_t(dtype, (2, 3))], {"ratio": 0.5, "mask": 1})
        assert got == f"wrong: ['{dtype}[2, 3] != bool[2, 3]']", got
        assert run_alone("dropout", [_t(dtype, (2, 3))], {"ratio": 0.5}) == "ok"
    for ops, expected in (({"dropout", "neg"}, "tvm-onnx-dropout-mask-not-bool"), ({"neg"}, None)):
        assert door_label(ops, "dtype") == expected, ops


def test_the_frontend_takes_floor_outputs_for_same_lower_strided_pooling_and_the_register_names_it() -> None:
    """tvm-onnx-maxpool-same-lower-stride (known upstream, apache/tvm#20404): MaxPool with SAME_LOWER and stride 2
    gives floor(in / stride) outputs where ONNX says ceil; SAME_UPPER, and stride 1, are right. This asserts the
    wrong shape, so it fails once the installed TVM is fixed."""

    pool = {"kernel": [2], "pads": [0, 0], "dilations": [1]}
    x = [_t("float32", (1, 1, 5))]
    assert run_alone("max_pool1d", x, {**pool, "strides": [2], "auto_pad": "SAME_LOWER"}) == \
        "wrong: ['float32[1, 1, 2] != float32[1, 1, 3]']"
    assert run_alone("max_pool1d", x, {**pool, "strides": [2], "auto_pad": "SAME_UPPER"}) == "ok"
    assert run_alone("max_pool1d", x, {**pool, "strides": [1], "auto_pad": "SAME_LOWER"}) == "ok"
    for ops, reason, expected in (({"max_pool1d", "neg"}, "shape", "tvm-onnx-maxpool-same-lower-stride"),
                                  ({"max_pool1d", "neg"}, "value", None)):
        assert door_label(ops, reason) == expected, (ops, reason)


def test_the_frontend_ignores_resize_sizes_of_batch_and_channel_and_the_register_names_it() -> None:
    """tvm-onnx-resize-batch-channel-ignored (found by a door campaign, reproduced with TVM alone): the frontend's
    Resize resizes the spatial axes only, so sizes that change the first two axes are ignored and the result has
    the input's batch and channel; sizes that keep them are right. This asserts the wrong shape, so it fails once
    the installed TVM is fixed."""

    nearest = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    for dtype in ("float32", "int64"):
        x = [_t(dtype, (1, 5, 5))]
        assert run_alone("resize", x, {**nearest, "sizes": [1, 4, 7]}) == \
            f"wrong: ['{dtype}[1, 5, 7] != {dtype}[1, 4, 7]']"
        assert run_alone("resize", x, {**nearest, "sizes": [1, 5, 7]}) == "ok"
    for ops, reason, expected in (({"resize"}, "shape", "tvm-onnx-resize-batch-channel-ignored"),
                                  ({"resize"}, "value", None)):
        assert door_label(ops, reason, "int64") == expected, (ops, reason)


def test_a_maxunpool_after_a_resize_of_batch_and_channel_fails_to_import_and_the_register_names_it() -> None:
    """The same Resize bug seen as an import error (issue 40's false-positive run with regions, tvm-onnx-opt, two
    nodes), reproduced with onnx and TVM's public API alone: a float64 [2, 2, 4] resized to [3, 3, 2] comes out
    [2, 2, 2], so a MaxUnpool of it with 18 indices fails its ScatterElements shape check, while the same MaxUnpool
    of a [3, 3, 2] graph input imports. Asserts the failure, so it fails once the installed TVM is fixed."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    pytest.importorskip("tvm")
    from tvm.relax.frontend.onnx import from_onnx

    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    indices = np.array([0, 3, 5, 6, 8, 10, 12, 15, 16, 19, 21, 22, 24, 26, 28, 31, 32, 35], np.int64).reshape(3, 3, 2)

    def model(resized: bool) -> Any:
        consts = [numpy_helper.from_array(indices, "i"), numpy_helper.from_array(np.array([3, 3, 2], np.int64), "s")]
        nodes = [helper.make_node("MaxUnpool", ["v" if resized else "x", "i"], ["y"], kernel_shape=[2], strides=[2])]
        if resized:
            nodes.insert(0, helper.make_node("Resize", ["x", "", "", "s"], ["v"], mode="linear",
                                             coordinate_transformation_mode="align_corners"))
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE,
                                                                             [2, 2, 4] if resized else [3, 3, 2])],
                                  [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3, 3, 4])], consts)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        m.ir_version = 8
        return m

    from_onnx(model(resized=False), keep_params_in_input=False)
    with pytest.raises(Exception, match=r"indices: R.shape\(\[18\]\), updates: R.shape\(\[8\]\)"):
        from_onnx(model(resized=True), keep_params_in_input=False)
    error = ("ValueError: ScatterElements op requires the indices tensor to have the same shape with updates tensor. "
             "However, the given shapes are indices: R.shape([18]), updates: R.shape([8])")
    register = Register(use_env=False)
    for ops, detail, expected in (({"resize", "max_unpool"}, error, "tvm-onnx-resize-batch-channel-ignored"),
                                  ({"max_unpool"}, error, None), ({"resize", "max_unpool"}, "ValueError: other", None)):
        f = FindingFacts(1, "tvm", "unexpected-error", ("tvm-onnx-opt",), "", frozenset(ops), frozenset({"float64"}), "",
                         "unexpected-error|tvm|ValueError|" + detail.splitlines()[0], "")
        k = register.match(f, detail)
        assert (k.id if k else None) == expected, (ops, detail)


def test_bool_reduce_max_and_min_fail_to_build_through_the_frontend_and_the_register_names_it() -> None:
    """tvm-reduce-max-min-bool (found by issue 36's acceptance campaign, reproduced with TVM alone): ReduceMax and
    ReduceMin of bool reach R.max/R.min on bool, whose legalization has no extreme value for bool; dlcfuzz's own
    lowering (on uint8) runs. This asserts the failure, so it fails once the installed TVM is fixed."""
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    reduce = {"axes": [1], "keepdims": 0, "noop_with_empty_axes": 0}
    for op, which in (("reduce_max", "min_value"), ("reduce_min", "max_value")):
        got = run_alone(op, [_t("bool", (2, 3))], reduce)
        assert got.startswith("error: InternalError") and f"Cannot decide {which} for" in got, got
        assert run_alone(op, [_t("int32", (2, 3))], reduce) == "ok"
        for message, expected in ((got, "tvm-reduce-max-min-bool"), ("error: InternalError: Check failed", None)):
            key = f"unexpected-error|tvm|tvm-onnx-opt|ops={op}"
            f = FindingFacts(1, "tvm", "unexpected-error", ("tvm-onnx-opt",), "", frozenset({op}),
                             frozenset({"bool"}), "", key, message)
            k = Register(use_env=False).match(f, message)
            assert (k.id if k else None) == expected, (message, k)


def test_the_c_target_fails_to_compile_packed_sort_calls_and_the_register_names_it() -> None:
    """tvm-codegen-c-packed-call-stack (found by issue 36's acceptance campaign, reproduced with TVM alone): the C
    source target prints a packed call's argument stack inside a cast, so sort, argsort and topk (tvm.contrib.sort
    packed functions) do not compile for `c`; `llvm` builds and runs them. This asserts the failure, so it fails
    once the installed TVM is fixed."""
    import numpy as np
    from tvm import relax, runtime

    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    ops = {"sort": lambda x: relax.op.sort(x, axis=-1), "argsort": lambda x: relax.op.argsort(x, axis=-1),
           "topk": lambda x: relax.op.topk(x, k=1, axis=-1, ret_type="values")}
    errors = []
    for name, make in ops.items():
        bb = relax.BlockBuilder()
        x = relax.Var("x", relax.TensorType((1, 4), "float32"))
        with bb.function("main", [x]):
            bb.emit_func_output(bb.emit(make(x)))
        ex = relax.build(bb.get(), target="llvm")
        got = relax.VirtualMachine(ex, runtime.cpu())["main"](runtime.tensor(np.array([[3, 1, 4, 2]], "float32")))
        assert got.numpy().shape[0] == 1, name
        c_module = relax.build(bb.get(), target="c")
        with pytest.raises(Exception, match="expected primary-expression before .stack_") as info:
            relax.VirtualMachine(c_module, runtime.cpu())  # the C source is compiled when the module is loaded
        errors.append(f"RuntimeError: {info.value}")
    for message, expected in ((errors[-1], "tvm-codegen-c-packed-call-stack"), ("RuntimeError: Compilation error", None)):
        key = "error|tvm|RuntimeError|RuntimeError: Compilation error:|export_library/create_shared/_linux_compile"
        f = FindingFacts(1, "tvm", "unexpected-error", ("tvm-opt-c",), "", frozenset({"topk"}), frozenset({"int64"}),
                         "", key, message)
        k = Register(use_env=False).match(f, message)
        assert (k.id if k else None) == expected, (message[:200], k)


def test_the_frontend_leaves_out_mean_variance_normalizations_epsilon_and_the_register_names_it() -> None:
    """tvm-onnx-mvn-no-epsilon (found by issue 36's acceptance campaign, reproduced with TVM alone): the frontend's
    MeanVarianceNormalization divides by the bare standard deviation, where ONNX's function body adds 1e-9; values
    far above 1e-9 agree. This asserts the wrong values, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnx
    from onnx.reference import ReferenceEvaluator
    from tvm import relax, runtime
    from tvm.relax.frontend.onnx import from_onnx


    h, f32 = onnx.helper, onnx.TensorProto.FLOAT
    graph = h.make_graph([h.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0])], "g",
                         [h.make_tensor_value_info("x", f32, [2])], [h.make_tensor_value_info("y", f32, [2])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    model.ir_version = 8
    vm = relax.VirtualMachine(relax.build(from_onnx(model, keep_params_in_input=False), target="llvm"), runtime.cpu())
    for x, tvm_gives in (([1e-9, 3e-9], [-1.0, 1.0]), ([1.0, 3.0], None)):
        a = np.asarray(x, np.float32)
        (spec,) = ReferenceEvaluator(model).run(None, {"x": a})
        got = vm["main"](runtime.tensor(a)).numpy()
        np.testing.assert_allclose(got, spec if tvm_gives is None else tvm_gives, rtol=1e-5)
        if tvm_gives is not None:
            np.testing.assert_allclose(spec, [-0.5, 0.5], rtol=1e-5)
    for ops, reason, expected in (({"mean_variance_norm"}, "value", "tvm-onnx-mvn-no-epsilon"),
                                  ({"mean_variance_norm", "neg"}, "value", None)):
        assert door_label(ops, reason) == expected, (ops, reason)


def test_fold_batchnorm_to_conv2d_adds_a_float32_epsilon_and_the_register_names_it() -> None:
    """tvm-fold-batchnorm-to-conv2d-float32-epsilon (found by issue 36's acceptance campaign, reproduced with the pass
    alone): FoldBatchnormToConv2D adds epsilon as a float32 scalar, so it raises on a float64 or float16 conv2d +
    batch_norm and folds float32. This asserts the failure, so it fails once the installed TVM is fixed."""
    import numpy as np
    from tvm import relax

    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    def conv_bn(dtype: str) -> Any:
        rng = np.random.default_rng(0)

        def const(*shape: int, shift: float = 0.0) -> Any:
            return relax.const((np.abs(rng.standard_normal(shape)) + shift).astype(dtype), dtype)

        bb = relax.BlockBuilder()
        x = relax.Var("x", relax.TensorType((1, 4, 6, 6), dtype))
        with bb.function("main", [x]):
            with bb.dataflow():
                y = bb.emit(relax.op.nn.conv2d(x, const(6, 4, 3, 3), padding=[1, 1, 1, 1]))
                z = bb.emit(relax.op.nn.batch_norm(y, const(6), const(6), const(6), const(6, shift=0.5), axis=1))
                out = bb.emit_output(bb.emit(relax.TupleGetItem(z, 0)))
            bb.emit_func_output(out)
        return bb.get()

    relax.transform.FoldBatchnormToConv2D()(conv_bn("float32"))
    messages = []
    for dtype in ("float64", "float16"):
        with pytest.raises(TypeError, match=r"same datatype[\s\S]*T\.float32\(1") as info:
            relax.transform.FoldBatchnormToConv2D()(conv_bn(dtype))
        messages.append(f"TypeError: {info.value}")
    for ops, message, expected in (({"conv2d", "batch_norm"}, messages[0], "tvm-fold-batchnorm-to-conv2d-float32-epsilon"),
                                   ({"conv2d", "batch_norm"}, "TypeError: Binary operators must have the same datatype",
                                    None)):
        f = FindingFacts(1, "tvm", "unexpected-error", ("tvm-oatest",), "", frozenset(ops), frozenset({"float64"}), "",
                         "error|tvm|TypeError", message)
        k = Register(use_env=False).match(f, message)
        assert (k.id if k else None) == expected, (message[:160], k)


def test_the_frontend_swaps_batch_norms_momentum_weights_in_training_and_the_register_names_it() -> None:
    """tvm-onnx-batchnorm-momentum-swapped (found by issue 36's acceptance campaign, reproduced with TVM alone): ONNX
    keeps `momentum` of the running statistic, R.nn.batch_norm gives it to the batch's, and the frontend passes it
    unconverted. This asserts the swapped running mean, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator
    from tvm import relax, runtime
    from tvm.relax.frontend.onnx import from_onnx


    h, f32 = onnx.helper, onnx.TensorProto.FLOAT
    stats = {"s": np.ones(3), "b": np.zeros(3), "m": np.array([1.0, 2.0, 3.0]), "v": np.ones(3)}
    node = h.make_node("BatchNormalization", ["x", *stats], ["y", "mean", "var"], training_mode=1, momentum=0.9)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("x", f32, [2, 3, 2])],
                         [h.make_tensor_value_info(n, f32, None) for n in ("y", "mean", "var")],
                         initializer=[numpy_helper.from_array(v.astype(np.float32), k) for k, v in stats.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 15)])
    model.ir_version = 8
    x = np.zeros((2, 3, 2), np.float32)  # a batch mean of 0
    spec = ReferenceEvaluator(model).run(None, {"x": x})
    vm = relax.VirtualMachine(relax.build(from_onnx(model, keep_params_in_input=False), target="llvm"), runtime.cpu())
    got = vm["main"](runtime.tensor(x))
    np.testing.assert_allclose(spec[1], [0.9, 1.8, 2.7], rtol=1e-6)
    np.testing.assert_allclose(got[1].numpy(), [0.1, 0.2, 0.3], rtol=1e-5)
    np.testing.assert_allclose(got[0].numpy(), spec[0], atol=1e-6)  # Y is right
    for ops, expected in (({"batch_norm"}, "tvm-onnx-batchnorm-momentum-swapped"), ({"batch_norm", "neg"}, None)):
        assert door_label(ops, "value") == expected, ops


def test_the_frontend_shifts_by_out_of_range_amounts_as_the_machine_does_and_the_register_names_it() -> None:
    """tvm-onnx-bitshift-opset28-out-of-range-amounts (found by issue 36's acceptance campaign, reproduced with TVM
    alone): opset 28 defines a signed BitShift by a negative amount or one of at least the bit width as sign
    extension alone; the frontend gives the machine shift. This asserts TVM's values, so it fails once fixed."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator
    from tvm import relax, runtime
    from tvm.relax.frontend.onnx import from_onnx


    h, i32 = onnx.helper, onnx.TensorProto.INT32
    amounts = np.array([1, 31, 32, 33, -1, -32], np.int32)
    x = np.array([3, 3, 3, -3, 3, -3], np.int32)
    for direction, spec_gives, tvm_gives in (("LEFT", [6, -2**31, 0, 0, 0, 0], [6, -2**31, 3, -6, -2**31, -3]),
                                             ("RIGHT", [1, 0, 0, -1, 0, -1], [1, 0, 0, -1, 0, -3])):
        graph = h.make_graph([h.make_node("BitShift", ["x", "y"], ["z"], direction=direction)], "g",
                             [h.make_tensor_value_info("x", i32, [6])], [h.make_tensor_value_info("z", i32, [6])],
                             initializer=[numpy_helper.from_array(amounts, "y")])
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 28)])
        model.ir_version = 13
        assert ReferenceEvaluator(model).run(None, {"x": x})[0].tolist() == spec_gives
        ex = relax.build(from_onnx(model, keep_params_in_input=False), target="llvm")
        assert relax.VirtualMachine(ex, runtime.cpu())["main"](runtime.tensor(x)).numpy().tolist() == tvm_gives
    for ops, expected in (({"bit_shift"}, "tvm-onnx-bitshift-opset28-out-of-range-amounts"), ({"bit_shift", "add"}, None)):
        assert door_label(ops, "value", "int32") == expected, ops


def _onnx_run(model: Any, inputs: list[Any], passes: bool = True) -> Any:
    """The ONNX model imported by TVM's frontend, built (after the ONNX-frontend door's Relax passes, or none) and
    run on `inputs`: what the VM returns."""
    from tvm import relax, runtime, target, transform
    from tvm.relax.frontend.onnx import from_onnx

    mod, llvm = from_onnx(model, keep_params_in_input=False), target.Target("llvm")
    names = ("LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR") if passes else ()
    with transform.PassContext(opt_level=3):
        with llvm:
            mod = transform.Sequential([getattr(relax.transform, p)() for p in names])(mod)
        ex = relax.build(mod, target=llvm)
    return relax.VirtualMachine(ex, runtime.cpu())["main"](*[runtime.tensor(x) for x in inputs])


def _error_label(category: str, ops: set[str], dtype: str, message: str) -> str | None:
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    key = f"{category}|tvm|tvm-onnx-opt|ops={','.join(sorted(ops))}"
    f = FindingFacts(1, "tvm", category, ("tvm-onnx-opt", "tvm-unopt"), "", frozenset(ops), frozenset({dtype}), "",
                     key, message)
    k = Register(use_env=False).match(f, message)
    return k.id if k else None


def test_the_frontend_binds_a_branch_node_to_its_converters_whole_tuple_and_the_register_names_it() -> None:
    """tvm-onnx-if-branch-node-bound-to-tuple (found by issue 36's acceptance campaign, reproduced with TVM alone):
    inside an If branch, a Dropout that declares its output alone is bound to the converter's (output, mask) tuple,
    so a Neg of it fails to import; outside an If the same nodes run. This asserts the failure, so it fails once
    the installed TVM is fixed."""
    import numpy as np
    import onnx

    h, f32 = onnx.helper, onnx.TensorProto.FLOAT
    x = np.ones((2, 3), np.float32)
    dropout_neg = [h.make_node("Dropout", ["x"], ["d"]), h.make_node("Neg", ["d"], ["y"])]

    def model(nodes: list[Any], extra_inputs: list[Any]) -> Any:
        m = h.make_model(h.make_graph(nodes, "g", [*extra_inputs, h.make_tensor_value_info("x", f32, [2, 3])],
                                      [h.make_tensor_value_info("y", f32, [2, 3])]),
                         opset_imports=[h.make_opsetid("", 18)])
        m.ir_version = 8
        return m

    plain = model(dropout_neg, [])
    np.testing.assert_array_equal(_onnx_run(plain, [x]).numpy(), -x)
    branch = h.make_graph(dropout_neg, "branch", [], [h.make_tensor_value_info("y", f32, [2, 3])])
    in_if = model([h.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)],
                  [h.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])])
    onnx.checker.check_model(in_if, full_check=True)
    for passes in (True, False):
        with pytest.raises(TypeError, match=r"relax\.negative.*to be a tensor") as info:
            _onnx_run(in_if, [np.array(True), x], passes)
        pair = 'R.Tensor((T.int64(2), T.int64(3)), dtype="float32")'
        assert f"instead of type T.Tuple({pair}, {pair})" in str(info.value)  # the (output, mask) pair
    # a branch that returns the Dropout's output makes the If return the (output, mask) pair for its one tensor
    returned = h.make_graph(dropout_neg[:1], "branch", [], [h.make_tensor_value_info("d", f32, [2, 3])])
    gives_d = model([h.make_node("If", ["c"], ["y"], then_branch=returned, else_branch=returned)],
                    [h.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])])
    got = _onnx_run(gives_d, [np.array(True), x])
    assert len(got) == 2 and all(np.array_equal(t.numpy(), x) for t in got)
    message = f"tvm-onnx-opt rejects (TypeError: {info.value}) while tvm-unopt compiles"
    assert _error_label("inconsistent-rejection", {"if", "dropout", "neg"}, "float32", message) == \
        "tvm-onnx-if-branch-node-bound-to-tuple"
    assert _error_label("inconsistent-rejection", {"dropout", "neg"}, "float32", message) is None  # no If: another bug


def test_a_variadic_max_of_a_branch_layernorm_fails_on_its_tuple_and_the_register_names_it() -> None:
    """The same binding seen by a variadic operator (issue 40's false-positive run with regions, tvm-onnx-opt):
    inside an If branch a LayerNormalization that declares Y alone is bound to its converter's (Y, mean, inv_std_dev)
    tuple, and a Max of it reads the operands' shapes and fails with an AttributeError; outside an If the same nodes
    run. Reproduced with onnx and TVM's public API alone; asserts the failure, so it fails once TVM is fixed."""
    import numpy as np
    import onnx
    import onnx.reference

    h, f16 = onnx.helper, onnx.TensorProto.FLOAT16
    x, s, b, m = (np.array([[0.5, -1.0, 2.0]], np.float16) * k for k in (1, 2, 3, 4))
    nodes = [h.make_node("LayerNormalization", ["x", "s", "b"], ["n"], axis=0),
             h.make_node("Max", ["n", "m"], ["y"])]
    ins = [h.make_tensor_value_info(name, f16, [1, 3]) for name in ("x", "s", "b", "m")]

    def model(graph_nodes: list[Any], extra_inputs: list[Any]) -> Any:
        made = h.make_model(h.make_graph(graph_nodes, "g", [*extra_inputs, *ins], [h.make_tensor_value_info("y", f16, [1, 3])]),
                            opset_imports=[h.make_opsetid("", 18)])
        made.ir_version = 8
        return made

    plain = model(nodes, [])
    want = onnx.reference.ReferenceEvaluator(plain).run(None, {"x": x, "s": s, "b": b, "m": m})[0]
    np.testing.assert_allclose(_onnx_run(plain, [x, s, b, m]).numpy(), want, rtol=1e-2)
    branch = h.make_graph(nodes, "branch", [], [h.make_tensor_value_info("y", f16, [1, 3])])
    in_if = model([h.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)],
                  [h.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])])
    onnx.checker.check_model(in_if, full_check=True)
    with pytest.raises(AttributeError, match="'TupleType' object has no attribute 'shape'") as info:
        _onnx_run(in_if, [np.array(True), x, s, b, m])
    message = f"AttributeError: {info.value}"
    assert _error_label("unexpected-error", {"if", "layer_norm", "max"}, "float16", message) == \
        "tvm-onnx-if-branch-node-bound-to-tuple"
    assert _error_label("unexpected-error", {"layer_norm", "max"}, "float16", message) is None  # no If: another bug


def test_the_frontends_maxunpool_pairs_pads_by_begin_and_the_register_names_it() -> None:
    """tvm-onnx-maxunpool-pads-paired-by-begin (issue 40's false-positive run with regions, tvm-onnx-opt, reproduced
    with onnx and TVM's public API alone): the frontend's MaxUnpool pairs consecutive pads, so a 2-D MaxUnpool with
    pads [0, 0, 1, 0] gets the shape [2, 1, 3, 3] where onnx.reference gives [2, 1, 2, 4]; zero pads and a 1-D
    MaxUnpool are right. Asserts the wrong shape, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnx
    import onnx.reference

    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    h = onnx.helper

    def model(shape: list[int], indices: list[int], kernel: list[int], strides: list[int], pads: list[int]) -> Any:
        graph = h.make_graph([h.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=kernel, strides=strides, pads=pads)],
                             "g", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
                             [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                             [onnx.numpy_helper.from_array(np.array(indices, np.int64).reshape(shape), "i")])
        m = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
        m.ir_version = 8
        return m

    x = np.arange(1, 9, dtype=np.float32).reshape(2, 1, 1, 4)
    for pads, tvm_shape in (([0, 0, 1, 0], (2, 1, 3, 3)), ([0, 0, 0, 0], (2, 1, 3, 4))):
        m = model([2, 1, 1, 4], [4, 5, 2, 3, 12, 9, 14, 11], [3, 1], [2, 1], pads)
        want = onnx.reference.ReferenceEvaluator(m).run(None, {"x": x})[0]
        got = _onnx_run(m, [x]).numpy()
        assert got.shape == tvm_shape, pads
        assert (got.shape == want.shape) == (pads == [0, 0, 0, 0]), (pads, want.shape)
    x1 = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
    m = model([1, 1, 4], [0, 2, 5, 6], [2], [2], [0, 1])
    np.testing.assert_array_equal(_onnx_run(m, [x1]).numpy(), onnx.reference.ReferenceEvaluator(m).run(None, {"x": x1})[0])
    register = Register(use_env=False)
    for pads, expected in (("[0, 0, 1, 0]", "tvm-onnx-maxunpool-pads-paired-by-begin"), ("[0, 0, 0, 0]", None),
                           ("[1, 0, 0, 1]", None), ("[0, 1]", None), ("[1, 0, 1, 1, 1, 1]", "tvm-onnx-maxunpool-pads-paired-by-begin"),
                           ("[1, 1, 1, 1, 1, 1]", None)):
        f = FindingFacts(1, "tvm", "inconsistency", ("tvm-unopt", "tvm-onnx-opt"), "", frozenset({"max_unpool"}),
                         frozenset({"float16"}), "", "inconsistency|tvm|tvm-unopt|tvm-onnx-opt|value|ops=max_unpool", "value",
                         f"max_unpool{{indices=[4, 5], kernel=[3, 1], pads={pads}, strides=[2, 1]}}")
        k = register.match(f, "tvm-onnx-opt differs from tvm-unopt and the reference at output 2: distance 1.16 > 0.01")
        assert (k.id if k else None) == expected, pads


def test_a_not_of_dropouts_mask_fails_to_build_through_the_frontend_and_the_register_names_it() -> None:
    """tvm-onnx-dropout-mask-not-bool's consequence (issue 36's acceptance campaign met it inside an If): the mask
    comes back in the data's dtype, so a Not of it fails to legalize; a Not of a bool input builds. This asserts the
    failure, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnx

    h, b = onnx.helper, onnx.TensorProto.BOOL
    for dtype, elem in (("float32", onnx.TensorProto.FLOAT), ("float64", onnx.TensorProto.DOUBLE)):
        m = h.make_model(h.make_graph([h.make_node("Dropout", ["x"], ["d", "mask"]), h.make_node("Not", ["mask"], ["y"])],
                                      "g", [h.make_tensor_value_info("x", elem, [2, 3])],
                                      [h.make_tensor_value_info("y", b, [2, 3])]),
                         opset_imports=[h.make_opsetid("", 18)])
        m.ir_version = 8
        with pytest.raises(Exception, match=r"Expected boolean argument for ! operator") as info:
            _onnx_run(m, [np.ones((2, 3), dtype)])
        message = f"{type(info.value).__name__}: {info.value}"
        assert _error_label("unexpected-error", {"dropout", "not"}, dtype, message) == "tvm-onnx-dropout-mask-not-bool"
        assert _error_label("unexpected-error", {"not", "neg"}, dtype, message) is None
    ok = h.make_model(h.make_graph([h.make_node("Not", ["x"], ["y"])], "g", [h.make_tensor_value_info("x", b, [2, 3])],
                                   [h.make_tensor_value_info("y", b, [2, 3])]), opset_imports=[h.make_opsetid("", 18)])
    ok.ir_version = 8
    assert not _onnx_run(ok, [np.ones((2, 3), bool)]).numpy().any()


def test_an_out_of_range_int64_shift_after_a_clip_misses_opset_28s_zero_and_the_register_names_it() -> None:
    """tvm-onnx-bitshift-opset28-out-of-range-amounts in int64 (issue 36's acceptance campaign: Clip then BitShift by
    64): the machine shift by an out-of-range amount is undefined, and what it gives depends on the kernel: alone,
    opset 28's 0; fused after a Clip, 1 << 64 gives 1. The finding's key names the minimal pass set, not a reason, so
    the register reads the integer distance in its detail. This asserts TVM's values, so it fails once fixed."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    h, i64 = onnx.helper, onnx.TensorProto.INT64
    x = np.array([1, 1, 3, 3, 3, 5], np.int64)
    amounts = numpy_helper.from_array(np.array([1, 64, 65, -1, 33, 0], np.int64), "a")
    bounds = [numpy_helper.from_array(np.array(-100, np.int64), "lo"), numpy_helper.from_array(np.array(100, np.int64), "hi")]
    spec_gives = [2, 0, 0, 0, 3 << 33, 5]
    nodes = [h.make_node("Clip", ["x", "lo", "hi"], ["c"]), h.make_node("BitShift", ["c", "a"], ["y"], direction="LEFT")]
    m = h.make_model(h.make_graph(nodes, "g", [h.make_tensor_value_info("x", i64, [6])],
                                  [h.make_tensor_value_info("y", i64, [6])], initializer=[amounts, *bounds]),
                     opset_imports=[h.make_opsetid("", 28)])
    m.ir_version = 13
    assert ReferenceEvaluator(m).run(None, {"x": x})[0].tolist() == spec_gives
    # the out-of-range shifts are undefined in LLVM: here the fused scalar shift masks the amount ([2, 1, 6, -2**63,
    # ...]) where the unfused vector shift happens to give 0; asserted is only that an out-of-range amount misses 0
    got = _onnx_run(m, [x]).numpy().tolist()
    assert [got[k] for k in (0, 4, 5)] == [2, 3 << 33, 5] and got != spec_gives, got
    configs = ("tvm-onnx-opt", "tvm-unopt")
    key = "inconsistency|tvm|tvm-onnx-opt,tvm-unopt|opts=LegalizeOps,AnnotateTIROpPattern,FuseOps,FuseTIR"
    detail = ("tvm-onnx-opt differs from tvm-unopt and the reference at output 3: distance 9.22e+18 > 0 (flat index "
              "19: np.int64(-9223372036854775808) vs np.int64(0))")
    for ops, expected in (({"bit_shift", "clip"}, "tvm-onnx-bitshift-opset28-out-of-range-amounts"),
                          ({"bit_shift", "clip", "add"}, None)):
        f = FindingFacts(1, "tvm", "inconsistency", configs, "opts=LegalizeOps,AnnotateTIROpPattern,FuseOps,FuseTIR",
                         frozenset(ops), frozenset({"int64"}), "", key, "")
        k = Register(use_env=False).match(f, detail)
        assert (k.id if k else None) == expected, ops


def _lp_pool_label(attrs: dict[str, Any], reason: str) -> str | None:
    """The register entry labelling a one-node LpPool inconsistency of the ONNX-frontend door, with these attributes."""
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    configs = ("tvm-unopt", "tvm-onnx-opt")
    shown = ", ".join(f"{k}={attrs[k]}" for k in sorted(attrs))
    f = FindingFacts(1, "tvm", "inconsistency", configs, "", frozenset({"lp_pool"}), frozenset({"float32"}), "",
                     f"inconsistency|tvm|{','.join(configs)}|{reason}|ops=lp_pool", reason, f"lp_pool{{{shown}}}")
    k = Register(use_env=False).match(f, "")
    return k.id if k else None


def _lp_pool_model(length: int, attrs: dict[str, Any]) -> Any:
    import onnx

    h, f32 = onnx.helper, onnx.TensorProto.FLOAT
    m = h.make_model(h.make_graph([h.make_node("LpPool", ["x"], ["y"], **attrs)], "g",
                                  [h.make_tensor_value_info("x", f32, [1, 1, length])],
                                  [h.make_tensor_value_info("y", f32, None)]), opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    return m


_LP_POOL = {"ceil_mode": 0, "kernel": [2], "p": 1, "pads": [0, 0], "strides": [1]}


def test_the_frontend_pads_dilated_same_lp_pooling_for_the_undilated_kernel_and_the_register_names_it() -> None:
    """tvm-onnx-lppool-same-dilations (issue 36's acceptance campaign, suspected reference errors since onnxruntime
    pads the same way): SAME with dilation 2 gives one output fewer than ONNX's ceil(in / stride), which ONNX's shape
    inference and dlcfuzz's reference keep. This asserts TVM's output, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnx

    from dlcfuzz import reference

    x = np.array([[[1, 2, 3, 4]]], np.float32)
    for auto_pad, tvm_gives in (("SAME_UPPER", [4, 6, 3]), ("SAME_LOWER", [2, 4, 6])):
        m = _lp_pool_model(4, {"kernel_shape": [2], "dilations": [2], "strides": [1], "p": 1, "auto_pad": auto_pad})
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True).graph.output[0].type.tensor_type.shape
        assert [d.dim_value for d in inferred.dim] == [1, 1, 4]
        assert _onnx_run(m, [x]).numpy().ravel().tolist() == tvm_gives
        attrs = {**_LP_POOL, "auto_pad": auto_pad, "dilations": [2]}
        t = _t("float32", (1, 1, 4))
        g = Graph(inputs=[Value("x", t)], nodes=[Node("lp_pool", ["x"], [Value("y", t)], attrs)], outputs=["y"])
        assert reference.outputs(g, {"x": x})[0].ravel().tolist() == [2, 4, 6, 3]
        for reason in ("shape", "value"):
            assert _lp_pool_label(attrs, reason) == "tvm-onnx-lppool-same-dilations"
        assert _lp_pool_label({**attrs, "dilations": [1]}, "shape") is None  # undilated SAME: right
    assert _lp_pool_label({**_LP_POOL, "auto_pad": "NOTSET", "dilations": [2]}, "shape") is None


def test_the_frontend_scales_an_overhanging_ceil_mode_lp_pool_window_and_the_register_names_it() -> None:
    """tvm-onnx-lppool-ceil-mode-overhang-scaled (found while triaging issue 36's acceptance campaign): LpPool as a
    padding-counting average times the kernel size scales a last window that overhangs the input as if full.
    onnxruntime follows ONNX's definition. This asserts TVM's values, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnxruntime as ort

    x = np.array([[[1, 2, -3]]], np.float32)
    for p, spec_gives, tvm_gives in ((1, [3, 3], [3, 6]), (2, [5 ** 0.5, 3], [5 ** 0.5, 18 ** 0.5])):
        m = _lp_pool_model(3, {"kernel_shape": [2], "strides": [2], "ceil_mode": 1, "p": p})
        got = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_allclose(got.ravel(), spec_gives, rtol=1e-6)
        for passes in (True, False):
            np.testing.assert_allclose(_onnx_run(m, [x], passes).numpy().ravel(), tvm_gives, rtol=1e-6)
    attrs = {**_LP_POOL, "auto_pad": "NOTSET", "ceil_mode": 1, "dilations": [1], "strides": [2]}
    assert _lp_pool_label(attrs, "value") == "tvm-onnx-lppool-ceil-mode-overhang-scaled"
    assert _lp_pool_label({**attrs, "ceil_mode": 0}, "value") is None


def test_the_frontend_refuses_a_variadic_min_of_symbolic_and_constant_lengths_and_the_register_names_it() -> None:
    """tvm-onnx-variadic-symbolic-vs-constant-broadcast (issue 36's acceptance campaign, reproduced with TVM alone):
    Min, Max, Sum and Mean of a Compress result (a symbolic length, 3 at run time) and a constant of length 3 fail to
    import; onnxruntime runs them. This asserts the failure, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    h = onnx.helper
    x = np.array([3, -1, 7, 2, 9, -5], np.int32)
    for op, elem, dtype in (("Min", onnx.TensorProto.INT32, np.int32), ("Max", onnx.TensorProto.INT32, np.int32),
                            ("Sum", onnx.TensorProto.FLOAT, np.float32), ("Mean", onnx.TensorProto.FLOAT, np.float32)):
        m = h.make_model(h.make_graph(
            [h.make_node("Compress", ["x", "cond"], ["c"], axis=0), h.make_node(op, ["c", "k"], ["y"])], "g",
            [h.make_tensor_value_info("x", elem, [6])], [h.make_tensor_value_info("y", elem, None)],
            initializer=[numpy_helper.from_array(np.array([1, 0, 0, 1, 1, 0], bool), "cond"),
                         numpy_helper.from_array(np.array([4, 1, -2], dtype), "k")]),
            opset_imports=[h.make_opsetid("", 18)])
        m.ir_version = 8
        got = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x.astype(dtype)})
        assert got[0].shape == (3,), op
        with pytest.raises(ValueError, match="Cannot broadcast symbolic dimension num_nonzero with non-1 constant 3") as info:
            _onnx_run(m, [x.astype(dtype)])
        message = f"ValueError: {info.value}"
        assert _error_label("unexpected-error", {"compress", op.lower()}, dtype.__name__, message) == \
            "tvm-onnx-variadic-symbolic-vs-constant-broadcast"
    assert _error_label("unexpected-error", {"compress", "min"}, "int32", "ValueError: Cannot broadcast 2 and 3") is None
    # a binary Add of the same operands imports, but its R.add is never legalized
    m = h.make_model(h.make_graph(
        [h.make_node("Compress", ["x", "cond"], ["c"], axis=0), h.make_node("Add", ["c", "k"], ["y"])], "g",
        [h.make_tensor_value_info("x", onnx.TensorProto.INT32, [6])],
        [h.make_tensor_value_info("y", onnx.TensorProto.INT32, None)],
        initializer=[numpy_helper.from_array(np.array([1, 0, 0, 1, 1, 0], bool), "cond"),
                     numpy_helper.from_array(np.array([4, 1, -2], np.int32), "k")]),
        opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    for passes in (True, False):
        with pytest.raises(Exception, match="CodeGenVM cannot emit this Relax operator directly"):
            _onnx_run(m, [x], passes)


def test_float16_roi_align_comes_back_float32_and_the_register_names_it() -> None:
    """tvm-roi-align-float16-output-float32 (found by issue 40's acceptance campaign, reproduced with TVM alone):
    R.vision.roi_align's TOPI compute mixes Python float constants into float16 arithmetic, so a float16 RoiAlign
    gives float32, through the ONNX frontend and built directly; float32 and float64 keep their dtype. This asserts
    the float32 output, so it fails once the installed TVM is fixed. The adaptive zero-size-ROI entry names the
    value differences of RoiAlign alone, not this dtype."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator
    from tvm import relax, runtime

    h = onnx.helper
    x = np.arange(9).reshape(1, 1, 3, 3)
    for dtype, elem, tvm_gives in (("float16", onnx.TensorProto.FLOAT16, "float32"),
                                   ("float32", onnx.TensorProto.FLOAT, "float32"),
                                   ("float64", onnx.TensorProto.DOUBLE, "float64")):
        node = h.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], output_height=2, output_width=2,
                           sampling_ratio=2, mode="avg")
        m = h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info("x", elem, [1, 1, 3, 3])],
                                      [h.make_tensor_value_info("y", elem, [1, 1, 2, 2])],
                                      initializer=[numpy_helper.from_array(np.array([[0, 0, 2, 2]], dtype), "rois"),
                                                   numpy_helper.from_array(np.array([0], np.int64), "batch")]),
                         opset_imports=[h.make_opsetid("", 18)])
        m.ir_version = 8
        (spec,) = ReferenceEvaluator(m).run(None, {"x": x.astype(dtype)})
        got = _onnx_run(m, [x.astype(dtype)]).numpy()
        assert (str(spec.dtype), str(got.dtype)) == (dtype, tvm_gives), dtype
        np.testing.assert_allclose(got, spec, rtol=1e-3)  # the values are right
        # the same through R.vision.roi_align built directly: the kernel, not the importer
        bb = relax.BlockBuilder()
        data = relax.Var("x", relax.TensorType((1, 1, 3, 3), dtype))
        with bb.function("main", [data]):
            rois = relax.const(np.array([[0, 0, 0, 2, 2]], dtype), dtype)
            bb.emit_func_output(bb.emit(relax.op.vision.roi_align(data, rois, pooled_size=(2, 2), spatial_scale=1.0,
                                                                  sample_ratio=2, layout="NCHW", mode="avg")))
        direct = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), runtime.cpu())["main"](
            runtime.tensor(x.astype(dtype))).numpy()
        assert str(direct.dtype) == tvm_gives, dtype
    for ops, reason, dtype, expected in (
            ({"roi_align", "erf", "floor"}, "dtype", "float16", "tvm-roi-align-float16-output-float32"),
            ({"roi_align"}, "dtype", "float32", None),
            ({"roi_align"}, "value", "float32", "tvm-roi-align-adaptive-zero-size-roi"),
            ({"roi_align"}, "shape", "float32", None)):
        assert door_label(ops, reason, dtype) == expected, (ops, reason, dtype)


def test_an_unsigned_shrink_fails_to_build_through_the_frontend_and_the_register_names_it() -> None:
    """tvm-onnx-shrink-unsigned (found by issue 40's acceptance campaign, reproduced with TVM alone): the frontend's
    Shrink compares with R.negative of lambd in the input's dtype, which does not legalize for unsigned types; int8
    runs. This asserts the failure, so it fails once the installed TVM is fixed. The broad `sign` entry, after it,
    still names sign's own failure."""
    shrink = {"bias": 2.0, "lambd": 2.0}
    # uint8 only: dlcfuzz's Shrink takes no wider unsigned type (the frontend fails on uint32 alike)
    got = run_alone("shrink", [_t("uint8", (4,))], shrink)
    assert got.startswith("error: InternalError") and "cannot make uint from negative value -1" in got, got
    message = got.removeprefix("error: ")
    assert _error_label("unexpected-error", {"shrink"}, "uint8", message) == "tvm-onnx-shrink-unsigned"
    assert _error_label("unexpected-error", {"sign"}, "uint8", message) == "tvm-sign-uint8"
    assert run_alone("shrink", [_t("int8", (4,))], shrink) == "ok"


def _roi_align_label(attrs: dict[str, Any], reason: str, dtype: str = "float32") -> str | None:
    """The register entry labelling a one-node RoiAlign inconsistency of the ONNX-frontend door, with these attributes."""
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    configs = ("tvm-unopt", "tvm-onnx-opt")
    shown = ", ".join(f"{k}={attrs[k]}" for k in sorted(attrs))
    f = FindingFacts(1, "tvm", "inconsistency", configs, "", frozenset({"roi_align"}), frozenset({dtype}), "",
                     f"inconsistency|tvm|{','.join(configs)}|{reason}|ops=roi_align", reason, f"roi_align{{{shown}}}")
    k = Register(use_env=False).match(f, "")
    return k.id if k else None


def test_the_frontend_offsets_half_pixel_roi_align_before_the_spatial_scale_and_the_register_names_it() -> None:
    """tvm-onnx-roialign-half-pixel-offset-before-scale (found by issue 40's acceptance campaign, reproduced with TVM
    alone): the frontend subtracts half_pixel's 0.5 from the ROI before R.vision.roi_align scales it, so the offset is
    0.5 * spatial_scale. One sample at the ROI's centre (a 1x1 avg output, sampling_ratio 1) shows the shift; scale 1
    and output_half_pixel agree. This asserts TVM's values, so it fails once the installed TVM is fixed."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    h = onnx.helper
    x = np.arange(1, 65, dtype=np.float32).reshape(1, 1, 8, 8)
    for mode, scale, roi, spec_gives, tvm_gives in (("half_pixel", 0.5, [4, 4, 8, 8], 23.5, 25.75),
                                                   ("half_pixel", 2.0, [1, 1, 2, 2], 23.5, 19.0),
                                                   ("half_pixel", 1.0, [2, 2, 4, 4], 23.5, 23.5),
                                                   ("output_half_pixel", 0.5, [4, 4, 8, 8], 28.0, 28.0)):
        node = h.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], output_height=1, output_width=1, sampling_ratio=1,
                           mode="avg", spatial_scale=scale, coordinate_transformation_mode=mode)
        m = h.make_model(h.make_graph([node], "g", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 8, 8])],
                                      [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1, 1, 1])],
                                      initializer=[numpy_helper.from_array(np.array([roi], np.float32), "rois"),
                                                   numpy_helper.from_array(np.array([0], np.int64), "batch")]),
                         opset_imports=[h.make_opsetid("", 18)])
        m.ir_version = 8
        assert ReferenceEvaluator(m).run(None, {"x": x})[0].ravel().tolist() == [spec_gives], (mode, scale)
        assert _onnx_run(m, [x]).numpy().ravel().tolist() == [tvm_gives], (mode, scale)
    attrs = {"batch_indices": [0], "coordinate_transformation_mode": "half_pixel", "mode": "max", "output_height": 3,
             "output_width": 3, "rois": [3.0, 73.0, 14.0, 112.0], "sampling_ratio": 0, "spatial_scale": 0.25}
    entry = "tvm-onnx-roialign-half-pixel-offset-before-scale"
    assert _roi_align_label(attrs, "value", "float64") == entry
    assert _roi_align_label({**attrs, "spatial_scale": 1.0}, "value", "float64") == "tvm-roi-align-adaptive-zero-size-roi"
    assert _roi_align_label({**attrs, "coordinate_transformation_mode": "output_half_pixel"}, "value", "float64") == \
        "tvm-roi-align-adaptive-zero-size-roi"
    assert _roi_align_label(attrs, "dtype", "float16") == "tvm-roi-align-float16-output-float32"


def _reduced_over_empty(reduce: Any, shape: Any, runs: int = 4) -> list[float]:
    """A float32 vector of `shape` reduced by `reduce` over axis -1 (keepdims), built and run with 0 elements `runs`
    times, each after tensors of a sentinel value were allocated and freed, so that memory left uninitialized shows
    them (alive during the run, they left the output the block of an earlier run's 1.0: a CI run saw [1.0] * 4)."""
    import numpy as np
    from tvm import relax, runtime

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(reduce(x, axis=[-1], keepdims=True)))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), runtime.cpu())
    got = []
    for k in range(runs):
        sentinels = [runtime.tensor(np.full(n, 3.25 + k, np.float32)) for n in (1, 1, 64)]
        del sentinels
        got.append(float(vm["main"](runtime.tensor(np.zeros(0, np.float32))).numpy()[0]))
    return got


def test_a_reduction_over_an_empty_symbolic_axis_is_uninitialized_and_the_register_names_it() -> None:
    """tvm-reduce-symbolic-empty-axis-uninitialized (found by issue 37's acceptance campaign, reproduced with TVM
    alone): R.prod over an axis of symbolic extent, 0 at run time, gives what memory held, not always the empty product
    1 (the static (0,) extent does, apache/tvm#19680's fix); the frontend's Compress makes such extents. This asserts the wrong value, so
    it fails once the installed TVM is fixed."""
    from tvm import relax, tirx

    assert _reduced_over_empty(relax.op.prod, (tirx.Var("n", "int64"),)) != [1.0] * 4  # what memory held
    assert _reduced_over_empty(relax.op.prod, (0,)) == [1.0] * 4
    for ops, expected in (({"compress", "reduce_l2"}, "tvm-reduce-symbolic-empty-axis-uninitialized"),
                          ({"compress", "reduce_sum"}, "tvm-reduce-symbolic-empty-axis-uninitialized"),
                          ({"compress", "reduce_sum", "add"}, None),
                          ({"reduce_l2"}, "tvm-onnx-reduce-noop-empty-axes-skips-elementwise")):
        assert door_label(ops, "value", "float16") == expected, ops
