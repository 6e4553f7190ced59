"""Shared checks of one operator instance against ONNX, ONNXRuntime, TVM Relax and the importer."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dlcfuzz import reference
from dlcfuzz.errors import ShapeError
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.single import single_op_graph
from dlcfuzz.ir import DTYPES, Graph, TensorType, dumps, graphs_equal, loads
from dlcfuzz.lower.onnx import inferred_types, onnx_output_names, to_onnx
from dlcfuzz.lower.registry import load_target
from dlcfuzz.ops import OpSpec, all_ops, check_graph
from dlcfuzz.oracle.numeric import compare


def instances(spec: OpSpec, seed: int, count: int) -> list[tuple[Graph, dict[str, np.ndarray]]]:
    """Up to `count` valid one-operator graphs over the op's dtypes and ranks."""
    rng = np.random.default_rng(seed)
    out = []
    tries = 0
    while len(out) < count and tries < count * 30:
        tries += 1
        dtype = spec.dtypes[tries % len(spec.dtypes)]
        rank = int(rng.choice(spec.ranks))
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        try:
            g = single_op_graph(spec, rng, TensorType(dtype, shape))
        except ShapeError:
            continue
        check_graph(g)
        out.append((g, sample_inputs(g, rng)))
    return out


def run_ort(model, inputs):
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: inputs[n] for n in names})


