"""spectral operators (DFT, STFT, Hann/Hamming/Blackman windows, MelWeightMatrix): every spec against
ONNX, ONNXRuntime, TVM Relax and the importer, the references against NumPy's FFT and the windows'
formulas, both ONNX forms of DFT (axis an attribute at opset 17, an input from 20), and sampling."""

from __future__ import annotations

import numpy as np
import pytest

from dlcfuzz.errors import ShapeError
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.ir import Graph, Node, TensorType, Value
from dlcfuzz.lower.onnx_import import import_model
from dlcfuzz.ops import check_graph, get_op
from op_harness import check_instance, instances

SPECTRAL_OPS = ["dft", "stft", "hann_window", "hamming_window", "blackman_window", "mel_weight_matrix"]


def one_node(op: str, ins: list[TensorType], attrs: dict) -> Graph:
    outs = get_op(op).infer(ins, attrs)
    g = Graph(inputs=[Value(f"x{i}", t) for i, t in enumerate(ins)],
              nodes=[Node(op, [f"x{i}" for i in range(len(ins))], [Value("y0", outs[0])], attrs, name="n0")],
              outputs=["y0"])
    check_graph(g)
    return g


@pytest.mark.parametrize("op", SPECTRAL_OPS)
def test_op_agrees_everywhere(op):
    spec = get_op(op)
    assert spec.family == "spectral"
    got = instances(spec, seed=7, count=3)
    assert got, f"{op}: sample() produced no instance"
    for g, inputs in got:
        check_instance(g, inputs)


@pytest.mark.parametrize("shape,attrs", [
    ((2, 5, 2), {"axis": 1, "inverse": 1, "onesided": 1, "dft_length": None}),  # IRFFT, default length 8
    ((3, 4, 1), {"axis": -3, "inverse": 0, "onesided": 1, "dft_length": 7}),  # RFFT, zero-padded
    ((2, 6, 3, 2), {"axis": 1, "inverse": 1, "onesided": 0, "dft_length": 4}),  # truncated inverse
])
def test_dft_forms_agree_everywhere(shape, attrs):
    g = one_node("dft", [TensorType("float32", shape)], attrs)
    check_instance(g, sample_inputs(g, np.random.default_rng(0)))


def test_dft_reference_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 6, 2))
    z = x[..., 0] + 1j * x[..., 1]
    spec = get_op("dft")

    def run(**attrs):
        return spec.reference([x], {"axis": 1, "inverse": 0, "onesided": 0, "dft_length": None, **attrs})[0]

    f = np.fft.fft(z, axis=1)
    np.testing.assert_allclose(run(), np.stack([f.real, f.imag], -1), atol=1e-12)
    f = np.fft.ifft(z, n=9, axis=1)
    np.testing.assert_allclose(run(inverse=1, dft_length=9), np.stack([f.real, f.imag], -1), atol=1e-12)
    np.testing.assert_allclose(run(inverse=1, onesided=1), np.fft.irfft(z, n=10, axis=1)[..., None], atol=1e-12)
    real = x[..., :1]
    f = np.fft.rfft(real[..., 0], n=4, axis=1)
    got = spec.reference([real], {"axis": -2, "inverse": 0, "onesided": 1, "dft_length": 4})[0]
    np.testing.assert_allclose(got, np.stack([f.real, f.imag], -1), atol=1e-12)


def test_dft_rejects_the_complex_axis_and_rfft_of_complex_input():
    spec = get_op("dft")
    t = TensorType("float32", (2, 4, 2))
    base = {"inverse": 0, "onesided": 0, "dft_length": None}
    with pytest.raises(ShapeError):
        spec.infer([t], {**base, "axis": -1})
    with pytest.raises(ShapeError):
        spec.infer([t], {**base, "axis": 1, "onesided": 1})
    with pytest.raises(ShapeError):
        spec.infer([TensorType("float32", (2, 4, 3))], {**base, "axis": 1})


