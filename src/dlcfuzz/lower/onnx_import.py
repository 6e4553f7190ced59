"""ONNX model -> Graph for every operator we support.

Unsupported nodes are reported with their op type and reason, never a crash.
With partial=True the supported part is still imported: the outputs of an
unsupported node become graph inputs (when ONNX shape inference knows their
types), which is what pattern extraction from compiler test models needs.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    input_names: list[str] = field(default_factory=list)  # the ONNX name of each of graph.inputs

    @property
    def complete(self) -> bool:
        return self.graph is not None and not self.skipped


class ImportContext:
    """What an operator's ONNX import rule may ask about the model being imported."""

    def __init__(self, opset: int, bind: Mapping[str, np.ndarray] | None = None) -> None:
        self.opset = opset
        self.constants: dict[str, np.ndarray] = {}
        self.types: dict[str, TensorType] = {}
        self.bindable = dict(bind or {})  # graph input -> the value it has in the run at hand
        self.bound: set[str] = set()  # graph inputs a rule read as constants

    def has_input(self, node: Any, i: int) -> bool:
        return len(node.input) > i and node.input[i] != ""

    def const_input(self, node: Any, i: int) -> np.ndarray | None:
        """The value of input i, which must be a constant; None when the input is absent."""
        if not self.has_input(node, i):
            return None
        name = node.input[i]
        if name not in self.constants and name in self.bindable:
            self.bound.add(name)
            return np.asarray(self.bindable[name])
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


def import_model(model: Any, partial: bool = False, bind: Mapping[str, np.ndarray] | None = None) -> ImportResult:
    """Import `model`. `bind` gives graph inputs values for one run: an input that an operator needs
    as a constant (axes, K, sizes: attributes in our IR) takes its value from there and stops being
    a graph input; the rest stay inputs. Values computable here fold: a node whose inputs are all
    constants, or whose result depends on types only (Shape, Size), also yields a constant that
    later nodes may read as one; such a node is kept only where its output is used as a tensor."""
    import onnx

    from dlcfuzz.lower.registry import load_target
    from dlcfuzz.ops import registry
    from dlcfuzz.ops.regions import REGION_OPS

    rules = load_target("onnx-import")
    by_onnx: dict[str, list[Any]] = {}
    for spec in [*registry().values(), *REGION_OPS.values()]:
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

    ctx = ImportContext(opset, bind)
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
    produced: set[str] = set()  # ONNX names defined by a node we emitted
    folded: set[str] = set()  # ... of which a constant value is known
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
            if spec.skips_absent_outputs:  # the spec's attributes say which optional outputs exist
                real_outs = [o for o in node.output if o]
            else:
                # ONNX omits an optional output by an empty name or by leaving trailing ones out (LSTM's
                # ['', 'Y_h']): an omitted output we model gets a fresh name that nothing reads
                named = list(node.output)
                while named and named[-1] == "":
                    named.pop()
                real_outs = [o or f"__omitted_{index}_{k}" for k, o in enumerate(named + [""] * (len(outs) - len(named)))]
            if len(real_outs) != len(outs):
                raise Unsupported(f"{len(real_outs)} outputs where we model {len(outs)}")
            for o, t in zip(real_outs, outs):
                # a model may declare a data-dependent extent by its value in the run it was made for
                if o in known and known[o] != t and not (known[o].dtype == t.dtype and t.admits(known[o].shape)):
                    raise Unsupported(f"our type {t} for {o!r} disagrees with ONNX's {known[o]}")
            for i in ins:
                if i in ctx.constants and i not in used_consts and i not in produced:
                    used_consts.add(i)
                    g.constants[local(i)] = ctx.constants[i]
            values = _fold(spec, [ctx.constants.get(i) for i in ins], in_types, attrs)
            origins[f"n{len(g.nodes)}"] = index
            g.nodes.append(
                Node(spec.name, [local(i) for i in ins], [Value(local(o), t) for o, t in zip(real_outs, outs)],
                     attrs, name=f"n{len(g.nodes)}")
            )
            for k, (o, t) in enumerate(zip(real_outs, outs)):
                ctx.types[o] = t
                produced.add(o)
                if values is not None:
                    ctx.constants[o] = values[k]
                    folded.add(o)
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
            if o.name in ctx.constants and o.name not in produced and local(o.name) not in g.constants:
                g.constants[local(o.name)] = ctx.constants[o.name]
            g.outputs.append(local(o.name))
        elif not partial:
            skipped.append(SkippedNode(o.name, "output", "", "graph output was not produced"))
            return ImportResult(None, skipped)
    if not g.outputs:
        g.outputs = [v.name for n in g.nodes for v in n.outputs][-1:]
    if not g.outputs:
        return ImportResult(None, skipped)
    _drop_unread_folds(g, {local(o) for o in folded}, origins)
    read = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
    inverse = {v: k for k, v in rename.items()}
    # a bound input that no operator reads as a tensor is a constant of the model now, not an input
    g.inputs = [v for v in g.inputs if not (inverse[v.name] in ctx.bound and v.name not in read)]
    return ImportResult(g, skipped, origins, [inverse[v.name] for v in g.inputs])


FOLD_LIMIT = 1 << 16  # elements: folding is for shape arithmetic, not for computing whole models here


def _fold(spec: Any, consts: list[np.ndarray | None], in_types: list[TensorType], attrs: Any) -> list[Any] | None:
    """The outputs of one node when they are computable at import (all inputs constant, or only their
    types read), else None. Computed by the operator's reference; any failure there means no fold."""
    if any(c is None for k, c in enumerate(consts) if k not in spec.type_only_inputs):
        return None
    if any(t.unknown for c, t in zip(consts, in_types) if c is None):  # its extent is known only when it runs
        return None
    if sum(t.size for t in in_types) > FOLD_LIMIT:
        return None
    xs = [c if c is not None else np.broadcast_to(np.zeros((), t.dtype), t.shape) for c, t in zip(consts, in_types)]
    try:
        with np.errstate(all="ignore"):
            return [np.asarray(y) for y in spec.reference(xs, attrs)]
    except Exception:  # a reference that refuses these values (undefined behaviour) folds nothing
        return None


def _drop_unread_folds(g: Graph, folded: set[str], origins: dict[str, int]) -> None:
    """Remove nodes all of whose outputs were folded into constants and are read by no node as a
    tensor and are no graph output (their consumers took the values as attributes)."""
    while True:
        read = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
        dead = [n for n in g.nodes if all(v.name in folded and v.name not in read for v in n.outputs)]
        if not dead:
            return
        for n in dead:
            g.nodes.remove(n)
            origins.pop(n.name, None)
        live = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
        for k in [k for k in g.constants if k not in live]:
            del g.constants[k]


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
