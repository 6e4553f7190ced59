"""Standalone OpenVINO reproducers: the ONNX model built in code with `onnx.helper` (one readable
`make_node` per node, small arrays inline, larger ones as their exact bytes: backends/script.py), the
CPU plugin's properties per configuration, dlcfuzz's comparison, expected vs actual printed.
Only openvino, numpy and onnx are imported (onnxruntime only when the finding names it)."""

from __future__ import annotations

import pprint
from collections.abc import Sequence

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.backends.script import (
    COMPARE,
    ONNX_IMPORTS,
    UNPACK,
    array_source,
    arrays_source,
    error_type_line,
    header,
    onnx_model_source,
)
from dlcfuzz.ir.graph import Graph
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.oracle.categories import REPRO_ACCEPTED, REPRO_ERROR

_RUN = (f"\nREPRO_ERROR, REPRO_ACCEPTED = {REPRO_ERROR!r}, {REPRO_ACCEPTED!r}\n"  # REPRO: see backends/script.py
        + '''

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
        return sess.run(None, {i.name: INPUTS[i.name].copy() for i in sess.get_inputs()})
    model = read(opts)
    if opts.get("device") == "reference":  # OpenVINO's op-level reference: Model.evaluate, no plugin
        ins = [ov.Tensor(np.array(INPUTS[p.get_friendly_name()], order="C")) for p in model.get_parameters()]
        shapes = [r.get_output_partial_shape(0) for r in model.get_results()]  # evaluate() resizes a dynamic one
        outs = [ov.Tensor(r.get_element_type(), list(s.to_shape()) if s.is_static
                           else [0] * (s.rank.get_length() if s.rank.is_static else 1))
                for r, s in zip(model.get_results(), shapes)]
        if not model.evaluate(outs, ins):
            raise RuntimeError("Model.evaluate returned False")
        return [t.data.copy() for t in outs]
    compiled = ov.Core().compile_model(model, "CPU", opts["properties"])
    print(f"{name}: executed layers: {', '.join(layers(compiled))}")
    res = compiled(feed(compiled.inputs))
    return [res[o] for o in compiled.outputs]


def feed(ports):
    """Exactly the inputs the compiled model kept, by tensor name: OpenVINO prunes a graph input no
    output depends on, and refuses a tensor name it does not have ("Port for tensor name ... was not found")."""
    out = {}
    for port in ports:
        names = [n for n in port.get_names() if n in INPUTS]
        if not names:
            raise RuntimeError(f"no input for the compiled model's input {sorted(port.get_names())}")
        out[port] = INPUTS[names[0]]
    return out


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
    if REPRO == REPRO_ACCEPTED:
        accepted = [name for name, r in results.items() if not isinstance(r, Exception)]
        if accepted:
            print(f"{', '.join(accepted)} compiled and ran a model that ONNX's own checker rejects")
            print("BUG REPRODUCED:", CATEGORY)
            return 1
    elif REPRO == REPRO_ERROR:
        if any(isinstance(r, Exception) and ERROR_TYPE in (None, type(r).__name__) for r in results.values()):
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
''')


def openvino_script(g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                    configs: list[Config], category: str, title: str, detail: str, version: str,
                    untyped_outputs: Sequence[str] = ()) -> str:
    # the worker's traceback names files of the machine that found the finding: not for the script
    detail = detail.split("Traceback (most recent call last):")[0].rstrip()
    model = to_onnx(g, untyped_outputs=untyped_outputs).SerializeToString()
    expected_code = "None" if expected is None else "[" + ", ".join(array_source(e) for e in expected) + "]"
    props = {c.name: {k: v for k, v in c.options.items() if k != "untyped_outputs"} for c in configs}
    return header(title, detail, version) + f'''import base64
import io
import sys
import zlib

import numpy as np
import openvino as ov
{ONNX_IMPORTS}{UNPACK}

{onnx_model_source(model)}
INPUTS = {arrays_source(inputs)}
EXPECTED = {expected_code}  # dlcfuzz's NumPy reference (None: the configurations are compared)
CATEGORY = {category!r}
CONFIGS = {pprint.pformat(props, sort_dicts=False)}
{error_type_line(category, detail)}{COMPARE}{_RUN}'''
