"""ONNX model -> Graph for every operator we support.

Unsupported nodes are reported with their op type and reason, never a crash.
With partial=True the supported part is still imported: the outputs of an
unsupported node become graph inputs (when ONNX shape inference knows their
types), which is what pattern extraction from compiler test models needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.errors import DlcfuzzError, TypeRuleError, Unsupported
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import ALL_DTYPES, TensorType


@dataclass
class SkippedNode:
    name: str
    op_type: str
    domain: str
    reason: str


@dataclass
class ImportResult:
    graph: Graph | None
    skipped: list[SkippedNode] = field(default_factory=list)
    origins: dict[str, int] = field(default_factory=dict)  # our node name -> index of its ONNX node

    @property
    def complete(self) -> bool:
        return self.graph is not None and not self.skipped


class ImportContext:
    """What an operator's ONNX import rule may ask about the model being imported."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.constants: dict[str, np.ndarray] = {}
        self.types: dict[str, TensorType] = {}

    def has_input(self, node: Any, i: int) -> bool:
        return len(node.input) > i and node.input[i] != ""

    def const_input(self, node: Any, i: int) -> np.ndarray | None:
        """The value of input i, which must be a constant; None when the input is absent."""
        if not self.has_input(node, i):
            return None
        name = node.input[i]
        if name not in self.constants:
            raise Unsupported(f"{node.op_type}: input {i} ({name}) must be a constant")
        return self.constants[name]

    def type_of(self, name: str) -> TensorType:
        if name not in self.types:
            raise Unsupported(f"type of {name!r} is unknown")
        return self.types[name]


