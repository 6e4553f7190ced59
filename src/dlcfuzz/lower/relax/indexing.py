"""Relax lowering rules of the indexing operators (ops/indexing.py).

Negative indices are mapped into range before TVM's gather/scatter kernels (which index the buffer
as given). Indices known statically (attributes) are normalized here; OneHot is a comparison with
an arange (out-of-range indices must give all-off rows, which relax.op.one_hot does not promise);
ReverseSequence, CenterCropPad's crop, Compress and TensorScatter are gathers of static indices.

An empty output is written as relax.op.zeros: apache-tvm 0.27 refuses several of these kernels on
zero-size tensors, which ONNX allows (gather_elements: "Check failed: indices_dim_i >= 1";
scatter_elements: "Divide by zero"; a strided_slice of an empty tensor fed to pad: VM codegen's
"Var lv is not defined")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dlcfuzz.lower.registry import target
from dlcfuzz.lower.relax.common import relax_dtype_const
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.indexing import (
    CenterCropPad,
    Compress,
    GatherElements,
    GatherND,
    OneHot,
    ReverseSequence,
    ScatterElements,
    ScatterND,
    TensorScatter,
)

RELAX = target("relax")


def _register(name: str) -> Callable[[Callable[..., list[Any]]], Callable[..., list[Any]]]:
    """RELAX.register, with empty outputs (no values to compute) written as zeros."""

    def deco(rule: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
        def guarded(spec: Any, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                    out_types: Any) -> list[Any]:
            from tvm import relax

            if all(t.size == 0 for t in out_types):
                return [relax.op.zeros(t.shape, t.dtype) for t in out_types]
            return rule(spec, bb, ins, outs, attrs, in_types, out_types)

        RELAX.register(name)(guarded)
        return rule

    return deco

# our reduction names -> TVM's (scatter_elements and scatter_nd share them)
TVM_REDUCTION = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _const(array: np.ndarray) -> Any:
    from tvm import relax

    a = np.ascontiguousarray(array)
    return relax.const(a, str(a.dtype))


def _in_range(bb: Any, idx: Any, dtype: str, size: Any) -> Any:
    """idx + size where idx < 0 (size: an int or a constant broadcast against idx)."""
    from tvm import relax

    n = relax_dtype_const(size, dtype) if isinstance(size, int) else size
    zero = relax_dtype_const(0, dtype)
    return bb.emit(relax.op.where(relax.op.less(idx, zero), relax.op.add(idx, n), idx))


@_register("gather_elements")
def gather_elements(spec: GatherElements, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                    out_types: Any) -> list[Any]:
    from tvm import relax

    t, it = in_types
    ax = attrs["axis"] % t.rank
    idx = _in_range(bb, ins[1], it.dtype, t.shape[ax])
    return [relax.op.gather_elements(ins[0], idx, axis=ax)]


@_register("gather_nd")
def gather_nd(spec: GatherND, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
              out_types: Any) -> list[Any]:
    from tvm import relax

    t, it = in_types
    b, k = spec.parse(t, it, attrs)
    dims = _const(np.asarray(t.shape[b:b + k], dtype=it.dtype))
    idx = _in_range(bb, ins[1], it.dtype, dims)
    return [relax.op.gather_nd(ins[0], idx, batch_dims=b)]


def topi_scatter_layout_ok(data_shape: tuple[int, ...], upd_shape: tuple[int, ...], axis: int) -> bool:
    """Whether TVM's scatter_elements addresses these shapes right. topi.scatter_elements (apache-tvm
    0.27) offsets data by the index tensor's flat position before and after the axis, as if those
    blocks had data's shape: correct only where updates differ from data at dim 0 and dim axis+1
    at most (ONNX lets every off-axis dim be smaller). Known upstream: apache/tvm#20182 (fixed in
    the ONNX frontend by apache/tvm#20187, which broadcasts first; the operator itself still does
    this), so the fuzzer writes the shapes the operator gets right, as the frontend does."""
    return all(u == d for k, (u, d) in enumerate(zip(upd_shape, data_shape)) if k not in (0, axis, axis + 1))


@_register("scatter_elements")
def scatter_elements(spec: ScatterElements, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> list[Any]:
    from tvm import relax

    t, u = in_types
    ax = attrs["axis"] % t.rank
    reduction = TVM_REDUCTION[attrs["reduction"]]
    if u.size == 0:  # nothing to scatter (topi.scatter_elements divides by the empty extent)
        return [ins[0]]
    if topi_scatter_layout_ok(t.shape, u.shape, ax):
        idx = np.asarray(attrs["indices"], dtype=np.int64).reshape(u.shape)
        idx = np.where(idx < 0, idx + t.shape[ax], idx).astype(attrs["index_dtype"])
        return [relax.op.scatter_elements(ins[0], _const(idx), ins[1], axis=ax, reduction=reduction)]
    # elsewhere: the same scatter on the flattened data, at each update's static linear position
    linear = np.ravel_multi_index(spec.targets(t, u, attrs), t.shape).astype(attrs["index_dtype"])
    flat = relax.op.scatter_elements(relax.op.reshape(ins[0], (t.size,)), _const(linear.reshape(-1)),
                                     relax.op.reshape(ins[1], (u.size,)), axis=0, reduction=reduction)
    return [relax.op.reshape(bb.emit(flat), t.shape)]


@_register("scatter_nd")
def scatter_nd(spec: ScatterND, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> list[Any]:
    from tvm import relax

    if in_types[1].size == 0:  # nothing to scatter
        return [ins[0]]
    tuples = spec.tuples(in_types[0], attrs).reshape(attrs["index_shape"])
    return [relax.op.scatter_nd(ins[0], _const(tuples.astype(np.int64)), ins[1],
                                reduction=TVM_REDUCTION[attrs["reduction"]])]


@_register("one_hot")
def one_hot(spec: OneHot, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
            out_types: Any) -> list[Any]:
    from tvm import relax

    t = in_types[0]
    depth, axis, dtype = spec.parse(t, attrs)
    x = ins[0]
    if t.dtype != "int64":  # floats truncate toward zero, as the cast does
        x = bb.emit(relax.op.astype(x, "int64"))
    idx = _in_range(bb, x, "int64", depth)
    shape = [1] * (t.rank + 1)
    shape[axis] = depth
    hot = relax.op.equal(relax.op.expand_dims(idx, axis), _const(np.arange(depth, dtype=np.int64).reshape(shape)))
    off, on = (np.asarray(v).astype(dtype) for v in attrs["values"])
    return [relax.op.where(bb.emit(hot), relax_dtype_const(on.item(), dtype),
                           relax.op.broadcast_to(relax_dtype_const(off.item(), dtype), out_types[0].shape))]


@_register("compress")
def compress(spec: Compress, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> list[Any]:
    from tvm import relax

    t = in_types[0]
    axis, kept = spec.kept(t, attrs)
    x = ins[0]
    if axis is None:
        x, axis = bb.emit(relax.op.reshape(x, (t.size,))), 0
    return [relax.op.take(x, _const(np.asarray(kept, dtype=np.int64)), axis=axis)]


@_register("reverse_sequence")
def reverse_sequence(spec: ReverseSequence, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                     out_types: Any) -> list[Any]:
    from tvm import relax

    tm, src = spec.source(in_types[0], attrs)
    return [relax.op.gather_elements(ins[0], _const(src), axis=tm)]


@_register("center_crop_pad")
def center_crop_pad(spec: CenterCropPad, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                    out_types: Any) -> list[Any]:
    from tvm import relax

    t = in_types[0]
    win = spec.windows(t, attrs)
    x = ins[0]
    if t.size == 0:  # all padding (see the module docstring: no strided_slice of an empty tensor)
        return [relax.op.zeros(out_types[0].shape, out_types[0].dtype)]
    crop = [a for a, (s, n, _, _) in enumerate(win) if n != t.shape[a]]
    if crop:
        x = bb.emit(relax.op.strided_slice(x, crop, [win[a][0] for a in crop],
                                           [win[a][0] + win[a][1] for a in crop]))
    width = [w for _, _, pb, pe in win for w in (pb, pe)]
    if not any(width):
        return [x]
    return [relax.op.nn.pad(x, width, "constant", 0.0 if np.issubdtype(t.np_dtype, np.floating) else 0)]


@_register("tensor_scatter")
def tensor_scatter(spec: TensorScatter, bb: Any, ins: list[Any], outs: list[str], attrs: Attrs, in_types: Any,
                   out_types: Any) -> list[Any]:
    from tvm import relax

    past, upd = in_types
    a, src = spec.source(past, upd, attrs)
    if upd.shape[a] == 0:
        return [ins[0]]
    picked = bb.emit(relax.op.gather_elements(ins[1], _const(np.clip(src, 0, None)), axis=a)) \
        if upd.shape[a] == past.shape[a] else None
    if picked is None:  # gather_elements needs index dims <= data dims: take the rows of update along axis
        picked = bb.emit(relax.op.gather_elements(
            relax.op.concat([ins[1], relax.op.zeros(past.shape[:a] + (past.shape[a] - upd.shape[a],)
                                                    + past.shape[a + 1:], past.dtype)], axis=a),
            _const(np.clip(src, 0, None)), axis=a))
    return [relax.op.where(_const(src >= 0), picked, ins[0])]
