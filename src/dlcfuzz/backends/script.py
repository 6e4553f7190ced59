"""Shared parts of the standalone reproducer scripts every compiler's template uses: the header, the
embedded inputs and configurations, dlcfuzz's comparison (its tolerances are `oracle/numeric.py`'s,
written into the script), and `main`, which decides whether the finding shows.

A script exits 1 and prints "BUG REPRODUCED" when the finding shows, 0 when it does not.
Crashes show as the process dying (signal), hangs as the script not returning.
"""

from __future__ import annotations

import base64
import io
import pprint
import re
import zlib
from typing import Any

import numpy as np

from dlcfuzz.oracle.categories import REPRO_ACCEPTED, REPRO_ERROR, REPRO_OOM, repro_mode
from dlcfuzz.oracle.numeric import TOLERANCE
from dlcfuzz.oracle.testcase import Config

COMPARE = f'''
TOL = {TOLERANCE!r}


def mismatch(got, ref):
    """dlcfuzz's numeric policy: NaN/Inf positions must match; relative Chebyshev distance <= per-dtype tolerance."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"shape/dtype {{got.dtype}}{{got.shape}} vs {{ref.dtype}}{{ref.shape}}"
    if ref.dtype.kind == "f":
        if (np.isnan(got) != np.isnan(ref)).any():
            return "NaN at different positions"
        if (np.isinf(got) != np.isinf(ref)).any() or (got[np.isinf(got)] != ref[np.isinf(ref)]).any():
            return "Inf at different positions"
    g, r = got.astype(np.float64), ref.astype(np.float64)
    fin = np.isfinite(g) & np.isfinite(r)
    d = float((np.abs(g[fin] - r[fin]) / np.maximum(1.0, np.abs(r[fin]))).max()) if fin.any() else 0.0
    return f"max relative difference {{d:.4g}}" if d > TOL.get(str(ref.dtype), 0.0) else None
'''


