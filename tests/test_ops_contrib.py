"""ORT's com.microsoft contrib operators (issue 18 item 2): each agrees with its reference on the real
ONNXRuntime kernel, its reference agrees with the standard operators it fuses, and only ONNX consumers
lower it (every other target documents the gap)."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.ops import get_op, registry
from tests.op_harness import check_instance, instances

pytest.importorskip("onnxruntime")
CONTRIB = sorted(n for n, s in registry().items() if s.family == "contrib")


def test_the_fused_operators_ort_produces_are_registered():
    assert set(CONTRIB) >= {"ms_gelu", "ms_quick_gelu", "ms_bias_gelu", "ms_fast_gelu", "ms_fused_matmul",
                            "ms_fused_gemm", "ms_fused_conv", "ms_skip_layer_norm"}


@pytest.mark.parametrize("name", CONTRIB)
def test_op_agrees_everywhere(name):
    """Everywhere a contrib operator exists: ONNX (checker), and ORT with no optimization (the kernel itself)."""
    found = instances(get_op(name), seed=sum(map(ord, name)), count=8)
    assert len(found) >= 6, f"too few valid instances of {name}"
    for g, x in found:
        check_instance(g, x, relax=False, importer=False)


def test_references_equal_the_standard_operators_they_fuse():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    skip, bias = rng.standard_normal((2, 3, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    gamma, beta = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)

    def ref(name, xs, **attrs):
        return get_op(name).reference(xs, attrs)[0].astype(np.float64)

    np.testing.assert_allclose(ref("ms_bias_gelu", [x, bias]), ref("gelu", [x + bias], approximate="none"), rtol=1e-6)
    np.testing.assert_allclose(ref("ms_fast_gelu", [x, bias]), ref("gelu", [x + bias], approximate="tanh"), rtol=1e-6)
    np.testing.assert_allclose(ref("ms_quick_gelu", [x], alpha=1.702), x * (1 / (1 + np.exp(-1.702 * x.astype(float)))),
                               rtol=1e-6)
    ln = ref("layer_norm", [x + skip + bias, gamma, beta], axis=-1, epsilon=1e-5)
    np.testing.assert_allclose(ref("ms_skip_layer_norm", [x, skip, gamma, beta, bias], epsilon=1e-5), ln, rtol=1e-5)
    a, b = x[0], rng.standard_normal((4, 5)).astype(np.float32)
    mm = ref("ms_fused_matmul", [a, b], alpha=0.5, transA=0, transB=1)
    np.testing.assert_allclose(mm, 0.5 * ref("matmul", [a, b.T]), rtol=1e-6)
    c = rng.standard_normal(4).astype(np.float32)
    gemm = ref("ms_fused_gemm", [a, b, c], alpha=1.0, beta=1.0, transA=0, transB=1, activation="Relu")
    np.testing.assert_allclose(gemm, np.maximum(ref("matmul", [a, b.T]) + c, 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("target_name", ["relax", "torch", "jax", "onnx-import"])
def test_only_onnx_consumers_lower_them(target_name):
    from dlcfuzz.lower.registry import load_target

    t = load_target(target_name)
    assert all(t.gap_of(name) and name not in t.rules for name in CONTRIB)


@pytest.mark.parametrize("name", CONTRIB)
def test_exact_and_perturbed_references_run(name):
    """The sensitivity analysis evaluates references in float64 (exact=True) and perturbed: a contrib
    reference must accept the widened inputs (a FusedConv refusing float64 was an internal error)."""
    from dlcfuzz import reference

    for g, x in instances(get_op(name), seed=7, count=4):
        exact = reference.run(g, x, exact=True)
        perturbed = reference.run(g, x, perturb=np.random.default_rng(0))
        assert set(exact) == set(perturbed) and all(np.all(np.isfinite(v)) for v in exact.values())
