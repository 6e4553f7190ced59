"""ONNXRuntime's Python transformer optimizer as configurations of the ORT backend
(backends/onnxruntime/transformers.py): it fuses what it claims to fuse, stays quiet on correct graphs,
an exception inside it is a finding (a real one: LayerNorm fusion with a 1-D epsilon), and a planted
fault that corrupts its output model is found."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("sympy")  # onnxruntime.transformers imports it

from dlcfuzz.backends import get_backend  # noqa: E402
from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend  # noqa: E402
from dlcfuzz.backends.onnxruntime.transformers import MODEL_TYPES, fused_ops, optimize  # noqa: E402
from dlcfuzz.exec.worker import run_configs  # noqa: E402
from dlcfuzz.gen.inputs import sample_inputs  # noqa: E402
from dlcfuzz.gen.random import generate  # noqa: E402
from dlcfuzz.ir.graph import Graph  # noqa: E402
from dlcfuzz.ops import (
    check_graph,
    get_op,  # noqa: E402
)
from dlcfuzz.oracle.policy import reference_of  # noqa: E402
from dlcfuzz.oracle.testcase import TestCase  # noqa: E402
from dlcfuzz.oracle.verdict import Verdict, judge  # noqa: E402
from dlcfuzz.synth.library import LIBRARY, gelu_erf, layer_norm_decomposed, quick_gelu  # noqa: E402

BACKEND = get_backend("onnxruntime")
CONFIGS = BACKEND.configs()
UNDER_TEST = [CONFIGS["ort-disable"], *(CONFIGS[n] for n in MODEL_TYPES)]
# LayerNorm fusion raises on a 1-D epsilon (test_layer_norm_with_a_1d_epsilon_...): the real finding
KNOWN_OPTIMIZER_BUG = {"layer_norm_decomposed"}


def layer_norm_scalar_eps(seed: int) -> Graph:
    """The same decomposed LayerNorm with 0-d constants (as torch exports it): the fusion applies."""
    g = layer_norm_decomposed(seed)
    g.constants = {**g.constants, "eps": g.constants["eps"].reshape(()), "two": g.constants["two"].reshape(())}
    check_graph(g)
    return g


def verdicts(backend: Any, g: Graph, seed: int = 0) -> list[Verdict] | None:
    tc = TestCase(g, sample_inputs(g, np.random.default_rng(seed)), UNDER_TEST, seed=seed, compiler="onnxruntime")
    ref = reference_of(tc)
    if ref.outputs is None:
        return None
    return judge("onnxruntime", backend.expected_error, ref.outputs, run_configs(backend, tc), ref.unstable)


@pytest.mark.parametrize("build,before,fused", [
    (gelu_erf, "Erf", "Gelu"), (quick_gelu, "Sigmoid", "QuickGelu"), (layer_norm_scalar_eps, "ReduceMean",
                                                                       "LayerNormalization")])
def test_the_fusions_apply_and_the_fused_model_agrees_with_the_reference(build, before, fused):
    g = build(0)
    lowered = BACKEND.lower(g, CONFIGS["ort-all"])
    for name, model_type in MODEL_TYPES.items():
        counts = fused_ops(optimize(lowered, CONFIGS[name].options["transformers"]))
        assert counts.get(fused) == 1 and before not in counts, (model_type, counts)
    vs = verdicts(BACKEND, g)
    assert vs is not None and [v.kind for v in vs] == ["pass"], vs


def test_layer_norm_with_a_1d_epsilon_makes_the_optimizer_raise_and_that_is_a_finding():
    """Real (onnxruntime 1.32.0, numpy 2.4): FusionLayerNormalization calls float() on the epsilon
    initializer's array, which fails for shape [1] (a legal constant). Judged unexpected-error."""
    vs = verdicts(BACKEND, layer_norm_decomposed(0))
    assert vs is not None
    bugs = [v for v in vs if v.kind == "bug"]
    assert {v.category for v in bugs} == {"unexpected-error"}
    assert {c for v in bugs for c in v.configs} == set(MODEL_TYPES)
    assert all("TransformerOptimizerError" in v.key and "0-dimensional" in v.detail for v in bugs)


def correct_graphs() -> list[tuple[str, Graph]]:
    graphs = [(name, fn(0)) for name, (fn, _, _) in LIBRARY.items() if name not in KNOWN_OPTIMIZER_BUG]
    ops = [get_op(o) for o in ("add", "mul", "sub", "relu", "sigmoid", "tanh", "erf", "matmul", "div", "exp")]
    for seed in range(8):
        graphs.append((f"random-{seed}", generate(np.random.default_rng(seed), 5, ops=ops,
                                                  supported=lambda op, dt: dt == "float32")))
    return graphs


