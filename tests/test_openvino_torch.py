"""OpenVINO's PyTorch front door, torch.compile(backend="openvino") (issue 15): it stays quiet on
correct graphs beside the ONNX front door, a planted fault in it is found, and its reproducer is a
standalone torch script that shows a wrong result and stays quiet on the right one."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("openvino", reason="OpenVINO is not installed")
pytest.importorskip("torch", reason="torch is not installed")

from dlcfuzz import reference  # noqa: E402
from dlcfuzz.backends.base import Config  # noqa: E402
from dlcfuzz.backends.openvino.backend import (  # noqa: E402
    MAX_TORCH_SOURCE_LINES,
    OpenVinoBackend,
    OvTorch,
    torch_installed,
    torch_source_lines,
)
from dlcfuzz.exec.worker import run_configs  # noqa: E402
from dlcfuzz.gen.inputs import sample_inputs  # noqa: E402
from dlcfuzz.gen.random import generate  # noqa: E402
from dlcfuzz.ir import Graph, Node, TensorType, Value  # noqa: E402
from dlcfuzz.ops import check_graph, get_op  # noqa: E402
from dlcfuzz.ops.recurrent import resolve_activation_params  # noqa: E402
from dlcfuzz.oracle.policy import reference_of  # noqa: E402
from dlcfuzz.oracle.testcase import TestCase  # noqa: E402
from dlcfuzz.oracle.verdict import judge  # noqa: E402

# not reshape: torch.compile(backend="openvino") fails on it in Dynamo's guards (a finding, in the
# known-bugs register of backends/openvino), which this test of the quiet path must not judge
OPS = ["add", "mul", "sub", "relu", "sigmoid", "tanh", "matmul", "transpose", "softmax", "abs", "neg", "exp"]


class _OffByOne:
    def __init__(self, inner: OvTorch) -> None:
        self.inner = inner

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        outs = self.inner.run(inputs)
        return [outs[0] + np.ones((), outs[0].dtype), *outs[1:]]


class PlantedOvTorch(OpenVinoBackend):
    """The real PyTorch front door, its first output off by one whenever the graph has a relu."""

    name = "planted-ov-torch"

    def build(self, lowered, g, config):
        compiled = super().build(lowered, g, config)
        return _OffByOne(compiled) if config.options.get("front") == "torch" and "relu" in g.ops_used() else compiled


def graphs(count: int) -> list[tuple]:
    rng = np.random.default_rng(15)
    out = []
    for _ in range(count):
        g = generate(rng, 4, ops=[get_op(o) for o in OPS], dtypes=["float32"])
        out.append((g, sample_inputs(g, rng)))
    return out


def verdicts(backend: OpenVinoBackend, g, x) -> list:
    configs = [backend.configs()["ov-cpu"], backend.configs()["ov-torch"]]
    tc = TestCase(g, x, configs, seed=0, compiler=backend.name)
    ref = reference_of(tc)
    if ref.outputs is None:
        return []
    return judge(backend.name, backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)


def test_torch_front_door_is_offered_and_quiet_on_correct_graphs_and_finds_a_planted_fault():
    assert torch_installed() and "ov-torch" in OpenVinoBackend().configs()
    real, planted = OpenVinoBackend(), PlantedOvTorch()
    judged = fired = with_relu = 0
    for g, x in graphs(14):
        good = verdicts(real, g, x)
        if not good:
            continue  # the reference is unusable on these inputs: nothing judged
        judged += 1
        assert all(v.kind != "bug" for v in good), [v.detail for v in good]
        bad = verdicts(planted, g, x)
        if "relu" in g.ops_used():
            with_relu += 1
            fired += any(v.kind == "bug" and "ov-torch" in v.configs for v in bad)
        else:
            assert all(v.kind != "bug" for v in bad)
    assert judged >= 10 and with_relu >= 3 and fired == with_relu


def _standalone(path, source: str) -> subprocess.CompletedProcess:
    path.write_text(source)
    no_dlcfuzz = ("import runpy, sys; sys.modules['dlcfuzz'] = None; sys.argv = sys.argv[1:]; "
                  "runpy.run_path(sys.argv[0], run_name='__main__')")
    return subprocess.run([sys.executable, "-c", no_dlcfuzz, str(path)], capture_output=True, text=True, timeout=300)


def test_reproducer_of_the_torch_front_door_is_a_standalone_torch_script(tmp_path):
    backend = OpenVinoBackend()
    g, x = graphs(1)[0]
    ref = reference.outputs(g, x)
    configs = [backend.configs()["ov-cpu"], backend.configs()["ov-torch"]]
    quiet = backend.reproducer(g, x, ref, configs, "wrong-result", "t", "detail")
    assert 'backend="openvino"' not in quiet or "openvino.torch" in quiet
    assert "import openvino.torch" in quiet and "'backend': 'openvino'" in quiet
    r = _standalone(tmp_path / "quiet.py", quiet)
    assert r.returncode == 0 and "not reproduced" in r.stdout, r.stdout + r.stderr[-2000:]
    wrong = [a + 1 for a in ref]
    r = _standalone(tmp_path / "fires.py", backend.reproducer(g, x, wrong, configs, "wrong-result", "t", "detail"))
    assert r.returncode == 1 and "BUG REPRODUCED" in r.stdout, r.stdout + r.stderr[-2000:]
    assert Config  # the configurations above are the backend's own


def gru_graph(steps: int, direction: str = "forward") -> Graph:
    """A one-layer GRU over `steps` steps (the torch lowering unrolls up to SCAN_FROM steps, ~22 lines a step and
    direction, and runs a longer one under torch's scan operator)."""
    hidden, nd = 2, 2 if direction == "bidirectional" else 1
    activations = ["Sigmoid", "Tanh"] * nd
    attrs = {"hidden_size": hidden, "direction": direction, "layout": 0, "activations": activations,
             "activation_params": resolve_activation_params(activations, None, None), "clip": None,
             "sequence_lens": None, "has_bias": False, "has_initial_h": False, "linear_before_reset": 0}
    ins = [TensorType("float32", (steps, 1, 3)), TensorType("float32", (nd, 3 * hidden, 3)),
           TensorType("float32", (nd, 3 * hidden, hidden))]
    outs = get_op("gru").infer(ins, attrs)
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(ins)],
              nodes=[Node("gru", ["x0", "x1", "x2"], [Value(f"y{i}", t) for i, t in enumerate(outs)], attrs, name="n0")],
              outputs=[f"y{i}" for i in range(len(outs))])
    check_graph(g)
    return g