def run_relax(g, inputs):
    tvm = pytest.importorskip("tvm")
    from tvm import relax

    from dlcfuzz.lower.relax import to_relax

    ex = tvm.compile(to_relax(g), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    res = vm["main"](*[tvm.runtime.tensor(inputs[v.name]) for v in g.inputs])
    if len(g.outputs) == 1:
        return [res.numpy()]
    return [r.numpy() for r in res]


def ort_gaps(op: str) -> dict[str, str]:
    """The ORT backend's known gaps (some measured on this machine: its U8S8 GEMM saturation)."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.backends.onnxruntime.gaps import KNOWN_GAPS
    from dlcfuzz.errors import UsageError

    try:
        return get_backend("onnxruntime").known_gaps(op)
    except UsageError:  # onnxruntime is not installed: nothing runs there anyway
        return KNOWN_GAPS.get(op, {})


def ort_form_gaps(op: str):
    """The ORT backend's known form gaps of `op` (operator forms its kernels lack)."""
    from dlcfuzz.backends.onnxruntime.gaps import KNOWN_FORM_GAPS

    return KNOWN_FORM_GAPS.get(op, ())


def check_instance(g: Graph, inputs: dict, *, ort: bool = True, relax: bool = True, importer: bool = True) -> None:
    """Assert every layer agrees on this graph. Raises AssertionError with the graph text.

    Operator/dtype pairs that are a compiler's known gap (backends/<compiler>/gaps.py, with their upstream
    reason), and operator forms that are one of its known form gaps, are not run there.
    """
    from dlcfuzz.backends.tvm.gaps import KNOWN_GAPS as TVM_GAPS
    from dlcfuzz.gen.random import form_gaps_in
    from dlcfuzz.ir import to_text
    from dlcfuzz.ops import get_op

    ort = ort and not form_gaps_in(g, ort_form_gaps)

    env = g.types()
    for n in g.all_nodes():
        if n.op == "call":
            continue
        spec = get_op(n.op)
        dtype = env[n.inputs[0]].dtype if n.inputs and n.inputs[0] in env else None
        ort = ort and dtype not in ort_gaps(spec.name)
        relax = relax and dtype not in TVM_GAPS.get(spec.name, {})

    text = to_text(g)
    assert graphs_equal(loads(dumps(g)), g), text
    ref = reference.outputs(g, inputs)
    model = to_onnx(g)
    import onnx

    onnx.checker.check_model(model, full_check=True)
    types = inferred_types(model)
    for name, t in zip(onnx_output_names(model), g.output_types()):
        assert types.get(name, t) == t, f"ONNX infers {types.get(name)} for {name}, we {t}\n{text}"
    if ort:
        try:
            got = run_ort(model, inputs)
        except Exception as e:  # an operator/dtype ORT lacks is not a disagreement
            if "NOT_IMPLEMENTED" not in str(e):
                raise
            got = None
        bad = [] if got is None else compare([np.asarray(x) for x in got], ref)
        assert not bad, f"ORT vs reference: {bad}\n{text}\ninputs={inputs}"
    if relax:
        got = run_relax(g, inputs)
        bad = compare(got, ref)
        assert not bad, f"Relax vs reference: {bad}\n{text}\ninputs={inputs}"
    if importer:
        from dlcfuzz.lower.onnx_import import import_model

        res = import_model(model)
        assert res.complete, f"import failed: {res.skipped}\n{text}"
        back = reference.outputs(res.graph, {res.graph.inputs[i].name: inputs[v.name] for i, v in enumerate(g.inputs)})
        # exact, unless the ONNX form is a decomposition (e.g. Gelu as its formula at opset 18)
        bad = compare(back, ref, scale=0.0 if len(res.graph.nodes) == len(g.nodes) else 1.0)
        assert not bad, f"imported graph differs: {bad}\n{text}"


def side_by_side_outputs(cases: list[tuple[Graph, dict]], run: Callable[[Graph, dict], list],
                         batch: int = 24) -> list[list]:
    """Each (graph, inputs) case's outputs, `batch` cases compiled side by side into one program by
    `run(graph, inputs)` (a compile costs seconds or a good part of one; the cases are independent)."""
    from dlcfuzz.ir.graph import side_by_side

    outs = []
    for k in range(0, len(cases), batch):
        part = cases[k:k + batch]
        got = run(side_by_side([g for g, _ in part]),
                  {f"p{i}_{name}": a for i, (_, x) in enumerate(part) for name, a in x.items()})
        at = 0
        for g, _ in part:
            outs.append(got[at:at + len(g.outputs)])
            at += len(g.outputs)
    return outs


def lowered_ops(name: str) -> list[OpSpec]:
    """The operators the target lowers (not its documented gaps, e.g. ORT's contrib operators)."""
    t = load_target(name)
    return [s for s in all_ops() if t.gap_of(s.name) is None]


__all__ = ["DTYPES", "check_instance", "instances", "lowered_ops", "run_ort", "run_relax", "side_by_side_outputs"]



def observations_side_by_side(backend, cases: list[tuple[Graph, dict]], configs: list) -> list[list]:
    """Each (graph, inputs) case's observations under `configs`, all cases compiled side by side into one
    program per configuration (`side_by_side_outputs`' idea for a backend's configurations)."""
    from dataclasses import replace

    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.ir.graph import side_by_side
    from dlcfuzz.oracle.testcase import TestCase

    inputs = {f"p{i}_{name}": a for i, (_, x) in enumerate(cases) for name, a in x.items()}
    obs = run_configs(backend, TestCase(side_by_side([g for g, _ in cases]), inputs, configs, seed=0))
    per_case, at = [], 0
    for g, _ in cases:
        n = len(g.outputs)
        per_case.append([replace(o, outputs=o.outputs[at:at + n]) if o.status == "ok" else o for o in obs])
        at += n
    return per_case


def judged_cases(graphs: list[Graph]) -> list[tuple[Graph, dict, object]]:
    """(graph, inputs, reference) of each graph whose reference on its sampled inputs (seeded by its index) is usable:
    judged_side_by_side's cases."""
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import TestCase

    cases = []
    for k, g in enumerate(graphs):
        x = sample_inputs(g, np.random.default_rng(k))
        ref = reference_of(TestCase(g, x, [], seed=k))
        if ref.outputs is not None:
            cases.append((g, x, ref))
    return cases


def judged_side_by_side(backend, cases: list[tuple[Graph, dict, object]], configs_of: Callable[[Graph], list],
                        batch: int = 24) -> int:
    """Judge (graph, inputs, reference) cases on `backend`, `batch` graphs compiled side by side into one
    program per configuration (a compile costs what dozens of runs do; the graphs are independent). Any
    bug in a batch fails the test, naming the graph and whether it also shows when compiled alone (its
    own bug) or only side by side. `reference` is `oracle.policy.reference_of`'s result (outputs known).
    Returns the number of judged cases."""
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.ir import to_text
    from dlcfuzz.ir.graph import side_by_side
    from dlcfuzz.oracle.testcase import TestCase
    from dlcfuzz.oracle.verdict import judge

    def bugs_of(ref, obs) -> list:
        return [v for v in judge(backend.name, backend.expected_error, ref.outputs, obs, ref.unstable)
                if v.kind == "bug"]

    judged = 0
    for k in range(0, len(cases), batch):
        part = cases[k:k + batch]
        configs = configs_of(side_by_side([g for g, _, _ in part]))
        for (g, x, ref), obs in zip(part, observations_side_by_side(backend, [(g, x) for g, x, _ in part], configs)):
            bad = bugs_of(ref, obs)
            if bad:
                alone = bugs_of(ref, run_configs(backend, TestCase(g, x, configs, seed=0)))
                where = "also compiled alone" if alone else "only side by side with other graphs"
                v = (alone or bad)[0]
                pytest.fail(f"{v.category} in {v.configs} ({where}): {v.detail[:2000]}\n{to_text(g)}")
            judged += 1
    return judged