def _value_type(vi: Any) -> TensorType | None:
    import onnx

    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
    try:
        dtype = str(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
    except (KeyError, ValueError, TypeError):
        return None
    if -1 in dims or dtype not in ALL_DTYPES:
        return None
    return TensorType(dtype, tuple(dims))


def import_model(model: Any, partial: bool = False) -> ImportResult:
    import onnx

    from dlcfuzz.lower.registry import load_target
    from dlcfuzz.ops import registry

    rules = load_target("onnx-import")
    by_onnx: dict[str, list[Any]] = {}
    for spec in registry().values():
        if spec.onnx_domain:  # the importer reads the standard domain only (com.microsoft's Gelu is not ai.onnx's)
            continue
        for t in spec.onnx_ops:
            by_onnx.setdefault(t, []).append(spec)

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    if partial:  # test models of optimizers: symbolic dimensions and attributes that change nothing here
        model = _concrete_free_dims(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference itself failing on odd models is not our crash
        inferred = model
    known: dict[str, TensorType] = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        t = _value_type(vi)
        if t is not None:
            known[vi.name] = t

    ctx = ImportContext(opset)
    g = Graph(name="main")
    skipped: list[SkippedNode] = []
    origins: dict[str, int] = {}
    rename: dict[str, str] = {}

    def local(name: str) -> str:
        # ONNX names may be anything; ours must be unique identifiers of the graph.
        if name not in rename:
            rename[name] = f"v{len(rename)}"
        return rename[name]

    inits = {i.name for i in model.graph.initializer}
    for init in model.graph.initializer:
        try:
            arr = onnx.numpy_helper.to_array(init)
        except Exception as e:
            skipped.append(SkippedNode(init.name, "initializer", "", f"unreadable initializer: {e}"))
            continue
        if str(arr.dtype) not in ALL_DTYPES:
            skipped.append(SkippedNode(init.name, "initializer", "", f"dtype {arr.dtype} unsupported"))
            continue
        ctx.constants[init.name] = arr
        ctx.types[init.name] = TensorType.of(arr)
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = _value_type(vi)
        if t is None:
            skipped.append(SkippedNode(vi.name, "input", "", "input type is not a static tensor type we support"))
            if not partial:
                return ImportResult(None, skipped)
            continue
        g.inputs.append(Value(local(vi.name), t))
        ctx.types[vi.name] = t

    used_consts: set[str] = set()
    for index, node in enumerate(model.graph.node):
        label = node.name or node.op_type
        try:
            if node.domain not in ("", "ai.onnx"):
                raise Unsupported(f"domain {node.domain!r}")
            if node.op_type == "Constant":
                _import_constant(node, ctx)
                continue
            specs = by_onnx.get(node.op_type)
            if not specs:
                raise Unsupported("operator not in the registry")
            missing = [i for i in node.input if i and i not in ctx.types]
            if missing:
                raise Unsupported(f"depends on values that were not imported: {missing}")
            last: Exception | None = None
            for spec in specs:
                try:
                    ins, attrs = rules.rule(spec.name)(spec, node, ctx)
                    in_types = [ctx.type_of(i) for i in ins]
                    outs = spec.infer(in_types, attrs)
                    break
                except (Unsupported, TypeRuleError) as e:
                    last = e
            else:
                raise Unsupported(str(last))
            real_outs = [o for o in node.output]
            if len(real_outs) != len(outs) or any(o == "" for o in real_outs):
                raise Unsupported(f"{len(real_outs)} outputs where we model {len(outs)}")
            for o, t in zip(real_outs, outs):
                if o in known and known[o] != t:
                    raise Unsupported(f"our type {t} for {o!r} disagrees with ONNX's {known[o]}")
            for i in ins:
                if i in ctx.constants and i not in used_consts:
                    used_consts.add(i)
                    g.constants[local(i)] = ctx.constants[i]
            origins[f"n{len(g.nodes)}"] = index
            g.nodes.append(
                Node(spec.name, [local(i) for i in ins], [Value(local(o), t) for o, t in zip(real_outs, outs)],
                     attrs, name=f"n{len(g.nodes)}")
            )
            for o, t in zip(real_outs, outs):
                ctx.types[o] = t
        except Unsupported as e:
            skipped.append(SkippedNode(label, node.op_type, node.domain, str(e)))
            if not partial:
                return ImportResult(None, skipped)
            for o in node.output:  # cut here: downstream nodes see a fresh input
                if o and o in known:
                    g.inputs.append(Value(local(o), known[o]))
                    ctx.types[o] = known[o]
        except (DlcfuzzError, ValueError, KeyError, TypeError, IndexError) as e:
            skipped.append(SkippedNode(label, node.op_type, node.domain, f"{type(e).__name__}: {e}"))
            if not partial:
                return ImportResult(None, skipped)

    for o in model.graph.output:
        if o.name in ctx.types and (o.name in rename or o.name in ctx.constants):
            if o.name in ctx.constants and local(o.name) not in g.constants:
                g.constants[local(o.name)] = ctx.constants[o.name]
            g.outputs.append(local(o.name))
        elif not partial:
            skipped.append(SkippedNode(o.name, "output", "", "graph output was not produced"))
            return ImportResult(None, skipped)
    if not g.outputs:
        produced = [v.name for n in g.nodes for v in n.outputs]
        g.outputs = produced[-1:]
    if not g.outputs:
        return ImportResult(None, skipped)
    return ImportResult(g, skipped, origins)


FREE_DIM = 2  # what a symbolic or missing input dimension becomes in partial imports


def _concrete_free_dims(model: Any) -> Any:
    """A copy (inert attributes dropped) whose graph inputs have concrete dimensions: each symbolic dimension (dim_param) one
    value per symbol, a missing one FREE_DIM. Pattern extraction abstracts shapes anyway; ONNX shape
    inference then gives every downstream value a static type."""
    import onnx

    inits = {i.name for i in model.graph.initializer}
    m = onnx.ModelProto()
    m.CopyFrom(model)
    _drop_inert_attributes(m)
    if all(d.HasField("dim_value") for vi in m.graph.input if vi.name not in inits
           for d in vi.type.tensor_type.shape.dim):
        return m
    symbols: dict[str, int] = {}
    for vi in m.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                value = symbols.setdefault(d.dim_param, FREE_DIM) if d.dim_param else FREE_DIM
                d.Clear()
                d.dim_value = value
    static = [vi for vi in m.graph.value_info  # the rest is inferred again from the concrete inputs
              if vi.type.HasField("tensor_type") and all(d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)]
    del m.graph.value_info[:]
    m.graph.value_info.extend(static)
    for o in m.graph.output:
        if o.type.HasField("tensor_type"):
            o.type.tensor_type.ClearField("shape")
    return m


def _drop_inert_attributes(model: Any) -> None:
    """Attributes that do not change the result for the dtypes we model: Cast's `saturate` only
    concerns float8 targets."""
    for n in model.graph.node:
        if n.op_type == "Cast" and n.domain in ("", "ai.onnx"):
            keep = [a for a in n.attribute if a.name != "saturate"]
            if len(keep) != len(n.attribute):
                del n.attribute[:]
                n.attribute.extend(keep)


def _import_constant(node: Any, ctx: ImportContext) -> None:
    import onnx

    for a in node.attribute:
        if a.name == "value":
            arr = onnx.numpy_helper.to_array(a.t)
        elif a.name in ("value_float", "value_int"):
            arr = np.array(onnx.helper.get_attribute_value(a), dtype="float32" if a.name == "value_float" else "int64")
        elif a.name in ("value_floats", "value_ints"):
            arr = np.array(onnx.helper.get_attribute_value(a), dtype="float32" if a.name == "value_floats" else "int64")
        else:
            raise Unsupported(f"Constant with {a.name}")
        if str(arr.dtype) not in ALL_DTYPES:
            raise Unsupported(f"Constant of dtype {arr.dtype}")
        ctx.constants[node.output[0]] = arr
        ctx.types[node.output[0]] = TensorType.of(arr)
        return
    raise Unsupported("Constant without a value")


def load_onnx(path: str) -> Any:
    import onnx

    try:
        return onnx.load(path)
    except Exception as e:
        raise DlcfuzzError(f"cannot read ONNX model {path}: {e}") from None