# REPRO (written by error_type_line): how the script decides that its finding shows, the `repro` column of
# oracle/categories.py's table for its category
MAIN = f"""
REPRO_ERROR, REPRO_ACCEPTED, REPRO_OOM = {REPRO_ERROR!r}, {REPRO_ACCEPTED!r}, {REPRO_OOM!r}
""" + '''

def show(got, ref):
    """Expected vs actual where they differ most (a NaN or Inf against a number counts as most)."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape == ref.shape and got.size:
        g, r = got.astype(np.float64).reshape(-1), ref.astype(np.float64).reshape(-1)
        same = (g == r) | (np.isnan(g) & np.isnan(r))
        d = np.where(same, 0.0, np.nan_to_num(np.abs(g - r), nan=np.inf))
        k = int(np.argmax(d))
        print(f"  at flat index {k} of {got.size}: expected {ref.reshape(-1)[k].item()!r}, actual {got.reshape(-1)[k].item()!r}")
    print("  expected:", ref.reshape(-1)[:8], "..." if ref.size > 8 else "")
    print("  actual:  ", got.reshape(-1)[:8], "..." if got.size > 8 else "")


class NonTensorOutput(RuntimeError):
    """The compiler returned something other than a tensor for an output (e.g. None)."""


def tensors(outs):
    arrays = [np.asarray(x) for x in outs]
    for k, a in enumerate(arrays):
        if a.dtype == object:
            raise NonTensorOutput(f"output {k} is {a.ravel()[:1].tolist()} (dtype object), not a tensor")
    return arrays


def is_the_error(e):
    """The finding's exception: its type, or any error class of the compiler's where the compiler renames
    them between releases (onnxruntime raised RuntimeException in 1.20 and Fail in 1.32 for one bug)."""
    return ERROR_TYPE in (None, type(e).__name__) or (ERROR_FAMILY is not None and type(e).__module__ == ERROR_FAMILY)


# a kernel that leaves output memory unwritten shows only once the process reuses memory (a fresh
# process gets zeroed pages): every configuration runs up to this many rounds
ROUNDS = 3


def attempt(verbose):
    """One round: run every configuration; True when the finding shows."""
    results = {}
    for name in CONFIGS:
        try:
            results[name] = tensors(run(name))
        except Exception as e:  # the error itself may be the finding
            results[name] = e
            if verbose:
                print(f"{name}: raised {type(e).__name__}: {str(e)[:2000]}")
    if REPRO == REPRO_ACCEPTED:
        accepted = [name for name, r in results.items() if not isinstance(r, Exception)]
        if accepted:
            print(f"{', '.join(accepted)} compiled and ran a model that ONNX's own inference rejects")
            return True
    elif REPRO == REPRO_OOM:
        return any(isinstance(r, MemoryError) for r in results.values())
    elif REPRO == REPRO_ERROR:
        hit = next((f"{name}: raised {type(r).__name__}: {str(r)[:2000]}" for name, r in results.items()
                    if isinstance(r, Exception) and is_the_error(r)), None)
        if hit and not verbose:
            print(hit)
        return hit is not None
    else:
        ok = {name: r for name, r in results.items() if not isinstance(r, Exception)}
        base_name = "the reference" if EXPECTED is not None else next(iter(ok), None)
        base = EXPECTED if EXPECTED is not None else ok.get(base_name)
        for name, outs in ok.items():
            for i, (got, ref) in enumerate(zip(outs, base or [])):
                why = mismatch(got, ref)
                if why:
                    print(f"{name} output {i} vs {base_name}: {why}")
                    show(got, ref)
                    return True
    return False


def main():
    for round_ in range(1, ROUNDS + 1):
        if attempt(verbose=round_ == 1):
            if round_ > 1:
                print(f"(shown in round {round_} of running every configuration in this process; round 1, on "
                      "fresh memory, did not show it: a kernel may leave part of its output unwritten)")
            print("BUG REPRODUCED:", CATEGORY)
            return 1
    print("not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def wrap_text(text: str, width: int = 100) -> str:
    """`text` (one word: base64) cut into lines of `width` characters. Not textwrap.wrap, which cuts a long word by
    copying what is left of it at each line: quadratic, hours for the tens of megabytes of a zoo model's weights."""
    return "\n".join(text[i:i + width] for i in range(0, len(text), width))


def b64(data: bytes) -> str:
    """Base64 wrapped at 100 columns, for a triple-quoted literal in a script."""
    return wrap_text(base64.b64encode(data).decode())


def npz_b64(arrays: dict[str, np.ndarray]) -> str:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return b64(buf.getvalue())


def header(title: str, detail: str, version: str) -> str:
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    return (f'#!/usr/bin/env python3\n"""{title}\n\nFound by dlcfuzz against {version}.\n'
            f'Exit 1 and "BUG REPRODUCED" when the bug shows, 0 when it does not.\n"""\n{det}\n')


# the exception type at the head of a finding's error text ("InternalError: Check failed ...",
# "... rejects (Fail: [ONNXRuntimeError] ...) while ... compiles"); inside a backend's wrapper that
# names the failing stage (Inductor's `StageError: [stage inductor] InductorError: ...`), which exists
# only in dlcfuzz, the script sees the inner one
_ERROR_TYPE = re.compile(r"(?:^|\()([A-Za-z_]\w*): (?:\[stage \w+\] ([A-Za-z_]\w*): )?", re.M)


def error_type(detail: str) -> str | None:
    """The exception type an error finding's script must see again (None: any exception)."""
    m = _ERROR_TYPE.search(detail or "")
    return (m.group(2) or m.group(1)) if m else None


def common(inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None, category: str,
           configs: list[Config], configs_source: str | None = None, detail: str = "",
           error_family: tuple[str, frozenset[str]] | None = None) -> str:
    """INPUTS, EXPECTED (dlcfuzz's reference or None), CATEGORY, CONFIGS, ERROR_TYPE and ERROR_FAMILY
    of a script (which defines `unpack`: UNPACK); `configs_source`: the template's own way of writing
    CONFIGS; `error_family`: (module, class names) of the compiler's own errors (see error_type_line)."""
    exp = "None" if expected is None else "[" + ", ".join(array_source(a) for a in expected) + "]"
    if configs_source is None:
        # a Python literal, not JSON: options may hold None (TVM's rewrite knob)
        configs_source = pprint.pformat({c.name: c.options for c in configs}, sort_dicts=False)
    return (
        f"INPUTS = {arrays_source(inputs)}\n"
        f"EXPECTED = {exp}  # dlcfuzz's NumPy reference (None: the configurations are compared)\n"
        f"CATEGORY = {category!r}\n"
        f"CONFIGS = {configs_source}\n"
        f"{error_type_line(category, detail, error_family)}"
    )


def error_type_line(category: str, detail: str, error_family: tuple[str, frozenset[str]] | None = None) -> str:
    """The script's ERROR_TYPE and ERROR_FAMILY assignments (main() reads them for error findings):
    ERROR_FAMILY, the module of the compiler's error classes where ERROR_TYPE is one of them, lets another
    release's name for the same failure count."""
    mode = repro_mode(category)
    kind = error_type(detail) if mode == REPRO_ERROR else None
    family = error_family[0] if error_family and kind in error_family[1] else None
    return (f"REPRO = {mode!r}  # the finding shows as: error (its exception), accepted (an invalid model runs), "
            "oom (MemoryError) or compare (outputs differ; a crash or hang kills or stalls the script)\n"
            f"ERROR_TYPE = {kind!r}  # an error finding shows as this exception (the script's own failure, "
            "e.g. a parse error, does not)\n"
            f"ERROR_FAMILY = {family!r}  # or as any exception of this module (None: ERROR_TYPE only)\n")


def dlcfuzz_script(compiler: str, graph_blob: bytes, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str, version: str,
                   plugins: tuple[str, ...] = ()) -> str:
    """For compilers that exist only inside dlcfuzz (the planted-fault backends): the script imports
    dlcfuzz, since there is no public API to write it against, and `plugins`, the modules whose
    registration line makes the compiler's name known (`register_backend`)."""
    registered = "".join(f"import {m}  # noqa: F401  registers the compiler\n" for m in plugins)
    return header(title, detail, version) + f'''import base64
