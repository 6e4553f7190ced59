"""The independent evaluators a numeric finding's second opinion may use (`oracle/opinions.py`), beside
onnx's ReferenceEvaluator: ONNXRuntime with every graph optimization disabled, and the frameworks run
eagerly (no compiler). Which ones a configuration gets is its backend's fact
(`Backend.independent_evaluators`); they run in the second-opinion worker (`exec/opinions.py`)."""

from __future__ import annotations

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle.opinions import ONNX_REFERENCE, Evaluator

ORT_UNOPTIMIZED_NAME = "onnxruntime (ORT_DISABLE_ALL)"


def ort_unoptimized_outputs(g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The graph's ONNX lowering in an ONNXRuntime session with graph optimizations disabled: its kernels
    are the only code between the model and the outputs."""
    import onnxruntime as ort

    from dlcfuzz.lower.onnx import to_onnx

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(to_onnx(g).SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [np.asarray(x) for x in sess.run(None, {i.name: inputs[i.name] for i in sess.get_inputs()})]


def torch_eager_outputs(g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    from dlcfuzz.lower.torch import run_eager

    return run_eager(g, inputs)


def jax_eager_outputs(g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    from dlcfuzz.lower.jax import run_eager

    return run_eager(g, inputs)


ORT_UNOPTIMIZED = Evaluator(ORT_UNOPTIMIZED_NAME, ort_unoptimized_outputs)
TORCH_EAGER = Evaluator("torch eager", torch_eager_outputs)
JAX_EAGER = Evaluator("jax eager (jax.disable_jit)", jax_eager_outputs)
# every compiler's default: the ONNX-level evaluators
DEFAULT_EVALUATORS: tuple[Evaluator, ...] = (ONNX_REFERENCE, ORT_UNOPTIMIZED)


def ort_config_evaluator(config: str) -> Evaluator:
    """ONNXRuntime's own findings: its unoptimized configuration `config` is usually one of the compared
    configurations, so its outputs on the reduced test are read from there rather than computed again (it is
    run only where the campaign did not compare it)."""
    return Evaluator(ORT_UNOPTIMIZED_NAME, ort_unoptimized_outputs, config=config, same_kernels=True)