def test_torch_front_door_is_not_offered_for_a_graph_whose_torch_source_dynamo_could_not_trace_in_time():
    """A campaign's GRU of 2,047 steps (its torch source, unrolled then, ~100k lines) hung in Dynamo's tracer: the
    torch door takes graphs up to MAX_TORCH_SOURCE_LINES lines. A bidirectional GRU of SCAN_FROM steps is still
    unrolled past that bound and not offered; a few steps are, and so are 2,047 now that a long recurrence runs
    under torch's scan (the step written once)."""
    from dlcfuzz.lower.pysource.rules_recurrent import SCAN_FROM

    backend = OpenVinoBackend()
    base = list(backend.default_pair())
    big, short, long = gru_graph(SCAN_FROM, "bidirectional"), gru_graph(4), gru_graph(2047)
    assert torch_source_lines(big) > MAX_TORCH_SOURCE_LINES  # the size check alone keeps it out
    assert 0 < torch_source_lines(short) <= MAX_TORCH_SOURCE_LINES
    assert 0 < torch_source_lines(long) <= MAX_TORCH_SOURCE_LINES

    def offered(g: Graph) -> int:
        return sum("ov-torch" in [c.name for c in backend.per_test_configs(np.random.default_rng(s), g, base)]
                   for s in range(40))

    assert offered(short) >= 2 and offered(long) >= 2 and offered(big) == 0


def test_a_gather_by_a_where_computed_index_is_empty_on_one_thread_and_is_known(tmp_path):
    """Issue 40's acceptance campaign (the torch front door of a GatherElements with negative indices, which the torch
    lowering maps into range with torch.where), reproduced with torch and OpenVINO alone (torch.compile(backend=
    "openvino"), dynamic=False): with INFERENCE_NUM_THREADS 1 the compiled gather returns shape (0, 1, 0, 0) where
    eager torch gives (6, 1, 5, 4); without that property it is right. Run in a child process (Dynamo's state).
    Asserts the empty result, so it fails once the installed OpenVINO is fixed."""
    script = tmp_path / "gather_where.py"
    script.write_text(
        "import torch, openvino.torch  # noqa: F401\n"
        "torch.manual_seed(0)\n"
        "x = torch.randn(4, 3, 5, 4)\n"
        "idx = torch.randint(-4, 4, (6, 1, 5, 4))\n"
        "def f(a):\n"
        "    return torch.gather(a, 0, torch.where(idx < 0, idx + 4, idx))\n"
        "for config in ({'INFERENCE_PRECISION_HINT': 'f32'}, {'INFERENCE_PRECISION_HINT': 'f32', 'INFERENCE_NUM_THREADS': 1}):\n"
        "    torch._dynamo.reset()\n"
        "    got = torch.compile(f, backend='openvino', dynamic=False,\n"
        "                        options={'device': 'CPU', 'config': config, 'model_caching': False})(x)\n"
        "    print('shape', tuple(got.shape), 'right' if torch.equal(got, f(x)) else 'wrong')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    shapes = [line for line in done.stdout.splitlines() if line.startswith("shape")]
    assert shapes == ["shape (6, 1, 5, 4) right", "shape (0, 1, 0, 0) wrong"], done.stdout + done.stderr[-500:]
    from dlcfuzz.engine.clusters import FindingFacts
    from dlcfuzz.engine.known import Register

    facts = FindingFacts(1, "openvino", "wrong-result", ("ov-torch",), "", frozenset({"gather_elements"}),
                         frozenset({"float16", "int64"}), "")
    k = Register(use_env=False).match(facts, "ov-torch differ from the reference at output 0: distance 3.96e+11 > 0")
    assert k is not None and k.id == "ov-torch-gather-where-index-one-thread-empty"
    onnx_facts = FindingFacts(1, "openvino", "wrong-result", ("ov-cpu",), "", frozenset({"gather_elements"}),
                              frozenset({"float16", "int64"}), "")
    assert Register(use_env=False).match(onnx_facts, "ov-cpu differ from the reference") is None