@pytest.mark.parametrize("opset", [17, 20])
def test_dft_imports_both_onnx_forms(opset):
    import onnx
    from onnx import TensorProto, helper

    axis_attr = {"axis": 1} if opset == 17 else {}
    inputs = ["x", "n"] + ([] if opset == 17 else ["axis"])
    inits = [onnx.numpy_helper.from_array(np.asarray(5, np.int64), "n")]
    if opset == 20:
        inits.append(onnx.numpy_helper.from_array(np.asarray(1, np.int64), "axis"))
    node = helper.make_node("DFT", inputs, ["y"], onesided=1, **axis_attr)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 2])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    res = import_model(model)
    assert res.complete, res.skipped
    (n,) = res.graph.nodes
    assert n.op == "dft" and n.attrs == {"axis": 1, "inverse": 0, "onesided": 1, "dft_length": 5}


def test_stft_reference_matches_framed_fft():
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (1, 10, 1))
    w = np.hanning(4)
    y = get_op("stft").reference([x, w], {"frame_step": 3, "frame_length": None, "onesided": 1})[0]
    assert y.shape == (1, 3, 3, 2)
    for f in range(3):
        want = np.fft.rfft(x[0, 3 * f:3 * f + 4, 0] * w)
        np.testing.assert_allclose(y[0, f, :, 0] + 1j * y[0, f, :, 1], want, atol=1e-12)


@pytest.mark.parametrize("op,numpy_window", [("hann_window", np.hanning), ("hamming_window", None),
                                             ("blackman_window", np.blackman)])
def test_windows_follow_onnx_formulas(op, numpy_window):
    spec = get_op(op)
    sym = spec.reference([], {"size": 9, "periodic": 0, "output_datatype": "float64"})[0]
    periodic = spec.reference([], {"size": 8, "periodic": 1, "output_datatype": "float64"})[0]
    np.testing.assert_allclose(periodic, sym[:8], atol=1e-12)  # periodic N is symmetric N + 1, cut
    if numpy_window is not None:
        np.testing.assert_allclose(sym, numpy_window(9), atol=1e-12)
    else:  # ONNX's Hamming uses 25/46 and 21/46, not NumPy's 0.54 and 0.46
        np.testing.assert_allclose(sym, 25 / 46 - 21 / 46 * np.cos(2 * np.pi * np.arange(9) / 8), atol=1e-12)
    ints = spec.reference([], {"size": 9, "periodic": 0, "output_datatype": "int32"})[0]
    assert ints.dtype == np.int32 and ints.shape == (9,)


def test_window_sampling_avoids_the_symmetric_window_of_one():
    spec = get_op("hann_window")
    rng = np.random.default_rng(5)
    for _ in range(200):
        _, attrs = spec.sample(rng, TensorType("float32", (1,)))
        assert not (attrs["size"] == 1 and attrs["periodic"] == 0)  # 0/0 in ONNX's formula


def test_mel_weight_matrix_sampling_and_bounds():
    spec = get_op("mel_weight_matrix")
    rng = np.random.default_rng(6)
    for _ in range(50):
        _, attrs = spec.sample(rng, TensorType("float32", (2, 2)))
        p = spec.positions(attrs)
        assert np.min(np.abs(p - np.round(p))) >= 0.01  # no band edge float32 may floor differently
        (y,) = spec.reference([], attrs)
        assert y.shape == (attrs["dft_length"] // 2 + 1, attrs["num_mel_bins"]) and y.max() <= 1.0
    bad = {"num_mel_bins": 4, "dft_length": 9, "sample_rate": 100, "lower_edge_hertz": 0.0,
           "upper_edge_hertz": 500.0, "output_datatype": "float32"}
    with pytest.raises(ShapeError):  # edges past the 5 spectrogram bins: ONNX's formula writes out of bounds
        spec.infer([], bad)


def test_dft_sample_covers_every_form():
    spec = get_op("dft")
    rng = np.random.default_rng(8)
    seen = set()
    for shape in [(3, 4, 1), (3, 4, 2), (2, 3, 2, 2), (2, 5, 1)]:
        for _ in range(60):
            _, a = spec.sample(rng, TensorType("float32", shape))
            seen.add((a["inverse"], a["onesided"], a["dft_length"] is None, a["axis"] < 0))
    assert {(i, o) for i, o, _, _ in seen} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert {d for _, _, d, _ in seen} == {True, False} and {n for *_, n in seen} == {True, False}
