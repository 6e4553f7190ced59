"""Property tests over random graphs of 1-12 operators across all dtypes (issue acceptance):
check() passes, JSON round-trips, ONNX passes the checker with shape inference matching ours,
ONNXRuntime (no optimizations) and TVM Relax (llvm) agree with the NumPy reference."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlcfuzz import reference
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.random import generate
from dlcfuzz.ir import dumps, graphs_equal, loads, to_text
from dlcfuzz.lower.onnx import inferred_types, onnx_output_names, to_onnx
from dlcfuzz.ops import get_op
from dlcfuzz.oracle.numeric import all_finite, compare

SETTINGS = settings(max_examples=500, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def supported(compiler: str):
    """Capability probe (in process): which (op, dtype) pairs the compiler implements."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.backends.probe import probe

    backend = get_backend(compiler)
    caps = probe(backend, [backend.default_pair()[0]])
    skip = "ort_skip" if compiler == "onnxruntime" else "relax_skip"
    return lambda op, dt: caps.get((op, dt), (True, ""))[0] and dt not in getattr(get_op(op), skip)


def graph_and_inputs(seed: int, n: int, ok=None):
    rng = np.random.default_rng(seed)
    g = generate(rng, n, supported=ok)
    return g, sample_inputs(g, rng)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
@SETTINGS
def test_random_graphs_are_valid_and_round_trip(seed, n):
    import onnx

    g, _ = graph_and_inputs(seed, n)
    g.check()
    assert graphs_equal(loads(dumps(g)), g)
    model = to_onnx(g)
    onnx.checker.check_model(model, full_check=True)
    types = inferred_types(model)
    for name, t in zip(onnx_output_names(model), g.output_types()):
        assert types[name] == t, to_text(g)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
@SETTINGS
def test_onnxruntime_unoptimized_agrees_with_reference(seed, n):
    pytest.importorskip("onnxruntime")
    from tests.op_harness import run_ort

    g, x = graph_and_inputs(seed, n, supported("onnxruntime"))
    ref = reference.outputs(g, x)
    got = [np.asarray(a) for a in run_ort(to_onnx(g), x)]
    if not all_finite(ref):
        ref = [np.where(np.isfinite(r), r, 0) if r.dtype.kind == "f" else r for r in ref]
        got = [np.where(np.isfinite(a), a, 0) if a.dtype.kind == "f" else a for a in got]
    assert not compare(got, ref), to_text(g)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
@SETTINGS
def test_relax_llvm_agrees_with_reference(seed, n):
    pytest.importorskip("tvm")
    from tests.op_harness import run_relax

    g, x = graph_and_inputs(seed, n, supported("tvm"))
    ref = reference.outputs(g, x)
    got = run_relax(g, x)
    if not all_finite(ref):
        ref = [np.where(np.isfinite(r), r, 0) if r.dtype.kind == "f" else r for r in ref]
        got = [np.where(np.isfinite(a), a, 0) if a.dtype.kind == "f" else a for a in got]
    assert not compare(got, ref), to_text(g)
