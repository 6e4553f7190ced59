"""Standalone OpenVINO reproducers: the ONNX model built in code with `onnx.helper` (one readable
`make_node` per node, small arrays inline, larger ones shipped exactly in one base64 block), the
CPU plugin's properties per configuration, dlcfuzz's comparison, expected vs actual printed.
Only openvino, numpy and onnx are imported (onnxruntime only when the finding names it)."""

from __future__ import annotations

import pprint
from collections.abc import Sequence
from typing import Any

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.backends.script import COMPARE, header, npz_b64
from dlcfuzz.ir.graph import Graph
from dlcfuzz.lower.onnx import to_onnx

INLINE_MAX = 16  # arrays with at most this many elements are written as literals


class _Arrays:
    """Arrays of the script: literals when small, else a reference into the shipped DATA block."""

    def __init__(self) -> None:
        self.shipped: dict[str, np.ndarray] = {}

    def expr(self, a: np.ndarray) -> str:
        a = np.asarray(a)
        if a.size <= INLINE_MAX and a.dtype.kind in "biuf":
            return f"np.array({_literal(a)}, dtype={a.dtype.name!r})"
        key = f"a{len(self.shipped)}"
        self.shipped[key] = a
        return f"DATA[{key!r}]"


def _literal(a: np.ndarray) -> str:
    if a.dtype.kind == "f":
        return repr(np.vectorize(lambda v: float(v) if np.isfinite(v) else v, otypes=[object])(a).tolist()
                    ).replace("nan", "float('nan')").replace("inf", "float('inf')")
    return repr(a.tolist())


def _attr(attr: Any, arrays: _Arrays) -> str:
    from onnx import AttributeProto, helper, numpy_helper

    if attr.type == AttributeProto.TENSOR:
        return f"numpy_helper.from_array({arrays.expr(numpy_helper.to_array(attr.t))})"
    if attr.type == AttributeProto.TENSORS:
        return "[" + ", ".join(f"numpy_helper.from_array({arrays.expr(numpy_helper.to_array(t))})"
                               for t in attr.tensors) + "]"
    if attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        raise ValueError("sub-graph attributes are not written as code")
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, list):
        value = [v.decode() if isinstance(v, bytes) else v for v in value]
    return repr(value)


def _value_info(vi: Any) -> str:
    from onnx import TensorProto

    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tt.elem_type:
        return f"helper.make_empty_tensor_value_info({vi.name!r})"
    dims = [d.dim_value for d in tt.shape.dim]
    return f"helper.make_tensor_value_info({vi.name!r}, TensorProto.{TensorProto.DataType.Name(tt.elem_type)}, {dims!r})"


def model_code(model: Any, arrays: _Arrays) -> str:
    """Python source of a function `build_model()` that rebuilds `model` with onnx.helper."""
    from onnx import numpy_helper

    g = model.graph
    lines = ["def build_model():", "    nodes = ["]
    for n in g.node:
        attrs = "".join(f", {a.name}={_attr(a, arrays)}" for a in n.attribute)
        dom = f", domain={n.domain!r}" if n.domain else ""
        lines.append(f"        helper.make_node({n.op_type!r}, {list(n.input)!r}, {list(n.output)!r}{dom}{attrs}),")
    lines.append("    ]")
    lines.append("    initializers = [")
    for t in g.initializer:
        lines.append(f"        numpy_helper.from_array({arrays.expr(numpy_helper.to_array(t))}, {t.name!r}),")
    lines.append("    ]")
    lines.append("    inputs = [" + ", ".join(_value_info(v) for v in g.input) + "]")
    lines.append("    outputs = [" + ", ".join(_value_info(v) for v in g.output) + "]")
    opsets = [(o.domain, o.version) for o in model.opset_import]
    lines.append(f"    graph = helper.make_graph(nodes, {g.name!r}, inputs, outputs, initializers)")
    lines.append("    model = helper.make_model(graph, opset_imports=[" +
                 ", ".join(f"helper.make_opsetid({d!r}, {v})" for d, v in opsets) + "])")
    lines.append(f"    model.ir_version = {model.ir_version}")
    lines.append("    return model.SerializeToString()")
    return "\n".join(lines) + "\n"