import sys
import zlib

import numpy as np

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.ir import loads
{registered}{UNPACK}
GRAPH = loads(base64.b64decode("""
{b64(graph_blob)}
"""))
{common(inputs, expected, category, configs, detail=detail)}
BACKEND = get_backend({compiler!r})


def run(name):
    return BACKEND.compile(GRAPH, Config(name, CONFIGS[name])).run(INPUTS)
{COMPARE}{MAIN}'''


INLINE_MAX = 64  # elements: up to this many, a tensor is written as a literal


def array_source(a: np.ndarray) -> str:
    """A numpy expression that rebuilds `a` exactly: a literal when small, else its exact bytes
    (base64 of the zlib-compressed buffer, read back by the script's `unpack`, see UNPACK): a finding
    can hinge on the exact values, so they are not regenerated from a seed."""
    a = np.asarray(a)
    dt = str(a.dtype)
    if a.size <= INLINE_MAX:
        if a.dtype.kind == "f":  # repr of a Python float round-trips float16/32/64 values exactly
            body = repr([float(v) for v in a.reshape(-1)]).replace("nan", 'float("nan")').replace("inf", 'float("inf")')
            return f"np.array({body}, dtype={dt!r}).reshape({tuple(a.shape)!r})"
        return f"np.array({a.tolist()!r}, dtype={dt!r}).reshape({tuple(a.shape)!r})"
    blob = base64.b64encode(zlib.compress(np.ascontiguousarray(a).tobytes(), 9)).decode()
    wrapped = wrap_text(blob)
    return f'unpack(  # {_summary(a)}\n"""\n{wrapped}\n""", {dt!r}, {tuple(a.shape)!r})'


def _summary(a: np.ndarray) -> str:
    """What a shipped array holds, for the reader: size, dtype, range."""
    if a.dtype.kind not in "biuf" or not a.size:
        return f"{a.size} {a.dtype} values"
    fin = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    rng = f" in [{fin.min().item():.4g}, {fin.max().item():.4g}]" if fin.size else ""
    odd = f", {a.size - fin.size} NaN/Inf" if fin.size < a.size else ""
    return f"{a.size} {a.dtype} values{rng}{odd}, exact (a finding can hinge on them)"


UNPACK = '''
def unpack(text, dtype, shape):
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype).reshape(shape).copy()
'''



# ---- an ONNX model written as onnx.helper code ------------------------------------------------

ONNX_IMPORTS = "from onnx import TensorProto, helper, numpy_helper\n"


def _attr_source(attr: Any) -> str:
    from onnx import AttributeProto, helper, numpy_helper

    if attr.type == AttributeProto.TENSOR:
        return f"numpy_helper.from_array({array_source(numpy_helper.to_array(attr.t))}, {attr.t.name!r})"
    if attr.type == AttributeProto.TENSORS:
        return "[" + ", ".join(f"numpy_helper.from_array({array_source(numpy_helper.to_array(t))}, {t.name!r})"
                               for t in attr.tensors) + "]"
    if attr.type not in (AttributeProto.FLOAT, AttributeProto.INT, AttributeProto.STRING, AttributeProto.FLOATS,
                         AttributeProto.INTS, AttributeProto.STRINGS):
        raise ValueError(f"attribute {attr.name} of type {attr.type} is not written as code")
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, list):
        value = [v.decode() if isinstance(v, bytes) else v for v in value]
    return repr(value)


def _value_info_source(vi: Any) -> str:
    from onnx import TensorProto

    if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.elem_type:
        return f"helper.make_empty_tensor_value_info({vi.name!r})"
    tt = vi.type.tensor_type
    shape = None if not tt.HasField("shape") else [
        d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param") else None for d in tt.shape.dim]
    return f"helper.make_tensor_value_info({vi.name!r}, TensorProto.{TensorProto.DataType.Name(tt.elem_type)}, {shape!r})"


def _graph_source(g: Any, fn: str, defs: list[str]) -> None:
    """Append to `defs` the source of `def fn():` returning `g` (an onnx.GraphProto) built with onnx.helper,
    after the functions of its sub-graphs (a region's branches and bodies: `then_branch=graph_1()`)."""
    from onnx import AttributeProto, numpy_helper

    lines = [f"def {fn}():", "    nodes = ["]
    for n in g.node:
        attrs = []
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:  # defined before this function, as the functions it calls
                sub = f"graph_{len(defs) + 1}"
                defs.append("")  # reserves the name
                _graph_source(a.g, sub, defs)
                attrs.append(f", {a.name}={sub}()")
            elif a.type == AttributeProto.GRAPHS:
                raise ValueError(f"attribute {a.name}: graph lists are not written as code")
            else:
                attrs.append(f", {a.name}={_attr_source(a)}")
        extra = (f", name={n.name!r}" if n.name else "") + (f", domain={n.domain!r}" if n.domain else "")
        lines.append(f"        helper.make_node({n.op_type!r}, {list(n.input)!r}, {list(n.output)!r}{extra}{''.join(attrs)}),")
    lines += ["    ]", "    initializers = ["]
    lines += [f"        numpy_helper.from_array({array_source(numpy_helper.to_array(t))}, {t.name!r})," for t in g.initializer]
    lines.append("    ]")
    lines.append("    inputs = [" + ", ".join(_value_info_source(v) for v in g.input) + "]")
    lines.append("    outputs = [" + ", ".join(_value_info_source(v) for v in g.output) + "]")
    value_info = f", value_info=[{', '.join(_value_info_source(v) for v in g.value_info)}]" if len(g.value_info) else ""
    lines.append(f"    return helper.make_graph(nodes, {g.name!r}, inputs, outputs, initializers{value_info})")
    defs.append("\n".join(lines))


def _model_source(model: Any) -> str:
    if len(model.functions):
        raise ValueError("functions are not written as code")
    defs: list[str] = []
    _graph_source(model.graph, "build_graph", defs)
    lines = ["def build_model():", "    graph = build_graph()"]
    opsets = ", ".join(f"helper.make_opsetid({o.domain!r}, {o.version})" for o in model.opset_import)
    lines.append(f"    model = helper.make_model(graph, opset_imports=[{opsets}])")
    lines.append(f"    model.ir_version = {model.ir_version}")
    lines.append("    return model.SerializeToString()")
    return "\n\n\n".join([*(d for d in defs if d), "\n".join(lines)]) + "\n"


def _normalized(model: Any) -> bytes:
    """The model's bytes with each node's attributes in name order (make_node sorts them) and no
    producer name (it names the tool that wrote the model, not what the model computes)."""
    m = type(model)()
    m.CopyFrom(model)
    m.ClearField("producer_name")

    def sort(g: Any) -> None:
        for n in g.node:
            attrs = sorted(n.attribute, key=lambda a: a.name)
            del n.attribute[:]
            n.attribute.extend(attrs)
            for a in n.attribute:
                if a.HasField("g"):
                    sort(a.g)

    sort(m.graph)
    return m.SerializeToString()


def onnx_model_source(model_bytes: bytes) -> str:
    """Script source that defines MODEL, the serialized ONNX model: a `build_model()` of onnx.helper
    calls (one `make_node` per node, small tensors as literals; a region's sub-graph a function of its own)
    when running that code rebuilds exactly this model, else the model's bytes (a form the builder does not
    write: functions, a deliberately malformed proto). Needs ONNX_IMPORTS and UNPACK in the script."""
    import onnx

    try:
        model = onnx.load_from_string(model_bytes)
        source = _model_source(model)
        space: dict[str, Any] = {"np": np, "base64": base64, "zlib": zlib, "TensorProto": onnx.TensorProto,
                                 "helper": onnx.helper, "numpy_helper": onnx.numpy_helper}
        exec(UNPACK + source, space)  # the check that the code is the model
        if _normalized(onnx.load_from_string(space["build_model"]())) == _normalized(model):
            return source + "\n\nMODEL = build_model()\n"
    except Exception:  # noqa: BLE001 - any form the builder cannot write is shipped as bytes
        pass
    return ('# the model as bytes: its form is not written as onnx.helper code\n'
            f'MODEL = base64.b64decode("""\n{b64(model_bytes)}\n""")\n')


def arrays_source(arrays: dict[str, np.ndarray]) -> str:
    """A dict literal of exact arrays (see array_source)."""
    return "{\n" + "".join(f"    {k!r}: {array_source(a)},\n" for k, a in arrays.items()) + "}"


def text_source(text: str) -> str:
    """A Python literal of `text` that reads as the text itself (a triple-quoted block) when it can."""
    if "'''" in text or "\\" in text or text.endswith("'"):
        return repr(text)
    return "'''\\\n" + text + "'''"