def test_quiet_on_correct_graphs():
    judged = 0
    for name, g in correct_graphs():
        vs = verdicts(BACKEND, g)
        if vs is None:  # no finite reference: not judged
            continue
        judged += 1
        assert not any(v.kind == "bug" for v in vs), (name, vs)
    assert judged >= 30


class CorruptingOptimizer(OnnxRuntimeBackend):
    """Planted fault: the transformer optimizer's output model has its fused activations replaced by Relu."""

    def build(self, lowered: bytes, g: Any, config: Any) -> Any:
        spec = config.options.get("transformers")
        if not spec:
            return super().build(lowered, g, config)
        import onnx

        model = onnx.load_from_string(optimize(lowered, spec))
        for node in model.graph.node:
            if node.op_type in ("Gelu", "QuickGelu", "FastGelu"):
                node.op_type, node.domain = "Relu", ""
                del node.attribute[:]
        return self.compile_onnx(model.SerializeToString(), config)


def test_planted_corruption_of_the_optimizers_output_is_found():
    planted = CorruptingOptimizer()
    for build in (gelu_erf, quick_gelu):
        g = build(0)
        real = verdicts(BACKEND, g)
        bad = verdicts(planted, g)
        assert real is not None and bad is not None
        assert not any(v.kind == "bug" for v in real)
        hits = {c for v in bad if v.kind == "bug" and v.category in ("wrong-result", "inconsistency")
                for c in v.configs}
        assert set(MODEL_TYPES) <= hits, bad


def test_per_test_configs_add_a_transformer_configuration_on_a_share_of_tests():
    pair = list(BACKEND.default_pair())
    added = [len(BACKEND.per_test_configs(np.random.default_rng(s), gelu_erf(0), pair)) - 2 for s in range(400)]
    assert set(added) == {0, 1} and 0.15 < sum(added) / len(added) < 0.35


def test_the_reproducer_runs_the_transformer_optimizer_and_reproduces_the_finding(tmp_path):
    """The reproducer of the 1-D epsilon finding calls optimize_model itself (the public API) and fails."""
    import subprocess
    import sys

    g = layer_norm_decomposed(0)
    inputs = sample_inputs(g, np.random.default_rng(0))
    configs = [CONFIGS["ort-transformers-bert"]]
    script = BACKEND.reproducer(g, inputs, None, configs, "unexpected-error", "t", "d")
    assert "optimize_model(" in script and "import dlcfuzz" not in script
    path = tmp_path / "repro.py"
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "BUG REPRODUCED" in r.stdout and "0-dimensional" in r.stdout, r.stdout + r.stderr
    plain = BACKEND.reproducer(g, inputs, None, [CONFIGS["ort-all"]], "unexpected-error", "t", "d")
    assert "optimize_model" not in plain
    path.write_text(plain)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "BUG REPRODUCED" not in r.stdout, r.stdout + r.stderr


def test_the_reproducer_shows_ort_rejecting_the_optimizers_output(tmp_path):
    """Real (onnxruntime 1.20.1 campaign, still in 1.32.0): the gpt2 optimizer removes a Reshape whose
    output is a graph output, so ORT rejects the model it writes ("Graph output ... does not exist").
    The finding is TransformerOptimizerError, which dlcfuzz's build raises; the script raises it too
    (it expected that type and saw ORT's own InvalidArgument: "not reproduced"). The model as given runs."""
    import json
    import subprocess
    import sys

    from dlcfuzz.ir.serialize import graph_from_json

    g = graph_from_json(json.loads('''{"format": "dlcfuzz-graph/1", "name": "main", "constants": {}, "functions": {},
        "inputs": [{"dtype": "bool", "name": "r8", "shape": []}], "outputs": ["v8"],
        "nodes": [{"op": "reshape", "name": "n8", "inputs": ["r8"], "attrs": {"shape": []},
                   "outputs": [{"dtype": "bool", "name": "v8", "shape": []}]}]}'''), {})
    inputs = {"r8": np.array(True)}
    configs = [CONFIGS["ort-transformers-gpt2"]]
    obs = run_configs(BACKEND, TestCase(g, inputs, configs, seed=0))
    assert obs[0].status == "error" and obs[0].error.startswith("TransformerOptimizerError: ORT rejects"), obs[0]
    script = BACKEND.reproducer(g, inputs, None, configs, "unexpected-error", "t", obs[0].error)
    path = tmp_path / "repro.py"
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "raised TransformerOptimizerError: ORT rejects" in r.stdout, r.stdout + r.stderr
