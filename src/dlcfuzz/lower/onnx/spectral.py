"""ONNX lowering and import rules of the spectral operators (ops/spectral.py).

DFT is written in its opset-20 form (axis and dft_length as inputs; need_opset(20)): the opset-17 form
(axis an attribute) is invalid in any model whose opset another operator raises past 19, the
opset-20 form stays valid above it. Both forms import."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.lower.onnx.common import dtype_of, expect_attrs, onnx_attr, onnx_elem_type
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.spectral import DFT, STFT, MelWeightMatrix, Window

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
ONNX_IMPORT = target("onnx-import")
DFT_AXIS_INPUT_SINCE = 20


def _scalar_int(node: Any, ctx: ImportContext, i: int) -> int | None:
    v = ctx.const_input(node, i)
    if v is None:
        return None
    v = np.asarray(v)
    if v.dtype.kind not in "iu" or v.size != 1:
        raise Unsupported(f"{node.op_type}: input {i} must be an integer scalar, got {v.dtype}{v.shape}")
    return int(v.reshape(()))


def _scalar_float(node: Any, ctx: ImportContext, i: int) -> float:
    v = ctx.const_input(node, i)
    if v is None or np.asarray(v).size != 1:
        raise Unsupported(f"{node.op_type}: input {i} must be a scalar")
    return float(np.asarray(v).reshape(()))


@ONNX.register("dft")
def dft(spec: DFT, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    b.need_opset(DFT_AXIS_INPUT_SINCE)
    n = attrs["dft_length"]
    length = "" if n is None else b.const(np.asarray(n, dtype=np.int64), "int64", "dft_length")
    axis = b.const(np.asarray(attrs["axis"], dtype=np.int64), "int64", "axis")
    b.node("DFT", [ins[0], length, axis], outs, inverse=attrs["inverse"], onesided=attrs["onesided"])


@ONNX_IMPORT.register("dft")
def import_dft(spec: DFT, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    if ctx.opset < DFT_AXIS_INPUT_SINCE:
        expect_attrs(node, {"axis", "inverse", "onesided"})
        axis = int(onnx_attr(node, "axis", 1))
    else:
        expect_attrs(node, {"inverse", "onesided"})
        given = _scalar_int(node, ctx, 2)
        axis = -2 if given is None else given
    return [node.input[0]], {"axis": axis, "inverse": int(onnx_attr(node, "inverse", 0)),
                             "onesided": int(onnx_attr(node, "onesided", 0)), "dft_length": _scalar_int(node, ctx, 1)}


@ONNX.register("stft")
def stft(spec: STFT, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    step = b.const(np.asarray(attrs["frame_step"], dtype=np.int64), "int64", "frame_step")
    window = ins[1] if len(ins) == 2 else ""
    fl = attrs["frame_length"]
    length = [] if fl is None else [b.const(np.asarray(fl, dtype=np.int64), "int64", "frame_length")]
    inputs = [ins[0], step, window, *length]
    while inputs[-1] == "":
        inputs.pop()
    b.node("STFT", inputs, outs, onesided=attrs["onesided"])


@ONNX_IMPORT.register("stft")
def import_stft(spec: STFT, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"onesided"})
    step = _scalar_int(node, ctx, 1)
    if step is None:
        raise Unsupported("STFT without frame_step")
    ins = [node.input[0]] + ([node.input[2]] if ctx.has_input(node, 2) else [])
    return ins, {"frame_step": step, "frame_length": _scalar_int(node, ctx, 3),
                 "onesided": int(onnx_attr(node, "onesided", 1))}


@ONNX.register("hann_window", "hamming_window", "blackman_window")
def window(spec: Window, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any, out_types: Any) -> None:
    size = b.const(np.asarray(attrs["size"], dtype=np.int64), "int64", "size")
    b.node(spec.onnx_ops[0], [size], outs, periodic=attrs["periodic"],
           output_datatype=onnx_elem_type(attrs["output_datatype"]))


@ONNX_IMPORT.register("hann_window", "hamming_window", "blackman_window")
def import_window(spec: Window, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"periodic", "output_datatype"})
    size = _scalar_int(node, ctx, 0)
    return [], {"size": size, "periodic": int(onnx_attr(node, "periodic", 1)),
                "output_datatype": dtype_of(int(onnx_attr(node, "output_datatype", 1)))}


@ONNX.register("mel_weight_matrix")
def mel_weight_matrix(spec: MelWeightMatrix, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
                      out_types: Any) -> None:
    ints = [b.const(np.asarray(attrs[k], dtype=np.int64), "int64", k)
            for k in ("num_mel_bins", "dft_length", "sample_rate")]
    edges = [b.const(np.asarray(attrs[k], dtype=np.float32), "float32", k)
             for k in ("lower_edge_hertz", "upper_edge_hertz")]
    b.node("MelWeightMatrix", ints + edges, outs, output_datatype=onnx_elem_type(attrs["output_datatype"]))


@ONNX_IMPORT.register("mel_weight_matrix")
def import_mel_weight_matrix(spec: MelWeightMatrix, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"output_datatype"})
    attrs: Attrs = {k: _scalar_int(node, ctx, i) for i, k in enumerate(("num_mel_bins", "dft_length", "sample_rate"))}
    attrs["lower_edge_hertz"] = _scalar_float(node, ctx, 3)
    attrs["upper_edge_hertz"] = _scalar_float(node, ctx, 4)
    attrs["output_datatype"] = dtype_of(int(onnx_attr(node, "output_datatype", 1)))
    return [], attrs