_RUN = '''

def layers(compiled):
    """The executed graph: layer type (Subgraph = a snippets kernel), primitive, precision, fused layers."""
    out = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        if rt["layerType"].astype(str) not in ("Input", "Output", "Const"):
            out.append(f"{rt['layerType'].astype(str)}[{rt['primitiveType'].astype(str)}]"
                       f"({rt['originalLayersNames'].astype(str)})")
    return out


def read(opts):
    if opts.get("front") == "convert":
        return ov.convert_model(io.BytesIO(MODEL))
    return ov.Core().read_model(MODEL, b"")


def run(name):
    opts = CONFIGS[name]
    if opts.get("device") == "onnxruntime":  # the cross-compiler baseline
        import onnxruntime as ort

        sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
        return sess.run(None, {i.name: INPUTS[i.name] for i in sess.get_inputs()})
    model = read(opts)
    if opts.get("device") == "reference":  # OpenVINO's op-level reference: Model.evaluate, no plugin
        ins = [ov.Tensor(np.array(INPUTS[p.get_friendly_name()], order="C")) for p in model.get_parameters()]
        outs = [ov.Tensor(r.get_element_type(), r.get_output_partial_shape(0).to_shape()) for r in model.get_results()]
        if not model.evaluate(outs, ins):
            raise RuntimeError("Model.evaluate returned False")
        return [t.data.copy() for t in outs]
    compiled = ov.Core().compile_model(model, "CPU", opts["properties"])
    print(f"{name}: executed layers: {', '.join(layers(compiled))}")
    res = compiled({n: INPUTS[n] for n in INPUTS})
    return [res[o] for o in compiled.outputs]


def show(name, i, got, ref):
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape == ref.shape and got.size:
        d = np.abs(got.astype(np.float64) - ref.astype(np.float64)).reshape(-1)
        k = int(np.argmax(np.where(np.isfinite(d), d, np.inf)))
        print(f"  {name} output {i} at flat index {k}: expected {ref.reshape(-1)[k].item()!r}, actual {got.reshape(-1)[k].item()!r}")


def main():
    results = {}
    for name in CONFIGS:
        try:
            results[name] = [np.asarray(x) for x in run(name)]
        except Exception as e:  # the error itself may be the finding
            results[name] = e
            print(f"{name}: raised {type(e).__name__}: {e}")
    if CATEGORY == "accepted-invalid":
        accepted = [name for name, r in results.items() if not isinstance(r, Exception)]
        if accepted:
            print(f"{', '.join(accepted)} compiled and ran a model that ONNX's own checker rejects")
            print("BUG REPRODUCED:", CATEGORY)
            return 1
    elif CATEGORY in ("unexpected-error", "inconsistent-rejection"):
        if any(isinstance(r, Exception) for r in results.values()):
            print("BUG REPRODUCED:", CATEGORY)
            return 1
    else:
        ok = {name: r for name, r in results.items() if not isinstance(r, Exception)}
        base_name, base = ("the NumPy reference", EXPECTED) if EXPECTED is not None else next(iter(ok.items()), (None, None))
        for name, r in ok.items():
            for i, (got, ref) in enumerate(zip(r, base or [])):
                why = mismatch(got, ref)
                if why:
                    print(f"{name} output {i} vs {base_name}: {why}")
                    show(name, i, got, ref)
                    print("BUG REPRODUCED:", CATEGORY)
                    return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def openvino_script(g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                    configs: list[Config], category: str, title: str, detail: str, version: str,
                    untyped_outputs: Sequence[str] = ()) -> str:
    # the worker's traceback names files of the machine that found the finding: not for the script
    detail = detail.split("Traceback (most recent call last):")[0].rstrip()
    model = to_onnx(g, untyped_outputs=untyped_outputs)
    arrays = _Arrays()
    code = model_code(model, arrays)
    inputs_code = "{\n" + "".join(f"    {k!r}: {arrays.expr(v)},\n" for k, v in inputs.items()) + "}"
    expected_code = "None" if expected is None else "[" + ", ".join(arrays.expr(e) for e in expected) + "]"
    props = {c.name: {k: v for k, v in c.options.items() if k != "untyped_outputs"} for c in configs}
    data = (f'DATA = dict(np.load(io.BytesIO(base64.b64decode("""\n{npz_b64(arrays.shipped)}\n"""))))\n'
            if arrays.shipped else "")
    return header(title, detail, version) + f'''import base64
import io
import sys

import numpy as np
import openvino as ov
from onnx import TensorProto, helper, numpy_helper

{data}

{code}

MODEL = build_model()
INPUTS = {inputs_code}
EXPECTED = {expected_code}  # dlcfuzz's NumPy reference (None: the configurations are compared)
CATEGORY = {category!r}
CONFIGS = {pprint.pformat(props, sort_dicts=False)}
{COMPARE}{_RUN}'''
